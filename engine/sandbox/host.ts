/**
 * The worker's side of the agent sandbox: checks once whether this machine can make one, and per
 * attempt prepares what the init script (engine/sandbox/layout.ts) needs — the skeleton root, the
 * read-only paths the agent's program needs, the bridges to the tool endpoint and LLM gateway,
 * the cgroups — and removes it all when the attempt ends. Adapters that run agent code
 * (subprocess, pydantic-ai, module) spawn what `openSandbox` returns instead of the agent itself.
 */
import { spawn } from 'node:child_process'
import type { Readable } from 'node:stream'
import { randomBytes, randomInt } from 'node:crypto'
import { accessSync, constants, existsSync, lstatSync, mkdirSync, readFileSync, readdirSync, readlinkSync, realpathSync, rmSync, rmdirSync, statSync, writeFileSync, chmodSync, symlinkSync } from 'node:fs'
import { connect, createServer, type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { setTimeout as sleep } from 'node:timers/promises'
import { readSetting } from '../../config/index.js'
import { packageRoot } from '../suite-files.js'
import { SandboxConfigError, SandboxUnavailableError } from './errors.js'
import { cgroupMemoryWatch, pollingMemoryWatch, type MemoryWatch } from './memory.js'
import type { SandboxSettings } from './config.js'
import {
  AGENT_NICENESS,
  initScript,
  launcherArgv,
  parseHardLimits,
  protectedPathsCheck,
  sandboxLimits,
  SANDBOX_LIB_DIR,
  SANDBOX_SCRATCH,
  SANDBOX_SETUP_EXIT,
  SANDBOX_STARTED_MARK,
  skeletonEntries,
  forwardSpecs,
  SYSTEM_PATHS,
  type ProcessLimits,
  type ReadOnlyPath,
  type SandboxLayout,
} from './layout.js'

/** The host programs the sandbox uses, found once. */
export interface SandboxTools {
  setpriv: string
  nice: string
  prlimit: string
  unshare: string
  mount: string
  umount: string
  pivotRoot: string
  mkdir: string
  ln: string
  ip: string | undefined
}

export type SandboxSupport =
  | { ok: true; tools: SandboxTools; userNamespace: boolean; cgroups: CgroupSupport; hardLimits: Partial<ProcessLimits> }
  | { ok: false; reason: string }

/** Which cgroup v1 controllers the sandbox can use (directories the worker may create children in). */
export interface CgroupSupport {
  memory: string | undefined
  pids: string | undefined
}

/** What an adapter asks of a sandbox for one attempt. */
export interface SandboxRequest {
  /** the agent's argv, relative file arguments already made absolute */
  command: string[]
  /** the agent's environment (its PATH finds the program); HOME and TMPDIR are set to the scratch directory */
  env: Record<string, string>
  settings: SandboxSettings
  /** host paths the agent must never see, even under a path it may read: the suite, FORGE_HOME */
  protectedPaths: string[]
  /** 127.0.0.1 ports of the worker the agent may reach (the tool endpoint, the LLM gateway) */
  ports: number[]
  /** more host paths the agent may read (the adapter's own needs, e.g. a module's directory) */
  readOnly?: string[]
  /** a working directory the config named: visible read-only and the agent's cwd */
  cwd?: string
  /** 'agent': the agent's process serves the ports itself (the module host), from FORGE_SANDBOX_FORWARDS; default a forwarder process */
  forwarder?: 'process' | 'agent'
}

/** A prepared sandbox: spawn `argv` (with a pipe as fd 3) instead of the agent; close it after. */
export interface PreparedSandbox {
  argv: [string, ...string[]]
  /** the environment to spawn with: the agent's, HOME/TMPDIR pointing into the sandbox */
  env: Record<string, string>
  /** where to spawn (a host directory; the agent's own cwd is set by the init) */
  spawnCwd: string
  /** the agent's working directory as it sees it */
  agentCwd: string
  /** what the sandbox enforces, for the attempt's spans */
  enforced: {
    memory_limit_mb: number
    /** 'cgroup': the kernel limits the sandbox's processes together; 'watch': RLIMIT_DATA per process and the worker's poll (engine/sandbox/memory.ts) */
    memory_enforcement: 'cgroup' | 'watch'
    memory_cgroup: boolean
    pids_cgroup: boolean
    uid: number | null
    user_namespace: boolean
    cpu_niceness: number
    read_only: string[]
  }
  /** starts watching the memory of the sandbox spawned as `pid` (from `argv`); stop the watch before `close` */
  watchMemory(pid: number): MemoryWatch
  /** stops the bridges, removes the cgroups and the sandbox's directory; call once the agent's processes are gone */
  close(): Promise<void>
}

let support: Promise<SandboxSupport> | undefined

/** Whether this machine can make agent sandboxes, checked once per process by starting one. */
export function sandboxSupport(): Promise<SandboxSupport> {
  support ??= probeSandbox()
  return support
}

/** Throws SandboxUnavailableError when no sandbox can be made here. */
export async function requireSandbox(): Promise<Extract<SandboxSupport, { ok: true }>> {
  const found = await sandboxSupport()
  if (!found.ok) throw new SandboxUnavailableError(found.reason)
  return found
}

/** Checks (uncached) whether a sandbox can be made with the binaries `env` points at, by making one. */
export async function probeSandbox(env: NodeJS.ProcessEnv = process.env): Promise<SandboxSupport> {
  if (process.platform !== 'linux') return { ok: false, reason: `${process.platform} has no Linux namespaces` }
  const searchPath = `${env['PATH'] ?? ''}:/usr/sbin:/usr/bin:/sbin:/bin`
  // FORGE_UNSHARE_BIN / FORGE_SETPRIV_BIN name the binaries where they are not on PATH
  const overrides: Record<string, string | undefined> = { unshare: readSetting('unshareBin', env), setpriv: readSetting('setprivBin', env) }
  for (const [name, given] of Object.entries(overrides)) {
    if (given !== undefined && given !== '' && findProgram(path.basename(given), path.dirname(path.resolve(given))) === undefined) {
      return { ok: false, reason: `FORGE_${name.toUpperCase()}_BIN=${given} is not an executable file` }
    }
  }
  const required = ['setpriv', 'unshare', 'mount', 'umount', 'pivot_root', 'mkdir', 'ln', 'nice', 'prlimit'].map((name) => [name, overrides[name] ? path.resolve(overrides[name]) : findProgram(name, searchPath)] as const)
  const missing = required.filter(([, found]) => found === undefined).map(([name]) => name)
  if (missing.length > 0) return { ok: false, reason: `${missing.join(', ')} not found on PATH (Debian packages util-linux, mount and coreutils)` }
  const [setpriv, unshare, mount, umount, pivotRoot, mkdir, ln, nice, prlimit] = required.map(([, found]) => found as string) as [string, string, string, string, string, string, string, string, string]
  const tools: SandboxTools = { setpriv, unshare, mount, umount, pivotRoot, mkdir, ln, nice, prlimit, ip: findProgram('ip', searchPath) }
  const userNamespace = process.getuid?.() !== 0
  const cgroups = userNamespace ? { memory: undefined, pids: undefined } : cgroupSupport()
  const candidate = { ok: true as const, tools, userNamespace, cgroups, hardLimits: ownHardLimits() }
  // the only real test is making one: namespaces may be forbidden (a container's seccomp profile, sysctls)
  try {
    const sandbox = await prepareSandbox(candidate, {
      command: ['/bin/sh', '-c', 'exit 0'],
      env: { PATH: '/usr/bin:/bin' },
      settings: { read_only: [], memory_mb: 64, max_pids: 16, tmpfs_mb: 1, max_open_files: 64 },
      protectedPaths: [],
      ports: [],
    })
    try {
      const result = await run(sandbox.argv, sandbox.env, sandbox.spawnCwd)
      if (result.code !== 0 || !result.marked) {
        const detail = result.stderr.trim().split('\n').slice(-3).join(' / ') || `exit status ${String(result.code)}`
        return { ok: false, reason: `a test sandbox failed (${detail})` }
      }
    } finally {
      await sandbox.close()
    }
  } catch (error) {
    return { ok: false, reason: `a test sandbox failed (${error instanceof Error ? error.message : String(error)})` }
  }
  return candidate
}

/** Prepares one attempt's sandbox; throws SandboxUnavailableError / SandboxConfigError. */
export async function openSandbox(request: SandboxRequest): Promise<PreparedSandbox> {
  return prepareSandbox(await requireSandbox(), request)
}

let swept = false

async function prepareSandbox(found: Extract<SandboxSupport, { ok: true }>, request: SandboxRequest): Promise<PreparedSandbox> {
  if (!swept) {
    swept = true
    sweepStaleSandboxes()
  }
  const { settings } = request
  const id = `${process.pid}-${randomBytes(6).toString('hex')}`
  const readOnly = readOnlyPaths(request)
  const guarded = request.protectedPaths.filter((p) => existsSync(p)).map((p) => ({ path: realpathSync(p), kind: statSync(p).isDirectory() ? ('dir' as const) : ('file' as const) }))
  const check = protectedPathsCheck(readOnly.paths, guarded)
  if (!check.ok) throw new SandboxConfigError(`sandbox: ${check.problem}`)
  if (!found.userNamespace) {
    // the agent runs as a uid of its own: what it needs must be readable by anyone
    for (const entry of readOnly.paths) {
      const mode = statSync(entry.path).mode
      const needed = entry.kind === 'dir' ? 0o005 : 0o004
      if ((mode & needed) !== needed) {
        throw new SandboxConfigError(
          `sandbox: the agent needs ${entry.path}, which other users cannot read (mode ${(mode & 0o777).toString(8).padStart(4, '0')}); ` +
            'the agent runs as an unprivileged user of its own: make it readable (chmod o+rX) or run with --no-sandbox',
        )
      }
    }
  }
  if (request.ports.length > 0 && found.tools.ip === undefined) throw new SandboxUnavailableError('ip (Debian package iproute2) not found: the sandbox cannot bring up its loopback for the tool endpoint / LLM gateway')

  const base = path.join(tmpdir(), `forge-sandbox-${id}`)
  mkdirSync(base, { mode: 0o700 })
  const cleanups: Array<() => Promise<void> | void> = [() => rmSync(base, { recursive: true, force: true })]
  const close = async (): Promise<void> => {
    for (const cleanup of cleanups.reverse()) {
      try {
        await cleanup()
      } catch {
        // best effort: a leftover empty directory must not fail the attempt
      }
    }
  }
  try {
    const root = path.join(base, 'root')
    const socketDir = request.ports.length > 0 ? path.join(base, 'sock') : undefined
    const uid = found.userNamespace ? undefined : randomInt(100_000, 165_536)
    if (socketDir !== undefined) {
      mkdirSync(socketDir, { mode: 0o711 })
      chmodSync(socketDir, 0o711)
      for (const port of request.ports) {
        const server = await bridge(path.join(socketDir, `${port}.sock`), port)
        cleanups.push(() => server.close())
      }
    }
    const cgroupProcs: string[] = []
    let memoryCgroup: string | undefined
    for (const [controller, parent, limit] of [
      ['memory', found.cgroups.memory, (dir: string) => writeFileSync(path.join(dir, 'memory.limit_in_bytes'), String(settings.memory_mb * 1024 * 1024))],
      ['pids', found.cgroups.pids, (dir: string) => writeFileSync(path.join(dir, 'pids.max'), String(settings.max_pids))],
    ] as const) {
      if (parent === undefined) continue
      const dir = path.join(parent, `forge-sandbox-${id}`)
      try {
        mkdirSync(dir)
        limit(dir)
      } catch (error) {
        throw new SandboxUnavailableError(`cannot set up the ${controller} cgroup ${dir}: ${(error as Error).message}`)
      }
      cleanups.push(() => removeCgroup(dir))
      cgroupProcs.push(path.join(dir, 'cgroup.procs'))
      if (controller === 'memory') memoryCgroup = dir
    }
    const forwards = request.ports.map((port) => ({ port, socket: `${port}.sock` }))
    const agentCwd = request.cwd !== undefined ? realpathSync(request.cwd) : SANDBOX_SCRATCH
    const layout: SandboxLayout = {
      root,
      readOnly: readOnly.paths,
      files: [{ source: insideDir(), target: SANDBOX_LIB_DIR, kind: 'dir' }],
      symlinks: [...systemSymlinks(), ...readOnly.symlinks],
      hide: check.hide,
      socketDir,
      cgroupProcs,
      uid,
      limits: sandboxLimits(
        { processes: settings.max_pids, openFiles: settings.max_open_files, dataBytes: memoryCgroup === undefined ? settings.memory_mb * 1024 * 1024 : undefined },
        found.hardLimits,
      ),
      tmpfsMb: settings.tmpfs_mb,
      cwd: agentCwd,
      forwards,
      forwarder: request.forwarder ?? 'process',
      node: process.execPath,
      tools: { ...found.tools, ip: found.tools.ip ?? 'ip' },
    }
    buildSkeleton(layout)
    const init = path.join(base, 'init.sh')
    writeFileSync(init, initScript(layout), { mode: 0o500 })
    const [program, ...args] = launcherArgv({ userNamespace: found.userNamespace, initScript: init, command: request.command, nice: found.tools.nice, setpriv: found.tools.setpriv, unshare: found.tools.unshare }) as [string, ...string[]]
    return {
      argv: [program, ...args],
      env: {
        ...request.env,
        HOME: SANDBOX_SCRATCH,
        TMPDIR: SANDBOX_SCRATCH,
        ...(request.forwarder === 'agent' && forwards.length > 0 ? { FORGE_SANDBOX_FORWARDS: forwardSpecs(forwards) } : {}),
      },
      spawnCwd: base,
      agentCwd,
      enforced: {
        memory_limit_mb: settings.memory_mb,
        memory_enforcement: memoryCgroup !== undefined ? 'cgroup' : 'watch',
        memory_cgroup: memoryCgroup !== undefined,
        pids_cgroup: found.cgroups.pids !== undefined,
        uid: uid ?? null,
        user_namespace: found.userNamespace,
        cpu_niceness: AGENT_NICENESS,
        read_only: readOnly.paths.map((p) => p.path),
      },
      watchMemory: (pid) => (memoryCgroup !== undefined ? cgroupMemoryWatch(memoryCgroup, settings.memory_mb) : pollingMemoryWatch(pid, settings.memory_mb)),
      close,
    }
  } catch (error) {
    await close()
    throw error
  }
}

/** The directory of the scripts that run inside the sandbox (forwarder, module host), shipped as plain .mjs. */
export function insideDir(): string {
  const here = path.dirname(fileURLToPath(import.meta.url))
  // from the sources (engine/sandbox) or the build (dist/engine/sandbox, or the CLI's bundle in
  // dist/cli-bundle): the .mjs files stay beside the sources, under the package root
  const candidates = [path.join(here, 'inside'), path.join(packageRoot(here), 'engine', 'sandbox', 'inside')]
  const found = candidates.find((dir) => existsSync(path.join(dir, 'forwarder.mjs')))
  if (found === undefined) throw new SandboxConfigError(`sandbox: the in-sandbox scripts are missing (looked in ${candidates.join(', ')})`)
  return realpathSync(found)
}

/** The read-only paths an agent needs: its program's installation, the directories of its file arguments, what the config adds. */
function readOnlyPaths(request: SandboxRequest): { paths: ReadOnlyPath[]; symlinks: Array<{ at: string; to: string }> } {
  const wanted: string[] = []
  for (const system of SYSTEM_PATHS) {
    if (existsSync(system) && !lstatSync(system).isSymbolicLink()) wanted.push(system)
  }
  const [program, ...args] = request.command
  if (program === undefined) throw new SandboxConfigError('sandbox: the agent command is empty')
  const found = program.includes('/') ? path.resolve(program) : findProgram(program, request.env['PATH'] ?? '')
  if (found === undefined) throw new SandboxConfigError(`cannot start "${program}": no such program on the agent's PATH (${request.env['PATH'] ?? ''})`)
  if (!existsSync(found)) throw new SandboxConfigError(`cannot start "${program}": no such file`)
  const real = realpathSync(found)
  if (!SYSTEM_PATHS.some((system) => real === system || real.startsWith(`${system}/`) || realpathSafe(system) === path.dirname(real))) {
    wanted.push(found, installPrefix(real))
  } else if (found !== real && !SYSTEM_PATHS.some((system) => found.startsWith(`${system}/`))) {
    wanted.push(found)
  }
  for (const arg of args) {
    if (!path.isAbsolute(arg) || !existsSync(arg)) continue
    wanted.push(statSync(arg).isDirectory() ? arg : path.dirname(arg))
  }
  if (request.cwd !== undefined) wanted.push(request.cwd)
  for (const extra of [...request.settings.read_only, ...(request.readOnly ?? [])]) {
    const absolute = path.resolve(extra)
    if (!existsSync(absolute)) throw new SandboxConfigError(`sandbox.read_only: ${absolute} does not exist`)
    wanted.push(absolute)
  }
  const paths: ReadOnlyPath[] = []
  const symlinks: Array<{ at: string; to: string }> = []
  for (const p of wanted) {
    const realPath = realpathSync(p)
    if (!paths.some((entry) => entry.path === realPath)) paths.push({ path: realPath, kind: statSync(realPath).isDirectory() ? 'dir' : 'file' })
    if (realPath !== path.resolve(p) && !symlinks.some((link) => link.at === path.resolve(p))) symlinks.push({ at: path.resolve(p), to: realPath })
  }
  return { paths, symlinks }
}

/** Where a program is installed: the parent of its bin/ or shims/ directory, else its own directory. */
function installPrefix(realProgram: string): string {
  const dir = path.dirname(realProgram)
  return ['bin', 'sbin', 'shims'].includes(path.basename(dir)) ? path.dirname(dir) : dir
}

/** Top-level system symlinks (/bin → usr/bin on merged-/usr systems), recreated in the skeleton. */
function systemSymlinks(): Array<{ at: string; to: string }> {
  return SYSTEM_PATHS.filter((p) => existsSync(p) && lstatSync(p).isSymbolicLink()).map((p) => ({ at: p, to: readlinkSync(p) }))
}

function realpathSafe(p: string): string | undefined {
  try {
    return realpathSync(p)
  } catch {
    return undefined
  }
}

/** Creates the skeleton's mountpoints and symlinks under layout.root, and /run/forge's package.json. */
function buildSkeleton(layout: SandboxLayout): void {
  mkdirSync(layout.root, { mode: 0o755 })
  for (const entry of skeletonEntries(layout)) {
    const at = layout.root + entry.path
    if (entry.kind === 'dir') mkdirSync(at, { recursive: true, mode: 0o755 })
    else if (entry.kind === 'file') writeFileSync(at, '', { mode: 0o644 })
    else symlinkSync(entry.to ?? '/', at)
  }
}

/** How many connections an agent may hold open to one of its endpoints (tool endpoint, LLM gateway) at once; more are closed at once. */
export const MAX_BRIDGED_CONNECTIONS = 64

/**
 * A Unix socket at `socketPath` whose connections are piped to 127.0.0.1:port. `close()` ends every
 * connection still open: it is called once the agent's processes are gone, and a connection the
 * endpoint had dropped half-way (the LLM gateway closing on a flooding agent) must not hold the
 * attempt open by keeping the server from closing.
 */
async function bridge(socketPath: string, port: number): Promise<{ close(): Promise<void> }> {
  const open = new Set<Socket>()
  const server = createServer((inbound) => {
    const outbound = connect(port, '127.0.0.1')
    open.add(inbound)
    inbound.once('close', () => open.delete(inbound))
    inbound.on('error', () => outbound.destroy())
    outbound.on('error', () => inbound.destroy())
    inbound.on('close', () => outbound.destroy())
    inbound.pipe(outbound)
    outbound.pipe(inbound)
  })
  // each bridged connection holds two of the worker's file descriptors (and the endpoint's accept a
  // third): an agent opening thousands would run the worker out of them (EMFILE for every attempt)
  server.maxConnections = MAX_BRIDGED_CONNECTIONS
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(socketPath, () => {
      server.off('error', reject)
      resolve()
    })
  })
  // the agent runs as another uid: it must be able to connect (the directory is reachable only inside its sandbox)
  chmodSync(socketPath, 0o666)
  return {
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        for (const socket of open) socket.destroy()
      }),
  }
}

