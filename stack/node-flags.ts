/**
 * The V8 flags Forge starts its busy processes with, by role: attempt workers (forked, warm, or a
 * fleet's `entrypoint.sh worker`) and the ingester (the local stack's, or `entrypoint.sh ingester`).
 * A judge worker (`entrypoint.sh judge`) waits on a rate-limited model and gets none.
 *
 * A larger young generation (`--max-semi-space-size`, MiB; Node 20 grows a semi-space to 16 at most):
 * both processes allocate fast and briefly — an attempt's messages, Temporal payloads, a batch's rows —
 * and with the default one what was still alive at each scavenge was copied, promoted and collected
 * again in the old generation. Fresh stacks, interleaved (issue 15): 64 MiB for the worker took its CPU
 * per 1,000 attempts 1,470 → 1,180 ms (32 MiB: 1,350); the ingester gained as much from 32 as from 64
 * (1,230 → 1,100 / 1,135 ms) and holds ~50 MiB less with it. The builds before and after, 8 interleaved
 * pairs of warm 1,000-attempt runs: quicker in 7, median −139 ms. The young generation grows that far
 * only under such load: a waiting worker stays small. The in-process engine loop (one process, no
 * Temporal payloads, no batches) gains nothing measurable from it.
 *
 * `--min-semi-space-size=16` for the worker: a warm worker waits between runs, and V8 shrinks an idle
 * process's young generation back to its least (1 MiB), so a run after a pause met the default again
 * while it grew: runs after 40 s of idle, interleaved, 8 pairs: the worker's CPU per 1,000 attempts
 * 1,700 → 1,370 ms, quicker in 6, median −159 ms (the in-process loop loses little to a pause). A
 * waiting worker's RSS did not move (~200–250 MiB either way). The ingester gained nothing from it.
 *
 * A flag the process is given already — on its command line or in NODE_OPTIONS — is the user's, and
 * wins: Forge adds only the ones not named there.
 */

export const NODE_FLAGS = {
  worker: ['--max-semi-space-size=64', '--min-semi-space-size=16'],
  ingester: ['--max-semi-space-size=32'],
} as const satisfies Record<string, readonly string[]>

export type FlaggedRole = keyof typeof NODE_FLAGS

/**
 * What a flag sets (`--max-semi-space-size=64` → `--semi-space-size`): its name, underscores read as
 * dashes as V8 does, a `min-`/`max-` bound read as the setting it bounds — a user who gives either
 * bound of the young generation gets neither of Forge's.
 */
function settingOf(flag: string): string {
  return (flag.split('=')[0] ?? flag).replaceAll('_', '-').replace(/^--(min|max)-/, '--')
}

/**
 * The NODE_FLAGS of `role` a process started with `execArgv` and the environment `env` needs added:
 * those whose setting neither `execArgv` nor `env.NODE_OPTIONS` gives already.
 */
export function nodeFlagsFor(role: FlaggedRole, execArgv: readonly string[] = process.execArgv, env: NodeJS.ProcessEnv = process.env): string[] {
  const given = new Set([...execArgv, ...(env['NODE_OPTIONS'] ?? '').split(/\s+/)].filter((arg) => arg.startsWith('--')).map(settingOf))
  return NODE_FLAGS[role].filter((flag) => !given.has(settingOf(flag)))
}

/** `execArgv` without the worker's NODE_FLAGS: what a claimer and the warm worker it started compare (stack/warm-workers.ts buildStampOf). */
export function withoutWorkerFlags(execArgv: readonly string[]): string[] {
  const added: readonly string[] = NODE_FLAGS.worker
  return execArgv.filter((arg) => !added.includes(arg))
}
