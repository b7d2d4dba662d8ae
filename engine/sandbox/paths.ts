/** Small helpers the sandboxed adapters share: which host paths to protect, which ports to bridge. */
import path from 'node:path'
import { readSetting } from '../../config/index.js'

/** FORGE_HOME as the worker resolves it (default ./.forge): never visible to an agent. */
export function forgeHomeOf(env: NodeJS.ProcessEnv, cwd: string = process.cwd()): string {
  return path.resolve(cwd, readSetting('home', env))
}

/** The port of a 127.0.0.1 URL the harness handed out (the tool endpoint, the LLM gateway). */
export function portOf(url: string): number {
  const parsed = new URL(url)
  if (parsed.hostname !== '127.0.0.1') throw new Error(`sandbox: only 127.0.0.1 endpoints can be bridged into a sandbox, not ${url}`)
  const port = Number(parsed.port)
  if (!Number.isInteger(port) || port <= 0) throw new Error(`sandbox: ${url} names no port`)
  return port
}
