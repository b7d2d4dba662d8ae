import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import type { JsMsg } from '@nats-io/jetstream'
import { createInsertRounds, QUIET_MS, URGENT_MS, URGENT_QUIET_MS } from '../../workers/ingester.js'

/** Insert rounds with a batch window far longer than the quiet window, and a grading lane that counts its inserts. */
function rounds() {
  const inserted: string[][] = []
  const grading = { pending: 0, inserts: 0 }
  const lane = {
    due: (stopping: boolean) => grading.pending > 0 && stopping,
    ingest: async () => {
      grading.inserts++
      grading.pending = 0
    },
    schedule: () => undefined,
    cancelSchedule: () => undefined,
  }
  const r = createInsertRounds(100, 10_000, lane, async (batch) => void inserted.push(batch.map((m) => (m as unknown as { id: string }).id)))
  const msg = (id: string) => ({ id }) as unknown as JsMsg
  return { r, msg, inserted, grading }
}

describe('ingester insert rounds', () => {
  beforeEach(() => void vi.useFakeTimers())
  afterEach(() => void vi.useRealTimers())

  it('holds a lone message for the quiet window, then inserts it with the waiting grading rows', async () => {
    const { r, msg, inserted, grading } = rounds()
    grading.pending = 1
    r.add(msg('a'))
    await vi.advanceTimersByTimeAsync(QUIET_MS - 1)
    expect(inserted).toEqual([])
    await vi.advanceTimersByTimeAsync(1)
    expect(inserted).toEqual([['a']])
    expect(grading.inserts).toBe(1)
  })

  it('a flush request inserts what waits at once, grading rows too', async () => {
    const { r, msg, inserted, grading } = rounds()
    r.add(msg('a'))
    r.add(msg('b'))
    grading.pending = 2
    await r.urgent()
    expect(inserted).toEqual([['a', 'b']])
    expect(grading.inserts).toBe(1)
  })

  it('after a flush request a message waits only URGENT_QUIET_MS, and after URGENT_MS the quiet window is back', async () => {
    const { r, msg, inserted } = rounds()
    await r.urgent()
    r.add(msg('late'))
    await vi.advanceTimersByTimeAsync(URGENT_QUIET_MS)
    expect(inserted).toEqual([['late']])
    await vi.advanceTimersByTimeAsync(URGENT_MS)
    r.add(msg('next'))
    await vi.advanceTimersByTimeAsync(URGENT_QUIET_MS)
    expect(inserted).toEqual([['late']])
    await vi.advanceTimersByTimeAsync(QUIET_MS)
    expect(inserted).toEqual([['late'], ['next']])
  })

  it('a flush request with nothing waiting inserts nothing', async () => {
    const { r, inserted, grading } = rounds()
    await r.urgent()
    expect(inserted).toEqual([])
    expect(grading.inserts).toBe(0)
  })
})
