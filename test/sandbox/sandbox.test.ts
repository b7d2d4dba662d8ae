/**
 * The agent sandbox (engine/sandbox/): the pure layout and init script, the probe and its refusal,
 * protected paths, and that an agent dies with its worker even when the worker is SIGKILLed.
 * test/security/adversary.test.ts runs the attacks themselves.
 */
import { spawn, spawnSync } from 'node:child_process'
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, realpathSync, rmSync, writeFileSync } from 'node:fs'
import { getPriority, tmpdir } from 'node:os'
import { connect as netConnect, createServer as createNetServer, type Socket as NetSocket } from 'node:net'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { describe, expect, it, onTestFinished } from 'vitest'
import { subprocessAdapter } from '../../engine/adapters/subprocess.js'
import { sandboxRequested, isolationOf, SandboxSettings } from '../../engine/sandbox/config.js'
import { openSandbox, probeSandbox, type SandboxRequest } from '../../engine/sandbox/host.js'
import { memfdBytes, overLimit, processMemory } from '../../engine/sandbox/memory.js'
import { CHART_CONFIG_DIR, harnessPaths } from '../../engine/sandbox/paths.js'
import { AGENT_NICENESS, initScript, launcherArgv, parseHardLimits, protectedPathsCheck, sandboxLimits, scratchInodes, skeletonEntries, topLevelBinds, type SandboxLayout } from '../../engine/sandbox/layout.js'
import { agentPath, attempt, toolSuite } from '../adapters/helpers.js'
import { loadSuite, loadedSuitePaths } from '../../engine/suite-loader.js'
import { makeSuite, removeTempSuites } from '../suites/temp-suite.js'

const layout: SandboxLayout = {
  root: '/tmp/sbx/root',
  readOnly: [
    { path: '/usr', kind: 'dir' },
    { path: '/etc', kind: 'dir' },
    { path: '/opt/agent', kind: 'dir' },
    { path: '/opt/agent/lib', kind: 'dir' },
    { path: "/home/o'brien/agent.py", kind: 'file' },
  ],
  files: [{ source: '/repo/engine/sandbox/inside', target: '/run/forge/lib', kind: 'dir' }],
  symlinks: [{ at: '/bin', to: 'usr/bin' }],
  hide: [{ path: '/opt/agent/suite', kind: 'dir' }],
  socketDir: '/tmp/sbx/sock',
  cgroupProcs: ['/sys/fs/cgroup/pids/forge-sandbox-1/cgroup.procs'],
  uid: 123456,
  limits: { processes: 64, openFiles: 1024, dataBytes: undefined },
  tmpfsMb: 32,
  cwd: '/tmp',
  forwards: [{ port: 41000, socket: '41000.sock' }],
  forwarder: 'process',
  node: '/usr/bin/node',
  tools: { mount: '/usr/bin/mount', umount: '/usr/bin/umount', pivotRoot: '/usr/sbin/pivot_root', setpriv: '/usr/bin/setpriv', nice: '/usr/bin/nice', prlimit: '/usr/bin/prlimit', ip: '/usr/sbin/ip', mkdir: '/usr/bin/mkdir', ln: '/usr/bin/ln' },
}

