import { describe, expect, it } from 'vitest'
import {
  atLeast,
  cpuBound,
  describeNodeStart,
  doublings,
  fixed,
  formatTable,
  harnessLimited,
  idealRate,
  mean,
  median,
  middleOf,
  perSecond,
  ratioTarget,
  steadyRate,
  summarizeSeries,
} from '../../bench/measure.js'
import { describeCpuBound, describeEngineVsRun, type EngineRunPair } from '../../bench/throughput-bench.js'
import type { InProcessReport } from '../../bench/in-process.js'
import { describeForgeRun, type ForgeRunMeasurement } from '../../bench/forge-run.js'
import { nodeStart } from '../../bench/proc.js'
import { threadCpuSeconds } from '../../bench/proc.js'
import { readFileSync } from 'node:fs'
import type { RunReport } from '../../app/run.js'

describe('series and rates', () => {
  it('summarizes start, middle, peak and end, skipping zeros of a process not yet started or gone', () => {
    expect(summarizeSeries([0, 100, 300, 250, 0])).toEqual({ start: 100, middle: 300, peak: 300, end: 250, samples: 3 })
    expect(summarizeSeries([10, 20, 30, 40])).toEqual({ start: 10, middle: 20, peak: 40, end: 40, samples: 4 })
    expect(summarizeSeries([0, 0])).toBeUndefined()
  })

  it('computes means and per-second rates', () => {
    expect(mean([2, 4])).toBe(3)
    expect(mean([])).toBeNaN()
    expect(perSecond(1000, 2000)).toBe(500)
    expect(perSecond(5, 0)).toBe(5000)
  })

  it('picks the measurement in the middle, a real one: the lower middle of an even count, none of none', () => {
    const runs = [{ ms: 900 }, { ms: 1_400 }, { ms: 1_100 }]
    expect(middleOf(runs, (r) => r.ms)).toBe(runs[2])
    expect(middleOf([{ ms: 4 }, { ms: 1 }, { ms: 3 }, { ms: 2 }], (r) => r.ms)).toEqual({ ms: 2 })
    expect(middleOf([{ ms: 7 }], (r) => r.ms)).toEqual({ ms: 7 })
    expect(middleOf([], (r: { ms: number }) => r.ms)).toBeUndefined()
  })

  it('measures the steady rate over the middle of the finishes, whatever their order', () => {
    // 11 finishes, one every 10 ms, plus a slow start and a straggler outside the middle 80 %
    const finishes = [0, 500, 510, 520, 530, 540, 550, 560, 570, 580, 2000]
    expect(steadyRate([...finishes].reverse())).toBeCloseTo(100, 6) // 8 intervals over 80 ms (finish #1 … #9)
    expect(steadyRate([1, 2], 0, 1)).toBe(1000)
    expect(steadyRate([5])).toBeUndefined()
    expect(() => steadyRate([1, 2], 0.9, 0.1)).toThrow('steadyRate: need 0 ≤ from < to ≤ 1, got 0.9, 0.1')
  })
})

describe('targets', () => {
  it('checks a minimum', () => {
    expect(atLeast('forge run', 612.4, 500, 'attempts/s')).toEqual({ target: 'forge run ≥ 500 attempts/s', met: true, detail: '612 attempts/s' })
    expect(atLeast('forge run', 95.5, 500, 'attempts/s').met).toBe(false)
  })

  it('checks "at least N× a peer" and "within N× of the in-process loop"', () => {
    expect(ratioTarget('forge run vs promptfoo', 300, 50, 5, 'at-least')).toEqual({ target: 'forge run vs promptfoo ≥ 5×', met: true, detail: '6.00×' })
    expect(ratioTarget('forge run vs promptfoo', 200, 50, 5, 'at-least').met).toBe(false)
    expect(ratioTarget('forge run vs in-process', 400, 560, 1.5, 'within')).toEqual({ target: 'forge run vs in-process within 1.5×', met: true, detail: '1.40×' })
    expect(ratioTarget('forge run vs in-process', 100, 160, 1.5, 'within').met).toBe(false)
  })

  it('bounds a CPU-bound run: cores ÷ CPU per attempt, and the best ratio to the reference', () => {
    // 2.5 ms of CPU per attempt on 2 cores: at most 800 attempts/s; a 1,200/s reference is 1.5× that
    expect(cpuBound(2.5, 2, 1200)).toEqual({ ceiling: 800, best_ratio: 1.5 })
    expect(cpuBound(1, 4, 2000).ceiling).toBe(4000)
    expect(() => cpuBound(0, 2, 1000)).toThrow(/CPU per attempt and cores must be positive \(got 0 ms, 2 cores\)/)
    expect(() => cpuBound(1, 0, 1000)).toThrow(/got 1 ms, 0 cores/)
  })

  it("says where a run's CPU went and what it allows on this machine's cores", () => {
    const measurement = (cpu: [string, number][]): ForgeRunMeasurement => ({
      report: { expected_attempts: 1000, attempts_per_second: 700 } as RunReport,
      workers_ready_ms: 40,
      until_reported_ms: 1500,
      peak_rss_kib: new Map(),
      cpu_s: new Map(cpu),
    })
    const [line] = describeCpuBound(measurement([['temporal', 0.2], ['nats-server', 0.1], ['ingester', 0.6], ['cli (this process)', 0.1], ['worker 0', 1.0]]), 1200, 2)
    expect(line).toContain('2.00 ms per attempt in all (temporal 0.20, nats-server 0.10, ingester 0.60, cli 0.10, worker 0 1.00; 1.00 of it outside the workers)')
    expect(line).toContain('on 2 core(s) that allows at most 1000 attempts/s (the run reached 70.0 % of it), 1.20× the in-process loop at best')
    // nothing measured (a sampler that saw no process): no line rather than a division by zero
    expect(describeCpuBound(measurement([]), 1200, 2)).toEqual([])
  })
})

