/**
 * The agent sandbox's layout and its init script, as pure functions of facts the host gathered
 * (engine/sandbox/host.ts): which paths the agent may read, what it must never see, its limits.
 *
 * The sandbox is `unshare --pid --fork --mount --net --ipc --uts` (as root; other users add
 * `--user --map-root-user`) running a small `/bin/sh` init as pid 1 of the new PID namespace. The
 * init builds the agent's root from a skeleton directory the host prepared (empty mountpoints and
 * symlinks): the system directories and the agent's own files read-only, a fresh tmpfs as /tmp
 * (its only writable place: cwd, HOME and TMPDIR), a new /proc of its own namespace, a few device
 * nodes; then it brings `lo` up, pivots into that root, drops every capability (and, as root,
 * becomes a uid of its own) and starts the agent. When the agent exits the init exits, and the
 * kernel kills whatever is left in the namespace — `setsid` and double forks included. The only
 * way out is the sockets directory: Unix sockets the host bridges to the attempt's tool endpoint
 * and LLM gateway, which a forwarder inside serves on the same 127.0.0.1 ports.
 */
import path from 'node:path'

/** Where Forge's own files appear inside the sandbox. */
export const SANDBOX_FORGE_DIR = '/run/forge'
/** Forge's in-sandbox scripts (engine/sandbox/inside), inside the sandbox. */
export const SANDBOX_LIB_DIR = `${SANDBOX_FORGE_DIR}/lib`
/** The Unix sockets of the bridges, inside the sandbox. */
export const SANDBOX_SOCKET_DIR = `${SANDBOX_FORGE_DIR}/sock`
/** The agent's scratch directory (a fresh tmpfs): its cwd, HOME and TMPDIR. */
export const SANDBOX_SCRATCH = '/tmp'
/** Where pivot_root parks the host's root until it is detached (an empty directory afterwards). */
export const SANDBOX_OLD_ROOT = `${SANDBOX_FORGE_DIR}/old`
/** The forwards as the module host reads them (env FORGE_SANDBOX_FORWARDS): `PORT=SOCKET,…`. */
export function forwardSpecs(forwards: SandboxLayout['forwards']): string {
  return forwards.map((f) => `${f.port}=${SANDBOX_SOCKET_DIR}/${f.socket}`).join(',')
}

/** Exit status of the init when the sandbox could not be set up (before the agent started). */
export const SANDBOX_SETUP_EXIT = 125
/** What the init writes to fd 3 right before it starts the agent. */
export const SANDBOX_STARTED_MARK = 'forge-sandbox: agent started'

/** Host directories that make up "the system", read-only in every sandbox. */
export const SYSTEM_PATHS = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32', '/etc'] as const
/** Device nodes bound into the sandbox's /dev. */
export const SANDBOX_DEVICES = ['null', 'zero', 'full', 'random', 'urandom'] as const

/** A host path the agent may read, as the host found it. */
export interface ReadOnlyPath {
  /** absolute path without symlinks (realpath) */
  path: string
  kind: 'dir' | 'file'
}

/** Everything the init script needs, gathered by the host. */
export interface SandboxLayout {
  /** host path of the skeleton directory that becomes the agent's root */
  root: string
  /** host paths (realpath) bound read-only at the same path */
  readOnly: ReadOnlyPath[]
  /** host paths bound read-only at another path (Forge's in-sandbox scripts at /run/forge/lib) */
  files: Array<{ source: string; target: string; kind: 'dir' | 'file' }>
  /** symlinks created in the skeleton: `at` → `to` (e.g. /bin → usr/bin, a symlinked node_modules) */
  symlinks: Array<{ at: string; to: string }>
  /** paths inside a read-only bind that the agent must not see: covered by an empty read-only mount */
  hide: ReadOnlyPath[]
  /** host directory of the bridge sockets, bound at SANDBOX_SOCKET_DIR */
  socketDir: string | undefined
  /** cgroup.procs files the init joins before anything else (memory, pids) */
  cgroupProcs: string[]
  /** the agent's uid/gid (as root); undefined: keep the (user-namespace) root, capabilities dropped */
  uid: number | undefined
  /** the resource limits of every process in the sandbox, set on the init before anything starts */
  limits: ProcessLimits
  tmpfsMb: number
  /** the agent's working directory inside the sandbox */
  cwd: string
  /** 127.0.0.1 ports served inside by the forwarder, each to a socket in SANDBOX_SOCKET_DIR */
  forwards: Array<{ port: number; socket: string }>
  /** who serves the forwards: a forwarder process the init starts, or the agent's own host process (the module host) */
  forwarder: 'process' | 'agent'
  /** node binary (a path visible inside) that runs the forwarder, when there are forwards */
  node: string
  /** absolute paths of the host programs the init runs (all under the read-only system directories) */
  tools: { mount: string; umount: string; pivotRoot: string; setpriv: string; nice: string; prlimit: string; ip: string; mkdir: string; ln: string }
}

