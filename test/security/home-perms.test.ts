/**
 * Another user of the machine reads nothing of Forge's from disk. FORGE_HOME holds what the bus's
 * per-role users and the results key protect — JetStream's files (every result message), chDB's
 * data parts, the Temporal dev server's database (every plan), the logs — and an embedded store may
 * live elsewhere (FORGE_STORE_PATH). Both made 0755 by an earlier Forge (or the umask) are taken to
 * 0700 when the stack starts; then a `forge run` stores a run, and `nobody` (uid 65534, via setpriv)
 * tries to read each of them.
 */
import { spawnSync } from 'node:child_process'
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { resolveConfig } from '../../config/index.js'
import { stackDown } from '../../stack/local-stack.js'
import { forge } from '../helpers/stack.js'

const root = mkdtempSync(join(tmpdir(), 'forge-home-perms-'))
// the test's own directory lets anyone pass, as /tmp and a home directory usually do
chmodSync(root, 0o755)
const home = join(root, 'home')
const store = join(root, 'store-elsewhere')
const env = { ...process.env, FORGE_HOME: home, FORGE_STORE_PATH: store, FORGE_LOG_LEVEL: 'warn', FORGE_TEMPORAL_ADDRESS: '', FORGE_NATS_URL: '', FORGE_CLICKHOUSE_URL: '' }

afterAll(async () => {
  await stackDown(resolveConfig(env))
  rmSync(root, { recursive: true, force: true })
})

const asRoot = process.getuid?.() === 0
/** `command` run as nobody: exit status and stderr */
const asNobody = (command: string[]) => spawnSync('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', ...command], { encoding: 'utf8' })

describe('FORGE_HOME and the store are for their owner only', () => {
  it('a home and a store an earlier Forge made 0755 are 0700 once the stack is up, and nobody reads a file of either', () => {
    mkdirSync(home, { mode: 0o755 })
    mkdirSync(store, { mode: 0o755 })
    chmodSync(home, 0o755)
    chmodSync(store, 0o755)
    const run = forge(['run', '--suite', 'smoke', '--adapter', 'mock', '--attempts', '1', '--seed', 'perms'], env)
    expect(run.status, run.stderr).toBe(0)
    expect(statSync(home).mode & 0o777).toBe(0o700)
    expect(statSync(store).mode & 0o777).toBe(0o700)
    // what there is to read: the dev server's database, JetStream's and chDB's files, the logs
    const files = ['temporal.db', 'nats', 'logs'].map((f) => join(home, f))
    expect(readdirSync(join(home, 'nats'), { recursive: true }).length).toBeGreaterThan(0)
    expect(readdirSync(store).length).toBeGreaterThan(0)
    if (!asRoot) return
    for (const path of [...files, store]) {
      const tried = asNobody(['ls', '-R', path])
      expect(tried.status, `${path} listed by nobody: ${tried.stdout}`).not.toBe(0)
      expect(tried.stderr).toContain('Permission denied')
    }
    const read = asNobody(['cat', join(home, 'temporal.db')])
    expect(read.status).not.toBe(0)
    expect(read.stderr).toContain('Permission denied')
  })
})
