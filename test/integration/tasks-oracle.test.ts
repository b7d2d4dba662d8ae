/** `forge tasks validate --oracle` as a user runs it (from dist/, no servers needed). */
import { afterAll, describe, expect, it } from 'vitest'
import { forge } from '../helpers/stack.js'
import { makeSuite, removeTempSuites } from '../suites/temp-suite.js'
import { ENV_TASKS, makeEnvSuite } from '../env/env-suite.js'

afterAll(removeTempSuites)

describe('forge tasks validate --oracle', () => {
  it('proves every task of the bundled suites solvable: the oracle passes all of them', () => {
    const r = forge(['tasks', 'validate', '--oracle', '--json'], process.env)
    expect({ status: r.status, stderr: r.stderr }).toEqual({ status: 0, stderr: '' })
    const result = JSON.parse(r.stdout) as { ok: boolean; suites: { suite: string; tasks: number; oracle: { passed: number; failed: number } }[] }
    expect(result.suites.map((s) => [s.suite, s.tasks, s.oracle.passed, s.oracle.failed])).toEqual([
      ['core', 32, 32, 0],
      ['customer_support', 10, 10, 0],
      ['smoke', 5, 5, 0],
      ['toy_math', 3, 3, 0],
    ])
  })

  it('fails (exit 1) naming the task whose golden no longer solves it, or that has none', () => {
    const dir = makeEnvSuite({
      'tasks/db_update.yaml': `${ENV_TASKS['tasks/db_update.yaml']}golden: db_update\n`,
      'goldens/db_update.json': JSON.stringify({
        output: 'set',
        // the golden sets the wrong quantity: it does not solve the task as written
        tool_calls: [{ index: 0, name: 'sql', args: { sql: "UPDATE items SET qty = 8 WHERE name = 'plum'" }, retry_index: 0, started_ms: 0, duration_ms: 1 }],
        duration_ms: 2,
      }),
    })
    const r = forge(['tasks', 'validate', '--suite', dir, '--oracle'], process.env)
    expect(r.status).toBe(1)
    expect(r.stdout).toContain('FAIL  tmp_suite: oracle passed 0/3')
    expect(r.stdout).toMatch(/db_update: fail\/valid: sql: value "8", expected "7"/)
    expect(r.stdout).toMatch(/ws_write: fail\/invalid: no golden trace/)
  })

  it('still exits 2 when the suite does not load at all', () => {
    const r = forge(['tasks', 'validate', '--suite', makeSuite({ 'tasks/alpha.yaml': 'id: [' }), '--oracle'], process.env)
    expect(r.status).toBe(2)
  })
})
