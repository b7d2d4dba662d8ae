/**
 * An ingester's JIT warm-up (workers/ingester.ts, app/ingester-warmup.ts) on the real binaries: the
 * stack's ingester runs FORGE_INGESTER_WARMUP sample messages of this build through its ingest path as
 * it starts — none rejected, nothing stored — and waits while a run's results come in, every one of
 * them stored. (Off in every other test: vitest.config.ts.)
 */
import { afterEach, describe, expect, it } from 'vitest'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { openReader } from '../../app/store-access.js'
import { stackDown } from '../../stack/local-stack.js'
import { forge, startTestStack, type TestStack } from '../helpers/stack.js'

let stack: TestStack | undefined
const saved = process.env['FORGE_INGESTER_WARMUP']

afterEach(async () => {
  if (saved === undefined) delete process.env['FORGE_INGESTER_WARMUP']
  else process.env['FORGE_INGESTER_WARMUP'] = saved
  await stack?.down()
  stack = undefined
})

/** the stack's ingester takes its settings from this process's environment (stack/local-stack.ts) */
async function stackWithWarmup(name: string, messages: number): Promise<TestStack> {
  process.env['FORGE_INGESTER_WARMUP'] = String(messages)
  return startTestStack(name)
}

interface WarmupLine {
  msg: string
  messages: number
  handled: number
  paused: number
  stopped: boolean
  rejected: number
}

/** The ingester's warm-up summary once it has logged it (within 60 s). */
async function warmupLine(home: string): Promise<WarmupLine> {
  for (let i = 0; i < 600; i++) {
    const line = readFileSync(join(home, 'logs', 'ingester.log'), 'utf8')
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as WarmupLine)
      .find((l) => l.msg.startsWith('JIT warm-up'))
    if (line !== undefined) return line
    await sleep(100)
  }
  throw new Error(`no warm-up line in ${home}/logs/ingester.log`)
}

async function storedRows(s: TestStack): Promise<Record<string, number>> {
  const reader = await openReader(s.config)
  try {
    const counts: Record<string, number> = {}
    for (const table of ['attempts', 'tool_calls', 'attempt_metrics', 'judgements', 'traces', 'audit_entries', 'runs']) {
      const [row] = await reader.query<{ n: string }>(`SELECT count() AS n FROM ${table}`)
      counts[table] = Number(row!.n)
    }
    return counts
  } finally {
    await reader.close()
  }
}

describe("the ingester's JIT warm-up (issue 15)", () => {
  it('runs its ingest path over sample messages of this build as it starts, rejects none and stores nothing', async () => {
    stack = await stackWithWarmup('ingester-warmup', 300)
    const line = await warmupLine(stack.home)
    expect(line).toMatchObject({ msg: 'JIT warm-up done: sample messages through the ingest path (nothing stored)', messages: 300, handled: 0, paused: 0, stopped: false, rejected: 0 })
    expect(await storedRows(stack)).toEqual({ attempts: 0, tool_calls: 0, attempt_metrics: 0, judgements: 0, traces: 0, audit_entries: 0, runs: 0 })
  })

  it("waits while a run's results come in, every one of them stored, and ends with the ingester", async () => {
    // far more than it could run while the test lasts: it is still warming up when the stack stops
    stack = await stackWithWarmup('ingester-warmup-pause', 1_000_000)
    const r = forge(['run', '--suite', 'smoke', '--adapter', 'mock', '--attempts', '2', '--seed', 'warmup-pause', '--json'], stack.env)
    expect(r.status, r.stderr).toBe(0)
    expect(JSON.parse(r.stdout)).toMatchObject({ status: 'completed', attempts: 10 })
    const rows = await storedRows(stack)
    expect(rows).toMatchObject({ attempts: 10, traces: 10, audit_entries: 10 })
    await stackDown(stack.config)
    const line = await warmupLine(stack.home)
    // it made way for the run's results (10 attempts, the run's records, the seal's links) and counted them
    expect(line).toMatchObject({ msg: 'JIT warm-up stopped with the ingester', stopped: true, rejected: 0 })
    expect(line.paused).toBeGreaterThanOrEqual(1)
    expect(line.handled).toBeGreaterThanOrEqual(10)
    expect(line.messages).toBeLessThan(1_000_000)
  })
})
