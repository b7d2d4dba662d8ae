/**
 * A nats-server whose JetStream could not write its files (its disk full) fails every later write
 * of that stream, even once the disk has room again, until it restarts — measured with nats-server
 * 2.x on a full tmpfs: after the disk was freed, every publish still timed out and its log said
 * `JetStream failed to store a msg … no space left on device`; a restart stored them at once. The
 * stack's supervisor (stack/supervisor.ts) says so while the disk is full and restarts the embedded
 * nats-server once it has room; what JetStream acknowledged is in its files, and the workers'
 * publishes that failed meanwhile are retried by their activities.
 */
import { closeSync, fstatSync, openSync, readSync, statfsSync } from 'node:fs'
import { join } from 'node:path'
import type { ForgeConfig } from '../config/index.js'
import { isAlive, readStackState } from './local-stack.js'

/** How much room the bus's directory needs before its nats-server is restarted (a few of JetStream's blocks). */
export const BUS_ROOM_BYTES = 16 * 1024 * 1024

export interface BusStoreFailure {
  /** the nats-server that failed to write */
  pid: number
  /** its log line, without pid and time */
  error: string
  /** JetStream's directory, and how many bytes its file system has free now */
  dir: string
  free_bytes: number
}

/** The last `[ERR] JetStream failed to store/write …` line of nats-server `pid` in `log`, without its prefix. */
export function jetStreamWriteFailure(log: string, pid: number): string | undefined {
  const lines = log.split('\n')
  for (let i = lines.length - 1; i >= 0; i--) {
    const match = /^\[(\d+)\] \S+ \S+ \[ERR\] (JetStream (?:failed|error) .*(?:no space left on device|disk quota exceeded).*)$/.exec(lines[i]!)
    if (match !== null && Number(match[1]) === pid) return match[2]
  }
  return undefined
}

/** The end of a file (at most `bytes`), '' when it cannot be read. */
function tailBytes(file: string, bytes: number): string {
  let fd: number | undefined
  try {
    fd = openSync(file, 'r')
    const size = fstatSync(fd).size
    const length = Math.min(size, bytes)
    const buffer = Buffer.alloc(length)
    readSync(fd, buffer, 0, length, size - length)
    return buffer.toString('utf8')
  } catch {
    return ''
  } finally {
    if (fd !== undefined) closeSync(fd)
  }
}

/** The embedded nats-server's failed JetStream write, if the running one logged one (undefined for an external bus). */
export function busStoreFailure(config: ForgeConfig): BusStoreFailure | undefined {
  if (config.natsUrl !== undefined) return undefined
  const nats = readStackState(config.home).nats
  if (!isAlive(nats)) return undefined
  const error = jetStreamWriteFailure(tailBytes(nats.log, 64 * 1024), nats.pid)
  if (error === undefined) return undefined
  const dir = join(config.home, 'nats')
  let free = 0
  try {
    const fs = statfsSync(dir)
    free = fs.bavail * fs.bsize
  } catch {
    // unknown: treated as full
  }
  return { pid: nats.pid, error, dir, free_bytes: free }
}
