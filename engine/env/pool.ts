/**
 * The environment pool of one worker process: per task, a template built once (seed files plus
 * conditions) and instances stamped out from it. An instance serves one attempt at a time — so
 * concurrent attempts of a task get separate instances — and goes back to the pool only after its
 * restore was verified; one that cannot be verified is quarantined: closed, kept on disk for
 * inspection, never handed out again.
 */
import { mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync } from 'node:fs'
import { mkdir, rm } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import type { EnvironmentFixture, Task } from '../../core/contracts/index.js'
import type { LoadedSuite } from '../../core/plugins.js'
import type { FixtureDriver, FixtureDrivers, FixtureInstance, FixtureTemplate } from './driver.js'
import { FixtureSeedError } from './errors.js'
import { httpDriver } from './http-service.js'
import { sqliteDriver } from './sqlite.js'
import { workspaceDriver } from './workspace.js'

export const defaultDrivers: FixtureDrivers = { workspace: workspaceDriver, sqlite: sqliteDriver, http: httpDriver }

/** The fixtures of a task that get a per-attempt instance (every kind but `file`). */
export function environmentFixtures(task: Task): EnvironmentFixture[] {
  return task.fixtures.filter((f): f is EnvironmentFixture => f.kind !== 'file')
}

export interface LiveFixture {
  spec: EnvironmentFixture
  template: FixtureTemplate
  instance: FixtureInstance
}

/** One environment: a live instance of every environment fixture of a task. */
export interface EnvironmentInstance {
  /** `<task id>#<n>`: unique in this worker process */
  readonly id: string
  readonly taskId: string
  readonly dir: string
  readonly fixtures: readonly LiveFixture[]
  /** attempts it has served, this one included */
  uses: number
}

export interface QuarantineRecord {
  instance: string
  suite: string
  task_id: string
  reason: string
  /** where its files were kept */
  dir: string
}

export interface EnvironmentPoolOptions {
  /** directory for templates and instances (default: a new temp dir, removed at exit) */
  root?: string
  /** restored instances kept per task for reuse (default 4); more are closed */
  maxIdlePerTask?: number
  /** fixture drivers by kind (default: workspace, sqlite, http) */
  drivers?: Partial<FixtureDrivers>
}

interface TaskTemplates {
  dir: string
  fixtures: { spec: EnvironmentFixture; template: FixtureTemplate }[]
}

interface Entry extends EnvironmentInstance {
  key: string
}

export class EnvironmentPool {
  private rootDir: string | undefined
  private readonly templates = new Map<string, Promise<TaskTemplates>>()
  private readonly idle = new Map<string, Entry[]>()
  private readonly busy = new Set<Entry>()
  private readonly quarantineLog: QuarantineRecord[] = []
  private readonly drivers: FixtureDrivers
  private readonly maxIdle: number
  private counter = 0
  private closed = false

  constructor(private readonly options: EnvironmentPoolOptions = {}) {
    this.drivers = { ...defaultDrivers, ...options.drivers }
    this.maxIdle = options.maxIdlePerTask ?? 4
  }

  /** The pool's directory, created on first use. */
  get root(): string {
    if (this.rootDir === undefined) {
      if (this.options.root !== undefined) {
        mkdirSync(this.options.root, { recursive: true })
        this.rootDir = this.options.root
      } else this.rootDir = mkdtempSync(path.join(os.tmpdir(), `${ROOT_PREFIX}${process.pid}-`))
    }
    return this.rootDir
  }

  /** Every instance quarantined so far, oldest first. */
  quarantined(): readonly QuarantineRecord[] {
    return this.quarantineLog
  }

  /** Instances currently idle for a task (restored and verified). */
  idleCount(suite: LoadedSuite, task: Task): number {
    return this.idle.get(keyOf(suite, task))?.length ?? 0
  }

  /**
   * An instance for one attempt of `task`: an idle one when there is one, else a new one seeded
   * from the task's template. Throws FixtureSeedError when the template cannot be built.
   */
  async acquire(suite: LoadedSuite, task: Task): Promise<EnvironmentInstance> {
    if (this.closed) throw new Error('the environment pool is closed')
    const key = keyOf(suite, task)
    const reusable = this.idle.get(key)?.pop()
    if (reusable !== undefined) {
      reusable.uses += 1
      this.busy.add(reusable)
      return reusable
    }
    const templates = await this.templatesFor(key, suite, task)
    this.counter += 1
    const id = `${task.id}#${this.counter}`
    const dir = path.join(this.root, 'instances', `${safeName(task.id)}-${this.counter}`)
    await mkdir(dir, { recursive: true })
    const fixtures: LiveFixture[] = []
    try {
      for (const { spec, template } of templates.fixtures) fixtures.push({ spec, template, instance: await template.instantiate(dir) })
    } catch (error) {
      for (const f of fixtures) await f.instance.close().catch(() => undefined)
      await rm(dir, { recursive: true, force: true })
      throw error instanceof FixtureSeedError ? error : new FixtureSeedError(fixtures.length < templates.fixtures.length ? (templates.fixtures[fixtures.length]?.spec.name ?? '?') : '?', `cannot start an instance: ${message(error)}`, { cause: error })
    }
    const entry: Entry = { id, key, taskId: task.id, dir, fixtures, uses: 1 }
    this.busy.add(entry)
    return entry
  }

