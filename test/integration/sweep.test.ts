/**
 * Sweeps and their schedules on the real embedded stack (Temporal dev server, nats-server, ingester +
 * chDB), driven through the CLI as a user drives it: a matrix run as one tracked sweep, compared with
 * its baselines, the verdicts stored and shown; Temporal Schedules created, listed, paused, triggered
 * and deleted.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { SweepRecord } from '../../core/contracts/sweep.js'
import type { ScheduleInfo } from '../../app/schedules.js'
import { openReader } from '../../app/store-access.js'
import { getSweep } from '../../store/sweep-repositories.js'
import { packageRoot } from '../../stack/paths.js'
import { forge, forgeAsync, startTestStack, type TestStack } from '../helpers/stack.js'
import { waitFor } from '../helpers/fleet.js'

let stack: TestStack
let worker: ChildProcess | undefined

const sweepFile = (name: string, body: string): string => {
  const file = join(stack.home, `${name}.yaml`)
  writeFileSync(file, body)
  return file
}
const json = <T>(r: { status: number; stdout: string; stderr: string }): T => {
  try {
    return JSON.parse(r.stdout) as T
  } catch {
    throw new Error(`not JSON (exit ${r.status}):\n${r.stdout}\n${r.stderr}`)
  }
}

beforeAll(async () => {
  stack = await startTestStack('sweep')
})

afterAll(async () => {
  if (worker && worker.exitCode === null) {
    const exited = new Promise((resolve) => worker!.once('exit', resolve))
    worker.kill('SIGTERM')
    await exited
  }
  await stack?.down()
})

describe('forge sweep', () => {
  it('refuses a bad sweep file, naming every problem, and a sweep that cannot run, starting nothing', () => {
    const bad = sweepFile('bad', 'name: "my sweep"\nsuites: []\nadapters: [mock]\nattempts: 0\ncolour: blue\n')
    const r = forge(['sweep', bad], stack.env)
    expect(r.status).toBe(2)
    expect(r.stderr).toContain('invalid sweep file (4 problems)')
    expect(r.stderr).toContain(`${bad}: name: must be 1–40 letters`)
    expect(r.stderr).toContain(`${bad}: suites: `)
    expect(r.stderr).toContain(`${bad}: attempts: `)
    expect(r.stderr).toContain('colour')

    const broken = sweepFile('broken', 'name: broken\nsuites: [toy_math, ./no-such-suite]\nadapters: [mock, nosuch]\n')
    const b = forge(['sweep', broken], stack.env)
    expect(b.status).toBe(2)
    expect(b.stderr).toContain('the sweep "broken" cannot run:')
    expect(b.stderr).toContain('toy_math × nosuch: unknown adapter "nosuch"')
    expect(b.stderr).toContain(`${join(stack.home, 'no-such-suite')} × mock: `)
    const list = json<unknown[]>(forge(['sweep', 'list', '--json'], stack.env))
    expect(list).toEqual([])
  })

  it('runs the matrix as one sweep with a run per cell, compares each with its baseline and stores the verdicts', () => {
    const good = sweepFile(
      'nightly-good',
      'name: nightly\nsuites: [toy_math]\nadapters: [{ name: mock, config: { skill: 0.95 } }]\nseeds: [a, b]\nattempts: 10\npromote_baseline: if_no_regression\n',
    )
    const first = forge(['sweep', good, '--json', '--sweep-id', 'nightly-1'], stack.env)
    expect(first.status, first.stderr).toBe(0)
    const one = json<SweepRecord & { detached: false }>(first)
    expect(one).toMatchObject({ detached: false, sweep_id: 'nightly-1', name: 'nightly', status: 'completed', verdict: 'no_baseline', revision: 3 })
    expect(one.cells.map((c) => [c.cell, c.run_id, c.suite, c.seed, c.status, c.verdict, c.attempts, c.baseline, c.promoted_version])).toEqual([
      [0, 'nightly-1-c0', 'toy_math', 'a', 'completed', 'no_baseline', 30, 'nightly.toy_math.mock.default', 1],
      [1, 'nightly-1-c1', 'toy_math', 'b', 'completed', 'no_baseline', 30, 'nightly.toy_math.mock.default', null],
    ])

    // the agent got worse: the same baseline (version 1, the first sweep's seed-a run) judges both cells
    const worse = sweepFile('nightly-worse', 'name: nightly\nsuites: [toy_math]\nadapters: [{ name: mock, config: { skill: 0.2 } }]\nseeds: [a, b]\nattempts: 10\npromote_baseline: if_no_regression\n')
    const second = forge(['sweep', worse, '--json', '--sweep-id', 'nightly-2'], stack.env)
    expect(second.status).toBe(6)
    const two = json<SweepRecord>(second)
    expect(two.verdict).toBe('regressed')
    for (const cell of two.cells) {
      expect(cell).toMatchObject({ status: 'completed', verdict: 'regressed', baseline_version: 1, baseline_run_id: 'nightly-1-c0', promoted_version: null, attempts: 30 })
      expect(cell.findings!.success).toBeGreaterThan(0)
      expect(cell.pass_rate!).toBeLessThan(cell.baseline_pass_rate!)
    }

    // the morning answer
    const latest = forge(['sweep', 'show', '--exit-code'], stack.env)
    expect(latest.status).toBe(6)
    expect(latest.stdout).toContain('sweep nightly-2 (nightly)')
    expect(latest.stdout).toMatch(/nightly\.toy_math\.mock\.default@1 .* REGRESSED/)
    expect(latest.stdout).toContain('REGRESSED: 2 cells — 0 pass, 2 regressed, 0 failed, 0 without a baseline')
    expect(json<SweepRecord>(forge(['sweep', 'show', 'nightly-1', '--json'], stack.env))).toEqual({ ...one, detached: undefined, spec: one.spec })
    expect(json<{ sweep_id: string; verdict: string }[]>(forge(['sweep', 'list', '--json'], stack.env)).map((s) => [s.sweep_id, s.verdict])).toEqual([
      ['nightly-2', 'regressed'],
      ['nightly-1', 'no_baseline'],
    ])
    expect(forge(['sweep', 'show', 'nope'], stack.env)).toMatchObject({ status: 2, stderr: 'Error: no sweep "nope" is stored (see forge sweep list)\n' })
  })
})

describe('forge schedule', () => {
  it('creates, lists, updates, pauses, triggers and deletes a Temporal Schedule of a sweep; the triggered sweep is stored', async () => {
    // a standalone worker serves the schedule's sweeps (in a fleet: the chart's workers)
    worker = spawn(process.execPath, [join(packageRoot(), 'bin', 'run.js'), 'worker', '--concurrency', '20'], { env: stack.env, stdio: 'ignore' })
    const file = sweepFile('scheduled', 'name: scheduled\nsuites: [toy_math]\nadapters: [mock]\nseeds: ["1"]\nattempts: 2\n')

    const created = json<ScheduleInfo>(forge(['schedule', 'create', file, '--id', 'nightly', '--cron', '0 2 * * *', '--json'], stack.env))
    expect(created).toMatchObject({ id: 'nightly', sweep: 'scheduled', cron: '0 2 * * *', timezone: 'UTC', paused: false, recent: [] })
    expect(created.next_runs[0]).toMatch(/T02:00:00\.000Z$/)
    const again = forge(['schedule', 'create', file, '--id', 'nightly', '--cron', '0 2 * * *'], stack.env)
    expect(again).toMatchObject({ status: 2, stderr: 'Error: schedule "nightly" exists: pass --update to replace its sweep and cron, or delete it first\n' })
    const updated = json<ScheduleInfo>(forge(['schedule', 'create', file, '--id', 'nightly', '--cron', '30 3 * * *', '--timezone', 'Europe/Berlin', '--update', '--json'], stack.env))
    expect(updated).toMatchObject({ cron: '30 3 * * *', timezone: 'Europe/Berlin' })
    expect(updated.next_runs[0]).toMatch(/T0[12]:30:00\.000Z$/)
    const badCron = forge(['schedule', 'create', file, '--id', 'other', '--cron', 'every night'], stack.env)
    expect(badCron).toMatchObject({ status: 2, stderr: expect.stringContaining('--cron takes five fields') })

    const listed = await waitFor('the schedule in the list', async () => {
      const r = json<ScheduleInfo[]>(await forgeAsync(['schedule', 'list', '--json'], stack.env))
      return r.length === 1 ? r : undefined
    })
    expect(listed[0]).toMatchObject({ id: 'nightly', sweep: 'scheduled', cron: '30 3 * * *', paused: false })

    const paused = json<ScheduleInfo>(forge(['schedule', 'pause', 'nightly', '--note', 'provider outage', '--json'], stack.env))
    expect(paused).toMatchObject({ paused: true, note: 'provider outage' })

    // triggered by hand (a paused schedule still runs what it is told to): a sweep named after the schedule
    forge(['schedule', 'trigger', 'nightly'], stack.env)
    const reader = await openReader(stack.config)
    try {
      const sweep = await waitFor('the triggered sweep stored', async () => {
        const s = await getSweep(reader, 'latest:scheduled')
        return s?.status === 'completed' ? s : undefined
      })
      expect(sweep.schedule_id).toBe('nightly')
      expect(sweep.sweep_id).toMatch(/^nightly-\d{4}-\d{2}-\d{2}T\d{6}Z$/)
      expect(sweep.cells).toMatchObject([{ cell: 0, status: 'completed', verdict: 'no_baseline', attempts: 6, run_id: `${sweep.sweep_id}-c0` }])
    } finally {
      await reader.close()
    }
    const recent = json<ScheduleInfo>(forge(['schedule', 'pause', 'nightly', '--unpause', '--json'], stack.env))
    expect(recent).toMatchObject({ paused: false })
    expect(recent.recent.map((r) => r.workflow_id)).toEqual([expect.stringMatching(/^forge-sweep-nightly-/)])

    expect(json(forge(['schedule', 'delete', 'nightly', '--json'], stack.env))).toEqual({ id: 'nightly', deleted: true })
    await waitFor('the schedule gone from the list', async () => (json<unknown[]>(await forgeAsync(['schedule', 'list', '--json'], stack.env)).length === 0 ? true : undefined))
    expect(forge(['schedule', 'delete', 'nightly'], stack.env)).toMatchObject({ status: 2, stderr: 'Error: no schedule "nightly" (see forge schedule list)\n' })
  })
})
