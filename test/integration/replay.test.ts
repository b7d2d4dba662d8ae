/** `forge replay --run-id <id>` (the aeh seed's command) on the real embedded stack: forge regrade under another name. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { RegradeReport } from '../../app/regrade.js'
import { forge, startTestStack, type TestStack } from '../helpers/stack.js'

let stack: TestStack

beforeAll(async () => {
  stack = await startTestStack('replay')
})
afterAll(async () => {
  await stack?.down()
})

describe('forge replay', () => {
  it('grades a stored run again into a new grading version, exactly as forge regrade does', () => {
    const run = forge(['run', '--suite', 'smoke', '--attempts', '2', '--seed', 'replay', '--run-id', 'replay-me', '--json'], stack.env)
    expect(run.status).toBe(0)

    const replay = forge(['replay', '--run-id', 'replay-me', '--json'], stack.env)
    expect(replay.status).toBe(0)
    const report = JSON.parse(replay.stdout) as RegradeReport
    expect(report).toMatchObject({ run_id: 'replay-me', suite: 'smoke', grading_version: 2, attempts: 10, stored_traces: 10, regraded: 10, not_regradable: [], changed: 0, changes: [] })
    expect(report.after).toEqual(report.before)

    // replay stored version 2: regrade sees it and would write version 3
    const regrade = JSON.parse(forge(['regrade', '--run-id', 'replay-me', '--dry-run', '--json'], stack.env).stdout) as RegradeReport
    expect({ version: regrade.grading_version, regraded: regrade.regraded }).toEqual({ version: 3, regraded: 10 })

    const text = forge(['replay', '--run-id', 'replay-me', '--dry-run'], stack.env)
    expect(text.status).toBe(0)
    expect(text.stdout).toMatch(/^dry run: would regrade run replay-me \(suite smoke\) as grading version 3: 10 of 10 attempts \(10 traces stored\)$/m)
  })

  it('names a run that is not stored (exit 2)', () => {
    const r = forge(['replay', '--run-id', 'no-such-run'], stack.env)
    expect(r.status).toBe(2)
    expect(r.stderr).toContain('no run "no-such-run" is stored (see forge runs list)')
  })
})
