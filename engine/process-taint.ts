/**
 * Whether agent code has run inside this process: the module adapter with `sandbox: false` imports
 * the agent's module into the worker itself. Such code can alter anything of the process from then
 * on — graders, encoders, the results key, other runs' attempts — so the process stays tainted for
 * the rest of its life: every later attempt it runs is marked degraded too (engine/attempt-runner.ts,
 * whatever its own adapter), and a warm worker does not serve another run after one that tainted it
 * (workers/worker-process.ts), so the next run gets a fresh process. Nothing clears it.
 */
let taint: string | undefined

/** Marks this process tainted (the first reason is kept). */
export function taintProcess(reason: string): void {
  taint ??= reason
}

/** Why this process is tainted, or undefined while no agent code has run in it. */
export function processTaint(): string | undefined {
  return taint
}

/** The validity note of an attempt run in a tainted process by an adapter that did not itself degrade it. */
export function taintedProcessNote(reason: string): string {
  return `the worker process was tainted before this attempt (${reason}): anything in it may have been altered since`
}
