/**
 * The subprocess adapter: a new process per attempt (process exit guarantees clean state), in any
 * language. The agent runs in the agent sandbox (engine/sandbox/: its own PID, mount, network, IPC
 * and UTS namespaces, a fresh tmpfs as its working directory, only its tool endpoint and LLM gateway
 * reachable) unless the config says `sandbox: false`; either way it is spawned detached as the
 * leader of its own process group, with an environment scrubbed to PATH, HOME and LANG plus what
 * the config names. It reads its payload from the first stdin line and talks the JSON-lines protocol of
 * core/agent-protocol.ts on stdio; with `protocol: "http"` it may also call tools over the
 * per-attempt endpoint (FORGE_TOOL_URL / FORGE_TOOL_TOKEN). When it finishes, crashes or the
 * attempt is aborted, the whole group gets SIGTERM, then SIGKILL after a grace, and the adapter
 * returns only once no process of the group is left.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { isAbsolute, join, resolve } from 'node:path'
import type { Readable } from 'node:stream'
import { setTimeout as sleep } from 'node:timers/promises'
import { z } from 'zod'
import { AGENT_PROTOCOL_VERSION, parseAgentLine, type FinalMessage, type ToolResultMessage } from '../../core/agent-protocol.js'
import type { InvocationPayload } from '../../core/contracts/index.js'
import { normalizeAgentOutput } from '../../core/output-parser.js'
import type { AdapterContext, AdapterOutput, AgentAdapter, ToolBox } from '../../core/plugins.js'
import { stopProcessGroup, trackProcessGroup, type StopReport } from '../process-group.js'
import { budgetWatchedToolBox } from '../tools/budget-watch.js'
import { gatewayConfigShape, harnessConfigShape, parseAdapterConfig } from './config-schema.js'
import { startToolEndpoint, type ToolEndpoint } from '../tools/endpoint.js'
import { sandboxConfigShape, unsandboxedNote } from '../sandbox/config.js'
import { SandboxSetupError } from '../sandbox/errors.js'
import { openSandbox, type PreparedSandbox } from '../sandbox/host.js'
import type { MemoryReport, MemoryWatch } from '../sandbox/memory.js'
import { harnessPaths, portOf } from '../sandbox/paths.js'
import { loadedSuitePaths } from '../suite-files.js'
import { SANDBOX_STARTED_MARK } from '../sandbox/layout.js'

/** ctx.config of the subprocess adapter. */
export const SubprocessConfig = z
  .strictObject({
    command: z
      .array(z.string().min(1))
      .min(1)
      .describe("argv of the agent: program and arguments; relative paths resolve against the worker's directory."),
    cwd: z
      .string()
      .min(1)
      .optional()
      .describe('Working directory (read-only inside the sandbox); default: a fresh empty directory per attempt, removed afterwards.'),
    env: z
      .record(z.string(), z.string())
      .default({})
      .describe("Extra environment variables for the agent (nothing else of the worker's environment is passed)."),
    protocol: z
      .enum(['stdio', 'http'])
      .default('stdio')
      .describe('stdio: tool calls as JSON lines; http: also a tool endpoint in FORGE_TOOL_URL / FORGE_TOOL_TOKEN.'),
    llm: z.boolean().default(false).describe("Give the agent OPENAI_BASE_URL / OPENAI_API_KEY of the attempt's LLM gateway."),
    kill_grace_ms: z
      .number()
      .int()
      .nonnegative()
      .max(10_000)
      .default(500)
      .describe("After SIGTERM, how long the agent's process group gets before SIGKILL, in ms."),
    ...sandboxConfigShape,
    ...harnessConfigShape,
    ...gatewayConfigShape,
  })
  .describe('Config of the subprocess adapter (--adapter-config).')
export type SubprocessConfig = z.output<typeof SubprocessConfig>

/** The only variables of the worker's own environment an agent process inherits. */
export const INHERITED_ENV = ['PATH', 'HOME', 'LANG'] as const