describe('sandbox layout (pure)', () => {
  it('binds a path once: one inside a bound directory is already visible', () => {
    expect(topLevelBinds(layout.readOnly).map((b) => b.path)).toEqual(['/etc', '/usr', '/opt/agent', "/home/o'brien/agent.py"])
  })

  it('hides a protected path under a read-only one, and refuses an agent whose own files lie inside one', () => {
    const suite = { path: '/repo/suites/smoke', kind: 'dir' as const }
    expect(protectedPathsCheck([{ path: '/repo', kind: 'dir' }], [suite])).toEqual({ ok: true, hide: [suite] })
    expect(protectedPathsCheck([{ path: '/elsewhere', kind: 'dir' }], [suite])).toEqual({ ok: true, hide: [] })
    expect(protectedPathsCheck([{ path: '/repo/suites/smoke/agents', kind: 'dir' }], [suite])).toEqual({
      ok: false,
      problem: 'the agent needs /repo/suites/smoke/agents, which lies inside /repo/suites/smoke; the sandbox never shows an agent the suite or FORGE_HOME',
    })
  })

  it('builds the skeleton: mountpoints for every bind, device files, symlinks, parents first', () => {
    const entries = skeletonEntries(layout)
    const at = (p: string) => entries.find((e) => e.path === p)
    expect([at('/opt'), at('/opt/agent'), at("/home/o'brien/agent.py"), at('/dev/null'), at('/bin'), at('/dev/fd'), at('/run/forge/sock'), at('/run/forge/lib')]).toEqual([
      { path: '/opt', kind: 'dir' },
      { path: '/opt/agent', kind: 'dir' },
      { path: "/home/o'brien/agent.py", kind: 'file' },
      { path: '/dev/null', kind: 'file' },
      { path: '/bin', kind: 'symlink', to: 'usr/bin' },
      { path: '/dev/fd', kind: 'symlink', to: '/proc/self/fd' },
      { path: '/run/forge/sock', kind: 'dir' },
      { path: '/run/forge/lib', kind: 'dir' },
    ])
    expect(at('/opt/agent/lib')).toBeUndefined()
    const order = entries.map((e) => e.path)
    expect(order.indexOf('/home')).toBeLessThan(order.indexOf("/home/o'brien"))
  })

  it('writes an init that joins its cgroups first, binds read-only, pivots, drops every capability and starts the agent last', () => {
    const script = initScript(layout)
    const lines = script.split('\n')
    const index = (needle: string) => lines.findIndex((l) => l.includes(needle))
    expect(lines[index('cgroup.procs')]).toBe("echo $$ > '/sys/fs/cgroup/pids/forge-sandbox-1/cgroup.procs' || fail 'cannot join /sys/fs/cgroup/pids/forge-sandbox-1/cgroup.procs'")
    expect(script).toContain("'/usr/bin/mount' --bind -o ro,nosuid,nodev '/home/o'\\''brien/agent.py' '/tmp/sbx/root/home/o'\\''brien/agent.py'")
    expect(script).toContain("'/usr/bin/mount' -t tmpfs -o ro,nosuid,nodev,noexec,size=4k,mode=000 forge-hidden '/tmp/sbx/root/opt/agent/suite'")
    expect(script).toContain("'/usr/bin/mount' -t tmpfs -o nosuid,nodev,size=32m,nr_inodes=8192,mode=0700,uid=123456,gid=123456 forge-scratch '/tmp/sbx/root/tmp'")
    expect(script).toContain("'/usr/sbin/ip' link set lo up")
    expect(script).toContain("'/usr/bin/setpriv' --reuid=123456 --regid=123456 --clear-groups --inh-caps=-all --bounding-set=-all --no-new-privs -- \"$@\" 0<&4 3>&- 4<&- &")
    expect(script).toContain("'41000=/run/forge/sock/41000.sock'")
    expect(index('cgroup.procs')).toBeLessThan(index('--bind -o ro '))
    expect(index('pivot_root')).toBeLessThan(index("'/usr/bin/prlimit' --pid $$ --nproc=64:64 --nofile=1024:1024"))
    expect(index('forwarder.mjs')).toBeLessThan(index('agent started'))
    expect(index('agent started')).toBeLessThan(index('"$@"'))
    expect(lines.filter((l) => l !== '').at(-1)).toBe('exit $status')
  })

  it('turns System V shared memory and message queues off and /proc/sys read-only; without a memory cgroup limits each process\'s data to memory_mb', () => {
    const lines = initScript(layout).split('\n')
    const index = (needle: string) => lines.findIndex((l) => l.includes(needle))
    expect(lines.filter((l) => l.includes('/proc/sys'))).toEqual([
      "(echo 0 > '/tmp/sbx/root/proc/sys/kernel/shmmni') 2>/dev/null || true",
      "(echo 0 > '/tmp/sbx/root/proc/sys/kernel/msgmni') 2>/dev/null || true",
      "'/usr/bin/mount' --bind -o ro '/tmp/sbx/root/proc/sys' '/tmp/sbx/root/proc/sys'",
    ])
    expect(index('-t proc')).toBeLessThan(index('shmmni'))
    expect(index('ro \'/tmp/sbx/root/proc/sys\'')).toBeLessThan(index('pivot_root'))
    expect(lines.filter((l) => l.includes('prlimit'))).toEqual(["'/usr/bin/prlimit' --pid $$ --nproc=64:64 --nofile=1024:1024"])
    const watched = initScript({ ...layout, limits: { ...layout.limits, dataBytes: 256 * 1024 * 1024 } }).split('\n')
    expect(watched.filter((l) => l.includes('prlimit'))).toEqual(["'/usr/bin/prlimit' --pid $$ --nproc=64:64 --nofile=1024:1024 --data=268435456:268435456"])
    expect(watched.findIndex((l) => l.includes('prlimit'))).toBeLessThan(watched.findIndex((l) => l.includes('"$@"')))
  })

  it("sets limits no higher than the worker's own hard limits, read from /proc/self/limits", () => {
    const limits = [
      'Limit                     Soft Limit           Hard Limit           Units     ',
      'Max data size             unlimited            unlimited            bytes     ',
      'Max processes             96363                96363                processes ',
      'Max open files            1024                 512                  files     ',
    ].join('\n')
    expect(parseHardLimits(limits)).toEqual({ processes: 96363, openFiles: 512 })
    expect(sandboxLimits({ processes: 256, openFiles: 1024, dataBytes: 1 << 30 }, parseHardLimits(limits))).toEqual({ processes: 256, openFiles: 512, dataBytes: 1 << 30 })
    expect(sandboxLimits({ processes: 256, openFiles: 1024, dataBytes: undefined }, { dataBytes: 1 << 20 })).toEqual({ processes: 256, openFiles: 1024, dataBytes: undefined })
    expect(sandboxLimits({ processes: 256, openFiles: 1024, dataBytes: 1 << 30 }, { dataBytes: 1 << 20 })).toMatchObject({ dataBytes: 1 << 20 })
  })

  it("reads a process's anonymous and shared memory from its status; kernel threads and zombies have none", () => {
    const status = 'Name:\tnode\nUmask:\t0022\nState:\tS (sleeping)\nVmRSS:\t   90000 kB\nRssAnon:\t   70000 kB\nRssFile:\t   19000 kB\nRssShmem:\t    1000 kB\nThreads:\t11\n'
    expect(processMemory(7, status)).toEqual({ pid: 7, command: 'node', bytes: 71_000 * 1024 })
    expect(processMemory(8, 'Name:\tzombie\nState:\tZ (zombie)\nThreads:\t1\n')).toBeUndefined()
    // the memfds it holds open count instead of RssShmem when larger (a mapped memfd is in both)
    expect(processMemory(7, status, 50_000 * 1024)).toEqual({ pid: 7, command: 'node', bytes: 120_000 * 1024 })
    expect(processMemory(7, status, 500 * 1024)).toEqual({ pid: 7, command: 'node', bytes: 71_000 * 1024 })
  })

  it('picks what to kill past the memory limit as an OOM killer would: the largest first, the init last, no more than needed', () => {
    const mb = (n: number) => n * 1024 * 1024
    const procs = [
      { pid: 1, command: 'sh', bytes: mb(1) },
      { pid: 5, command: 'node', bytes: mb(40) },
      { pid: 9, command: 'node', bytes: mb(150) },
      { pid: 12, command: 'python3', bytes: mb(120) },
    ]
    expect(overLimit(procs, mb(400)).map((p) => p.pid)).toEqual([])
    expect(overLimit(procs, mb(256)).map((p) => p.pid)).toEqual([9])
    expect(overLimit(procs, mb(64)).map((p) => p.pid)).toEqual([9, 12])
    expect(overLimit(procs, mb(0)).map((p) => p.pid)).toEqual([9, 12, 5, 1])
    expect(overLimit([{ pid: 1, command: 'sh', bytes: mb(500) }, { pid: 2, command: 'node', bytes: mb(10) }], mb(256)).map((p) => p.pid)).toEqual([2, 1])
  })

  it('without forwards keeps the loopback down; a module host serves its forwards itself', () => {
    expect(initScript({ ...layout, forwards: [] })).not.toContain('link set lo up')
    const selfServed = initScript({ ...layout, forwarder: 'agent' })
    expect(selfServed).toContain('link set lo up')
    expect(selfServed).not.toContain('forwarder.mjs')
  })

  it('starts the init under unshare with its parent-death signal, nicer than the worker, in a user namespace only when not root', () => {
    const argv = launcherArgv({ userNamespace: false, initScript: '/tmp/sbx/init.sh', command: ['node', 'a.mjs'], nice: '/usr/bin/nice', setpriv: '/usr/bin/setpriv', unshare: '/usr/bin/unshare' })
    expect(argv).toEqual([
      '/usr/bin/nice', '-n', '10',
      '/usr/bin/setpriv', '--pdeathsig', 'KILL', '--', '/usr/bin/unshare', '--pid', '--fork', '--kill-child=SIGKILL', '--mount', '--propagation', 'private',
      '--net', '--ipc', '--uts', '/bin/sh', '/tmp/sbx/init.sh', 'node', 'a.mjs',
    ])
    expect(AGENT_NICENESS).toBe(10)
    expect(launcherArgv({ userNamespace: true, initScript: 'i', command: ['a'], nice: 'n', setpriv: 's', unshare: 'u' }).slice(7, 10)).toEqual(['u', '--user', '--map-root-user'])
  })

  it('knows which adapters run agent code and how a run isolated it', () => {
    expect(['subprocess', 'pydantic-ai', 'module', 'mock', 'react'].map((a) => sandboxRequested(a, {}))).toEqual([true, true, true, false, false])
    expect(sandboxRequested('subprocess', { sandbox: false })).toBe(false)
    expect([isolationOf('subprocess', {}), isolationOf('subprocess', { sandbox: false }), isolationOf('module', { sandbox: false }), isolationOf('mock', {})]).toEqual([
      'sandbox',
      'unsandboxed',
      'in-process',
      '',
    ])
    expect(SandboxSettings.parse({})).toEqual({ read_only: [], memory_mb: 1024, max_pids: 256, tmpfs_mb: 256, max_open_files: 1024 })
  })
})