describe('thread CPU', () => {
  it("adds up the CPU of a process's threads of one name, and nothing for a name or process that is not there", () => {
    const main = readFileSync(`/proc/${process.pid}/task/${process.pid}/comm`, 'utf8').trim()
    const before = threadCpuSeconds(process.pid, main)
    const until = Date.now() + 150
    while (Date.now() < until); // burn CPU on this (main) thread
    expect(threadCpuSeconds(process.pid, main) - before).toBeGreaterThanOrEqual(0.05)
    expect(threadCpuSeconds(process.pid, 'forge-no-such-thread')).toBe(0)
    expect(threadCpuSeconds(2 ** 22 + 1, main)).toBe(0)
  })

  it("prints the ingester's merge CPU under the ingester when it was measured", () => {
    const m: ForgeRunMeasurement = {
      report: { expected_attempts: 1000, attempts_per_second: 500, wall_ms: 2000, attempts: 1000, not_executed: 0, status: 'completed' } as RunReport,
      workers_ready_ms: 40,
      until_reported_ms: 2100,
      peak_rss_kib: new Map([['ingester', 400 * 1024], ['worker 0', 300 * 1024]]),
      cpu_s: new Map([['ingester', 1.4], ['worker 0', 1.6]]),
      merge_cpu_s: 0.07,
    }
    const lines = describeForgeRun(m, 'run')
    const at = lines.findIndex((l) => l.trim().startsWith('ingester'))
    expect(lines[at]).toContain('1.40 s (1.40 ms/attempt)')
    expect(lines[at + 1]).toMatch(/^ {6}of it chDB's merges +0\.07 s \(0\.07 ms\/attempt\)$/)
    // a ClickHouse server's merges are not the ingester's
    const server: ForgeRunMeasurement = { ...m }
    delete server.merge_cpu_s
    expect(describeForgeRun(server, 'run').some((l) => l.includes('merges'))).toBe(false)
  })
})

describe('in-process loop vs forge run', () => {
  const run = (perSecond: number): ForgeRunMeasurement => ({
    report: { expected_attempts: 1000, attempts: 1000, attempts_per_second: perSecond, wall_ms: 1e6 / perSecond, not_executed: 0, status: 'completed' } as RunReport,
    workers_ready_ms: 40,
    until_reported_ms: 1500,
    peak_rss_kib: new Map([['ingester', 400 * 1024]]),
    cpu_s: new Map([['ingester', 1], ['worker 0', 1.5]]),
  })
  const loop = (perSecond: number): InProcessReport => ({ attempts: 1000, concurrency: 100, wall_ms: 1e6 / perSecond, attempts_per_second: perSecond, cpu_s: 1.2, outcomes: { pass: 1000 }, published: { messages: 1000, bytes: 8_500_000 } })
  const pair = (inProcess: number, forgeRun: number, inProcessFirst: boolean): EngineRunPair => ({ inProcess: loop(inProcess), run: run(forgeRun), inProcessFirst })

  it('takes the median of the pairs\' ratios, not a ratio of medians measured apart, and checks it against 1.5×', () => {
    // the machine slows down over the bench: each pair's ratio is 1.4×, yet the loop's median over the forge run's median is 1.6×
    const pairs = [pair(1400, 1000, true), pair(700, 500, false), pair(1120, 800, true), pair(560, 400, false), pair(840, 600, true)]
    const lines = describeEngineVsRun({ coldRun: run(300), pairs })
    expect(lines).toContain('  pair 1 (loop, then run): in-process 1400, forge run 1000 attempts/s → 1.40×')
    expect(lines).toContain('  pair 2 (run, then loop): in-process 700, forge run 500 attempts/s → 1.40×')
    expect(lines).toContain('forge run 600 attempts/s (median); in-process ÷ forge run = 1.40× (the median of the pairs; in-process median 840 attempts/s)')
    expect(lines).toContain('  met    forge run vs in-process within 1.5×: 1.40×')
    expect(lines).toContain('  met    forge run ≥ 500 attempts/s: 600 attempts/s')
    const slower = describeEngineVsRun({ coldRun: run(300), pairs: [pair(1000, 500, true), pair(900, 600, false), pair(1000, 400, true)] })
    expect(slower).toContain('  MISSED forge run vs in-process within 1.5×: 2.00×')
    expect(slower).toContain('  met    forge run ≥ 500 attempts/s: 500 attempts/s')
  })

  it('takes the middle value, or the mean of the middle two', () => {
    expect([median([3, 1, 2]), median([4, 1, 3, 2]), median([])]).toEqual([2, 2.5, Number.NaN])
  })
})

describe('scaling curve', () => {
  it('gives the ideal line of a latency-bound agent and the doubling points', () => {
    expect(idealRate(1, 200)).toBe(5)
    expect(idealRate(64, 200)).toBe(320)
    expect(doublings(128)).toEqual([1, 2, 4, 8, 16, 32, 64, 128])
    expect(doublings(100)).toEqual([1, 2, 4, 8, 16, 32, 64])
  })

  it('says the harness is the limit when a point falls below half its ideal, or doubling gains under 10 %', () => {
    expect(harnessLimited([], 200)).toBe(false)
    expect(harnessLimited([{ slots: 1, attemptsPerSecond: 4.8 }, { slots: 2, attemptsPerSecond: 9.5 }], 200)).toBe(false)
    expect(harnessLimited([{ slots: 64, attemptsPerSecond: 150 }], 200)).toBe(true) // ideal 320
    expect(
      harnessLimited(
        [
          { slots: 32, attemptsPerSecond: 150 },
          { slots: 64, attemptsPerSecond: 162 },
        ],
        400,
      ),
    ).toBe(true) // 162 ≥ half of 160, but doubling gained 8 %
  })
})

describe('formatting', () => {
  it('pads columns, right-aligns numeric ones and rounds figures sensibly', () => {
    expect(
      formatTable(
        ['harness', 'attempts/s'],
        [
          ['forge run', 512.3],
          ['inspect', 12.34],
        ],
      ),
    ).toBe(['harness    attempts/s', '---------  ----------', 'forge run         512', 'inspect          12.3'].join('\n'))
    expect([fixed(1234.5), fixed(56.78), fixed(1.234), fixed(0.01234), fixed(Number.NaN)]).toEqual(['1235', '56.8', '1.23', '0.0123', 'NaN'])
  })
})

describe("Node's start here", () => {
  it('is told with what NODE_EXTRA_CA_CERTS costs of it when that is set, and alone when not', () => {
    expect(describeNodeStart({ ms: 82 })).toBe('a Node process starts and exits here in 82.0 ms')
    const told = describeNodeStart({ ms: 83, extra_ca: { file: '/etc/ssl/certs/ca-certificates.crt', without_ms: 27 } })
    expect(told).toMatch(/^a Node process starts and exits here in 83\.0 ms \(56\.0 ms of it parsing NODE_EXTRA_CA_CERTS=\/etc\/ssl\/certs\/ca-certificates\.crt, which Node reads before any JavaScript; 27\.0 ms without it\)/)
    expect(told).toContain("forge run's client and promptfoo's process each pay it once")
  })

  it('is timed with the environment as it is, and without NODE_EXTRA_CA_CERTS only when it is set', () => {
    const env = { ...process.env }
    delete env['NODE_EXTRA_CA_CERTS']
    const plain = nodeStart(2, env)
    expect(plain.ms).toBeGreaterThan(0)
    expect(plain.extra_ca).toBeUndefined()
    const withCa = nodeStart(2, { ...env, NODE_EXTRA_CA_CERTS: '/no/such/bundle.pem' })
    expect(withCa.ms).toBeGreaterThan(0)
    expect(withCa.extra_ca?.file).toBe('/no/such/bundle.pem')
    expect(withCa.extra_ca!.without_ms).toBeGreaterThan(0)
  })
})