/** Caps on what is kept of an agent's output streams. */
const MAX_TEXT_BYTES = 64 * 1024
const MAX_STDERR_BYTES = 4 * 1024
const MAX_LINE_BYTES = 1024 * 1024
/**
 * How many invalid protocol lines (a malformed message, a line over MAX_LINE_BYTES) an agent may send
 * before it is stopped. Each one costs the worker a parse and an error kept in memory, and an invalid
 * tool call an answer written to the agent: an agent that wrote two million of them held a worker's
 * event loop for 36 s and grew it by 2 GiB. The first ones are kept; they say what was wrong.
 */
export const MAX_PROTOCOL_ERRORS = 100
/**
 * How many lines an agent may write to stdout in one attempt before it is stopped: splitting and
 * reading each costs the worker's event loop ~1 µs however little it holds, and an agent writing
 * short lines as fast as a pipe takes them kept it busy until the deadline, for every attempt on it.
 * A protocol conversation is a few lines per step; diagnostics belong on stderr.
 */
export const MAX_STDOUT_LINES = 100_000
/**
 * How many bytes an agent may write to stdout in one attempt before it is stopped. Lines of a
 * megabyte (the most a protocol line may hold) written as fast as the pipe took them cost a worker
 * over half a core until the deadline, whatever they held; an attempt's protocol is its tool calls
 * and its answer, a few megabytes at most.
 */
export const MAX_STDOUT_BYTES = 64 * 1024 * 1024
/** How many bytes an agent may write to stderr in one attempt before it is stopped (the last MAX_STDERR_BYTES are kept): reading them cost a worker over half a core while an agent wrote as fast as it could. */
export const MAX_STDERR_TOTAL_BYTES = 64 * 1024 * 1024
/** after `final`, how long the agent may take to exit by itself before its group is stopped */
const EXIT_AFTER_FINAL_MS = 200
/** once the group is stopped, how long its stdout may take to reach EOF (a process outside the group could hold it) */
const STDOUT_DRAIN_MS = 5_000

export function parseSubprocessConfig(config: Record<string, unknown>): SubprocessConfig {
  return parseAdapterConfig('subprocess', SubprocessConfig, config)
}

/** The agent's environment: the allowlist, the config's variables, then the harness's own (which win). */
export function agentEnvironment(
  config: Pick<SubprocessConfig, 'env'>,
  extra: Record<string, string>,
  source: NodeJS.ProcessEnv = process.env,
): Record<string, string> {
  const env: Record<string, string> = {}
  for (const name of INHERITED_ENV) {
    const value = source[name]
    if (value !== undefined) env[name] = value
  }
  return { ...env, ...config.env, ...extra }
}

/**
 * argv with relative paths that name existing files of `base` made absolute, so a command like
 * `node examples/agents/echo-agent.mjs` still works from the attempt's empty working directory.
 */
export function resolveCommand(command: string[], base: string): string[] {
  return command.map((arg) => {
    if (arg.startsWith('-') || isAbsolute(arg) || !/[/\\.]/.test(arg)) return arg
    const candidate = resolve(base, arg)
    return existsSync(candidate) ? candidate : arg
  })
}

interface AgentRun {
  final: FinalMessage | undefined
  text: string[]
  textBytes: number
  stderr: string
  errors: Array<{ kind: string; message: string }>
  exit: { code: number | null; signal: NodeJS.Signals | null } | undefined
  /** why the harness stopped the agent before it finished, if it did */
  stoppedFor: 'deadline' | 'budget' | 'protocol' | 'stdout' | 'stderr' | undefined
  /** invalid protocol lines so far (only the first MAX_PROTOCOL_ERRORS are in `errors`) */
  protocolErrors: number
  /** stdout lines and bytes so far */
  lines: number
  stdoutBytes: number
  stop: StopReport | undefined
  /** what the sandbox saw of its processes' memory (sandboxed agents only) */
  memory: MemoryReport | undefined
  spawnedAtMs: number
  endedAtMs: number
}

