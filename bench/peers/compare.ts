/**
 * The measuring half of bench/peers/run-peers.sh (issue 15): the same 1,000-attempt workload — the
 * smoke suite's 5 tasks × 200, a mock agent that makes each task's tool calls with zero think time,
 * the tasks' own graders and invariants, results persisted the way each tool persists them — run in
 * one go by Forge's engine in one process, `forge run` (the CLI, stack up and warm), promptfoo and
 * Inspect AI, then one table: attempts/s of each (its process wall time, and the time the harness
 * itself reports), the ratio forge run ÷ harness, and the targets (forge run ≥ 5× promptfoo, ≥ 20×
 * Inspect). Forge's mock runs with skill 1 here, so every harness does the same clean attempts.
 * `--rounds N` (default 3) runs forge run, promptfoo and Inspect AI N times, interleaved: the table
 * holds each harness's middle round by process wall time, and each round's ratios are printed too,
 * so one slow moment of a shared machine does not decide a target.
 *
 * usage: node dist/bench/peers/compare.js --scratch <dir with promptfoo/ and inspect-venv/> [--attempts 200] [--concurrency 100] [--rounds 3]
 */
import { spawn } from 'node:child_process'
import { createWriteStream, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { parseArgs } from 'node:util'
import Database from 'better-sqlite3'
import YAML from 'yaml'
import type { ForgeConfig } from '../../config/index.js'
import { ConfigError } from '../../core/errors.js'
import { loadSuite } from '../../engine/suite-loader.js'
import { stackDown } from '../../stack/local-stack.js'
import { packageRoot } from '../../stack/paths.js'
import { inProcessEngineLoop, type InProcessReport } from '../in-process.js'
import { describeNodeStart, describeTarget, fixed, formatTable, mean, middleOf, perSecond, ratioTarget } from '../measure.js'
import { nodeStart } from '../proc.js'
import { benchConfig, untilStackIdle } from '../throughput-bench.js'
import { peerWorkload, promptfooConfig, promptfooDuration, type PeerWorkload } from './workload.js'

interface Measured {
  harness: string
  attempts: number
  /** what the harness persisted, read back from its own store (rows, samples) */
  persisted: string
  process_ms: number | undefined
  /** the run's own duration as the harness reports it */
  harness_ms: number | undefined
}

interface Spawned {
  code: number | null
  stdout: string
  wall_ms: number
}

/** Runs a command to its end, its output teed into `log`; wall time from spawn to exit. */
function run(argv: string[], opts: { env?: NodeJS.ProcessEnv; cwd?: string; log: string }): Promise<Spawned> {
  return new Promise((resolvePromise, reject) => {
    const logStream = createWriteStream(opts.log)
    let stdout = ''
    const started = performance.now()
    const child = spawn(argv[0]!, argv.slice(1), { env: opts.env ?? process.env, cwd: opts.cwd ?? process.cwd(), stdio: ['ignore', 'pipe', 'pipe'] })
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString()
      logStream.write(chunk)
    })
    child.stderr.on('data', (chunk: Buffer) => logStream.write(chunk))
    child.once('error', reject)
    child.once('close', (code) => {
      const wallMs = performance.now() - started
      logStream.end(() => resolvePromise({ code, stdout, wall_ms: wallMs }))
    })
  })
}

function must(spawned: Spawned, what: string, log: string): Spawned {
  if (spawned.code !== 0) throw new Error(`${what} exited with code ${spawned.code}; see ${log}`)
  return spawned
}

const readText = (path: string): string => (existsSync(path) ? readFileSync(path, 'utf8') : '')

/**
 * `forge run` as a user runs it, spawn to exit. `warmCli`: on the warm CLI the run before left
 * (stack/warm-cli.ts: oclif and the run command loaded ahead), else in its own process (FORGE_WARM_CLI=0).
 */
