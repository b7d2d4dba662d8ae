/**
 * Process groups of out-of-process agents: each agent is spawned detached as the leader of its
 * own group, so the whole tree it forks can be signalled at once and nothing outlives the
 * attempt. Stopping is SIGTERM to the group, a short grace, then SIGKILL to the group, and it
 * returns only once no living process of the group remains.
 *
 * A process that calls setsid()/setpgid() itself leaves the group and escapes this; containing
 * that needs a cgroup or a container (fleet mode), which is outside this module.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { setTimeout as sleep } from 'node:timers/promises'

/** Groups started by this process and not yet confirmed empty, so an exiting worker can kill them. */
const liveGroups = new Set<number>()
let exitHookInstalled = false

/** Remembers a group leader's pid (= pgid) until stopProcessGroup confirmed the group is gone. */
export function trackProcessGroup(pgid: number): void {
  liveGroups.add(pgid)
  if (!exitHookInstalled) {
    exitHookInstalled = true
    // a worker that exits mid-attempt takes its agents with it (synchronous: 'exit' allows nothing else)
    process.on('exit', killAllProcessGroups)
  }
}

/** SIGKILLs every tracked group at once; for process exit. */
export function killAllProcessGroups(): void {
  for (const pgid of liveGroups) signalGroup(pgid, 'SIGKILL')
  liveGroups.clear()
}

/** Sends `signal` to every process of the group; false when the group no longer exists. */
export function signalGroup(pgid: number, signal: NodeJS.Signals | 0): boolean {
  try {
    process.kill(-pgid, signal)
    return true
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ESRCH') return false
    throw error
  }
}

/**
 * Pids of the group's processes that are still alive. Zombies do not count: an orphaned child
 * that was killed waits for whoever reaps orphans (pid 1 here), yet it runs nothing.
 */
export function livingGroupMembers(pgid: number): number[] {
  if (!signalGroup(pgid, 0)) return []
  let entries: string[]
  try {
    entries = readdirSync('/proc')
  } catch {
    // no procfs (macOS): the group exists, so count its leader as alive
    return [pgid]
  }
  const living: number[] = []
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue
    let stat: string
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8')
    } catch {
      continue // exited while we looked
    }
    // pid (comm) state ppid pgrp …; comm may contain spaces and parentheses, so split after the last ')'
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    const state = fields[0]
    const pgrp = Number(fields[2])
    if (pgrp === pgid && state !== 'Z' && state !== 'X') living.push(Number(entry))
  }
  return living
}

export interface StopOptions {
  /** how long the group gets to exit after SIGTERM before SIGKILL (default 500 ms) */
  termGraceMs?: number
  /** how long to wait for the group to vanish after SIGKILL (default 2,000 ms) */
  killWaitMs?: number
  /** poll interval while waiting (default 10 ms) */
  pollMs?: number
}

export interface StopReport {
  /** 'gone' (nothing was left), 'term' (SIGTERM sufficed) or 'kill' (SIGKILL was needed) */
  via: 'gone' | 'term' | 'kill'
  /** pids still alive after SIGKILL and the wait; empty unless something escaped SIGKILL (D state) */
  survivors: number[]
  elapsed_ms: number
}

/** SIGTERM the group, wait up to the grace, SIGKILL it, wait until no living member remains. */
export async function stopProcessGroup(pgid: number, opts: StopOptions = {}): Promise<StopReport> {
  const started = performance.now()
  const pollMs = opts.pollMs ?? 10
  const elapsed = (): number => Math.round(performance.now() - started)
  try {
    if (livingGroupMembers(pgid).length === 0) {
      signalGroup(pgid, 'SIGKILL') // zombies only: nothing to wait for
      return { via: 'gone', survivors: [], elapsed_ms: elapsed() }
    }
    signalGroup(pgid, 'SIGTERM')
    if (await waitUntilEmpty(pgid, opts.termGraceMs ?? 500, pollMs)) return { via: 'term', survivors: [], elapsed_ms: elapsed() }
    signalGroup(pgid, 'SIGKILL')
    await waitUntilEmpty(pgid, opts.killWaitMs ?? 2_000, pollMs)
    return { via: 'kill', survivors: livingGroupMembers(pgid), elapsed_ms: elapsed() }
  } finally {
    liveGroups.delete(pgid)
  }
}

async function waitUntilEmpty(pgid: number, timeoutMs: number, pollMs: number): Promise<boolean> {
  const deadline = performance.now() + timeoutMs
  for (;;) {
    if (livingGroupMembers(pgid).length === 0) return true
    if (performance.now() >= deadline) return false
    await sleep(pollMs)
  }
}
