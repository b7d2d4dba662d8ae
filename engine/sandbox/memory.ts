/**
 * The sandbox's memory limit, as seen from the worker. Where the worker may create cgroups (root,
 * cgroup v1 `memory` writable) the kernel enforces `memory_mb` on the agent's processes together,
 * and this module only reads what the cgroup saw (its peak, how many processes its OOM killer
 * took). Elsewhere — a worker without root (a developer's laptop, the chart's non-root pods) or a
 * cgroup tree it cannot write — nothing in the kernel bounds the sandbox as a whole, so:
 *
 * - every process in the sandbox gets `RLIMIT_DATA` = `memory_mb` (the init's `ulimit -d`): no one
 *   process can allocate more (V8, CPython, glibc reserve address space with PROT_NONE, which the
 *   limit does not count, so runtimes start normally);
 * - the worker polls the sandbox's processes every WATCH_INTERVAL_MS — anonymous and shared memory
 *   (`RssAnon` + `RssShmem`) of every process of its PID namespace, read through the init's own
 *   /proc, and the memfds each holds open (shared memory that counts in `RssShmem` only while
 *   mapped: written full and never mapped, it was in no figure, nor under RLIMIT_DATA) — and while
 *   their sum is over `memory_mb` it SIGKILLs the largest, as the kernel's OOM killer would in a
 *   cgroup. Between two polls a sandbox can overshoot by what its processes allocate in that time.
 *   (System V shared memory, the other memory no process maps, is switched off in the sandbox's IPC
 *   namespace: engine/sandbox/layout.ts.)
 *
 * Either way the attempt's sandbox span says which held (`memory_enforcement`), the peak and the
 * kills, and a kill is an error of kind `memory_limit` in the trace.
 */
import { readdirSync, readFileSync, readlinkSync, statSync } from 'node:fs'

/** How often the worker reads a sandbox's memory when no cgroup limits it. */
export const WATCH_INTERVAL_MS = 100

/** What a sandbox's memory came to over an attempt. */
export interface MemoryReport {
  limit_mb: number
  enforcement: 'cgroup' | 'watch'
  /** the most the sandbox's processes held at once (cgroup: its max usage; watch: the largest poll, null when the attempt ended before the first) */
  peak_mb: number | null
  /** processes killed at the limit (cgroup: by the kernel's OOM killer) */
  kills: number
  /** what the watch killed, largest first at each poll (empty for a cgroup: the kernel does not say) */
  killed: Array<{ pid: number; command: string; mb: number }>
}

/** A running memory watch; `stop` ends it (before the sandbox is closed) and says what it saw. */
export interface MemoryWatch {
  stop(): MemoryReport
}

/** One process of the sandbox as a poll saw it. */
export interface ProcessMemory {
  /** pid inside the sandbox's PID namespace */
  pid: number
  command: string
  /** RssAnon + RssShmem, in bytes */
  bytes: number
}

/**
 * Name and memory of a /proc/<pid>/status text: RssAnon, plus RssShmem or the bytes of the memfds it
 * holds open (`memfdBytes`), whichever is larger — a mapped memfd counts in both; undefined for a
 * kernel thread or a zombie (no memory lines).
 */
export function processMemory(pid: number, status: string, memfdBytes = 0): ProcessMemory | undefined {
  const kib = (pattern: RegExp): number | undefined => {
    const match = pattern.exec(status)
    return match === null ? undefined : Number(match[1]) * 1024
  }
  const anon = kib(RSS_ANON)
  if (anon === undefined) return undefined
  return { pid, command: STATUS_NAME.exec(status)?.[1] ?? '?', bytes: anon + Math.max(kib(RSS_SHMEM) ?? 0, memfdBytes) }
}

/**
 * The bytes held by the memfds among a process's open files (`fdDir`: its /proc/<pid>/fd), each
 * memfd counted once across the processes of one poll (`seen`: device and inode): what a file of
 * them really holds (its blocks, not its size: a truncated-up memfd holds nothing). 0 when the
 * directory cannot be read (the process exited).
 */
export function memfdBytes(fdDir: string, seen: Set<string>): number {
  let fds: string[]
  try {
    fds = readdirSync(fdDir)
  } catch {
    return 0
  }
  let bytes = 0
  for (const fd of fds) {
    try {
      if (!readlinkSync(`${fdDir}/${fd}`).startsWith('/memfd:')) continue
      const file = statSync(`${fdDir}/${fd}`)
      const id = `${file.dev}:${file.ino}`
      if (seen.has(id)) continue
      seen.add(id)
      bytes += file.blocks * 512
    } catch {
      // closed since the listing
    }
  }
  return bytes
}

const RSS_ANON = /^RssAnon:\s+(\d+) kB$/m
const RSS_SHMEM = /^RssShmem:\s+(\d+) kB$/m
const STATUS_NAME = /^Name:\t(.*)$/m

/**
 * Which processes to kill so that the rest fit in `limit` bytes: the largest first, as the kernel's
 * OOM killer picks in a cgroup (pid 1, the sandbox's init, last: killing it ends the whole sandbox).
 */