async function forgeCli(config: ForgeConfig, workload: PeerWorkload, seed: string, logs: string, warmCli: boolean): Promise<{ measured: Measured; report: Record<string, unknown> }> {
  const log = join(logs, `forge-run-${seed}.log`)
  const argv = [
    process.execPath,
    join(packageRoot(), 'bin', 'run.js'),
    'run',
    '--suite',
    'smoke',
    '--adapter',
    'mock',
    '--adapter-config',
    '{"skill":1}',
    '--attempts',
    String(workload.attempts),
    '--concurrency',
    String(workload.concurrency),
    '--max-in-flight',
    String(workload.concurrency),
    '--seed',
    seed,
    '--json',
  ]
  const env = { ...process.env, FORGE_HOME: config.home, FORGE_TEMPORAL_ADDRESS: '', FORGE_NATS_URL: '', FORGE_CLICKHOUSE_URL: '', FORGE_WARM_CLI: warmCli ? '1' : '0' }
  const spawned = must(await run(argv, { env, cwd: packageRoot(), log }), 'forge run', log)
  const report = JSON.parse(spawned.stdout) as Record<string, unknown>
  const total = Number(report['expected_attempts'])
  // the warm CLI names each command it runs in its log
  const served = warmCli && readText(join(config.home, 'logs', 'cli-warm.log')).includes(`"--seed" "${seed}"`)
  if (warmCli && !served) console.log('  (no warm CLI took forge run: it ran in its own process)')
  return {
    report,
    measured: {
      harness: warmCli ? `forge run (CLI, stack up${served ? ', on the warm CLI' : ''})` : 'forge run (CLI, stack up, FORGE_WARM_CLI=0)',
      attempts: total,
      persisted: `${String(report['attempts'])} attempt rows (ClickHouse)`,
      process_ms: spawned.wall_ms,
      harness_ms: Number(report['wall_ms']),
    },
  }
}

async function promptfoo(scratch: string, runDir: string, workload: PeerWorkload, logs: string, round: number): Promise<Measured> {
  const version = (JSON.parse(readFileSync(join(scratch, 'promptfoo', 'node_modules', 'promptfoo', 'package.json'), 'utf8')) as { version: string }).version
  const home = join(runDir, 'promptfoo-home')
  rmSync(home, { recursive: true, force: true })
  mkdirSync(home, { recursive: true })
  const log = join(logs, `promptfoo-${round}.log`)
  const argv = [
    join(scratch, 'promptfoo', 'node_modules', '.bin', 'promptfoo'),
    'eval',
    '-c',
    join(runDir, 'promptfooconfig.yaml'),
    '--repeat',
    String(workload.attempts),
    '-j',
    String(workload.concurrency),
    '--no-cache',
    '--no-progress-bar',
    '--no-table',
  ]
  // its per-run debug log (~2.8 MiB for 1,000 attempts) off: not where it keeps results, and writing it
  // crashed promptfoo 0.121 as it exited, now and then ("write after end" in its file logger)
  const env = { ...process.env, PROMPTFOO_CONFIG_DIR: home, PROMPTFOO_DISABLE_DEBUG_LOG: '1', PROMPTFOO_DISABLE_TELEMETRY: '1', PROMPTFOO_DISABLE_UPDATE: '1', PROMPTFOO_DISABLE_SHARING: '1', NO_COLOR: '1' }
  // promptfoo exits 100 when assertions failed; anything else non-zero is a broken run
  const spawned = await run(argv, { env, cwd: runDir, log })
  if (spawned.code !== 0 && spawned.code !== 100) throw new Error(`promptfoo exited with code ${spawned.code}; see ${log}`)
  const db = new Database(join(home, 'promptfoo.db'), { readonly: true })
  let rows: { n: number; ok: number }
  try {
    rows = db.prepare('SELECT count(*) AS n, sum(success) AS ok FROM eval_results').get() as { n: number; ok: number }
  } finally {
    db.close()
  }
  return {
    harness: `promptfoo ${version} (custom provider, SQLite)`,
    attempts: workload.tasks.length * workload.attempts,
    persisted: `${rows.n} eval_results rows (SQLite), ${rows.ok} passed`,
    process_ms: spawned.wall_ms,
    harness_ms: promptfooDuration(spawned.stdout),
  }
}

