/** Watching processes from tests: on state, never on a fixed time. */
import { readFileSync } from 'node:fs'
import { setTimeout as sleep } from 'node:timers/promises'

/** whether `pid` runs (a zombie has exited: its parent has not reaped it yet) */
export function alive(pid: number): boolean {
  try {
    return !readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.startsWith('Z')
  } catch {
    return false
  }
}

/** waits until `check` holds, polling; false if it does not by the deadline */
export async function until(check: () => boolean, ms = 30_000): Promise<boolean> {
  const deadline = Date.now() + ms
  while (!check()) {
    if (Date.now() > deadline) return false
    await sleep(50)
  }
  return true
}

/** waits until `pid` is gone; false if it outlives the deadline */
export const gone = (pid: number, ms = 20_000): Promise<boolean> => until(() => !alive(pid), ms)
