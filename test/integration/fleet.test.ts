/**
 * Fleet mode: Forge uses servers it did not start when FORGE_TEMPORAL_ADDRESS, FORGE_NATS_URL and
 * FORGE_CLICKHOUSE_URL are set. Temporal and NATS run here as independent processes; the ClickHouse
 * server needs a Docker engine (testcontainers) and is skipped, saying why, where there is none.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runSuite } from '../../app/run.js'
import { openReader } from '../../app/store-access.js'
import { findBinary } from '../../stack/binaries.js'
import { resolveConfig } from '../../stack/config.js'
import { freePorts, stackDown, stackStatus } from '../../stack/local-stack.js'

const servers: ChildProcess[] = []
let home: string
let temporalAddress: string
let natsUrl: string

async function waitForTcp(port: number): Promise<void> {
  const { Socket } = await import('node:net')
  for (let i = 0; i < 300; i++) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = new Socket()
      s.once('connect', () => (s.destroy(), resolve(true)))
      s.once('error', () => resolve(false))
      s.connect(port, '127.0.0.1')
    })
    if (ok) return
    await sleep(100)
  }
  throw new Error(`nothing listened on ${port}`)
}

beforeAll(async () => {
  home = mkdtempSync(join(tmpdir(), 'forge-fleet-'))
  const [temporalPort = 0, httpPort = 0, metricsPort = 0, natsPort = 0] = await freePorts(4)
  servers.push(
    spawn(findBinary('temporal'), ['server', 'start-dev', '--headless', '--ip', '127.0.0.1', '--port', String(temporalPort),
      '--http-port', String(httpPort), '--metrics-port', String(metricsPort), '--log-level', 'error'], { stdio: 'ignore' }),
    spawn(findBinary('nats-server'), ['-js', '-a', '127.0.0.1', '-p', String(natsPort), '-sd', join(home, 'external-nats')], { stdio: 'ignore' }),
  )
  temporalAddress = `127.0.0.1:${temporalPort}`
  natsUrl = `nats://127.0.0.1:${natsPort}`
  await Promise.all([waitForTcp(temporalPort), waitForTcp(natsPort)])
})

afterAll(async () => {
  if (home) await stackDown(resolveConfig({ FORGE_HOME: home, FORGE_TEMPORAL_ADDRESS: temporalAddress, FORGE_NATS_URL: natsUrl }))
  for (const server of servers) server.kill('SIGTERM')
  if (home) rmSync(home, { recursive: true, force: true })
})

describe('fleet mode', () => {
  it('runs against an external Temporal and NATS, starting only the ingester itself', async () => {
    const config = resolveConfig({ FORGE_HOME: home, FORGE_TEMPORAL_ADDRESS: temporalAddress, FORGE_NATS_URL: natsUrl })
    const report = await runSuite(config, { suite: 'toy_math', adapter: 'mock', attempts: 4, workers: 1, concurrency: 10, seed: 'fleet' })
    expect(report.attempts).toBe(12)
    const state = JSON.parse(readFileSync(join(home, 'stack.json'), 'utf8')) as Record<string, unknown>
    expect(Object.keys(state).sort()).toEqual(['ingester', 'supervisor'])
    expect(stackStatus(config).map((c) => [c.name, c.state])).toEqual([
      ['temporal', 'external'],
      ['nats', 'external'],
      ['ingester', 'running'],
      ['supervisor', 'running'],
    ])
    expect(existsSync(join(home, 'temporal.db'))).toBe(false)
  })

  const docker = spawnSync('docker', ['info'], { stdio: 'ignore', timeout: 10_000 }).status === 0
  if (!docker) console.warn('fleet.test: skipping the ClickHouse-server test: no Docker engine answers `docker info` on this machine')

  it.skipIf(!docker)('stores results in a ClickHouse server over HTTP (testcontainers)', async () => {
    const { GenericContainer, Wait } = await import('testcontainers')
    const container = await new GenericContainer('clickhouse/clickhouse-server:24.8')
      .withExposedPorts(8123)
      .withEnvironment({ CLICKHOUSE_SKIP_USER_SETUP: '1' })
      .withWaitStrategy(Wait.forHttp('/ping', 8123))
      .start()
    try {
      const url = `http://${container.getHost()}:${container.getMappedPort(8123)}`
      const serverHome = mkdtempSync(join(tmpdir(), 'forge-fleet-ch-'))
      const config = resolveConfig({ FORGE_HOME: serverHome, FORGE_TEMPORAL_ADDRESS: temporalAddress, FORGE_NATS_URL: natsUrl, FORGE_CLICKHOUSE_URL: url })
      // the ingester of the embedded-store test above consumes the same stream: stop it first
      await stackDown(resolveConfig({ FORGE_HOME: home, FORGE_TEMPORAL_ADDRESS: temporalAddress, FORGE_NATS_URL: natsUrl }))
      try {
        const report = await runSuite(config, { suite: 'toy_math', adapter: 'mock', attempts: 3, workers: 1, concurrency: 10, seed: 'ch' })
        const reader = await openReader(config)
        const [row] = await reader.query<{ n: string }>('SELECT count() AS n FROM attempts FINAL WHERE run_id = {run:String}', { run: report.run_id })
        await reader.close()
        expect(Number(row!.n)).toBe(9)
      } finally {
        await stackDown(config)
        rmSync(serverHome, { recursive: true, force: true })
      }
    } finally {
      await container.stop()
    }
  })
})