async function inspectAi(scratch: string, runDir: string, logs: string, round: number): Promise<Measured> {
  const python = join(scratch, 'inspect-venv', 'bin', 'python')
  const version = must(await run([python, '-c', 'import inspect_ai; print(inspect_ai.__version__)'], { log: join(logs, 'inspect-version.log') }), 'python -c "import inspect_ai"', join(logs, 'inspect-version.log')).stdout.trim()
  const logDir = join(runDir, 'inspect-logs')
  rmSync(logDir, { recursive: true, force: true })
  const log = join(logs, `inspect-${round}.log`)
  const env = { ...process.env, INSPECT_DISPLAY: 'none', INSPECT_LOG_DIR: logDir, NO_COLOR: '1' }
  const spawned = must(await run([python, join(packageRoot(), 'bench', 'peers', 'inspect', 'smoke_eval.py'), join(runDir, 'workload.json'), logDir], { env, cwd: runDir, log }), 'the Inspect task', log)
  const last = spawned.stdout.trim().split('\n').at(-1) ?? '{}'
  const summary = JSON.parse(last) as { status: string; samples: number; total: number; correct: number; seconds: number; error: string | null }
  return {
    harness: `Inspect AI ${version} (mockllm, .eval log)`,
    attempts: summary.total,
    persisted: `${summary.samples} samples in the .eval log (${summary.status}), ${summary.correct} correct`,
    process_ms: spawned.wall_ms,
    harness_ms: summary.seconds * 1000,
  }
}

function inProcessRow(label: string, r: InProcessReport): Measured {
  return { harness: label, attempts: r.attempts, persisted: `${r.published.messages} messages encoded, not sent`, process_ms: undefined, harness_ms: r.wall_ms }
}

