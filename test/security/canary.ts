/** Strings only the security suite's ground truth holds: its expected-answer canaries, its goldens' and its tool file's. */
export const CANARY = /CANARY-[A-Z]+/