export const subprocessAdapter: AgentAdapter = {
  name: 'subprocess',
  // SIGTERM grace + SIGKILL + reaping take longer than an in-process adapter needs to stop
  stopGraceMs: 3_000,
  invoke: (payload: InvocationPayload, ctx: AdapterContext): Promise<AdapterOutput> => runSubprocessAgent(payload, ctx, parseSubprocessConfig(ctx.config), 'subprocess'),
}

/** What adapters built on this one (pydantic-ai, module) add to a sandbox. */
export interface SubprocessSandboxExtras {
  /** more host paths the agent may read (a module's node_modules) */
  readOnly?: string[]
  /** 'agent': the agent's own process serves the tool/LLM ports (the module host) */
  forwarder?: 'process' | 'agent'
}

/**
 * Runs one attempt of a subprocess agent with a parsed config; `adapter` names the adapter in notes
 * (pydantic-ai and the sandboxed module adapter run through here).
 */
export async function runSubprocessAgent(
  payload: InvocationPayload,
  ctx: AdapterContext,
  config: SubprocessConfig,
  adapter: string,
  extras: SubprocessSandboxExtras = {},
): Promise<AdapterOutput> {
    const started = performance.now()
    let ignoredBudget!: () => void
    const budgetIgnored = new Promise<void>((resolveIgnored) => (ignoredBudget = resolveIgnored))
    const tools = budgetWatchedToolBox(ctx.tools, () => ignoredBudget())
    const harnessEnv: Record<string, string> = {}
    const ports: number[] = []
    let endpoint: ToolEndpoint | undefined
    let scratch: string | undefined
    let sandbox: PreparedSandbox | undefined
    try {
      if (config.protocol === 'http') {
        endpoint = await startToolEndpoint(tools)
        harnessEnv['FORGE_TOOL_URL'] = endpoint.url
        harnessEnv['FORGE_TOOL_TOKEN'] = endpoint.token
        ports.push(portOf(endpoint.url))
      }
      if (config.llm) {
        const llm = await ctx.llm()
        harnessEnv['OPENAI_BASE_URL'] = llm.baseURL
        harnessEnv['OPENAI_API_KEY'] = llm.apiKey
        ports.push(portOf(llm.baseURL))
      }
      const command = resolveCommand(config.command, process.cwd())
      let launch: AgentProcessOptions['launch']
      if (config.sandbox !== false) {
        sandbox = await openSandbox({
          command,
          env: agentEnvironment(config, harnessEnv),
          settings: config.sandbox,
          // every suite this worker loaded (ground truth), FORGE_HOME and the worker's other secrets (engine/sandbox/paths.ts)
          protectedPaths: [...loadedSuitePaths(), ...harnessPaths(process.env)],
          ports,
          ...(config.cwd !== undefined ? { cwd: config.cwd } : {}),
          ...(extras.readOnly !== undefined ? { readOnly: extras.readOnly } : {}),
          ...(extras.forwarder !== undefined ? { forwarder: extras.forwarder } : {}),
        })
        launch = { argv: sandbox.argv, cwd: sandbox.spawnCwd, env: sandbox.env, sandboxed: true, watchMemory: sandbox.watchMemory }
      } else {
        let cwd = config.cwd
        if (cwd === undefined) {
          scratch = mkdtempSync(join(tmpdir(), 'forge-agent-'))
          cwd = scratch
          harnessEnv['TMPDIR'] = scratch
        }
        launch = { argv: command as [string, ...string[]], cwd, env: agentEnvironment(config, harnessEnv), sandboxed: false }
      }
      const run = await runAgentProcess({ launch, payload, tools, signal: ctx.signal, budgetIgnored, killGraceMs: config.kill_grace_ms, started })
      const output = toAdapterOutput(run, ctx)
      if (sandbox !== undefined) output.spans?.push(sandboxSpan(run, sandbox))
      else output.isolation_degraded = unsandboxedNote(adapter)
      return output
    } finally {
      await endpoint?.close()
      await sandbox?.close()
      if (scratch !== undefined) rmSync(scratch, { recursive: true, force: true })
    }
}