async function main(): Promise<void> {
  let values: { scratch?: string | undefined; attempts: string; concurrency: string; rounds: string }
  try {
    values = parseArgs({ options: { scratch: { type: 'string' }, attempts: { type: 'string', default: '200' }, concurrency: { type: 'string', default: '100' }, rounds: { type: 'string', default: '3' } } }).values
  } catch (error) {
    throw new ConfigError(`${(error as Error).message} (flags: --scratch <dir> [--attempts 200] [--concurrency 100] [--rounds 3])`)
  }
  if (values.scratch === undefined) throw new ConfigError('--scratch: give the directory run-peers.sh installed promptfoo and Inspect AI into')
  const scratch = resolve(values.scratch)
  const attempts = Number(values.attempts)
  const concurrency = Number(values.concurrency)
  if (!Number.isInteger(attempts) || attempts < 1) throw new ConfigError(`--attempts must be a whole number ≥ 1, got "${values.attempts}"`)
  if (!Number.isInteger(concurrency) || concurrency < 1) throw new ConfigError(`--concurrency must be a whole number ≥ 1, got "${values.concurrency}"`)
  const rounds = Number(values.rounds)
  if (!Number.isInteger(rounds) || rounds < 1 || rounds > 20) throw new ConfigError(`--rounds must be a whole number from 1 to 20, got "${values.rounds}"`)
  for (const needed of [join(scratch, 'promptfoo', 'node_modules', '.bin', 'promptfoo'), join(scratch, 'inspect-venv', 'bin', 'python')]) {
    if (!existsSync(needed)) throw new ConfigError(`${needed} is missing: run bench/peers/run-peers.sh, which installs the peers into --scratch`)
  }
  const runDir = join(scratch, 'run')
  const logs = join(runDir, 'logs')
  mkdirSync(logs, { recursive: true })

  // the workload, from Forge's own loaded suite
  const suite = await loadSuite('smoke')
  const workload = peerWorkload(suite, suite.tasks, attempts, concurrency)
  writeFileSync(join(runDir, 'workload.json'), JSON.stringify(workload, null, 2))
  const peersDir = join(packageRoot(), 'bench', 'peers')
  const pfConfig = promptfooConfig(workload, {
    provider: join(peersDir, 'promptfoo', 'provider.mjs'),
    assertions: join(peersDir, 'promptfoo', 'assertions.mjs'),
    workload: join(runDir, 'workload.json'),
    toolsModule: join(suite.path, 'tools.mjs'),
    invariantsModule: join(suite.path, 'invariants.mjs'),
  })
  writeFileSync(join(runDir, 'promptfooconfig.yaml'), YAML.stringify(pfConfig))

  const { config, home } = benchConfig('forge-peers-')
  const total = workload.tasks.length * attempts
  const engineInput = { suite: 'smoke', adapter: 'mock', adapter_config: { skill: 1 }, attempts, workers: 1, concurrency, seed: 'peers' }
  try {
    console.log(`peers: smoke × ${attempts} = ${total} attempts, concurrency ${concurrency}, ${rounds} round(s); logs under ${logs}`)
    console.log(`  ${describeNodeStart(nodeStart())}`)
    // warm: the CLI brings the stack up and leaves it up; the in-process loop loads the suite and JITs
    must(await run([process.execPath, join(packageRoot(), 'bin', 'run.js'), 'run', '--suite', 'smoke', '--adapter', 'mock', '--attempts', '2', '--seed', 'warm', '--json'], { env: { ...process.env, FORGE_HOME: home, FORGE_TEMPORAL_ADDRESS: '', FORGE_NATS_URL: '', FORGE_CLICKHOUSE_URL: '' }, cwd: packageRoot(), log: join(logs, 'forge-warm.log') }), 'forge run (warm-up)', join(logs, 'forge-warm.log'))
    await inProcessEngineLoop(config, { ...engineInput, attempts: 20, seed: 'warm' })
    // each Forge measurement starts on an idle stack, as the e2e bench's do: the ingester's merges after
    // the warm-up run and the warm worker's JIT warm-up (app/jit-warmup.ts) are done by then
    const idle = async (what: string): Promise<void> => {
      if (!(await untilStackIdle(config))) console.log(`  (the stack did not go idle before ${what} within 15 s: measured anyway)`)
    }

    await idle('the in-process loop')
    const first = await inProcessEngineLoop(config, engineInput)
    console.log(`  forge in-process: ${fixed(first.attempts_per_second)} attempts/s`)
    // the harnesses in rounds, interleaved: a slow moment of the machine lands on one round, not on one harness
    const measured: { forge: Measured[]; promptfoo: Measured[]; inspect: Measured[] } = { forge: [], promptfoo: [], inspect: [] }
    let forgeOwnProcess: Measured | undefined
    const processRate = (m: Measured): number => perSecond(m.attempts, m.process_ms!)
    for (let round = 1; round <= rounds; round++) {
      const of = rounds === 1 ? '' : ` (round ${round} of ${rounds})`
      await idle(`forge run${of}`)
      const forge = (await forgeCli(config, workload, round === 1 ? 'peers' : `peers-${round}`, logs, true)).measured
      console.log(`  forge run${of}: ${fixed(processRate(forge))} attempts/s (process)`)
      if (round === 1) {
        await idle('forge run in its own process')
        forgeOwnProcess = (await forgeCli(config, workload, 'peers-own-process', logs, false)).measured
        console.log(`  forge run (FORGE_WARM_CLI=0): ${fixed(processRate(forgeOwnProcess))} attempts/s (process)`)
      }
      // a peer starts once what forge run left running has settled (the ingester's merges, the next warm
      // CLI loading, a warm worker listening again): it must not pay for Forge's work on the same cores
      await idle(`promptfoo${of}`)
      const pf = await promptfoo(scratch, runDir, workload, logs, round)
      console.log(`  promptfoo${of}: ${fixed(processRate(pf))} attempts/s (process)`)
      await idle(`Inspect AI${of}`)
      const inspect = await inspectAi(scratch, runDir, logs, round)
      console.log(`  Inspect AI${of}: ${fixed(processRate(inspect))} attempts/s (process)`)
      if (rounds > 1) console.log(`  round ${round}: forge run ${fixed(processRate(forge) / processRate(pf))}× promptfoo, ${fixed(processRate(forge) / processRate(inspect))}× Inspect AI`)
      measured.forge.push(forge)
      measured.promptfoo.push(pf)
      measured.inspect.push(inspect)
    }
    // each harness's middle round by process wall time, named so in the table
    const middle = (all: Measured[]): Measured => {
      const m = middleOf(all, (x) => x.process_ms!)!
      return rounds === 1 ? m : { ...m, harness: `${m.harness}, middle of ${rounds}` }
    }
    const forge = middle(measured.forge)
    const pf = middle(measured.promptfoo)
    const inspect = middle(measured.inspect)
    const last = await inProcessEngineLoop(config, engineInput)
    console.log(`  forge in-process again: ${fixed(last.attempts_per_second)} attempts/s`)

    const rows: Measured[] = [inProcessRow('forge engine in one process (first)', first), forge, forgeOwnProcess!, pf, inspect, inProcessRow('forge engine in one process (last)', last)]
    const forgeProcess = perSecond(total, forge.process_ms!)
    const forgeHarness = perSecond(total, forge.harness_ms!)
    const rate = (ms: number | undefined, attemptsOf: number): string => (ms === undefined ? '—' : fixed(perSecond(attemptsOf, ms)))
    const ratio = (ms: number | undefined, attemptsOf: number, reference: number): string => (ms === undefined ? '—' : `${fixed(reference / perSecond(attemptsOf, ms))}×`)
    console.log('')
    console.log(
      formatTable(
        ['harness', 'attempts', 'persisted', 'process s', 'attempts/s (process)', 'attempts/s (own clock)', 'forge run ÷ it (process)', 'forge run ÷ it (own clock)'],
        rows.map((r) => [
          r.harness,
          String(r.attempts),
          r.persisted,
          r.process_ms === undefined ? '—' : (r.process_ms / 1000).toFixed(2),
          rate(r.process_ms, r.attempts),
          rate(r.harness_ms, r.attempts),
          ratio(r.process_ms, r.attempts, forgeProcess),
          ratio(r.harness_ms, r.attempts, forgeHarness),
        ]),
      ),
    )
    console.log('')
    console.log('process: spawn to exit of the command (CLI start-up, planning, run, persistence); own clock: forge run wall_ms, promptfoo "Duration", Inspect eval() time; in-process: the loop alone')
    const engine = mean([first.attempts_per_second, last.attempts_per_second])
    console.log(`targets (process wall time${rounds === 1 ? '' : `, each harness's middle round of ${rounds}`}):`)
    console.log(`  ${describeTarget(ratioTarget('forge run vs promptfoo', forgeProcess, perSecond(pf.attempts, pf.process_ms!), 5, 'at-least'))}`)
    console.log(`  ${describeTarget(ratioTarget('forge run vs Inspect AI', forgeProcess, perSecond(inspect.attempts, inspect.process_ms!), 20, 'at-least'))}`)
    console.log(`  ${describeTarget(ratioTarget('forge run (own clock) vs in-process', forgeHarness, engine, 1.5, 'within'))}`)
  } finally {
    await stackDown(config)
    rmSync(home, { recursive: true, force: true })
  }
}

await main().catch((error: unknown) => {
  // bad flags or a missing install are one line and exit 2; anything else is printed whole
  if (error instanceof ConfigError) {
    console.error(`Error: ${error.message}`)
    process.exit(2)
  }
  console.error(error)
  process.exit(1)
})
