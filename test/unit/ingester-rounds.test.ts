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

/** Insert rounds (no grading rows) whose every insert lasts until the test calls `release`. */
function heldRounds(batchSize: number, windowMs: number) {
  const inserted: string[][] = []
  let finish: () => void = () => undefined
  const lane = { due: () => false, ingest: async () => undefined, schedule: () => undefined, cancelSchedule: () => undefined }
  const r = createInsertRounds(batchSize, windowMs, lane, async (batch) => {
    inserted.push(batch.map((m) => (m as unknown as { id: string }).id))
    await new Promise<void>((resolve) => (finish = resolve))
  })
  return { r, inserted, release: () => finish() }
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

  it('what arrives during a round waits for its own window instead of going in right after it (issue 15)', async () => {
    const { r, inserted, release } = heldRounds(3, 1_000)
    // a busy stream: a message every QUIET_MS / 2, so it never goes quiet
    const busy = (id: string) => r.add({ id } as unknown as JsMsg)
    busy('a')
    await vi.advanceTimersByTimeAsync(QUIET_MS / 2)
    busy('b')
    await vi.advanceTimersByTimeAsync(QUIET_MS / 2)
    busy('c') // a full batch: in at once
    expect(inserted).toEqual([['a', 'b', 'c']])
    await vi.advanceTimersByTimeAsync(QUIET_MS / 2)
    busy('d') // arrives during the round: its window starts now
    await vi.advanceTimersByTimeAsync(QUIET_MS / 2)
    release()
    await vi.advanceTimersByTimeAsync(0)
    // the round is over; d is not inserted right after it
    expect(inserted).toEqual([['a', 'b', 'c']])
    for (let t = QUIET_MS; t < 1_000 - QUIET_MS / 2; t += QUIET_MS / 2) {
      busy(`x${t}`)
      await vi.advanceTimersByTimeAsync(QUIET_MS / 2)
      if (inserted.length > 1) break
    }
    // d's window (1,000 ms from its arrival) or a full batch, whichever came first: here the batch of 3
    expect(inserted[1]).toEqual(['d', 'x100', 'x150'])
    release()
    await vi.advanceTimersByTimeAsync(0)
  })

  it('a message that arrives during a round goes in when its window ends, even if the stream stays busy', async () => {
    const { r, inserted, release } = heldRounds(1_000, 400)
    const msg = (id: string) => ({ id }) as unknown as JsMsg
    let n = 0
    const tick = async (ms: number) => {
      for (let t = 0; t < ms; t += 50) {
        r.add(msg(`m${n++}`))
        await vi.advanceTimersByTimeAsync(50)
      }
    }
    await tick(400) // m0..m7: the first window ends at 400 ms
    expect(inserted.map((b) => b.length)).toEqual([8])
    await tick(100) // m8, m9 arrive during the round
    release()
    await tick(250) // the round ended at ~500 ms; m8's window ends at ~800 ms
    expect(inserted.map((b) => b.length)).toEqual([8])
    await tick(100)
    expect(inserted.map((b) => b.length)).toEqual([8, 8])
    release()
    await vi.advanceTimersByTimeAsync(0)
  })
})