describe("the memory watch's reading of a process (no sandbox needed)", () => {
  it('counts the memory a process holds in memfds it never mapped (in no RSS figure), each memfd once, by what it holds', async () => {
    // 32 MiB written into one memfd (its fd duplicated), a 1 GiB memfd only truncated up (it holds nothing), then unmapped: RssShmem stays 0
    const script = [
      'import os, sys, time',
      "a = os.memfd_create('written'); os.write(a, b'x' * (32 << 20)); os.dup(a)",
      "b = os.memfd_create('sparse'); os.ftruncate(b, 1 << 30)",
      "print('ready', flush=True); time.sleep(30)",
    ].join('\n')
    const child = spawn('python3', ['-c', script], { stdio: ['ignore', 'pipe', 'inherit'] })
    onTestFinished(() => void child.kill('SIGKILL'))
    await new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (chunk: Buffer) => (chunk.toString().includes('ready') ? resolve() : undefined))
      child.on('exit', (code) => reject(new Error(`python3 exited ${code}`)))
    })
    const seen = new Set<string>()
    const held = memfdBytes(`/proc/${child.pid}/fd`, seen)
    expect(held).toBeGreaterThanOrEqual(32 << 20)
    expect(held).toBeLessThan(33 << 20)
    const status = processMemory(child.pid!, readFileSync(`/proc/${child.pid}/status`, 'latin1'), held)!
    expect(status.bytes).toBeGreaterThan(32 << 20)
    // counted once per poll, whoever else holds it
    expect(memfdBytes(`/proc/${child.pid}/fd`, seen)).toBe(0)
    expect(memfdBytes('/proc/0/fd', new Set())).toBe(0)
  })
})