/** The worker's own hard limits (the sandbox inherits them and can only lower them), read once by the probe; none where /proc/self/limits is unreadable. */
function ownHardLimits(): Partial<ProcessLimits> {
  try {
    return parseHardLimits(readFileSync('/proc/self/limits', 'utf8'))
  } catch {
    return {}
  }
}

/** The cgroup v1 directories of this process that the worker may create children in. */
function cgroupSupport(): CgroupSupport {
  const own = new Map<string, string>()
  try {
    for (const line of readFileSync('/proc/self/cgroup', 'utf8').split('\n')) {
      const [, controllers, where] = line.split(':')
      if (controllers === undefined || where === undefined) continue
      for (const controller of controllers.split(',')) own.set(controller, where)
    }
  } catch {
    return { memory: undefined, pids: undefined }
  }
  const usable = (controller: string): string | undefined => {
    const where = own.get(controller)
    if (where === undefined) return undefined
    const dir = path.join('/sys/fs/cgroup', controller, where)
    try {
      accessSync(dir, constants.W_OK)
      return existsSync(path.join(dir, 'cgroup.procs')) ? dir : undefined
    } catch {
      return undefined
    }
  }
  return { memory: usable('memory'), pids: usable('pids') }
}

async function removeCgroup(dir: string): Promise<void> {
  // the last processes may take a moment to leave once killed
  for (let i = 0; i < 50; i += 1) {
    try {
      rmdirSync(dir)
      return
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return
      await sleep(20)
    }
  }
}

