import { describe, expect, it } from 'vitest'
import { trimCut, trimIntervalMs, type StreamMessageTime } from '../../core/results-retention.js'

/** A stream of messages (seq → stored at ms), with the reads the search made. */
function stream(messages: StreamMessageTime[]) {
  const reads: number[] = []
  return {
    reads,
    messageAtOrAfter: async (seq: number) => {
      reads.push(seq)
      return messages.find((m) => m.seq >= seq)
    },
  }
}

const minute = 60_000
// 100 messages 1..100, message n stored at n minutes
const hundred = Array.from({ length: 100 }, (_, i) => ({ seq: i + 1, time: (i + 1) * minute }))

describe('trimCut', () => {
  it('cuts below the first message younger than the keep window when all are stored', async () => {
    const s = stream(hundred)
    // keep what was stored at minute 40 or later: 1..39 go
    expect(await trimCut({ firstSeq: 1, ackFloor: 100, keepSince: 40 * minute, ...s })).toBe(40)
    // a binary search, not a scan
    expect(s.reads.length).toBeLessThanOrEqual(8)
  })

  it('never cuts past the ack floor: what the store does not hold yet stays, however old', async () => {
    expect(await trimCut({ firstSeq: 1, ackFloor: 10, keepSince: 1_000 * minute, ...stream(hundred) })).toBe(11)
    expect(await trimCut({ firstSeq: 1, ackFloor: 0, keepSince: 1_000 * minute, ...stream(hundred) })).toBeUndefined()
  })

  it('cuts nothing when the oldest message is young or everything stored was trimmed already', async () => {
    expect(await trimCut({ firstSeq: 1, ackFloor: 100, keepSince: 0, ...stream(hundred) })).toBeUndefined()
    const rest = hundred.slice(50)
    expect(await trimCut({ firstSeq: 51, ackFloor: 50, keepSince: 1_000 * minute, ...stream(rest) })).toBeUndefined()
  })

  it('cuts everything stored with a zero keep window', async () => {
    expect(await trimCut({ firstSeq: 1, ackFloor: 100, keepSince: 101 * minute, ...stream(hundred) })).toBe(101)
  })

  it('reads across holes in the sequence (a deleted message) and an empty stream', async () => {
    const holes = hundred.filter((m) => m.seq % 3 !== 0)
    // 39 is missing: a cut at 39 or 40 purges the same messages (1..38 but the holes)
    expect([39, 40]).toContain(await trimCut({ firstSeq: 1, ackFloor: 100, keepSince: 40 * minute, ...stream(holes) }))
    expect(await trimCut({ firstSeq: 1, ackFloor: 100, keepSince: 41 * minute, ...stream(holes) })).toBe(41)
    expect(await trimCut({ firstSeq: 1, ackFloor: 100, keepSince: 40 * minute, ...stream([]) })).toBeUndefined()
  })
})

describe('trimIntervalMs', () => {
  it('trims every tenth of the window, between once a second and once a minute', () => {
    expect(trimIntervalMs(0)).toBe(1_000)
    expect(trimIntervalMs(100_000)).toBe(10_000)
    expect(trimIntervalMs(600_000)).toBe(60_000)
    expect(trimIntervalMs(7 * 24 * 3600_000)).toBe(60_000)
  })
})