/** The sandbox's span: what it enforced for this attempt. */
function sandboxSpan(run: AgentRun, sandbox: PreparedSandbox): NonNullable<AdapterOutput['spans']>[number] {
  return {
    span_id: 'sandbox',
    parent_span_id: 'subprocess',
    category: 'harness',
    name: 'sandbox',
    start_ms: run.spawnedAtMs,
    duration_ms: Math.max(0, run.endedAtMs - run.spawnedAtMs),
    attributes: {
      ...sandbox.enforced,
      read_only: sandbox.enforced.read_only.join(':'),
      memory_peak_mb: run.memory?.peak_mb ?? null,
      memory_kills: run.memory?.kills ?? 0,
    },
  }
}

interface AgentProcessOptions {
  /** what to spawn: the agent itself, or the sandbox that runs it (which writes a start mark on fd 3) */
  launch: { argv: [string, ...string[]]; cwd: string; env: Record<string, string>; sandboxed: boolean; watchMemory?: (pid: number) => MemoryWatch }
  payload: InvocationPayload
  tools: ToolBox
  signal: AbortSignal
  budgetIgnored: Promise<void>
  killGraceMs: number
  /** performance.now() when the adapter was invoked; span times are relative to it */
  started: number
}

async function runAgentProcess(opts: AgentProcessOptions): Promise<AgentRun> {
  const { signal, tools } = opts
  const since = (): number => Math.max(0, Math.round(performance.now() - opts.started))
  const run: AgentRun = {
    final: undefined,
    text: [],
    textBytes: 0,
    stderr: '',
    errors: [],
    exit: undefined,
    stoppedFor: undefined,
    protocolErrors: 0,
    lines: 0,
    stdoutBytes: 0,
    stop: undefined,
    memory: undefined,
    spawnedAtMs: since(),
    endedAtMs: since(),
  }
  if (signal.aborted) {
    run.stoppedFor = 'deadline'
    return run
  }
  const { launch } = opts
  const [program, ...args] = launch.argv
  const child = spawn(program, args, { cwd: launch.cwd, env: launch.env, detached: true, stdio: ['pipe', 'pipe', 'pipe', launch.sandboxed ? 'pipe' : 'ignore'] }) as ChildProcessWithoutNullStreams
  const spawned = await new Promise<{ ok: true } | { ok: false; error: Error }>((resolveSpawn) => {
    child.once('spawn', () => resolveSpawn({ ok: true }))
    child.once('error', (error) => resolveSpawn({ ok: false, error }))
  })
  if (!spawned.ok) {
    throw new Error(`subprocess adapter: cannot start ${JSON.stringify(program)} (cwd ${launch.cwd}): ${spawned.error.message}`, { cause: spawned.error })
  }
  // the sandbox's init marks the moment the agent starts: an exit before it is the harness's failure, not the agent's
  let startMark = ''
  const marker = child.stdio[3] as Readable | null
  marker?.on('data', (chunk: Buffer) => (startMark += chunk.toString('utf8')))
  marker?.on('error', () => undefined)
  const pgid = child.pid as number
  trackProcessGroup(pgid)
  const memoryWatch = launch.watchMemory?.(pgid)
  run.spawnedAtMs = since()

  const exited = new Promise<void>((resolveExit) => {
    child.once('exit', (code, exitSignal) => {
      run.exit = { code, signal: exitSignal }
      resolveExit()
    })
  })
  // a write to an agent that already exited fails with EPIPE: that is the agent's business
  child.stdin.on('error', () => undefined)
  const stdoutClosed = new Promise<void>((resolveClosed) => child.stdout.once('close', () => resolveClosed()))

  let finalReceived!: () => void
  const gotFinal = new Promise<void>((resolveFinal) => (finalReceived = resolveFinal))
  const aborted = new Promise<void>((resolveAbort) => {
    if (signal.aborted) resolveAbort()
    else signal.addEventListener('abort', () => resolveAbort(), { once: true })
  })

  // tool calls are answered one at a time, in the order the agent sent them
  let queue: Promise<void> = Promise.resolve()
  const send = (message: ToolResultMessage): void => {
    if (!child.stdin.destroyed && child.stdin.writable) child.stdin.write(`${JSON.stringify(message)}\n`)
  }
  // an agent that abuses its output (floods, invalid lines) is stopped, and nothing more of its stdout is read
  let abuse!: (why: 'protocol' | 'stdout' | 'stderr') => void
  let abusing = false
  const abused = new Promise<'protocol' | 'stdout' | 'stderr'>((resolveAbuse) => (abuse = resolveAbuse))
  const stopReading = (why: 'protocol' | 'stdout' | 'stderr'): void => {
    abusing = true
    abuse(why)
  }
  // the last MAX_STDERR_BYTES bytes, kept as bytes and decoded once at the end: decoding and joining
  // every chunk cost a worker over half a core while an agent wrote to stderr as fast as it could
  let stderrTail = Buffer.alloc(0)
  let stderrBytes = 0
  child.stderr.on('data', (chunk: Buffer) => {
    stderrTail = chunk.length >= MAX_STDERR_BYTES ? Buffer.from(chunk.subarray(chunk.length - MAX_STDERR_BYTES)) : Buffer.concat([stderrTail, chunk]).subarray(-MAX_STDERR_BYTES)
    stderrBytes += chunk.length
    if (stderrBytes > MAX_STDERR_TOTAL_BYTES && !abusing) stopReading('stderr')
  })
  const stderrText = (): string => stderrTail.toString('utf8').replace(/^\uFFFD+/, '')
  /** counts an invalid line; false once the agent has sent more than it may (it is being stopped) */
  const protocolError = (message: string): boolean => {
    run.protocolErrors++
    if (run.protocolErrors > MAX_PROTOCOL_ERRORS) {
      stopReading('protocol')
      return false
    }
    run.errors.push({ kind: 'protocol_error', message })
    return true
  }
  const onLine = (line: string): void => {
    if (abusing) return
    if (++run.lines > MAX_STDOUT_LINES) return stopReading('stdout')
    const parsed = parseAgentLine(line)
    switch (parsed.kind) {
      case 'tool_call': {
        const { id, name, args } = parsed.message
        queue = queue.then(async () => {
          if (run.stoppedFor !== undefined) return
          const outcome = await tools.call(name, args ?? {})
          send(outcome.ok ? { type: 'tool_result', id, ok: true, result: outcome.result ?? null } : { type: 'tool_result', id, ok: false, error: outcome.error })
        })
        break
      }
      case 'final':
        run.final ??= parsed.message
        finalReceived()
        break
      case 'invalid':
        if (!protocolError(`invalid ${parsed.type} message: ${parsed.problem}`)) break
        if (parsed.type === 'tool_call' && parsed.id !== undefined) {
          const id = parsed.id
          queue = queue.then(() => send({ type: 'tool_result', id, ok: false, error: `invalid tool_call message: ${parsed.problem}` }))
        }
        break
      case 'text':
        if (run.textBytes < MAX_TEXT_BYTES) {
          run.text.push(parsed.text)
          run.textBytes += Buffer.byteLength(parsed.text) + 1
        }
        break
    }
  }
  const splitter = lineSplitter(onLine, (bytes) => void protocolError(`an output line longer than ${MAX_LINE_BYTES} bytes was dropped (${bytes} bytes)`))
  child.stdout.on('data', (chunk: Buffer) => {
    if (abusing) return
    run.stdoutBytes += chunk.length
    if (run.stdoutBytes > MAX_STDOUT_BYTES) return stopReading('stdout')
    splitter.push(chunk)
  })

  child.stdin.write(`${JSON.stringify({ type: 'payload', protocol: AGENT_PROTOCOL_VERSION, payload: opts.payload })}\n`)

  const how = await Promise.race([
    gotFinal.then(() => 'final' as const),
    exited.then(() => 'exit' as const),
    aborted.then(() => 'deadline' as const),
    opts.budgetIgnored.then(() => 'budget' as const),
    abused,
  ])
  if (how !== 'final' && how !== 'exit') run.stoppedFor = how
  if (how === 'final') {
    // a well-behaved agent exits by itself once it answered; EOF on stdin tells it to
    child.stdin.end()
    await Promise.race([exited, sleep(EXIT_AFTER_FINAL_MS)])
  }
  run.endedAtMs = since()
  // whatever happened, nothing of the group outlives the attempt (forked children included);
  // past the deadline the agent gets a shorter grace, its time is already up
  run.stop = await stopProcessGroup(pgid, { termGraceMs: how === 'deadline' ? Math.min(opts.killGraceMs, 200) : opts.killGraceMs })
  run.memory = memoryWatch?.stop()
  if (run.stop.survivors.length > 0) {
    run.errors.push({ kind: 'harness', message: `processes ${run.stop.survivors.join(', ')} of agent group ${pgid} survived SIGKILL` })
  }
  // The agent's last lines (its final answer among them) may still be in the pipe: 'exit' can come
  // before its stdout is read, and under load that read waits behind other work. The group is gone,
  // so every write end is closed and reading to EOF ends; only a process that escaped the group could
  // hold the pipe open, and that costs at most STDOUT_DRAIN_MS, said in the trace.
  const drainTimer = new AbortController()
  const drained = await Promise.race([
    stdoutClosed.then(() => true),
    sleep(run.stop.survivors.length > 0 ? 100 : STDOUT_DRAIN_MS, undefined, { signal: drainTimer.signal }).then(() => false, () => false),
  ])
  drainTimer.abort()
  if (!drained) run.errors.push({ kind: 'harness', message: `the agent's stdout stayed open after its process group was stopped; output after ${since()} ms is not kept` })
  splitter.end()
  child.stdin.destroy()
  child.stdout.destroy()
  child.stderr.destroy()
  run.stderr = stderrText()
  marker?.destroy()
  await queue.catch(() => undefined)
  if (launch.sandboxed && !startMark.includes(SANDBOX_STARTED_MARK) && run.stoppedFor === undefined) {
    throw new SandboxSetupError(`the agent sandbox could not be set up (exit ${String(run.exit?.code ?? run.exit?.signal)}): ${run.stderr.trim().slice(-1000)}`)
  }
  return run
}

