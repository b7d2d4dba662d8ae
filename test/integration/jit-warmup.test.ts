/**
 * A warm worker's JIT warm-up (app/jit-warmup.ts) in this process: it runs the smoke suite's mock
 * attempts through the worker's own attempt activity up to the process's target, not again once the
 * process has run that many, a stop ends it with no attempt started after it, and one that cannot
 * start ends with its error instead of rejecting. Given a real nats-server it publishes onto the
 * warm-up stream only, signed under a key of its own; without that stream it counts on a stand-in
 * and says why.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { jetstreamManager } from '@nats-io/jetstream'
import { startJitWarmup } from '../../app/jit-warmup.js'
import { verifyMessage, SIGNATURE_HEADER } from '../../store/bus-auth.js'
import { connectBus, ensureResultsStream, ensureWarmupStream, resultsKey, RESULTS_STREAM, signResultsWith, WARMUP_STREAM } from '../../store/bus.js'
import { attemptsRunInThisProcess } from '../../workers/activities.js'
import { startNats, type NatsCluster } from '../helpers/fleet.js'

const home = mkdtempSync(join(tmpdir(), 'forge-jit-warmup-'))
const before = process.env['FORGE_HOME']
beforeAll(() => {
  process.env['FORGE_HOME'] = home
})
afterAll(() => {
  if (before === undefined) delete process.env['FORGE_HOME']
  else process.env['FORGE_HOME'] = before
  rmSync(home, { recursive: true, force: true })
})

describe('the JIT warm-up', () => {
  it('runs attempts until the process has run its target, then none again; a target of 0 runs none', async () => {
    expect(startJitWarmup(0)).toBeUndefined()
    const start = attemptsRunInThisProcess()
    const warmup = startJitWarmup(start + 50)!
    expect(warmup.planned).toBe(50)
    const report = await warmup.done
    expect(report).toMatchObject({ attempts: 50, stopped: false })
    expect(report.error).toBeUndefined()
    expect(attemptsRunInThisProcess()).toBe(start + 50)
    // it has run them: nothing left to warm up
    expect(startJitWarmup(start + 50)).toBeUndefined()
    // 3 short of a target rounds up to the suite's 5 tasks
    const more = startJitWarmup(start + 53)!
    expect(more.planned).toBe(5)
    await more.stop()
  })

  it('stops when asked: no attempt starts after its stop resolves, and it says it stopped short', async () => {
    const start = attemptsRunInThisProcess()
    const warmup = startJitWarmup(start + 1_000_000)!
    // under way: it has run a few attempts
    for (let i = 0; i < 2_000 && attemptsRunInThisProcess() < start + 20; i++) await sleep(5)
    expect(attemptsRunInThisProcess()).toBeGreaterThanOrEqual(start + 20)
    const report = await warmup.stop()
    expect(report.stopped).toBe(true)
    expect(report.error).toBeUndefined()
    expect(report.attempts).toBeGreaterThanOrEqual(20)
    expect(report.attempts).toBeLessThan(1_000_000)
    const after = attemptsRunInThisProcess()
    expect(after - start).toBe(report.attempts)
    await sleep(100)
    expect(attemptsRunInThisProcess()).toBe(after)
  })

  it('never rejects: a warm-up that cannot start (a bad FORGE_* setting) ends with the error and runs nothing', async () => {
    const was = process.env['FORGE_LOG_LEVEL']
    process.env['FORGE_LOG_LEVEL'] = 'loud'
    try {
      const start = attemptsRunInThisProcess()
      const report = await startJitWarmup(start + 10)!.done
      expect(report).toMatchObject({ attempts: 0, stopped: false })
      expect(report.error).toMatch(/FORGE_LOG_LEVEL/)
      expect(attemptsRunInThisProcess()).toBe(start)
    } finally {
      if (was === undefined) delete process.env['FORGE_LOG_LEVEL']
      else process.env['FORGE_LOG_LEVEL'] = was
    }
  })

  describe('on a real nats-server', () => {
    let nats: NatsCluster
    beforeAll(async () => {
      nats = await startNats(home)
    })
    afterAll(async () => {
      await nats?.stop()
    })

    it('publishes each attempt onto the warm-up stream and nothing onto the results stream, signed under its own key, and leaves the process key as it was', async () => {
      const nc = await connectBus(nats.url, 'jit-warmup-test')
      // the process's own results key (a worker's, from its run): the warm-up must not sign with it
      const processKey = 'ab'.repeat(32)
      signResultsWith(processKey)
      try {
        await ensureResultsStream(nc)
        await ensureWarmupStream(nc)
        const jsm = await jetstreamManager(nc)
        const start = attemptsRunInThisProcess()
        const report = await startJitWarmup(start + 50, { natsUrl: nats.url })!.done
        expect(report).toMatchObject({ attempts: 50, stopped: false, published: { stream: WARMUP_STREAM } })
        expect(report.error).toBeUndefined()
        expect(resultsKey()).toBe(processKey)
        const published = report.published.stream !== undefined ? report.published.messages : 0
        expect(published).toBeGreaterThanOrEqual(50)
        // the probe, then every message the attempts published
        const warmup = await jsm.streams.info(WARMUP_STREAM, { subjects_filter: '>' })
        expect(warmup.state.messages).toBe(published + 1)
        expect(Object.keys(warmup.state.subjects ?? {}).every((subject) => subject.startsWith('forge.warmup.results.'))).toBe(true)
        expect((await jsm.streams.info(RESULTS_STREAM)).state.messages).toBe(0)
        // an attempt's message, as it would have gone onto the results stream: signed, but not with the process's key
        const message = await jsm.streams.getMessage(WARMUP_STREAM, { seq: 2 })
        expect(message!.subject).toMatch(/^forge\.warmup\.results\.attempt\./)
        const signature = message!.header.get(SIGNATURE_HEADER)
        expect(signature).toMatch(/^[0-9a-f]{64}$/)
        const runId = (message!.json() as { run_id: string }).run_id
        expect(runId).toMatch(/./)
        const asPublished = message!.subject.replace('forge.warmup.', 'forge.')
        expect(verifyMessage(processKey, runId, asPublished, message!.data, signature)).toBe(false)
      } finally {
        signResultsWith(undefined)
        await nc.close()
      }
    })

    it('runs on the stand-in and says why when the server has no warm-up stream, or no server answers', async () => {
      const nc = await connectBus(nats.url, 'jit-warmup-test')
      try {
        await (await jetstreamManager(nc)).streams.delete(WARMUP_STREAM).catch(() => undefined)
      } finally {
        await nc.close()
      }
      let start = attemptsRunInThisProcess()
      const noStream = await startJitWarmup(start + 10, { natsUrl: nats.url })!.done
      expect(noStream).toMatchObject({ attempts: 10, stopped: false, published: { stream: undefined } })
      expect(noStream.published.stream === undefined && noStream.published.why).toMatch(/no responders|503|stream/i)
      start = attemptsRunInThisProcess()
      const noServer = await startJitWarmup(start + 10, { natsUrl: 'nats://127.0.0.1:1' })!.done
      expect(noServer).toMatchObject({ attempts: 10, stopped: false, published: { stream: undefined } })
      expect(noServer.published.stream === undefined && noServer.published.why).toMatch(/cannot connect to NATS at nats:\/\/127\.0\.0\.1:1/)
    })
  })
})