/**
 * Removes what sandboxes of dead worker processes left behind (their temp directories and empty
 * cgroups). Runs once per process, before its first sandbox.
 */
export function sweepStaleSandboxes(): void {
  const stale = (name: string): boolean => {
    const match = /^forge-sandbox-(\d+)-[0-9a-f]+$/.exec(name)
    if (match === null) return false
    const pid = Number(match[1])
    if (pid === process.pid) return false
    try {
      process.kill(pid, 0)
      return false
    } catch {
      return true
    }
  }
  const dirs = [tmpdir(), ...Object.values(cgroupSupport()).filter((d): d is string => d !== undefined)]
  for (const dir of dirs) {
    let names: string[]
    try {
      names = readdirSync(dir)
    } catch {
      continue
    }
    for (const name of names.filter(stale)) {
      try {
        if (dir === tmpdir()) rmSync(path.join(dir, name), { recursive: true, force: true })
        else rmdirSync(path.join(dir, name))
      } catch {
        // still in use or not ours to remove
      }
    }
  }
}

/** `name` found on `searchPath`, as an absolute path; undefined when absent. */
export function findProgram(name: string, searchPath: string): string | undefined {
  for (const dir of searchPath.split(':')) {
    if (dir === '') continue
    const candidate = path.join(dir, name)
    try {
      accessSync(candidate, constants.X_OK)
      if (statSync(candidate).isFile()) return candidate
    } catch {
      // not here
    }
  }
  return undefined
}

/** Runs a prepared sandbox to completion (the probe): exit code, stderr, and whether the agent started. */
function run(argv: [string, ...string[]], env: Record<string, string>, cwd: string): Promise<{ code: number | null; stderr: string; marked: boolean }> {
  return new Promise((resolve) => {
    const [program, ...args] = argv
    const child = spawn(program, args, { env, cwd, stdio: ['ignore', 'ignore', 'pipe', 'pipe'] })
    let stderr = ''
    let mark = ''
    child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')))
    ;(child.stdio[3] as Readable).on('data', (chunk: Buffer) => (mark += chunk.toString('utf8')))
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000)
    child.once('error', (error) => {
      clearTimeout(timer)
      resolve({ code: null, stderr: error.message, marked: false })
    })
    child.once('close', (code) => {
      clearTimeout(timer)
      resolve({ code, stderr, marked: mark.includes(SANDBOX_STARTED_MARK) })
    })
  })
}

export { SANDBOX_SETUP_EXIT, SANDBOX_STARTED_MARK }
