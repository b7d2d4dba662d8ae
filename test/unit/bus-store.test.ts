import { describe, expect, it } from 'vitest'
import { jetStreamWriteFailure } from '../../stack/bus-store.js'

const full = "JetStream failed to store a msg on stream '$G > FORGE_RESULTS': write /h/nats/jetstream/$G/streams/FORGE_RESULTS/msgs/1.blk: no space left on device"

describe("a nats-server's failed JetStream write, from its log", () => {
  it("finds the running server's last one, without pid and time", () => {
    const log = [
      '[100] 2026/12/03 19:14:40.000000 [INF] Server is ready',
      `[100] 2026/12/03 19:14:45.316045 [ERR] ${full}`,
      '[100] 2026/12/03 19:14:46.000000 [INF] something else',
    ].join('\n')
    expect(jetStreamWriteFailure(log, 100)).toBe(full)
  })

  it("ignores an earlier server's lines (the log is appended across restarts), other errors and a cut first line", () => {
    const log = [
      `er] ${full}`,
      `[100] 2026/12/03 19:14:45.316045 [ERR] ${full}`,
      '[200] 2026/12/03 19:15:00.000000 [INF] Server is ready',
      '[200] 2026/12/03 19:15:01.000000 [ERR] JetStream failed to store a msg: some other reason',
      '[200] 2026/12/03 19:15:02.000000 [WRN] no space left on device',
    ].join('\n')
    expect(jetStreamWriteFailure(log, 200)).toBeUndefined()
    expect(jetStreamWriteFailure(log, 100)).toBe(full)
  })

  it('knows a quota as a full disk', () => {
    expect(jetStreamWriteFailure('[7] 2026/12/03 19:14:45.3 [ERR] JetStream failed to write block: disk quota exceeded', 7)).toBe('JetStream failed to write block: disk quota exceeded')
  })
})
