import { describe, expect, it } from 'vitest'
import type { RunReport } from '../../app/run.js'
import { childWorkflowIds, clockSplit, describeClockSplit, type HistoryEvent } from '../../bench/clock-split.js'
import { describeForgeRun, type ForgeRunMeasurement } from '../../bench/forge-run.js'

const T0 = 1_796_390_000

/** A Long as protobufjs hands it over: no valueOf, only toString. */
const long = (n: number) => ({ toString: () => String(n) })

/** An event at `ms` after T0 s; the seconds as a Long every other time, as the SDK may give them. */
let id = 0
function event(ms: number, eventType: number, extra: Partial<HistoryEvent> = {}): HistoryEvent {
  id++
  const seconds = T0 + Math.floor(ms / 1000)
  return { eventId: id, eventTime: { seconds: id % 2 === 0 ? long(seconds) : seconds, nanos: (ms % 1000) * 1e6 }, eventType, ...extra }
}

/** An activity scheduled, started and completed (10, 11, 12) of type `name`. */
function activity(name: string, scheduled: number, started: number, completed: number): HistoryEvent[] {
  const s = event(scheduled, 10, { activityTaskScheduledEventAttributes: { activityType: { name } } })
  return [
    s,
    event(started, 11, { activityTaskStartedEventAttributes: { scheduledEventId: long(Number(s.eventId)) } }),
    event(completed, 12, { activityTaskCompletedEventAttributes: { scheduledEventId: s.eventId! } }),
  ]
}

function run(opts: { completed?: boolean } = {}): HistoryEvent[] {
  return [
    event(0, 1),
    ...activity('recordRunStatus', 20, 25, 30),
    event(40, 31, { childWorkflowExecutionStartedEventAttributes: { workflowExecution: { workflowId: 'forge-run-r1/shard-0' } } }),
    event(41, 31, { childWorkflowExecutionStartedEventAttributes: { workflowExecution: { workflowId: 'forge-run-r1/shard-1' } } }),
    ...activity('checkCompleteness', 900, 905, 1005),
    ...activity('recordRunStatus', 1010, 1012, 1020),
    ...(opts.completed === false ? [] : [event(1030, 2)]),
  ]
}

const shard0 = [event(45, 1), ...activity('runAttempts', 50, 60, 800), ...activity('runAttempts', 50, 62, 820), ...activity('judgeAttempt', 820, 830, 880)]
const shard1 = [event(46, 1), ...activity('runAttempt', 55, 70, 850)]

describe('the clock split of a run (bench/clock-split.ts)', () => {
  it('names the children the run started', () => {
    expect(childWorkflowIds(run())).toEqual(['forge-run-r1/shard-0', 'forge-run-r1/shard-1'])
  })

  it('splits the run at its first attempt activity started and its last one completed, over every child, and times the completeness check', () => {
    const split = clockSplit(run(), [shard0, shard1])
    expect(split).toBeDefined()
    const rounded = Object.fromEntries(Object.entries(split!).map(([k, v]) => [k, Math.round(v)]))
    // the judge activity in shard 0 ends later (880) but runs no attempt: the attempts end at 850
    expect(rounded).toEqual({ total_ms: 1030, ramp_ms: 60, attempts_ms: 790, tail_ms: 180, check_ms: 100 })
    expect(describeClockSplit(split!)).toBe('clock from the workflow histories: 1030 ms = ramp 60 ms + attempts 790 ms + tail 180 ms (of it the completeness check 100 ms)')
  })

  it("reads a run of one shard's attempt activities from its own history, a re-run after the completeness check as part of the tail", () => {
    const inline = [
      event(0, 1),
      ...activity('recordRunStatus', 20, 25, 30),
      ...activity('runAttempts', 20, 35, 700),
      ...activity('runAttempts', 20, 36, 720),
      ...activity('checkCompleteness', 730, 735, 800),
      ...activity('runAttempt', 805, 806, 840),
      ...activity('checkCompleteness', 845, 846, 870),
      event(900, 2),
    ]
    expect(childWorkflowIds(inline)).toEqual([])
    const split = clockSplit(inline, [])!
    expect(Object.fromEntries(Object.entries(split).map(([k, v]) => [k, Math.round(v)]))).toEqual({ total_ms: 900, ramp_ms: 35, attempts_ms: 685, tail_ms: 180, check_ms: 89 })
  })

  it('says nothing for a run that has not completed, or whose children ran no attempt', () => {
    expect(clockSplit(run({ completed: false }), [shard0, shard1])).toBeUndefined()
    expect(clockSplit(run(), [[event(45, 1), ...activity('judgeAttempt', 50, 60, 70)]])).toBeUndefined()
    // a run with children whose own history ran no attempt activity either
    expect(clockSplit(run(), [])).toBeUndefined()
  })

  it("is printed under the run's start-up line, or why it is not known", () => {
    const m: ForgeRunMeasurement = {
      report: { expected_attempts: 1000, attempts_per_second: 1000, wall_ms: 1000, attempts: 1000, not_executed: 0, status: 'completed' } as RunReport,
      workers_ready_ms: 40,
      until_reported_ms: 1100,
      peak_rss_kib: new Map([['ingester', 400 * 1024]]),
      cpu_s: new Map([['ingester', 0.5]]),
      clock: clockSplit(run(), [shard0, shard1])!,
    }
    const lines = describeForgeRun(m, 'run')
    expect(lines[1]).toContain('worker start-up')
    expect(lines[2]).toBe('  clock from the workflow histories: 1030 ms = ramp 60 ms + attempts 790 ms + tail 180 ms (of it the completeness check 100 ms)')
    expect(describeForgeRun({ ...m, clock: 'the workflow histories could not be read: refused' }, 'run')[2]).toBe('  clock split unknown: the workflow histories could not be read: refused')
    const { clock: _, ...without } = m
    expect(describeForgeRun(without, 'run')[2]).toContain('peak RSS')
  })
})
