/**
 * The V8 flags Forge starts its busy processes with: attempt workers (forked, warm, or a fleet's
 * `entrypoint.sh worker|judge`) and the ingester (the local stack's, or `entrypoint.sh ingester`).
 *
 * `--max-semi-space-size=64` (MiB; Node 20's default lets the young generation grow to 16 MiB a semi-space):
 * both processes allocate fast and briefly — an attempt's messages, Temporal payloads, a batch's rows —
 * and with the default young generation a 1,000-attempt run's objects that were still alive at a
 * scavenge were copied and promoted to the old generation, to be collected again there. With room for
 * a busy moment's garbage, runs on fresh stacks, interleaved, three ways (issue 15): worker CPU per 1,000
 * attempts 1,470 → 1,180 ms, ingester 1,230 → 1,135 ms, run wall 1,836 → 1,651 ms median (32 MiB: about
 * half of that). The young generation only grows that far under such load: a waiting worker stays small.
 * The in-process engine loop (one process, no Temporal payloads) gains nothing measurable from it.
 *
 * A flag the process is already given — on its command line or in NODE_OPTIONS — is the user's, and
 * wins: Forge adds only the ones not named there.
 */

export const SERVER_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=64']

/** The name of a flag (`--max-semi-space-size=64` → `--max-semi-space-size`), underscores read as dashes, as V8 does. */
function flagName(flag: string): string {
  return (flag.split('=')[0] ?? flag).replaceAll('_', '-')
}

/**
 * SERVER_NODE_FLAGS a process started with `execArgv` and the environment `env` needs added: those
 * whose name neither `execArgv` nor `env.NODE_OPTIONS` gives already.
 */
export function serverNodeFlags(execArgv: readonly string[] = process.execArgv, env: NodeJS.ProcessEnv = process.env): string[] {
  const given = new Set([...execArgv, ...(env['NODE_OPTIONS'] ?? '').split(/\s+/)].filter((arg) => arg.startsWith('--')).map(flagName))
  return SERVER_NODE_FLAGS.filter((flag) => !given.has(flagName(flag)))
}

/** `execArgv` without SERVER_NODE_FLAGS: what a claimer and the warm process it claims compare (stack/warm-workers.ts buildStampOf). */
export function withoutServerFlags(execArgv: readonly string[]): string[] {
  return execArgv.filter((arg) => !SERVER_NODE_FLAGS.includes(arg))
}
