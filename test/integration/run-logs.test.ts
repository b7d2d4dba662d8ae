/**
 * `forge run`'s logs on the real embedded stack: levels, categories and formats as a user sets
 * them, progress lines when stdout is not a terminal, stdout left to the JSON answer under --json,
 * and worker logs with the same fields.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { LogRecord } from '../../core/log-records.js'
import { forge, startTestStack, type TestStack } from '../helpers/stack.js'

let stack: TestStack

beforeAll(async () => {
  stack = await startTestStack('run-logs')
})
afterAll(async () => {
  await stack?.down()
})

const records = (text: string): (LogRecord & { time: string })[] =>
  text
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as LogRecord & { time: string })

// two tool-using tasks of the core suite, 3 attempts each
const RUN = ['run', '--suite', 'core', '--task', 'mt_invoice_total', '--task', 'rt_book_author', '--attempts', '3', '--seed', 'logs']

describe('forge run logs', () => {
  it('writes every record with run, task, attempt, span, parent span and category as JSON lines, calls nested under the agent', () => {
    const r = forge([...RUN, '--log-level', 'calls', '--log-format', 'jsonl'], stack.env)
    expect(r.status, r.stderr).toBe(0)
    const all = records(r.stdout)
    for (const record of all) {
      expect(Object.keys(record)).toEqual(expect.arrayContaining(['time', 'level', 'category', 'run_id', 'task_id', 'attempt', 'span_id', 'parent_span_id', 'depth', 'msg']))
    }
    const attempts = all.filter((x) => x.span_id === 'attempt' && x.category === 'scheduler' && x.level === 'steps' && x.depth === 0)
    expect(attempts.map((x) => `${x.task_id}#${x.attempt}`).sort()).toEqual(['mt_invoice_total#0', 'mt_invoice_total#1', 'mt_invoice_total#2', 'rt_book_author#0', 'rt_book_author#1', 'rt_book_author#2'])
    const tools = all.filter((x) => x.category === 'tools')
    expect(tools.length).toBeGreaterThanOrEqual(6)
    expect(tools.every((x) => x.parent_span_id === 'agent' && x.depth === 2 && x.level === 'calls')).toBe(true)
    // not a terminal: plain progress lines, the last at 6/6
    const progress = all.filter((x) => x.msg.startsWith('progress '))
    expect(progress.at(-1)!.msg).toMatch(/^progress 6\/6 attempts \(100%\) · [\d.]+\/s · done in \d+s · pass [\d.]+% · harness errors 0 · workers \S+-w0:6$/)
    expect(all.filter((x) => x.level === 'trace')).toEqual([])
  })

  it('keeps only the categories asked for, in pretty lines indented by span depth', () => {
    const r = forge([...RUN, '--log-level', 'trace', '--log-only', 'tools'], stack.env)
    expect(r.status, r.stderr).toBe(0)
    const lines = r.stdout.split('\n').filter((line) => /^\[\w+#\d\] /.test(line))
    expect(lines.length).toBeGreaterThan(0)
    // the prefix, then two spaces per span depth: tools at depth 2, their arguments and results at 3
    for (const line of lines) expect(line).toMatch(/^\[\w+#\d\] ( {4}tool \w+ @\d+ms \+\d+ms (ok|error|refused)( \[.+\])?| {6}(arguments|result|error): .*)$/)
    expect(lines.some((line) => line.includes('    tool http_get '))).toBe(true)
    expect(lines.some((line) => line.includes('      arguments: '))).toBe(true)
    // the run's own lines (a task done) are scheduler records: left out
    expect(r.stdout).not.toMatch(/\[\d\/2\] \w+: \d\/3 passed/)
  })

  it('leaves stdout to the JSON answer under --json and logs to stderr; silent prints no records', () => {
    const json = forge([...RUN, '--log-level', 'steps', '--json'], stack.env)
    expect(json.status, json.stderr).toBe(0)
    expect((JSON.parse(json.stdout) as { attempts: number }).attempts).toBe(6)
    expect(json.stderr).toMatch(/^\[rt_book_author#\d\]   seed\+verify @\d+ms \+\d+ms ok$/m)
    const silent = forge([...RUN, '--log-level', 'silent'], stack.env)
    expect(silent.status, silent.stderr).toBe(0)
    // nothing before the statistics: no stack, task or progress lines
    expect(silent.stdout).toMatch(/^\nrun r\d{14}-[0-9a-f]{6}  suite core/)
  })

  it('refuses an unknown category naming the flag, with exit code 2', () => {
    const r = forge([...RUN, '--log-only', 'tools,gpu'], stack.env)
    expect(r.status).toBe(2)
    expect(r.stderr).toContain('--log-only: unknown category "gpu" (known: tools, model, grading, faults, scheduler, cost)')
  })

  it("warns of no leak in the worker's log when 50 attempts at once listen on one batch's cancellation signal", () => {
    const r = forge(['run', '--suite', 'smoke', '--adapter', 'mock', '--attempts', '20', '--concurrency', '50', '--max-in-flight', '50', '--json'], stack.env)
    expect(r.status, r.stderr).toBe(0)
    expect((JSON.parse(r.stdout) as { attempts: number }).attempts).toBe(100)
    const log = readFileSync(join(stack.home, 'logs', 'worker-0.log'), 'utf8')
    // Node's warning past 10 listeners, which the batch's lanes are by design
    expect(log).not.toMatch(/MaxListenersExceededWarning|Possible EventTarget memory leak/)
  })

  it('has workers log each attempt with the same fields at debug', () => {
    const r = forge([...RUN, '--log-level', 'silent', '--json'], { ...stack.env, FORGE_LOG_LEVEL: 'debug' })
    expect(r.status, r.stderr).toBe(0)
    const runId = (JSON.parse(r.stdout) as { run_id: string }).run_id
    const log = readFileSync(join(stack.home, 'logs', 'worker-0.log'), 'utf8')
    const ours = log
      .split('\n')
      .filter((line) => line.includes(`"run_id":"${runId}"`))
      .map((line) => JSON.parse(line) as Record<string, unknown>)
    expect(ours.length).toBeGreaterThan(6)
    for (const entry of ours) expect(Object.keys(entry)).toEqual(expect.arrayContaining(['run_id', 'task_id', 'attempt', 'span_id', 'parent_span_id', 'category']))
    expect(ours.filter((e) => e['span_id'] === 'attempt' && e['depth'] === 0)).toHaveLength(6)
  })
})