/** What an attempt's trace says when processes of its sandbox were killed at the memory limit. */
export function memoryLimitMessage(memory: MemoryReport): string {
  const limit = `${memory.limit_mb} MiB (sandbox.memory_mb)`
  if (memory.enforcement === 'cgroup') return `the sandbox's processes reached their memory limit of ${limit}: the kernel killed ${memory.kills} of them`
  const killed = memory.killed.map((p) => `${p.command} (pid ${p.pid} in the sandbox, ${p.mb} MiB)`).join(', ')
  return `the sandbox's processes held more than ${limit} together: killed ${memory.kills}, largest first: ${killed}`
}

/** Splits a byte stream into UTF-8 lines; a line longer than MAX_LINE_BYTES is dropped, never buffered whole. */
function lineSplitter(onLine: (line: string) => void, onDropped: (bytes: number) => void): { push(chunk: Buffer): void; end(): void } {
  let pending: Buffer[] = []
  let pendingBytes = 0
  let dropping = false
  let droppedBytes = 0
  const flush = (tail: Buffer): void => {
    if (dropping) {
      onDropped(droppedBytes + tail.length)
      dropping = false
      droppedBytes = 0
    } else {
      onLine(Buffer.concat([...pending, tail]).toString('utf8').replace(/\r$/, ''))
    }
    pending = []
    pendingBytes = 0
  }
  return {
    push(chunk: Buffer) {
      let start = 0
      for (let nl = chunk.indexOf(10, start); nl !== -1; nl = chunk.indexOf(10, start)) {
        flush(chunk.subarray(start, nl))
        start = nl + 1
      }
      const rest = chunk.subarray(start)
      if (rest.length === 0) return
      if (dropping) {
        droppedBytes += rest.length
      } else if (pendingBytes + rest.length > MAX_LINE_BYTES) {
        dropping = true
        droppedBytes = pendingBytes + rest.length
        pending = []
        pendingBytes = 0
      } else {
        pending.push(Buffer.from(rest))
        pendingBytes += rest.length
      }
    },
    end() {
      if (pendingBytes > 0 || dropping) flush(Buffer.alloc(0))
    },
  }
}

