import { describe, expect, it } from 'vitest'
import { STORE_FAILURE_REPEAT_MS, storeWatchStep, type StoreWatchState } from '../../core/store-watch.js'
import { noteInsertFailure, noteInsertSuccess, type IngesterStats } from '../../workers/ingester.js'
import { ingesterMetrics } from '../../workers/ingester-telemetry.js'

const where = '/home/u/.forge/logs/ingester.log'
const full = { since: 1_000, error: 'Code: 243. DB::Exception: Cannot reserve 1.00 MiB, not enough space. (NOT_ENOUGH_SPACE)' }

/** what the watch says over a sequence of (time, failing) looks */
function said(looks: [number, typeof full | undefined][]): string[] {
  let state: StoreWatchState = {}
  const out: string[] = []
  for (const [now, failing] of looks) {
    const step = storeWatchStep(state, failing, now, where)
    state = step.state
    if (step.message !== undefined) out.push(step.message)
  }
  return out
}

describe('the store watch of forge run', () => {
  it('says nothing while inserts go in or no ingester answers', () => {
    expect(said([[0, undefined], [2_000, undefined]])).toEqual([])
  })

  it('names the error, how long, that nothing is lost, how long the run waits, and the log; then once in a while; then the recovery', () => {
    const lines = said([
      [3_000, full],
      [5_000, full],
      [3_000 + STORE_FAILURE_REPEAT_MS - 1, full],
      [3_000 + STORE_FAILURE_REPEAT_MS, full],
      [40_000, undefined],
      [42_000, undefined],
    ])
    expect(lines).toHaveLength(3)
    expect(lines[0]).toContain('the store fails every insert of results: Code: 243. DB::Exception: Cannot reserve 1.00 MiB, not enough space. (NOT_ENOUGH_SPACE) (for 2 s)')
    expect(lines[0]).toContain('Nothing is lost')
    expect(lines[0]).toContain('quarter of an hour')
    expect(lines[0]).toContain(where)
    expect(lines[1]).toBe(`the store still fails every insert (for ${Math.round((3_000 + STORE_FAILURE_REPEAT_MS - 1_000) / 1000)} s): ${full.error}`)
    expect(lines[2]).toBe('the store takes results again (it failed inserts for 39 s); the run goes on')
  })

  it('says a changed error at once, and a new spell as new', () => {
    const lines = said([
      [2_000, full],
      [4_000, { since: 1_000, error: 'Connection refused' }],
      [6_000, undefined],
      [8_000, { since: 7_000, error: 'Connection refused' }],
    ])
    expect(lines.map((l) => l.slice(0, 40))).toEqual([
      'the store fails every insert of results:',
      'the store still fails every insert (for ',
      'the store takes results again (it failed',
      'the store fails every insert of results:',
    ])
    expect(lines[1]).toContain('Connection refused')
  })
})

describe("the ingester's insert failures", () => {
  const stats = (): IngesterStats => ({ inserted_attempts: 0, inserted_runs: 0, rejected: 0, batches: 0, insert_failures: 0, trimmed_messages: 0 })

  it('names a ClickHouse error by its type too', () => {
    const s = stats()
    noteInsertFailure(s, Object.assign(new Error('Cannot reserve 1.00 MiB, not enough space. '), { type: 'NOT_ENOUGH_SPACE' }), 1)
    expect(s.failing?.error).toBe('Cannot reserve 1.00 MiB, not enough space. (NOT_ENOUGH_SPACE)')
  })

  it('counts each, keeps the spell from its first, its last error on one line, and ends it with an insert', () => {
    const s = stats()
    noteInsertFailure(s, new Error('Cannot reserve 1.00 MiB\n   at stack'), 10)
    noteInsertFailure(s, new Error('Connection reset'), 20)
    expect(s.insert_failures).toBe(2)
    expect(s.failing).toEqual({ since: 10, error: 'Connection reset' })
    noteInsertSuccess(s)
    expect(s.failing).toBeUndefined()
    noteInsertFailure(s, 'x', 30)
    expect(s.failing).toEqual({ since: 30, error: 'x' })
    expect(s.insert_failures).toBe(3)
  })

  it('reports them on /metrics: a counter, and how long the store has failed (0 while inserts go in)', () => {
    const s = stats()
    const value = (name: string) => ingesterMetrics(s, undefined, () => 25_000).find((m) => m.name === name)?.samples[0]?.value
    expect(value('forge_ingest_failing_seconds')).toBe(0)
    s.trimmed_messages = 7
    expect(value('forge_results_trimmed_total')).toBe(7)
    noteInsertFailure(s, new Error('full'), 10_000)
    expect(value('forge_ingest_insert_failures_total')).toBe(1)
    expect(value('forge_ingest_failing_seconds')).toBe(15)
  })
})