export function overLimit(processes: ProcessMemory[], limit: number): ProcessMemory[] {
  let total = processes.reduce((sum, p) => sum + p.bytes, 0)
  const victims: ProcessMemory[] = []
  const byCost = [...processes].sort((a, b) => Number(a.pid === 1) - Number(b.pid === 1) || b.bytes - a.bytes)
  for (const p of byCost) {
    if (total <= limit) break
    victims.push(p)
    total -= p.bytes
  }
  return victims
}

const MB = 1024 * 1024

/** The memory of a sandbox whose processes are in the cgroup `dir` (cgroup v1 memory controller): read when the attempt ends. */
export function cgroupMemoryWatch(dir: string, limitMb: number): MemoryWatch {
  return {
    stop() {
      const read = (file: string): string => {
        try {
          return readFileSync(`${dir}/${file}`, 'utf8')
        } catch {
          return ''
        }
      }
      return {
        limit_mb: limitMb,
        enforcement: 'cgroup',
        peak_mb: Math.round(Number(read('memory.max_usage_in_bytes').trim() || 0) / MB),
        kills: Number(/^oom_kill (\d+)$/m.exec(read('memory.oom_control'))?.[1] ?? 0),
        killed: [],
      }
    },
  }
}

/**
 * Polls the sandbox started as `launcherPid` (the `unshare` process; its one child is the init,
 * pid 1 of the sandbox) every WATCH_INTERVAL_MS, killing its largest processes while they hold
 * more than `limitMb` together.
 */
export function pollingMemoryWatch(launcherPid: number, limitMb: number): MemoryWatch {
  const limit = limitMb * MB
  const report: MemoryReport = { limit_mb: limitMb, enforcement: 'watch', peak_mb: null, kills: 0, killed: [] }
  const hostProc = statSync('/proc').dev
  let init: number | undefined
  const poll = (): void => {
    init ??= childrenOf(launcherPid)[0]
    if (init === undefined) return
    // until the init has mounted its own /proc and pivoted into its root, its /proc is the host's
    const procDir = `/proc/${init}/root/proc`
    try {
      if (statSync(procDir).dev === hostProc) return
    } catch {
      return // the sandbox is gone, or not yet there
    }
    const processes: ProcessMemory[] = []
    let entries: string[]
    try {
      entries = readdirSync(procDir)
    } catch {
      return
    }
    const memfds = new Set<string>()
    for (const entry of entries) {
      if (!/^\d+$/.test(entry)) continue
      try {
        const found = processMemory(Number(entry), readFileSync(`${procDir}/${entry}/status`, 'latin1'), memfdBytes(`${procDir}/${entry}/fd`, memfds))
        if (found !== undefined) processes.push(found)
      } catch {
        // exited since the listing
      }
    }
    const total = processes.reduce((sum, p) => sum + p.bytes, 0)
    report.peak_mb = Math.max(report.peak_mb ?? 0, Math.round(total / MB))
    const victims = overLimit(processes, limit)
    if (victims.length === 0) return
    const hostPids = hostPidsOf(init)
    for (const victim of victims) {
      const hostPid = hostPids.get(victim.pid)
      if (hostPid === undefined) continue
      try {
        process.kill(hostPid, 'SIGKILL')
        report.kills++
        if (report.killed.length < 10) report.killed.push({ pid: victim.pid, command: victim.command, mb: Math.round(victim.bytes / MB) })
      } catch {
        // exited on its own
      }
    }
  }
  const timer = setInterval(poll, WATCH_INTERVAL_MS)
  timer.unref()
  return {
    stop() {
      clearInterval(timer)
      return report
    },
  }
}

/** Children of every thread of `pid` (a process forks from any of its threads). */
function childrenOf(pid: number): number[] {
  const out: number[] = []
  let tasks: string[]
  try {
    tasks = readdirSync(`/proc/${pid}/task`)
  } catch {
    return out
  }
  for (const task of tasks) {
    try {
      for (const child of readFileSync(`/proc/${pid}/task/${task}/children`, 'latin1').split(' ')) if (child !== '') out.push(Number(child))
    } catch {
      // the thread ended
    }
  }
  return out
}

/**
 * Host pids of the sandbox's processes by their pid inside it: every process of a PID namespace
 * descends from its init (orphans are re-parented to it), and /proc/<pid>/status's last NSpid is
 * the pid in the innermost namespace. Walked only when something must be killed.
 */
function hostPidsOf(init: number): Map<number, number> {
  const byInner = new Map<number, number>()
  const pending = [init]
  for (let pid = pending.pop(); pid !== undefined; pid = pending.pop()) {
    try {
      const nspid = /^NSpid:\t(.*)$/m.exec(readFileSync(`/proc/${pid}/status`, 'latin1'))?.[1]?.split('\t')
      if (nspid !== undefined) byInner.set(Number(nspid[nspid.length - 1]), pid)
    } catch {
      continue
    }
    pending.push(...childrenOf(pid))
  }
  return byInner
}