function toAdapterOutput(run: AgentRun, ctx: AdapterContext): AdapterOutput {
  const errors = [...run.errors]
  if (run.memory !== undefined && run.memory.kills > 0) errors.push({ kind: 'memory_limit', message: memoryLimitMessage(run.memory) })
  const stderrTail = run.stderr.trim().slice(-1000)
  if (run.stoppedFor === 'deadline') {
    errors.push({ kind: 'stopped', message: `agent stopped at the attempt deadline (${run.stop?.via ?? 'never started'})` })
  } else if (run.stoppedFor === 'budget') {
    errors.push({ kind: 'stopped', message: 'agent kept calling tools after its budget was exhausted; stopped' })
  } else if (run.stoppedFor === 'stderr') {
    errors.push({ kind: 'stopped', message: `agent wrote more than ${MAX_STDERR_TOTAL_BYTES / 1024 / 1024} MiB to stderr; stopped` })
  } else if (run.stoppedFor === 'stdout') {
    const what = run.stdoutBytes > MAX_STDOUT_BYTES ? `${MAX_STDOUT_BYTES / 1024 / 1024} MiB` : `${MAX_STDOUT_LINES} lines`
    errors.push({ kind: 'stopped', message: `agent wrote more than ${what} to stdout; stopped (diagnostics belong on stderr)` })
  } else if (run.stoppedFor === 'protocol') {
    errors.push({ kind: 'stopped', message: `agent kept sending invalid protocol lines (${run.protocolErrors} by the time it was stopped; the first ${MAX_PROTOCOL_ERRORS} are listed); stopped` })
  } else if (run.final === undefined && run.exit !== undefined && (run.exit.code !== 0 || run.exit.signal !== null)) {
    const status = run.exit.signal !== null ? `signal ${run.exit.signal}` : `code ${String(run.exit.code)}`
    errors.push({ kind: 'agent_exit', message: `agent exited with ${status}${stderrTail ? `: ${stderrTail}` : ''}` })
  }
  let rawOutput: unknown
  let source: 'final' | 'stdout_text'
  if (run.final !== undefined) {
    rawOutput = run.final.output
    source = 'final'
  } else {
    const text = run.text.join('\n').trim()
    rawOutput = text === '' ? undefined : text
    source = 'stdout_text'
  }
  const parsed = normalizeAgentOutput(rawOutput)
  const output: AdapterOutput = {
    output: parsed.value,
    errors,
    spans: [
      {
        span_id: 'subprocess',
        parent_span_id: null,
        category: 'harness',
        name: 'agent-process',
        start_ms: run.spawnedAtMs,
        duration_ms: Math.max(0, run.endedAtMs - run.spawnedAtMs),
        attributes: {
          output_source: source,
          output_parser: parsed.method,
          exit_code: run.exit?.code ?? null,
          exit_signal: run.exit?.signal ?? null,
          stopped_for: run.stoppedFor ?? null,
          tools_exhausted: ctx.tools.exhausted,
        },
      },
      {
        span_id: 'subprocess-stop',
        parent_span_id: 'subprocess',
        category: 'harness',
        name: 'stop-process-group',
        start_ms: run.endedAtMs,
        duration_ms: run.stop?.elapsed_ms ?? 0,
        attributes: { via: run.stop?.via ?? null },
      },
    ],
  }
  if (run.final?.self_report !== undefined) output.self_report = run.final.self_report
  if (run.final?.refused !== undefined) output.refused = run.final.refused
  return output
}
