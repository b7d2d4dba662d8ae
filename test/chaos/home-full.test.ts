/**
 * FORGE_HOME on a disk with no room left, before the stack starts: the stack's lock could be made but
 * not written, and forge run took it over again and again — a core spinning, no word, for ever
 * (measured: 3 minutes of it before a timeout stopped it). Now it stops at once, naming the lock and
 * the full disk. Needs root for the mount; skipped elsewhere.
 */
import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { withLock } from '../../stack/local-stack.js'
import { forge } from '../helpers/stack.js'

const root = mkdtempSync(join(tmpdir(), 'forge-home-full-'))
const home = join(root, 'home')
mkdirSync(home, { mode: 0o700 })
const mounted = process.getuid?.() === 0 && spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=4m', 'tmpfs', home]).status === 0
const env = { ...process.env, FORGE_HOME: home, FORGE_LOG_LEVEL: 'warn', FORGE_TEMPORAL_ADDRESS: '', FORGE_NATS_URL: '', FORGE_CLICKHOUSE_URL: '' }

afterAll(() => {
  if (mounted) spawnSync('umount', ['-l', home])
  rmSync(root, { recursive: true, force: true })
})

describe.skipIf(!mounted)('a FORGE_HOME whose disk is full', () => {
  it('stops forge run at once, naming the lock and the full disk, and leaves no lock behind', () => {
    spawnSync('dd', ['if=/dev/zero', `of=${join(home, 'fill')}`, 'bs=1M'])
    const run = forge(['run', '--suite', 'smoke', '--adapter', 'mock', '--attempts', '1'], env, 60_000)
    expect(run.status).not.toBe(0)
    expect(run.status).not.toBe(-1) // not stopped by the timeout
    expect(run.stderr).toContain(`cannot take the stack's lock ${join(home, 'stack.lock')}`)
    expect(run.stderr).toContain('the disk holding FORGE_HOME is full')
    expect(existsSync(join(home, 'stack.lock'))).toBe(false)
  })
})

describe("the stack's lock", () => {
  it('takes over an empty lock left by a process that died before writing its pid', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'forge-lock-'))
    try {
      const lock = join(dir, 'stack.lock')
      writeFileSync(lock, '')
      utimesSync(lock, new Date(Date.now() - 60_000), new Date(Date.now() - 60_000))
      expect(await withLock(dir, () => Promise.resolve('held'))).toBe('held')
      expect(existsSync(lock)).toBe(false)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
