/**
 * `--workers 0`: what the run says while no worker polls its task queue (app/fleet-workers.ts), on a
 * stand-in for Temporal's DescribeTaskQueue and a clock that moves only when the watch waits.
 */
import { describe, expect, it } from 'vitest'
import { ConfigError } from '../../core/errors.js'
import { noPollerNotice, refuseLocalModelWithoutWorkers, taskQueuePollers, watchTaskQueuePollers, type PollerDescriber } from '../../app/fleet-workers.js'

/** Temporal's answers, one per question round (workflow and activity side); the last one repeats. */
function describer(rounds: ({ workflow: string[]; activity: string[] } | 'unavailable')[]): PollerDescriber & { asked: { taskQueue: string; namespace: string; type: number }[] } {
  const asked: { taskQueue: string; namespace: string; type: number }[] = []
  return {
    asked,
    describeTaskQueue(request) {
      const round = rounds[Math.min(Math.floor(asked.length / 2), rounds.length - 1)]!
      asked.push({ taskQueue: request.taskQueue.name, namespace: request.namespace, type: request.taskQueueType })
      if (round === 'unavailable') return Promise.reject(new Error('14 UNAVAILABLE: connection refused'))
      const ids = request.taskQueueType === 1 ? round.workflow : round.activity
      return Promise.resolve({ pollers: ids.map((identity) => ({ identity })) })
    },
  }
}

/** A clock that advances by what the watch sleeps; `log` records each notice with the time it came. */
function watch(service: PollerDescriber, graceMs = 5_000) {
  let now = 0
  const log: string[] = []
  const w = watchTaskQueuePollers(service, {
    namespace: 'ns',
    taskQueue: 'forge',
    graceMs,
    intervalMs: 1_000,
    onNotice: (message) => log.push(`${now / 1000}s ${message}`),
    clock: { now: () => now, sleep: (ms) => Promise.resolve(void (now += ms)) },
  })
  return { ...w, log }
}

const none = { workflow: [], activity: [] }
const worker = { workflow: ['forge-worker-7c9d-x2'], activity: ['forge-worker-7c9d-x2'] }

describe('watching the task queue of a run whose workers run elsewhere', () => {
  it('says nothing when a worker already polls', async () => {
    const service = describer([worker])
    const w = watch(service)
    await w.done
    expect(w.log).toEqual([])
    expect(service.asked).toEqual([
      { taskQueue: 'forge', namespace: 'ns', type: 1 },
      { taskQueue: 'forge', namespace: 'ns', type: 2 },
    ])
  })

  it('says once, after the grace period, that no worker polls, keeps waiting, and says when one arrives', async () => {
    const w = watch(describer([none, none, none, none, none, none, none, none, none, none, worker]))
    await w.done
    expect(w.log).toEqual([
      '5s no worker polls task queue forge on namespace ns — start `forge worker` or use --workers N (still waiting: a fleet may scale from zero)',
      '10s worker forge-worker-7c9d-x2 now polls task queue forge; the run goes on',
    ])
  })

  it('counts only a worker that polls both sides of the queue (a run needs workflow and activity tasks)', async () => {
    const half = { workflow: ['w1'], activity: [] }
    const w = watch(describer([half, half, half, half, half, half, { workflow: ['w1'], activity: ['w1'] }]))
    await w.done
    expect(w.log.map((line) => line.split(' ').slice(0, 4).join(' '))).toEqual(['5s no worker polls', '6s worker w1 now'])
  })

  it('never calls an unreachable Temporal "no worker"', async () => {
    const w = watch(describer(['unavailable', 'unavailable', 'unavailable', 'unavailable', 'unavailable', 'unavailable', 'unavailable', worker]))
    await w.done
    expect(w.log).toEqual([])
    expect(await taskQueuePollers(describer(['unavailable']), 'ns', 'forge')).toBeUndefined()
  })

  it('ends when stopped, without a word', async () => {
    const w = watch(describer([none]), 60_000)
    w.stop()
    await w.done
    expect(w.log).toEqual([])
  })

  it('names the worker once the run ended, when one came and finished it between two looks', async () => {
    const service = describer([none, none, none, none, none, none, none, worker])
    let now = 0
    const log: string[] = []
    // the clock stops at 6 s, after the notice: the watch's next look never comes on its own
    let release!: () => void
    const stalled = new Promise<void>((resolve) => (release = resolve))
    const w = watchTaskQueuePollers(service, {
      namespace: 'ns',
      taskQueue: 'forge',
      intervalMs: 1_000,
      onNotice: (message) => log.push(`${now / 1000}s ${message.split(' ').slice(0, 4).join(' ')}`),
      clock: { now: () => now, sleep: (ms, signal) => (now >= 6_000 ? new Promise((resolve, reject) => { signal.addEventListener('abort', () => reject(new Error('aborted'))); void stalled.then(resolve) }) : Promise.resolve(void (now += ms))) },
    })
    while (log.length === 0) await new Promise((resolve) => setImmediate(resolve))
    expect(log).toEqual(['5s no worker polls task'])
    await w.settle()
    expect(log).toEqual(['5s no worker polls task', '6s worker forge-worker-7c9d-x2 now polls'])
    release()
  })

  it('settles without a word when it never said that no worker polls, or already named the one that came', async () => {
    const quiet = watch(describer([worker]))
    await quiet.settle()
    expect(quiet.log).toEqual([])
    const named = watch(describer([none, none, none, none, none, none, worker]))
    await named.done
    await named.settle()
    expect(named.log.map((line) => line.split(' ').slice(0, 4).join(' '))).toEqual(['5s no worker polls', '6s worker forge-worker-7c9d-x2 now'])
  })

  it('names the queue and namespace in its notice', () => {
    expect(noPollerNotice('nightly', 'forge-prod')).toContain('no worker polls task queue nightly on namespace forge-prod — start `forge worker` or use --workers N')
  })
})

describe('--workers 0 and a local model', () => {
  it('refuses a model server this run would start here, allows an external one and none', () => {
    expect(() => refuseLocalModelWithoutWorkers(0, { name: 'smollm2-135m-instruct' } as never)).toThrow(ConfigError)
    expect(() => refuseLocalModelWithoutWorkers(0, { name: 'smollm2-135m-instruct' } as never)).toThrow("--workers 0 cannot use --model local: the fleet's workers cannot reach the model server this run would start here")
    expect(() => refuseLocalModelWithoutWorkers(0, 'external')).not.toThrow()
    expect(() => refuseLocalModelWithoutWorkers(0, undefined)).not.toThrow()
    expect(() => refuseLocalModelWithoutWorkers(2, { name: 'smollm2-135m-instruct' } as never)).not.toThrow()
  })
})
