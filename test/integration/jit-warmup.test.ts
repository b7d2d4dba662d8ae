/**
 * A warm worker's JIT warm-up (app/jit-warmup.ts) in this process: it runs the smoke suite's mock
 * attempts through the worker's own attempt activity up to the process's target, not again once the
 * process has run that many, a stop ends it with no attempt started after it, and one that cannot
 * start ends with its error instead of rejecting.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startJitWarmup } from '../../app/jit-warmup.js'
import { attemptsRunInThisProcess } from '../../workers/activities.js'

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
})
