/**
 * Budgets enforced by the harness on misbehaving out-of-process agents: each is stopped at its
 * limit, gets the bucket core/verdict.ts gives it, and leaves no process behind.
 *
 * "No process behind" is checked with a /proc scan (livingGroupMembers): killed orphans are
 * reparented to pid 1, which reaps them on its own schedule, so `process.kill(-pgid, 0)` may
 * still see their zombies for a moment — they run nothing.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it, onTestFinished } from 'vitest'
import { livingGroupMembers } from '../../engine/process-group.js'
import { subprocessAdapter } from '../../engine/adapters/subprocess.js'
import { agentPath, alive, attempt, toolSuite } from './helpers.js'

const node = (file: string, extra: Record<string, unknown> = {}) => ({ command: ['node', agentPath(file)], ...extra })

function verdictOf(result: { outcome: string; failure_bucket: string | null; budget_limit: string | null }) {
  return [result.outcome, result.failure_bucket, result.budget_limit]
}

describe('budgets on misbehaving subprocess agents', () => {
  it('stops an agent that retries a failing tool forever: tool_error, max_retries_per_tool', async () => {
    const { suite, task, executions } = toolSuite({ budget: { max_tool_calls: 50, max_retries_per_tool: 2, max_duration_ms: 10_000 } })
    const started = performance.now()
    const { result } = await attempt(subprocessAdapter, node('failing-tool-loop.mjs'), suite, task)
    const elapsed = performance.now() - started
    // an unrecovered tool error comes first in the bucket order; the limit says which budget stopped it
    expect(verdictOf(result)).toEqual(['fail', 'tool_error', 'max_retries_per_tool'])
    expect(executions()).toBe(3)
    // three failures, the refused third retry, and the call that ignored the refusal: then it was stopped
    expect(result.tool_calls.map((c) => [c.retry_index, c.refused ?? c.error])).toEqual([
      [0, 'service unavailable'],
      [1, 'service unavailable'],
      [2, 'service unavailable'],
      [3, 'budget_exhausted'],
      [4, 'budget_exhausted'],
    ])
    expect(result.error).toBe('stopped: agent kept calling tools after its budget was exhausted; stopped')
    expect(elapsed).toBeLessThan(10_000)
  })

  it('executes zero tool calls past max_tool_calls for an agent that calls tools forever', async () => {
    const { suite, task, executions } = toolSuite({ budget: { max_tool_calls: 7, max_retries_per_tool: 2, max_duration_ms: 10_000 } })
    const { result } = await attempt(subprocessAdapter, node('call-forever.mjs'), suite, task)
    expect(verdictOf(result)).toEqual(['fail', 'budget_exhausted', 'max_tool_calls'])
    expect(executions()).toBe(7)
    expect(result.tool_calls.map((c) => c.refused ?? 'ran')).toEqual([...Array<string>(7).fill('ran'), 'budget_exhausted', 'budget_exhausted'])
  })

  it.each([
    ['exits on SIGTERM', {}, 'term'],
    ['ignores SIGTERM', { env: { IGNORE_TERM: '1' } }, 'kill'],
  ])('stops an agent that sleeps forever and %s within max_duration_ms plus a short grace', async (_label, extra, via) => {
    const maxDuration = 1_000
    const { suite, task } = toolSuite({ budget: { max_tool_calls: 5, max_retries_per_tool: 2, max_duration_ms: maxDuration } })
    const started = performance.now()
    const { result, trace } = await attempt(subprocessAdapter, node('sleep-forever.mjs', extra), suite, task)
    const elapsed = performance.now() - started
    expect(verdictOf(result)).toEqual(['fail', 'budget_exhausted', 'max_duration_ms'])
    expect(result.error).toBe(`stopped: agent stopped at the attempt deadline (${via})`)
    const stop = trace.spans.find((s) => s.name === 'stop-process-group')
    expect(stop?.attributes).toEqual({ via })
    // deadline + SIGTERM grace on the deadline path (200 ms) + reaping
    expect(elapsed).toBeGreaterThanOrEqual(maxDuration)
    expect(elapsed).toBeLessThan(maxDuration + 1_000)
    console.info(`sleep-forever (${via}): stopped ${Math.round(elapsed - maxDuration)} ms after the ${maxDuration} ms deadline; stop took ${stop?.duration_ms} ms`)
  })

  // unsandboxed, so the pids the agents report are the worker's; test/sandbox/ covers the same in a sandbox
  it('leaves no process behind when an agent forks children and a grandchild and exits', async () => {
    const { suite, task } = toolSuite({ outcome_graders: [{ type: 'exact', expected: 'done' }] })
    const started = performance.now()
    const { result } = await attempt(subprocessAdapter, { ...node('fork-children.mjs'), sandbox: false }, suite, task)
    const elapsed = performance.now() - started
    expect(verdictOf(result)).toEqual(['pass', null, null])
    const { pgid, pids } = JSON.parse(result.self_report) as { pgid: number; pids: number[] }
    expect(pids).toHaveLength(4)
    expect(pids.filter(alive)).toEqual([])
    expect(livingGroupMembers(pgid)).toEqual([])
    console.info(`fork-children: attempt done and group ${pgid} empty in ${Math.round(elapsed)} ms (one child ignores SIGTERM: 500 ms grace, then SIGKILL)`)
  })

  it('leaves no process behind when a forking agent is stopped at the deadline', async () => {
    const { suite, task } = toolSuite({ budget: { max_tool_calls: 5, max_retries_per_tool: 2, max_duration_ms: 800 } })
    const pidsDir = mkdtempSync(join(tmpdir(), 'forge-pids-'))
    onTestFinished(() => rmSync(pidsDir, { recursive: true, force: true }))
    const pidsFile = join(pidsDir, 'pids')
    // a shell agent: forks a child that ignores SIGTERM (so does its sleep) and a plain one, then sleeps itself
    const script = `read line; sh -c 'trap "" TERM; sleep 1000' & a=$!; sleep 1000 & b=$!; echo "$$ $a $b" > "$PIDS_FILE"; sleep 1000`
    const { result, trace } = await attempt(subprocessAdapter, { command: ['sh', '-c', script], env: { PIDS_FILE: pidsFile }, sandbox: false }, suite, task)
    expect(verdictOf(result)).toEqual(['fail', 'budget_exhausted', 'max_duration_ms'])
    expect(trace.spans.find((s) => s.name === 'stop-process-group')?.attributes).toEqual({ via: 'kill' })
    const [pgid, ...children] = readFileSync(pidsFile, 'utf8').trim().split(' ').map(Number) as [number, ...number[]]
    expect(children).toHaveLength(2)
    expect([pgid, ...children].filter(alive)).toEqual([])
    expect(livingGroupMembers(pgid)).toEqual([])
  })
})
