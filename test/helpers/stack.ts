/** Test harness around a real embedded stack (Temporal dev server, nats-server, ingester + chDB) in a temp FORGE_HOME. */
import { execFile, spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { resolveConfig, type ForgeConfig } from '../../stack/config.js'
import { stackDown, stackUp, type Endpoints } from '../../stack/local-stack.js'
import { packageRoot } from '../../stack/paths.js'

/** Temporal's PENDING_ACTIVITY_STATE_STARTED (a pending activity's `state`): a worker has taken the activity and runs it */
export const PENDING_ACTIVITY_STARTED = 2

export interface TestStack {
  home: string
  config: ForgeConfig
  endpoints: Endpoints
  /** environment for CLI child processes that should use this stack */
  env: NodeJS.ProcessEnv
  down(): Promise<void>
}

/** An embedded stack in a new FORGE_HOME; `settings` (FORGE_* variables) go to its config, and through it to the stack's processes. */
export async function startTestStack(name: string, settings: Record<string, string> = {}): Promise<TestStack> {
  const home = mkdtempSync(join(tmpdir(), `forge-${name}-`))
  const env: NodeJS.ProcessEnv = { ...process.env, FORGE_HOME: home, FORGE_LOG_LEVEL: 'warn', ...settings }
  for (const key of ['FORGE_TEMPORAL_ADDRESS', 'FORGE_NATS_URL', 'FORGE_CLICKHOUSE_URL']) delete env[key]
  const config = resolveConfig(env)
  const endpoints = await stackUp(config)
  return {
    home,
    config,
    endpoints,
    env,
    async down() {
      await stackDown(config)
      rmSync(home, { recursive: true, force: true })
    },
  }
}

export interface CliResult {
  status: number
  stdout: string
  stderr: string
}

/** Runs the real `forge` CLI (bin/run.js) as a user would. */
export function forge(args: string[], env: NodeJS.ProcessEnv, timeoutMs = 180_000): CliResult {
  const r = spawnSync(process.execPath, [join(packageRoot(), 'bin', 'run.js'), ...args], { env, encoding: 'utf8', timeout: timeoutMs })
  return { status: r.status ?? -1, stdout: r.stdout, stderr: r.stderr }
}

/** Like `forge`, without blocking the event loop (for reads that overlap a running command). */
export function forgeAsync(args: string[], env: NodeJS.ProcessEnv, timeoutMs = 60_000): Promise<CliResult> {
  return new Promise((resolve) => {
    execFile(process.execPath, [join(packageRoot(), 'bin', 'run.js'), ...args], { env, encoding: 'utf8', timeout: timeoutMs }, (error, stdout, stderr) => {
      const status = error ? (typeof error.code === 'number' ? error.code : -1) : 0
      resolve({ status, stdout, stderr })
    })
  })
}

/** Starts the real `forge` CLI without waiting: its output so far, and its exit code once it ends. */
export function spawnForge(args: string[], env: NodeJS.ProcessEnv): { child: ChildProcess; output: { stdout: string; stderr: string }; exited: Promise<number | null> } {
  const child = spawn(process.execPath, [join(packageRoot(), 'bin', 'run.js'), ...args], { env })
  const output = { stdout: '', stderr: '' }
  child.stdout?.on('data', (chunk: Buffer) => (output.stdout += chunk.toString()))
  child.stderr?.on('data', (chunk: Buffer) => (output.stderr += chunk.toString()))
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
  return { child, output, exited }
}
