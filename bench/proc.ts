/**
 * Reading processes from /proc for the benches: resident memory and CPU seconds, and a sampler that
 * keeps a series per named process (RSS start / peak / end, CPU used between two marks).
 */
import { spawnSync } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { median, summarizeSeries, type SeriesSummary } from './measure.js'

/** a process's resident set (VmRSS) or its high-water mark (VmHWM) in KiB; 0 once it is gone */
export function rssKiB(pid: number, field: 'VmRSS' | 'VmHWM' = 'VmRSS'): number {
  try {
    const match = new RegExp(`${field}:\\s+(\\d+)`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
    return match ? Number(match[1]) : 0
  } catch {
    return 0
  }
}

/** utime + stime of a /proc stat line, in clock ticks (USER_HZ = 100) */
function statTicks(stat: string): number {
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return Number(fields[11]) + Number(fields[12])
}

/** CPU seconds (user + system) a process has used so far, from /proc/<pid>/stat; 0 once it is gone */
export function cpuSeconds(pid: number): number {
  try {
    return statTicks(readFileSync(`/proc/${pid}/stat`, 'utf8')) / 100
  } catch {
    return 0
  }
}

/**
 * CPU seconds (user + system) the threads of a process named `comm` have used so far (chDB's merge
 * threads are `MergeMutate`); only threads still alive count, which a pool's threads are.
 */
export function threadCpuSeconds(pid: number, comm: string): number {
  let ticks = 0
  let tids: string[]
  try {
    tids = readdirSync(`/proc/${pid}/task`)
  } catch {
    return 0
  }
  for (const tid of tids) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8')
      if (stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')) === comm) ticks += statTicks(stat)
    } catch {
      // the thread ended between the listing and the read
    }
  }
  return ticks / 100
}

/** Samples named processes' RSS and CPU; a name may be re-pointed at a new pid (a restarted worker). */
export class ProcessSampler {
  private readonly pids = new Map<string, number>()
  private readonly rss = new Map<string, number[]>()
  private readonly cpuLast = new Map<string, number>()
  private readonly cpuMark = new Map<string, number>()
  private timer: NodeJS.Timeout | undefined

  watch(name: string, pid: number | undefined): void {
    if (pid === undefined || pid <= 0) return
    // another process under this name: the mark was the other's
    if (this.pids.get(name) !== pid) this.cpuMark.delete(name)
    this.pids.set(name, pid)
    if (!this.rss.has(name)) this.rss.set(name, [])
  }

  sample(): void {
    for (const [name, pid] of this.pids) {
      this.rss.get(name)!.push(rssKiB(pid))
      const cpu = cpuSeconds(pid)
      if (cpu > 0) this.cpuLast.set(name, cpu)
    }
  }

  /** samples every `ms` until stop() */
  start(ms: number): this {
    this.sample()
    this.timer = setInterval(() => this.sample(), ms)
    return this
  }

  stop(): void {
    clearInterval(this.timer)
    this.timer = undefined
    this.sample()
  }

  /** CPU seconds so far of every watched process become the zero of cpuUsed() */
  markCpu(): void {
    for (const [name, pid] of this.pids) this.cpuMark.set(name, cpuSeconds(pid))
  }

  /** CPU seconds each process used since markCpu() (all of it for a process watched after the mark) */
  cpuUsed(): Map<string, number> {
    const used = new Map<string, number>()
    for (const [name, last] of this.cpuLast) used.set(name, last - (this.cpuMark.get(name) ?? 0))
    return used
  }

  /** RSS start / peak / end (KiB) of each watched process over its samples */
  rssSeries(): Map<string, SeriesSummary> {
    const series = new Map<string, SeriesSummary>()
    for (const [name, samples] of this.rss) {
      const summary = summarizeSeries(samples)
      if (summary !== undefined) series.set(name, summary)
    }
    return series
  }

  names(): string[] {
    return [...this.pids.keys()]
  }
}

/** How long a bare Node process takes here, from spawn to exit (medians of `tries` starts). */
export interface NodeStart {
  ms: number
  /** NODE_EXTRA_CA_CERTS as set here, and the same start without it: Node 20 parses that bundle before any JavaScript runs */
  extra_ca?: { file: string; without_ms: number }
}

/**
 * Times `node -e 0` with this environment and, when NODE_EXTRA_CA_CERTS is set, without it: what
 * the machine adds to every Node process's start (`forge run`'s client, promptfoo's process), told
 * beside the peers' figures, never changed for them.
 */
export function nodeStart(tries = 5, env: NodeJS.ProcessEnv = process.env): NodeStart {
  const timed = (startEnv: NodeJS.ProcessEnv): number => {
    const times: number[] = []
    for (let i = 0; i < tries; i++) {
      const started = performance.now()
      spawnSync(process.execPath, ['-e', '0'], { env: startEnv, stdio: 'ignore' })
      times.push(performance.now() - started)
    }
    return median(times)
  }
  const ms = timed(env)
  const file = env['NODE_EXTRA_CA_CERTS']
  if (file === undefined || file === '') return { ms }
  const without = { ...env }
  delete without['NODE_EXTRA_CA_CERTS']
  return { ms, extra_ca: { file, without_ms: timed(without) } }
}