/** What the host creates in the skeleton before the init runs: mountpoints and symlinks. */
export interface SkeletonEntry {
  /** path inside the sandbox (the skeleton holds it at root + path) */
  path: string
  kind: 'dir' | 'file' | 'symlink'
  /** symlink target */
  to?: string
}

/** The skeleton: every mountpoint (directory or empty file) and symlink, parents before children; none under the scratch tmpfs. */
export function skeletonEntries(layout: SandboxLayout): SkeletonEntry[] {
  return allEntries(layout).filter((e) => !isInside(e.path, SANDBOX_SCRATCH))
}

/** Mountpoints under the scratch tmpfs (an agent or suite living in /tmp): made by the init once the tmpfs is mounted. */
export function scratchMountpoints(layout: SandboxLayout): SkeletonEntry[] {
  return allEntries(layout).filter((e) => isInside(e.path, SANDBOX_SCRATCH))
}

function allEntries(layout: SandboxLayout): SkeletonEntry[] {
  const entries = new Map<string, SkeletonEntry>()
  const dir = (p: string): void => {
    for (const parent of ancestors(p)) if (!entries.has(parent)) entries.set(parent, { path: parent, kind: 'dir' })
    if (!entries.has(p)) entries.set(p, { path: p, kind: 'dir' })
  }
  const file = (p: string): void => {
    dir(path.posix.dirname(p))
    entries.set(p, { path: p, kind: 'file' })
  }
  for (const p of ['/proc', '/dev', SANDBOX_SCRATCH, SANDBOX_FORGE_DIR, SANDBOX_OLD_ROOT]) dir(p)
  for (const device of SANDBOX_DEVICES) file(`/dev/${device}`)
  for (const [at, to] of [
    ['/dev/fd', '/proc/self/fd'],
    ['/dev/stdin', '/proc/self/fd/0'],
    ['/dev/stdout', '/proc/self/fd/1'],
    ['/dev/stderr', '/proc/self/fd/2'],
  ] as const) {
    entries.set(at, { path: at, kind: 'symlink', to })
  }
  if (layout.socketDir !== undefined) dir(SANDBOX_SOCKET_DIR)
  for (const bind of topLevelBinds(layout.readOnly)) (bind.kind === 'dir' ? dir : file)(bind.path)
  for (const { target, kind } of layout.files) (kind === 'dir' ? dir : file)(target)
  for (const link of layout.symlinks) {
    dir(path.posix.dirname(link.at))
    entries.set(link.at, { path: link.at, kind: 'symlink', to: link.to })
  }
  return [...entries.values()].filter((e) => e.path !== '/').sort((a, b) => depth(a.path) - depth(b.path) || a.path.localeCompare(b.path))
}

/** Read-only binds without those already visible through another (a path inside a bound directory). */
export function topLevelBinds(readOnly: ReadOnlyPath[]): ReadOnlyPath[] {
  const sorted = [...readOnly].sort((a, b) => depth(a.path) - depth(b.path) || a.path.localeCompare(b.path))
  const kept: ReadOnlyPath[] = []
  for (const entry of sorted) {
    if (kept.some((k) => k.path === entry.path || (k.kind === 'dir' && isInside(entry.path, k.path)))) continue
    kept.push(entry)
  }
  return kept
}

