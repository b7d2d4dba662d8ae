import { rmSync } from 'node:fs'
import { afterAll, describe, expect, it } from 'vitest'
import { inProcessEngineLoop } from '../../bench/in-process.js'
import { benchConfig, smokeWorkload } from '../../bench/throughput-bench.js'

// the bench's reference loop runs the worker's own attempt activity, grant check included: it broke
// silently once when grants came (the activity refused the bench's ungranted plan under a results key)
describe('the bench\'s in-process engine loop', () => {
  const { config, home } = benchConfig('forge-bench-inproc-')
  afterAll(() => rmSync(home, { recursive: true, force: true }))

  it('runs every attempt of a plan granted under the results key the activity checks, and publishes one message each', async () => {
    const report = await inProcessEngineLoop(config, smokeWorkload(20, 1, 'test'), 'a-results-key-of-this-test')
    expect(report.attempts).toBe(20)
    expect(Object.values(report.outcomes).reduce((a, b) => a + b, 0)).toBe(20)
    expect(report.outcomes['error'] ?? 0).toBe(0)
    expect(report.published.messages).toBe(20)
    expect(report.published.bytes).toBeGreaterThan(20 * 1000)
  })

  it('runs without a results key, as a process with none does', async () => {
    const report = await inProcessEngineLoop(config, smokeWorkload(5, 1, 'test'), undefined)
    expect(report.published.messages).toBe(5)
  })
})