  /** Gives a restored and verified instance back for reuse. */
  async release(instance: EnvironmentInstance): Promise<void> {
    const entry = instance as Entry
    if (!this.busy.delete(entry)) return
    const idle = this.idle.get(entry.key) ?? []
    if (this.closed || idle.length >= this.maxIdle) {
      await this.destroy(entry)
      return
    }
    idle.push(entry)
    this.idle.set(entry.key, idle)
  }

  /** Takes an instance out of service for good: closed, its files moved under quarantine/, never reused. */
  async quarantine(instance: EnvironmentInstance, suite: LoadedSuite, reason: string): Promise<QuarantineRecord> {
    const entry = instance as Entry
    this.busy.delete(entry)
    for (const f of entry.fixtures) await f.instance.close().catch(() => undefined)
    const kept = path.join(this.root, 'quarantine', path.basename(entry.dir))
    let dir = entry.dir
    try {
      mkdirSync(path.dirname(kept), { recursive: true })
      renameSync(entry.dir, kept)
      dir = kept
    } catch {
      // leave it where it is: it is out of service either way
    }
    const record: QuarantineRecord = { instance: entry.id, suite: suite.name, task_id: entry.taskId, reason, dir }
    this.quarantineLog.push(record)
    return record
  }

  /** Closes every instance and template and removes the pool's files, except what is quarantined. */
  async close(): Promise<void> {
    this.closed = true
    for (const list of this.idle.values()) for (const entry of list.splice(0)) await this.destroy(entry)
    for (const entry of [...this.busy]) await this.destroy(entry)
    this.busy.clear()
    for (const loading of this.templates.values()) {
      const templates = await loading.catch(() => undefined)
      for (const f of templates?.fixtures ?? []) await f.template.dispose().catch(() => undefined)
    }
    this.templates.clear()
    if (this.rootDir !== undefined) removeExceptQuarantine(this.rootDir)
  }

  private async destroy(entry: Entry): Promise<void> {
    for (const f of entry.fixtures) await f.instance.close().catch(() => undefined)
    await rm(entry.dir, { recursive: true, force: true })
  }

  private templatesFor(key: string, suite: LoadedSuite, task: Task): Promise<TaskTemplates> {
    const cached = this.templates.get(key)
    if (cached !== undefined) return cached
    const building = this.buildTemplates(suite, task)
    this.templates.set(key, building)
    // a failed build is not kept: the next attempt tries again (and reports again)
    building.catch(() => this.templates.delete(key))
    return building
  }

  private async buildTemplates(suite: LoadedSuite, task: Task): Promise<TaskTemplates> {
    this.counter += 1
    const dir = path.join(this.root, 'templates', `${safeName(task.id)}-${this.counter}`)
    const fixturesDir = path.resolve(suite.path, suite.manifest.fixtures)
    const fixtures: TaskTemplates['fixtures'] = []
    try {
      for (const spec of environmentFixtures(task)) {
        const driver = this.drivers[spec.kind] as FixtureDriver
        const fixtureDir = path.join(dir, spec.name)
        await mkdir(fixtureDir, { recursive: true })
        try {
          fixtures.push({ spec, template: await driver.template(spec, { fixturesDir, dir: fixtureDir }) })
        } catch (error) {
          if (error instanceof FixtureSeedError) throw error
          throw new FixtureSeedError(spec.name, message(error), { cause: error })
        }
      }
    } catch (error) {
      for (const f of fixtures) await f.template.dispose().catch(() => undefined)
      await rm(dir, { recursive: true, force: true })
      throw error
    }
    return { dir, fixtures }
  }
}

/** Default pool roots are `<tmp>/forge-env-<pid>-XXXXXX`, so the files of a dead process can be found. */
const ROOT_PREFIX = 'forge-env-'

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    // EPERM: alive, someone else's
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/**
 * Removes what pools of dead worker processes left in the temp dir (a SIGKILL skips exit
 * handlers), keeping their quarantined instances. A root whose pid is alive is never touched.
 */
export function sweepAbandonedPools(tmp: string = os.tmpdir()): string[] {
  const swept: string[] = []
  let entries: string[]
  try {
    entries = readdirSync(tmp)
  } catch {
    return swept
  }
  for (const entry of entries) {
    const match = new RegExp(`^${ROOT_PREFIX}(\\d+)-`).exec(entry)
    if (match === null || Number(match[1]) === process.pid || isAlive(Number(match[1]))) continue
    removeExceptQuarantine(path.join(tmp, entry))
    swept.push(entry)
  }
  return swept
}

function keyOf(suite: LoadedSuite, task: Task): string {
  return `${suite.path}\u0000${suite.contentHash}\u0000${task.id}`
}

function safeName(id: string): string {
  return id.replace(/[^A-Za-z0-9_.-]/g, '_').slice(0, 80)
}

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}

function removeExceptQuarantine(root: string): void {
  let entries: string[]
  try {
    entries = readdirSync(root)
  } catch {
    return
  }
  for (const entry of entries) if (entry !== 'quarantine') rmSync(path.join(root, entry), { recursive: true, force: true })
  try {
    if (readdirSync(root).length === 0) rmSync(root, { recursive: true, force: true })
  } catch {
    // already gone
  }
}

let shared: EnvironmentPool | undefined

/** The worker process's pool (created on first use; its files are removed when the process exits). */
export function sharedEnvironmentPool(): EnvironmentPool {
  if (shared === undefined) {
    sweepAbandonedPools()
    const pool = new EnvironmentPool()
    shared = pool
    process.once('exit', () => {
      // servers die with the process; only the files need removing, synchronously
      try {
        removeExceptQuarantine(pool.root)
      } catch {
        // best effort at exit
      }
    })
  }
  return shared
}