/**
 * Protected paths (the suite, FORGE_HOME) against the read-only binds: those inside a bind are to
 * be hidden; a bind inside a protected path is refused (the agent's own files lie in the suite).
 */
export function protectedPathsCheck(
  readOnly: ReadOnlyPath[],
  protectedPaths: ReadOnlyPath[],
): { ok: true; hide: ReadOnlyPath[] } | { ok: false; problem: string } {
  const hide: ReadOnlyPath[] = []
  for (const guarded of protectedPaths) {
    const exposing = readOnly.find((bind) => bind.path === guarded.path || isInside(bind.path, guarded.path))
    if (exposing !== undefined) {
      return { ok: false, problem: `the agent needs ${exposing.path}, which lies inside ${guarded.path}; the sandbox never shows an agent the suite or FORGE_HOME` }
    }
    if (readOnly.some((bind) => bind.kind === 'dir' && isInside(guarded.path, bind.path))) hide.push(guarded)
  }
  return { ok: true, hide }
}

/** Whether `p` lies strictly inside directory `dir` (both absolute, normalised). */
export function isInside(p: string, dir: string): boolean {
  return dir === '/' ? p !== '/' : p.startsWith(`${dir}/`)
}

/**
 * How much nicer than the worker everything in the sandbox runs (the agent, its children, the tool
 * forwarder; `nice -n` adds it to the worker's own niceness, at most 19). An agent that spins on every
 * core then still leaves the worker's event loop — the tool proxy, heartbeats, publishing, the other
 * attempts' harness work — ~9× the agent's CPU share while the two compete (the kernel's weights for
 * niceness 0 and 10 are 1024 and 110), and costs an agent nothing while they do not. Without
 * CAP_SYS_NICE in the host's user namespace (dropped before the agent starts) it cannot undo it.
 */
export const AGENT_NICENESS = 10

/**
 * Resource limits of the sandbox's processes (soft = hard, so no process can raise its own): processes
 * and threads (RLIMIT_NPROC, `max_pids`), open files (RLIMIT_NOFILE, `max_open_files`: a worker's own
 * limit can be a million in a container, and a few processes of one agent holding that many would take
 * the machine's whole file table), data (RLIMIT_DATA = `memory_mb` where no memory cgroup limits the
 * sandbox: engine/sandbox/memory.ts). Set by util-linux `prlimit` rather than the shell's `ulimit`,
 * whose letters differ between shells (bash's `-p` is the pipe size, and failed silently).
 */
export interface ProcessLimits {
  processes: number
  openFiles: number
  /** bytes; undefined: not limited here */
  dataBytes: number | undefined
}

/** The limits asked for, each at most what the worker itself may have (a limit is only ever lowered, which needs no privilege). */
export function sandboxLimits(wanted: ProcessLimits, ownHard: Partial<ProcessLimits>): ProcessLimits {
  const lower = (a: number | undefined, b: number | undefined): number | undefined => (a === undefined ? b : b === undefined ? a : Math.min(a, b))
  return {
    processes: lower(wanted.processes, ownHard.processes)!,
    openFiles: lower(wanted.openFiles, ownHard.openFiles)!,
    dataBytes: wanted.dataBytes === undefined ? undefined : lower(wanted.dataBytes, ownHard.dataBytes),
  }
}

/** The hard limits in a /proc/<pid>/limits text ("unlimited" is no limit). */
export function parseHardLimits(text: string): Partial<ProcessLimits> {
  const hard = (label: string): number | undefined => {
    const value = new RegExp(`^${label}\\s+\\S+\\s+(\\S+)`, 'm').exec(text)?.[1]
    return value === undefined || value === 'unlimited' ? undefined : Number(value)
  }
  const out: Partial<ProcessLimits> = {}
  const processes = hard('Max processes')
  const openFiles = hard('Max open files')
  const dataBytes = hard('Max data size')
  if (processes !== undefined) out.processes = processes
  if (openFiles !== undefined) out.openFiles = openFiles
  if (dataBytes !== undefined) out.dataBytes = dataBytes
  return out
}

