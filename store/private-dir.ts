/**
 * Forge's own directories — FORGE_HOME, and an embedded store kept elsewhere (FORGE_STORE_PATH) —
 * are for their owner only. They hold everything the bus's per-role users and the results key protect:
 * JetStream's files (every result message), chDB's data parts (every stored run, trace and answer),
 * the Temporal dev server's database (every plan), the logs. Made with the default umask they were
 * 0755: any local user could read all of it straight from disk, past NATS's credentials.
 */
import { chmodSync, mkdirSync, statSync } from 'node:fs'

/** Creates `dir` (and missing parents) as 0700, and takes group and other access off it when this process owns it. */
export function ensurePrivateDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 })
  const { mode, uid } = statSync(dir)
  // a directory of another user (a test's, a shared mount) is left as it is: only its owner may change it
  if ((mode & 0o077) !== 0 && uid === process.getuid?.()) chmodSync(dir, mode & 0o700)
}
