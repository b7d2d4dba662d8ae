/**
 * `stack up` when the Temporal dev server exits while it starts (it picks its internal services'
 * ports itself and, rarely, one it cannot bind: a panic in its log): started again, not waited on
 * for a minute. A wrapper binary plays the first start (it answers on the frontend port, then
 * exits); the second is the real dev server.
 */
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { resolveConfig } from '../../config/index.js'
import { findBinary } from '../../stack/binaries.js'
import { readStackState, stackDown, stackStatus, stackUp } from '../../stack/local-stack.js'
import { gone } from '../helpers/processes.js'
import { setTimeout as sleep } from 'node:timers/promises'

const home = mkdtempSync(join(tmpdir(), 'forge-stack-start-'))
const restartHome = mkdtempSync(join(tmpdir(), 'forge-stack-restart-'))
afterAll(async () => {
  for (const h of [home, restartHome]) {
    await stackDown(resolveConfig({ ...process.env, FORGE_HOME: h }))
    rmSync(h, { recursive: true, force: true })
  }
})

/** Listens on `port` (127.0.0.1) as soon as the port is free again. */
async function occupy(port: number): Promise<Server> {
  for (;;) {
    const server = createServer()
    const bound = await new Promise<boolean>((resolve) => {
      server.once('error', () => resolve(false))
      server.listen(port, '127.0.0.1', () => resolve(true))
    })
    if (bound) return server
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

describe('stack up', () => {
  it('starts the Temporal dev server again when it exits while starting', async () => {
    const wrapper = join(home, 'temporal-once-broken')
    writeFileSync(
      wrapper,
      `#!/bin/bash
if [ ! -e "${home}/first-start" ]; then
  touch "${home}/first-start"
  while [ "$1" != "--port" ]; do shift; done
  python3 -c "import socket, time; s = socket.socket(); s.bind(('127.0.0.1', $2)); s.listen(); time.sleep(1)"
  echo 'panic: runtime error: invalid memory address or nil pointer dereference' >&2
  exit 2
fi
exec ${JSON.stringify(findBinary('temporal', undefined))} "$@"
`,
    )
    chmodSync(wrapper, 0o755)
    const config = resolveConfig({ ...process.env, FORGE_HOME: home, FORGE_TEMPORAL_BIN: wrapper, FORGE_TEMPORAL_ADDRESS: '', FORGE_NATS_URL: '', FORGE_CLICKHOUSE_URL: '' })
    const lines: string[] = []
    const endpoints = await stackUp(config, (line) => lines.push(line), { supervisor: false })
    expect(lines.filter((line) => /the Temporal dev server exited while starting/.test(line))).toHaveLength(1)
    expect(stackStatus(config).find((row) => row.name === 'temporal')).toMatchObject({ state: 'running', detail: expect.stringContaining(endpoints.temporalAddress) as unknown })
  })
})

describe('stack up after the Temporal dev server died', () => {
  it('starts it on its old frontend port even when another process took its HTTP port meanwhile', async () => {
    const config = resolveConfig({ ...process.env, FORGE_HOME: restartHome, FORGE_TEMPORAL_ADDRESS: '', FORGE_NATS_URL: '', FORGE_CLICKHOUSE_URL: '' })
    const first = await stackUp(config, () => undefined, { supervisor: false })
    const before = readStackState(restartHome).temporal!
    const [, httpPort] = before.ports!
    process.kill(before.pid, 'SIGKILL')
    expect(await gone(before.pid, 10_000)).toBe(true)
    // an outgoing connection's ephemeral port, or any listener: the old HTTP port is not free now
    const squatter = await occupy(httpPort!)
    try {
      const lines: string[] = []
      const again = await stackUp(config, (line) => lines.push(line), { supervisor: false })
      // workers and CLIs of a running run keep the address they were given: it must not move
      expect(again.temporalAddress).toBe(first.temporalAddress)
      expect(lines.some((line) => /had died: restarting it on/.test(line))).toBe(true)
      const after = readStackState(restartHome).temporal!
      expect(after.pid).not.toBe(before.pid)
      expect(after.ports![0]).toBe(before.ports![0])
      expect(after.ports![1]).not.toBe(httpPort)
    } finally {
      await new Promise((resolve) => squatter.close(resolve))
    }
  })

  it('waits for its frontend port while a passing connection holds it, rather than moving', async () => {
    const config = resolveConfig({ ...process.env, FORGE_HOME: restartHome, FORGE_TEMPORAL_ADDRESS: '', FORGE_NATS_URL: '', FORGE_CLICKHOUSE_URL: '' })
    const before = readStackState(restartHome).temporal!
    process.kill(before.pid, 'SIGKILL')
    expect(await gone(before.pid, 10_000)).toBe(true)
    const squatter = await occupy(before.ports![0]!)
    // the restart waits (up to 10 s) while the port is held; the holder lets go, and it is on the same address
    const restarting = stackUp(config, () => undefined, { supervisor: false })
    await sleep(1_000)
    expect(readStackState(restartHome).temporal?.pid).toBe(before.pid)
    await new Promise((resolve) => squatter.close(resolve))
    const again = await restarting
    expect(again.temporalAddress).toBe(before.address)
  })
})