/** The init's line that sets `limits` on itself, inherited by everything it starts. */
export function prlimitLine(prlimit: string, limits: ProcessLimits): string {
  const both = (n: number): string => `${n}:${n}`
  return [
    shellQuote(prlimit),
    '--pid',
    '$$',
    `--nproc=${both(limits.processes)}`,
    `--nofile=${both(limits.openFiles)}`,
    ...(limits.dataBytes !== undefined ? [`--data=${both(limits.dataBytes)}`] : []),
  ].join(' ')
}

/** How many inodes the agent's scratch tmpfs has: one per 4 KiB page of its size. */
export function scratchInodes(tmpfsMb: number): number {
  return tmpfsMb * 256
}

/** The argv that starts the sandbox; the init script file is its last argument, the agent's argv follows it. */
export function launcherArgv(opts: { userNamespace: boolean; initScript: string; command: string[]; nice: string; setpriv: string; unshare: string }): string[] {
  return [
    // nice execs setpriv, which execs unshare: one process, so the parent-death signal below still applies to it
    opts.nice,
    '-n',
    String(AGENT_NICENESS),
    opts.setpriv,
    // the worker dying (even SIGKILLed) kills unshare, whose --kill-child kills the init, which takes the namespace down
    '--pdeathsig',
    'KILL',
    '--',
    opts.unshare,
    ...(opts.userNamespace ? ['--user', '--map-root-user'] : []),
    '--pid',
    '--fork',
    '--kill-child=SIGKILL',
    '--mount',
    '--propagation',
    'private',
    '--net',
    '--ipc',
    '--uts',
    '/bin/sh',
    opts.initScript,
    ...opts.command,
  ]
}

