/**
 * `stack up` when the Temporal dev server exits while it starts (it picks its internal services'
 * ports itself and, rarely, one it cannot bind: a panic in its log): started again, not waited on
 * for a minute. A wrapper binary plays the first start (it answers on the frontend port, then
 * exits); the second is the real dev server.
 */
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { jetstream, jetstreamManager } from '@nats-io/jetstream'
import { afterAll, describe, expect, it } from 'vitest'
import { resolveConfig } from '../../config/index.js'
import { findBinary } from '../../stack/binaries.js'
import { readStackState, stackDown, stackStatus, stackUp } from '../../stack/local-stack.js'
import { connectBus, RESULTS_STREAM } from '../../store/bus.js'
import { gone } from '../helpers/processes.js'
import { setTimeout as sleep } from 'node:timers/promises'

const home = mkdtempSync(join(tmpdir(), 'forge-stack-start-'))
const restartHome = mkdtempSync(join(tmpdir(), 'forge-stack-restart-'))
const natsHome = mkdtempSync(join(tmpdir(), 'forge-stack-nats-kill-'))
const squatHome = mkdtempSync(join(tmpdir(), 'forge-stack-squat-'))
afterAll(async () => {
  for (const h of [home, restartHome, natsHome, squatHome]) {
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

/**
 * A wrapper that, the first time, binds (without listening: as an outgoing connection's local port
 * does) the port the server is about to bind, then runs the real server, which cannot listen there;
 * every later start runs the real server untouched. `portOf` is bash that sets $port from "$@".
 */
function squattingWrapper(name: string, real: string, portOf: string): { path: string; squatted: () => number; release: () => void } {
  const dir = join(squatHome, name)
  mkdirSync(dir)
  const path = join(dir, 'wrapper')
  writeFileSync(
    path,
    `#!/bin/bash
if [ ! -e "${dir}/squatted" ]; then
  ${portOf}
  echo "$port" > "${dir}/squatted"
  python3 -c "import socket, time; s = socket.socket(); s.bind(('127.0.0.1', $port)); open('${dir}/bound', 'w').close(); time.sleep(60)" &
  echo $! > "${dir}/squatter.pid"
  while [ ! -e "${dir}/bound" ]; do sleep 0.05; done
fi
exec ${JSON.stringify(real)} "$@"
`,
  )
  chmodSync(path, 0o755)
  return {
    path,
    squatted: () => Number(readFileSync(join(dir, 'squatted'), 'utf8')),
    release: () => {
      try {
        process.kill(Number(readFileSync(join(dir, 'squatter.pid'), 'utf8')), 'SIGKILL')
      } catch {
        // never started, or gone
      }
    },
  }
}

describe('stack up when a port it was given is taken before the server binds it', () => {
  it('starts the Temporal dev server and nats-server again on other ports (CI: an outgoing connection took the HTTP port)', async () => {
    const temporal = squattingWrapper('temporal', findBinary('temporal', undefined), 'port=$(echo "$@" | grep -o -- "--http-port [0-9]*" | cut -d" " -f2)')
    const nats = squattingWrapper('nats', findBinary('nats-server', undefined), 'port=$(grep -o "listen: 127.0.0.1:[0-9]*" "$2" | cut -d: -f3)')
    try {
      const config = resolveConfig({ ...process.env, FORGE_HOME: squatHome, FORGE_TEMPORAL_BIN: temporal.path, FORGE_NATS_BIN: nats.path, FORGE_TEMPORAL_ADDRESS: '', FORGE_NATS_URL: '', FORGE_CLICKHOUSE_URL: '' })
      const lines: string[] = []
      const endpoints = await stackUp(config, (line) => lines.push(line), { supervisor: false })
      expect(lines.filter((line) => /could not listen on a port that was free a moment before/.test(line))).toEqual([
        'the Temporal dev server could not listen on a port that was free a moment before: starting it again…',
        'nats-server could not listen on a port that was free a moment before: starting it again…',
      ])
      expect(readStackState(squatHome).temporal!.ports![1]).not.toBe(temporal.squatted())
      expect(endpoints.natsUrl).not.toContain(`:${nats.squatted()}`)
      expect(stackStatus(config).map((row) => [row.name, row.state])).toEqual(expect.arrayContaining([['temporal', 'running'], ['nats', 'running'], ['ingester', 'running']]))
    } finally {
      temporal.release()
      nats.release()
    }
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

describe('nats-server SIGKILLed right after acknowledging', () => {
  it('keeps every message it acknowledged: each is in its file before the ack, whatever the sync interval', async () => {
    const config = resolveConfig({ ...process.env, FORGE_HOME: natsHome, FORGE_TEMPORAL_ADDRESS: '', FORGE_NATS_URL: '', FORGE_CLICKHOUSE_URL: '' })
    const { natsUrl } = await stackUp(config, () => undefined, { supervisor: false })
    const nats = readStackState(natsHome).nats!
    // the messages must stay in the stream only: no ingester takes them
    const ingester = readStackState(natsHome).ingester!
    process.kill(ingester.pid, 'SIGKILL')
    expect(await gone(ingester.pid, 10_000)).toBe(true)
    const nc = await connectBus(natsUrl, 'nats-kill-test', 'worker')
    const js = jetstream(nc)
    const sent = 300
    let lastSeq = 0
    // acked one after another as a worker publishes, then the server dies at once, before any periodic sync
    for (let i = 0; i < sent; i++) lastSeq = (await js.publish(`forge.results.attempt.kill-${i}`, `acked ${i}`, { msgID: `kill-${i}` })).seq
    process.kill(nats.pid, 'SIGKILL')
    expect(await gone(nats.pid, 10_000)).toBe(true)
    await nc.close().catch(() => undefined)

    await stackUp(config, () => undefined, { supervisor: false })
    expect(readStackState(natsHome).nats!.pid).not.toBe(nats.pid)
    const again = await connectBus(natsUrl, 'nats-kill-test', 'worker')
    try {
      const jsm = await jetstreamManager(again)
      const { state } = await jsm.streams.info(RESULTS_STREAM)
      expect(state.last_seq).toBe(lastSeq)
      const last = await jsm.streams.getMessage(RESULTS_STREAM, { seq: lastSeq })
      expect({ subject: last?.subject, data: last?.string() }).toEqual({ subject: `forge.results.attempt.kill-${sent - 1}`, data: `acked ${sent - 1}` })
      const first = await jsm.streams.getMessage(RESULTS_STREAM, { seq: lastSeq - sent + 1 })
      expect(first?.string()).toBe('acked 0')
    } finally {
      await again.close()
    }
  })
})