describe('sandbox on this machine', () => {
  it('can be made here (root, unshare, cgroup v1)', async () => {
    const found = await probeSandbox()
    expect(found).toMatchObject({ ok: true, userNamespace: false })
  })

  it('says why it cannot be made when the binaries are missing or refuse', async () => {
    expect(await probeSandbox({ ...process.env, FORGE_UNSHARE_BIN: '/nonexistent/unshare' })).toEqual({
      ok: false,
      reason: 'FORGE_UNSHARE_BIN=/nonexistent/unshare is not an executable file',
    })
    expect(await probeSandbox({ ...process.env, FORGE_UNSHARE_BIN: '/bin/false' })).toEqual({ ok: false, reason: 'a test sandbox failed (exit status 1)' })
  })

  it('refuses an agent that lives inside a suite the worker loaded, naming both', async () => {
    const dir = makeSuite({ 'agents/agent.mjs': 'console.log("hi")\n' })
    onTestFinished(() => removeTempSuites())
    const suite = await loadSuite(dir)
    expect(loadedSuitePaths()).toContain(realpathSync(dir))
    const { result } = await attempt(subprocessAdapter, { command: ['node', join(dir, 'agents', 'agent.mjs')] }, suite, suite.tasks[0]!)
    expect([result.outcome, result.validity, result.failure_bucket]).toEqual(['fail', 'invalid', 'harness_error'])
    expect(result.error).toBe(
      `adapter "subprocess" threw: sandbox: the agent needs ${realpathSync(dir)}/agents, which lies inside ${realpathSync(dir)}; the sandbox never shows an agent the suite or FORGE_HOME`,
    )
  })

  it('hides a protected path that lies under a directory the agent may read', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'forge-hide-'))
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }))
    writeFileSync(join(dir, 'agent.mjs'), "import { readdirSync } from 'node:fs'\nconsole.log(JSON.stringify(readdirSync(process.env.TARGET)))\n")
    mkdirSync(join(dir, 'suite', 'goldens'), { recursive: true })
    writeFileSync(join(dir, 'suite', 'goldens', 'g.json'), '{}')
    const request = { command: [process.execPath, join(dir, 'agent.mjs')], env: { PATH: '/usr/bin:/bin', TARGET: join(dir, 'suite') }, settings: SandboxSettings.parse({}), protectedPaths: [join(dir, 'suite')], ports: [] }
    // mkdtemp makes it 0700: the agent's own uid could not read its program
    await expect(openSandbox(request)).rejects.toThrow(`sandbox: the agent needs ${dir}, which other users cannot read (mode 0700); the agent runs as an unprivileged user of its own: make it readable (chmod o+rX) or run with --no-sandbox`)
    chmodSync(dir, 0o755)
    const sandbox = await openSandbox(request)
    try {
      const out = await runToEnd(sandbox.argv, sandbox.env, sandbox.spawnCwd)
      // the directory is there (the agent's own), the suite in it is an empty, unreadable mount
      expect(out.stderr).toMatch(/EACCES|permission denied/i)
      expect(out.stdout).toBe('')
    } finally {
      await sandbox.close()
    }
  })

  it("hides the worker's own secrets wherever they are: TLS keys and certificates, a store outside FORGE_HOME, the chart's /etc/forge", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'forge-secrets-'))
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }))
    chmodSync(dir, 0o755)
    for (const name of ['tls.key', 'tls.crt', 'ca.crt', 'notes.txt']) writeFileSync(join(dir, name), `${name} CONTENT\n`, { mode: 0o644 })
    mkdirSync(join(dir, 'store'), { mode: 0o755 })
    writeFileSync(join(dir, 'store', 'data.bin'), 'rows', { mode: 0o644 })
    const env = { FORGE_HOME: join(dir, 'home'), FORGE_STORE_PATH: join(dir, 'store'), FORGE_NATS_TLS_KEY: join(dir, 'tls.key'), FORGE_TEMPORAL_TLS_CERT_FILE: join(dir, 'tls.crt'), FORGE_TEMPORAL_TLS_CA_FILE: join(dir, 'ca.crt') }
    expect(harnessPaths(env, '/')).toEqual([join(dir, 'home'), join(dir, 'store'), join(dir, 'tls.key'), join(dir, 'ca.crt'), join(dir, 'tls.crt'), CHART_CONFIG_DIR])
    const script = "const fs = require('fs'); const read = (p) => { try { return fs.readFileSync(p, 'utf8') } catch (e) { return e.code } }; console.log(JSON.stringify(['tls.key', 'tls.crt', 'ca.crt', 'notes.txt', 'store/data.bin'].map((f) => read(process.env.DIR + '/' + f))))"
    // the directory is the agent's to read (sandbox.read_only): everything in it but the secrets
    const out = await nodeInSandbox(script, { read_only: [dir] }, { env: { PATH: '/usr/bin:/bin', DIR: dir }, protectedPaths: harnessPaths(env) })
    expect(JSON.parse(out.stdout)).toEqual(['', '', '', 'notes.txt CONTENT\n', 'EACCES'])
  })

  it('holds each process to max_open_files, below a worker whose own limit is higher', async () => {
    const script = "const fs = require('fs'); const held = []; try { for (;;) held.push(fs.openSync('/dev/null', 'r')) } catch (e) { console.log(JSON.stringify({ highest: held.at(-1), code: e.code })) }"
    const out = await nodeInSandbox(script, { max_open_files: 200 })
    // descriptors 0–199: the last one it got is 199
    expect(JSON.parse(out.stdout)).toEqual({ highest: 199, code: 'EMFILE' })
  })

  it('gives the scratch as many inodes as pages: empty files stop there (ENOSPC), content still fits', async () => {
    const script = "const fs = require('fs'); let n = 0; try { for (; n < 100000; n++) fs.writeFileSync('/tmp/f' + n, '') } catch (e) { console.log(JSON.stringify({ n, code: e.code })) }"
    const out = await nodeInSandbox(script, { tmpfs_mb: 4 })
    // 4 MiB: 1,024 inodes, the root directory takes one
    expect(JSON.parse(out.stdout)).toEqual({ n: scratchInodes(4) - 1, code: 'ENOSPC' })
  })

  it('gives a configured cwd read-only: the agent reads it, writes only to its tmpfs', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'forge-cwd-'))
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }))
    chmodSync(dir, 0o755)
    writeFileSync(join(dir, 'notes.txt'), 'read me\n')
    chmodSync(join(dir, 'notes.txt'), 0o644)
    const script = "const fs = require('fs'); let w; try { fs.writeFileSync('x', '1'); w = 'wrote' } catch (e) { w = e.code } fs.writeFileSync('/tmp/y', '1'); console.log(JSON.stringify([process.cwd(), fs.readFileSync('notes.txt', 'utf8'), w, fs.readdirSync('/tmp')]))"
    const out = await nodeInSandbox(script, {}, { cwd: dir })
    // (the cwd lies under /tmp here, so its mountpoint shows in the agent's tmpfs)
    expect(JSON.parse(out.stdout)).toEqual([dir, 'read me\n', 'EROFS', [dir.split('/').pop(), 'y']])
    expect(readdirSync(dir)).toEqual(['notes.txt'])
  })

  it('runs the agent and its children nicer than the worker, and the agent cannot undo it', async () => {
    // the agent reads its own niceness and its child's, then tries to take the worker's back
    const script = [
      'const os = require("os"); const { execFileSync } = require("child_process")',
      'const child = Number(execFileSync(process.execPath, ["-e", "process.stdout.write(String(require(`os`).getPriority()))"]).toString())',
      'let undo; try { os.setPriority(0, os.getPriority() - 1); undo = "lowered to " + os.getPriority() } catch (e) { undo = e.info ? e.info.code : e.code }',
      'console.log(JSON.stringify({ own: os.getPriority(), child, undo }))',
    ].join('; ')
    const sandbox = await openSandbox({ command: [process.execPath, '-e', script], env: { PATH: '/usr/bin:/bin' }, settings: SandboxSettings.parse({}), protectedPaths: [], ports: [] })
    try {
      expect(sandbox.enforced.cpu_niceness).toBe(AGENT_NICENESS)
      const out = await runToEnd(sandbox.argv, sandbox.env, sandbox.spawnCwd)
      const worker = Math.min(19, getPriority() + AGENT_NICENESS)
      expect(JSON.parse(out.stdout)).toEqual({ own: worker, child: worker, undo: 'EACCES' })
    } finally {
      await sandbox.close()
    }
    // the control: a program the worker starts outside the sandbox runs at the worker's own niceness
    const bare = spawnSync(process.execPath, ['-e', "process.stdout.write(String(require('os').getPriority()))"], { encoding: 'utf8' })
    expect(Number(bare.stdout)).toBe(getPriority())
  })

  it("reports what its processes' memory came to, and the kernel's OOM kills at the limit (a memory cgroup, as root)", async () => {
    const { suite, task } = toolSuite({ budget: { max_tool_calls: 5, max_retries_per_tool: 2, max_duration_ms: 60_000 } })
    const hogs = (count: number) => ({ command: ['node', agentPath('memory-hogs.mjs')], env: { HOGS: String(count), HOG_MB: '64', HOLD_MS: '1500' }, sandbox: { memory_mb: 256 } })
    const sandboxOf = (execution: Awaited<ReturnType<typeof attempt>>) => execution.trace.spans.find((s) => s.name === 'sandbox')!.attributes
    const within = await attempt(subprocessAdapter, hogs(1), suite, task)
    expect([within.result.output, within.result.error]).toEqual(['1 of 1 held', ''])
    expect(sandboxOf(within)).toMatchObject({ memory_limit_mb: 256, memory_enforcement: 'cgroup', memory_kills: 0 })
    expect(sandboxOf(within)['memory_peak_mb']).toBeGreaterThanOrEqual(64)
    // four hogs of 64 MiB and their node processes do not fit in 256 MiB: the kernel kills the largest, the agent goes on
    const past = await attempt(subprocessAdapter, hogs(4), suite, task)
    const kills = sandboxOf(past)['memory_kills'] as number
    expect(kills).toBeGreaterThan(0)
    expect(sandboxOf(past)).toMatchObject({ memory_enforcement: 'cgroup', memory_peak_mb: 256 })
    expect([past.result.output, past.result.error]).toEqual([
      `${4 - kills} of 4 held`,
      `memory_limit: the sandbox's processes reached their memory limit of 256 MiB (sandbox.memory_mb): the kernel killed ${kills} of them`,
    ])
  })

  it('closes with a connection to a bridged port still open (its endpoint never answered)', async () => {
    // an endpoint that accepts and never answers nor closes, as a gateway that shut an agent out may leave one
    const held: NetSocket[] = []
    const endpoint = createNetServer((socket) => void held.push(socket))
    await new Promise<void>((resolve) => endpoint.listen(0, '127.0.0.1', () => resolve()))
    const port = (endpoint.address() as { port: number }).port
    const sandbox = await openSandbox({ command: ['/bin/true'], env: { PATH: '/usr/bin:/bin' }, settings: SandboxSettings.parse({}), protectedPaths: [], ports: [port] })
    // what the forwarder inside does: a connection to the bridge's socket, left open
    const client = netConnect(join(sandbox.spawnCwd, 'sock', `${port}.sock`))
    await new Promise<void>((resolve, reject) => client.once('connect', resolve).once('error', reject))
    client.on('error', () => undefined)
    await until(() => held.length === 1, 10_000)
    try {
      const closed = await Promise.race([sandbox.close().then(() => 'closed'), sleep(5_000).then(() => 'still open after 5 s')])
      expect(closed).toBe('closed')
    } finally {
      client.destroy()
      for (const socket of held) socket.destroy()
      await new Promise<void>((resolve) => endpoint.close(() => resolve()))
    }
  })

  it('takes the agent and everything it started down when the worker is SIGKILLed', async () => {
    const marker = `forge-orphan-${process.pid}`
    const stubborn = "process.on('SIGTERM', () => {}); setInterval(() => {}, 1 << 30)"
    const agent = `const { spawn } = require('child_process'); spawn(process.execPath, ['-e', ${JSON.stringify(stubborn)}, '${marker}'], { detached: true, stdio: 'ignore' }).unref(); ${stubborn}`
    const sandbox = await openSandbox({ command: [process.execPath, '-e', agent, marker], env: { PATH: '/usr/bin:/bin' }, settings: SandboxSettings.parse({}), protectedPaths: [], ports: [] })
    try {
      // a stand-in worker: it spawns the sandbox as the worker does (fd 3 a pipe: the init reports the
      // agent's start on it, and stops without one), then is killed without warning
      const worker = spawn(process.execPath, ['-e', `const c = require('child_process').spawn(${JSON.stringify(sandbox.argv[0])}, ${JSON.stringify(sandbox.argv.slice(1))}, { cwd: ${JSON.stringify(sandbox.spawnCwd)}, env: ${JSON.stringify(sandbox.env)}, stdio: ['pipe', 'ignore', 'ignore', 'pipe'], detached: true }); c.stdio[3].resume(); setInterval(() => {}, 1 << 30)`], { stdio: 'ignore' })
      // conditions, not races: each wait ends as soon as the kernel has done it; the bounds only stop a
      // test that would never see it (a loaded CI machine once took over 10 s to start the two). The
      // agent and the child it detached are Node processes; the sandbox's own (unshare, its init) carry
      // the marker too, among their arguments, while they start it
      await until(() => processesWith(marker, process.execPath).length === 2, 60_000)
      worker.kill('SIGKILL')
      await until(() => processesWith(marker).length === 0, 60_000)
      expect(processesWith(marker)).toEqual([])
    } finally {
      for (const pid of processesWith(marker)) process.kill(pid, 'SIGKILL')
      await sandbox.close()
    }
  }, 150_000)
})