/** POSIX shell single-quoting. */
export function shellQuote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`
}

/**
 * The init script, run by /bin/sh as pid 1 of the sandbox's PID namespace with the agent's argv as
 * "$@" and the agent's stdin/stdout/stderr as its own; fd 3 is the host's start-marker pipe.
 */
export function initScript(layout: SandboxLayout): string {
  const q = shellQuote
  const R = (p: string): string => q(layout.root + p)
  const t = layout.tools
  const mount = q(t.mount)
  const lines: string[] = [
    '# Forge agent sandbox init (generated by engine/sandbox/layout.ts): pid 1 of the agent\'s PID namespace.',
    'set -eu',
    `fail() { trap - EXIT; echo "forge-sandbox: $*" >&2; exit ${SANDBOX_SETUP_EXIT}; }`,
    'trap \'fail "set-up step failed"\' EXIT',
  ]
  for (const procs of layout.cgroupProcs) lines.push(`echo $$ > ${q(procs)} || fail ${q(`cannot join ${procs}`)}`)
  // the skeleton becomes a read-only mount of its own (pivot_root needs a mountpoint)
  lines.push(`${mount} --bind -o ro ${R('')} ${R('')}`)
  const owner = layout.uid !== undefined ? `,uid=${layout.uid},gid=${layout.uid}` : ''
  // as many inodes as the tmpfs has pages: a file with content takes a page anyway, so this bounds only
  // empty files, directories and links — which cost the kernel ~1 KiB each and no tmpfs size at all
  // (400,000 empty files grew the kernel's slab by 397 MiB in a 256 MiB scratch without it)
  lines.push(`${mount} -t tmpfs -o nosuid,nodev,size=${layout.tmpfsMb}m,nr_inodes=${scratchInodes(layout.tmpfsMb)},mode=0700${owner} forge-scratch ${R(SANDBOX_SCRATCH)}`)
  const underScratch = scratchMountpoints(layout)
  const scratchDirs = underScratch.filter((e) => e.kind === 'dir').map((e) => R(e.path))
  if (scratchDirs.length > 0) lines.push(`${q(t.mkdir)} -p ${scratchDirs.join(' ')}`)
  for (const entry of underScratch) {
    if (entry.kind === 'file') lines.push(`: > ${R(entry.path)}`)
    else if (entry.kind === 'symlink') lines.push(`${q(t.ln)} -s ${q(entry.to ?? '/')} ${R(entry.path)}`)
  }
  for (const bind of topLevelBinds(layout.readOnly)) lines.push(`${mount} --bind -o ro,nosuid,nodev ${q(bind.path)} ${R(bind.path)}`)
  for (const { source, target } of layout.files) lines.push(`${mount} --bind -o ro,nosuid,nodev ${q(source)} ${R(target)}`)
  for (const hidden of layout.hide) {
    lines.push(
      hidden.kind === 'dir'
        ? `${mount} -t tmpfs -o ro,nosuid,nodev,noexec,size=4k,mode=000 forge-hidden ${R(hidden.path)}`
        : `${mount} --bind -o ro /dev/null ${R(hidden.path)}`,
    )
  }
  for (const device of SANDBOX_DEVICES) lines.push(`${mount} --bind /dev/${device} ${R(`/dev/${device}`)}`)
  if (layout.socketDir !== undefined) lines.push(`${mount} --bind -o nosuid,nodev,noexec ${q(layout.socketDir)} ${R(SANDBOX_SOCKET_DIR)}`)
  if (layout.forwards.length > 0) lines.push(`${q(t.ip)} link set lo up`)
  // pivot into the new root and drop the old one: nothing of the host's tree stays reachable
  lines.push(`${mount} -t proc -o nosuid,nodev,noexec proc ${R('/proc')}`)
  // no System V shared memory or message queues in the sandbox's IPC namespace: what they hold is no
  // process's memory, so neither a limit nor a watch of its processes would count it (best effort: an
  // older kernel may not let a user namespace set them). /proc/sys then read-only, so the agent —
  // root of its user namespace when the worker is not root — cannot set them back.
  for (const sysctl of ['shmmni', 'msgmni']) lines.push(`(echo 0 > ${R(`/proc/sys/kernel/${sysctl}`)}) 2>/dev/null || true`)
  lines.push(`${mount} --bind -o ro ${R('/proc/sys')} ${R('/proc/sys')}`)
  lines.push(`cd ${R('')}`, `${q(t.pivotRoot)} . ${q(SANDBOX_OLD_ROOT.slice(1))}`, `${q(t.umount)} -l ${q(SANDBOX_OLD_ROOT)}`)
  lines.push(`cd ${q(layout.cwd)}`)
  lines.push(prlimitLine(t.prlimit, layout.limits))
  const drop = [
    q(t.setpriv),
    ...(layout.uid !== undefined ? [`--reuid=${layout.uid}`, `--regid=${layout.uid}`, '--clear-groups'] : []),
    '--inh-caps=-all',
    '--bounding-set=-all',
    '--no-new-privs',
    '--',
  ].join(' ')
  if (layout.forwards.length > 0 && layout.forwarder === 'process') {
    const specs = layout.forwards.map((f) => q(`${f.port}=${SANDBOX_SOCKET_DIR}/${f.socket}`)).join(' ')
    // the forwarder says "ready" on fd 4 once it listens; the agent starts only then
    lines.push(
      `ready=$(${drop} ${q(layout.node)} ${q(`${SANDBOX_LIB_DIR}/forwarder.mjs`)} ${specs} 4>&1 >/dev/null </dev/null 3>&- &)`,
      '[ "$ready" = ready ] || fail "the tool/LLM forwarder did not start"',
    )
  }
  lines.push(
    'trap - EXIT',
    'unset OLDPWD PWD',
    `echo ${q(SANDBOX_STARTED_MARK)} >&3`,
    'exec 4<&0',
    `${drop} "$@" 0<&4 3>&- 4<&- &`,
    'child=$!',
    'exec 3>&- 4<&-',
    // pid 1 gets only the signals it handles: pass a stop request on to the agent
    "trap 'kill -TERM $child 2>/dev/null || true' TERM INT HUP",
    'while :; do',
    '  set +e; wait $child; status=$?; set -e',
    '  kill -0 $child 2>/dev/null || break',
    'done',
    // pid 1 exiting takes down every process left in the namespace
    'exit $status',
  )
  return `${lines.join('\n')}\n`
}

function ancestors(p: string): string[] {
  const out: string[] = []
  for (let dir = path.posix.dirname(p); dir !== '/'; dir = path.posix.dirname(dir)) out.unshift(dir)
  return out
}

function depth(p: string): number {
  return p === '/' ? 0 : p.split('/').length - 1
}
