/**
 * What forge run says while the store fails the ingester's inserts (a full disk, a ClickHouse server
 * down): the results wait on the bus and nothing is lost, but the run's completeness check waits
 * for them — for up to a quarter of an hour before it ends the run incomplete. Without a word the
 * command looked hung after its last attempt. Pure: app/store-watch.ts feeds it the ingester's answers.
 */

/** The store failing the ingester's inserts, as the ingester reports it (workers/ingester.ts IngesterStats.failing). */
export interface StoreFailure {
  /** epoch ms of the first failed insert of this spell */
  since: number
  /** the last failed insert's error, first line */
  error: string
}

export interface StoreWatchState {
  /** the spell reported so far, and when it was last said */
  failing?: { since: number; error: string; saidAt: number }
}

/** How often a spell that goes on is said again. */
export const STORE_FAILURE_REPEAT_MS = 30_000

/**
 * The next state and what to say, given the ingester's `failing` now (undefined: inserts go in, or
 * no answer — a dead ingester is the supervisor's and the completeness check's to report).
 */
export function storeWatchStep(state: StoreWatchState, failing: StoreFailure | undefined, now: number, where: string): { state: StoreWatchState; message?: string } {
  const seconds = (since: number): number => Math.max(0, Math.round((now - since) / 1000))
  if (failing === undefined) {
    if (state.failing === undefined) return { state }
    return { state: {}, message: `the store takes results again (it failed inserts for ${seconds(state.failing.since)} s); the run goes on` }
  }
  const reported = state.failing
  if (reported === undefined || reported.since !== failing.since) {
    return {
      state: { failing: { ...failing, saidAt: now } },
      message:
        `the store fails every insert of results: ${failing.error} (for ${seconds(failing.since)} s). ` +
        'Nothing is lost: the results wait on the bus and go in once the store takes them again; ' +
        `this run waits up to about a quarter of an hour for that, then ends incomplete. See ${where}`,
    }
  }
  if (reported.error !== failing.error || now - reported.saidAt >= STORE_FAILURE_REPEAT_MS) {
    return { state: { failing: { ...failing, saidAt: now } }, message: `the store still fails every insert (for ${seconds(failing.since)} s): ${failing.error}` }
  }
  return { state }
}
