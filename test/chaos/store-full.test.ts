/**
 * The store's disk fills while a run waits on it, on the real binaries: the embedded store lives on
 * a tmpfs of its own (FORGE_STORE_PATH), which the test fills to the last byte before `forge run`.
 * Every insert then fails (chDB: NOT_ENOUGH_SPACE) and the results wait on the bus. forge run must say
 * so — what fails, that nothing is lost, how long it waits, where the log is — instead of sitting
 * silent after its last attempt for the quarter of an hour its completeness check waits; and once the
 * test frees the disk (after it has read that line: the line is the gate, no sleep), every result goes
 * in and the run completes whole. Needs root for the mount; skipped elsewhere.
 */
import { spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { resolveConfig } from '../../config/index.js'
import { stackDown } from '../../stack/local-stack.js'
import { forge, spawnForge } from '../helpers/stack.js'
import { until } from '../helpers/processes.js'

const root = mkdtempSync(join(tmpdir(), 'forge-store-full-'))
const home = join(root, 'home')
const disk = join(root, 'store-disk')
const store = join(disk, 'store')
const fill = join(disk, 'fill')
mkdirSync(disk)
const mounted = process.getuid?.() === 0 && spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=64m', 'tmpfs', disk]).status === 0
const env = { ...process.env, FORGE_HOME: home, FORGE_STORE_PATH: store, FORGE_LOG_LEVEL: 'warn', FORGE_TEMPORAL_ADDRESS: '', FORGE_NATS_URL: '', FORGE_CLICKHOUSE_URL: '' }

afterAll(async () => {
  await stackDown(resolveConfig(env))
  if (mounted) spawnSync('umount', ['-l', disk])
  rmSync(root, { recursive: true, force: true })
})

describe.skipIf(!mounted)("a run whose store's disk is full", () => {
  it('says the store fails every insert and why while it waits, then completes whole once the disk has room', async () => {
    // the stack up and the store made, one run stored
    const first = forge(['run', '--suite', 'smoke', '--adapter', 'mock', '--attempts', '1', '--seed', 'room'], env)
    expect(first.status, first.stderr).toBe(0)
    // not one more byte on the store's disk
    spawnSync('dd', ['if=/dev/zero', `of=${fill}`, 'bs=1M'])
    expect(spawnSync('df', ['--output=avail', disk], { encoding: 'utf8' }).stdout.trim().split('\n').pop()?.trim()).toBe('0')

    const { child, output, exited } = spawnForge(['run', '--suite', 'smoke', '--adapter', 'mock', '--attempts', '4', '--seed', 'full', '--json'], env)
    try {
      // the gate: forge run has said why it waits
      expect(await until(() => output.stderr.includes('the store fails every insert of results'), 90_000), output.stderr).toBe(true)
      const line = output.stderr.split('\n').find((l) => l.includes('the store fails every insert of results')) ?? ''
      expect(line).toContain('not enough space. (NOT_ENOUGH_SPACE) (for ')
      expect(line).toContain('Nothing is lost')
      expect(line).toContain(join(home, 'logs', 'ingester.log'))
      expect(child.exitCode).toBeNull()
      // forge stack status says it too, on the ingester's row
      const status = JSON.parse(forge(['stack', 'status', '--json'], env).stdout) as { name: string; state: string; detail: string }[]
      const ingester = status.find((s) => s.name === 'ingester')
      expect(ingester?.state).toBe('running')
      expect(ingester?.detail).toMatch(/the store has failed every insert for \d+ s: Cannot reserve .*NOT_ENOUGH_SPACE/)
    } finally {
      rmSync(fill, { force: true })
    }
    const code = await exited
    expect(code, output.stderr).toBe(0)
    const report = JSON.parse(output.stdout) as { status: string; attempts: number; expected_attempts: number; completeness: { missing_count: number; doubled: number } }
    expect(report.status).toBe('completed')
    expect([report.attempts, report.expected_attempts]).toEqual([20, 20])
    expect(report.completeness).toMatchObject({ missing_count: 0, doubled: 0 })
    // the run stored before the disk filled is still there
    const list = forge(['runs', 'list', '--json'], env)
    expect((JSON.parse(list.stdout) as { status: string }[]).map((r) => r.status)).toEqual(['completed', 'completed'])
  })
})
