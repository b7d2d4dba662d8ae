/**
 * The bus's disk fills during a run, on the real binaries: the embedded nats-server's JetStream
 * directory is a tmpfs of its own, filled to the last byte before `forge run`. nats-server then fails
 * every write of the results stream — and keeps failing it after the disk has room again, until it
 * restarts (stack/bus-store.ts). forge run must say why it stalls (the supervisor reads nats-server's
 * own error), and once the test frees the disk (after it has read that line: the line is the gate, no
 * sleep) the supervisor restarts nats-server and the run completes whole. Needs root for the mount.
 */
import { spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { resolveConfig } from '../../config/index.js'
import { stackDown } from '../../stack/local-stack.js'
import { forge, spawnForge } from '../helpers/stack.js'
import { until } from '../helpers/processes.js'

const root = mkdtempSync(join(tmpdir(), 'forge-bus-full-'))
const home = join(root, 'home')
const disk = join(home, 'nats')
const fill = join(disk, 'fill')
mkdirSync(disk, { recursive: true })
const mounted = process.getuid?.() === 0 && spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=64m', 'tmpfs', disk]).status === 0
const env = { ...process.env, FORGE_HOME: home, FORGE_LOG_LEVEL: 'warn', FORGE_TEMPORAL_ADDRESS: '', FORGE_NATS_URL: '', FORGE_CLICKHOUSE_URL: '' }

afterAll(async () => {
  await stackDown(resolveConfig(env))
  if (mounted) spawnSync('umount', ['-l', disk])
  rmSync(root, { recursive: true, force: true })
})

describe.skipIf(!mounted)("a run whose bus's disk is full", () => {
  it("says nats-server cannot store results and why, then completes whole once the disk has room (nats-server restarted)", async () => {
    const first = forge(['run', '--suite', 'smoke', '--adapter', 'mock', '--attempts', '1', '--seed', 'room'], env)
    expect(first.status, first.stderr).toBe(0)
    spawnSync('dd', ['if=/dev/zero', `of=${fill}`, 'bs=1M'])
    expect(spawnSync('df', ['--output=avail', disk], { encoding: 'utf8' }).stdout.trim().split('\n').pop()?.trim()).toBe('0')

    const { child, output, exited } = spawnForge(['run', '--suite', 'smoke', '--adapter', 'mock', '--attempts', '4', '--seed', 'full', '--json'], env)
    try {
      // the gate: forge run has said why it stalls, in nats-server's words
      expect(await until(() => output.stderr.includes('nats-server cannot store results'), 90_000), output.stderr).toBe(true)
      const line = output.stderr.split('\n').find((l) => l.includes('nats-server cannot store results')) ?? ''
      expect(line).toContain('no space left on device')
      expect(line).toContain(`Free space under ${disk}`)
      expect(child.exitCode).toBeNull()
    } finally {
      rmSync(fill, { force: true })
    }
    const code = await exited
    expect(code, output.stderr).toBe(0)
    const report = JSON.parse(output.stdout) as { status: string; attempts: number; expected_attempts: number; completeness: { missing_count: number; doubled: number } }
    expect(report.status).toBe('completed')
    expect([report.attempts, report.expected_attempts]).toEqual([20, 20])
    expect(report.completeness).toMatchObject({ missing_count: 0, doubled: 0 })
    // one of the stack's two supervisors (the detached one, or forge run's own) restarted it
    const said = `${output.stderr}\n${readFileSync(join(home, 'logs', 'supervisor.log'), 'utf8')}`
    expect(said).toContain('has room again')
    expect(said).toMatch(/restarted nats in \d+ ms/)
    const list = forge(['runs', 'list', '--json'], env)
    expect((JSON.parse(list.stdout) as { status: string }[]).map((r) => r.status)).toEqual(['completed', 'completed'])
  })
})