/** The processes with `needle` among their arguments (and, given, `program` as the first). */
function processesWith(needle: string, program?: string): number[] {
  return readdirSync('/proc')
    .filter((p) => /^\d+$/.test(p))
    .filter((pid) => {
      try {
        const args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')
        return args.includes(needle) && (program === undefined || args[0] === program)
      } catch {
        return false
      }
    })
    .map(Number)
}

/** Waits for a condition the kernel makes true asynchronously; fails the test past `ms`. */
async function until(condition: () => boolean, ms: number): Promise<void> {
  const deadline = performance.now() + ms
  while (!condition()) {
    if (performance.now() > deadline) throw new Error(`condition not met within ${ms} ms`)
    await sleep(20)
  }
}

/** Runs `script` with node in a sandbox opened with `settings` (and the rest of `request`), to its end. */
async function nodeInSandbox(script: string, settings: Record<string, unknown> = {}, request: Partial<SandboxRequest> = {}): Promise<{ stdout: string; stderr: string; code: number | null }> {
  const sandbox = await openSandbox({ command: [process.execPath, '-e', script], env: { PATH: '/usr/bin:/bin' }, settings: SandboxSettings.parse(settings), protectedPaths: [], ports: [], ...request })
  try {
    return await runToEnd(sandbox.argv, sandbox.env, sandbox.spawnCwd)
  } finally {
    await sandbox.close()
  }
}

function runToEnd(argv: string[], env: Record<string, string>, cwd: string): Promise<{ stdout: string; stderr: string; code: number | null }> {
  return new Promise((resolve) => {
    const child = spawn(argv[0]!, argv.slice(1), { env, cwd, stdio: ['ignore', 'pipe', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()))
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()))
    child.once('close', (code) => resolve({ stdout: stdout.trim(), stderr, code }))
  })
}
