/**
 * `forge tasks validate --oracle`: proof that every task of a suite is solvable as written. The
 * oracle adapter replays each task's golden trace through the real tool proxy and environment, in
 * process (no servers); a task passes only when its graders and invariants pass on what that
 * replay actually did.
 */
import type { Task } from '../core/contracts/index.js'
import type { LoadedSuite } from '../core/plugins.js'
import { getAdapter } from './adapters/index.js'
import { ORACLE_ADAPTER, runAttempt } from './attempt-runner.js'
import { EnvironmentPool } from './env/pool.js'

export interface OracleTaskCheck {
  task_id: string
  passed: boolean
  outcome: string
  validity: string
  /** why it did not pass: failed grades and invariants, or the harness error */
  problems: string[]
  /** the golden's recorded results differ from what its calls return now (stale, but it may still pass) */
  divergences: string[]
}

export interface OracleSuiteCheck {
  suite: string
  passed: number
  failed: number
  tasks: OracleTaskCheck[]
}

export interface OracleCheckOptions {
  /** attempts run at once (default 4) */
  concurrency?: number
  /** default: a pool of its own, closed at the end */
  pool?: EnvironmentPool
}

async function checkTask(suite: LoadedSuite, task: Task, pool: EnvironmentPool): Promise<OracleTaskCheck> {
  if (!suite.goldens.has(task.id)) {
    return { task_id: task.id, passed: false, outcome: 'fail', validity: 'invalid', problems: ['no golden trace: name one with `golden:` in the task file'], divergences: [] }
  }
  const { result, trace } = await runAttempt({
    suite,
    task,
    adapter: getAdapter(ORACLE_ADAPTER),
    runId: 'oracle-check',
    configId: 'oracle',
    attempt: 0,
    runSeed: 'oracle',
    adapterConfig: {},
    workerId: 'oracle-check',
    envPool: pool,
  })
  const divergences = trace.errors.filter((e) => e.kind === 'golden_divergence').map((e) => e.message)
  const passed = result.outcome === 'pass' && result.validity === 'valid'
  const problems = passed
    ? []
    : [
        ...result.grades.filter((g) => !g.passed).map((g) => `${g.grader}: ${g.detail}`),
        ...result.invariants.filter((i) => !i.passed).map((i) => `invariant ${i.name}: ${i.detail}`),
        ...(result.failure_bucket === 'harness_error' || result.validity === 'invalid' ? [result.error] : []),
      ].filter((p) => p !== '')
  return { task_id: task.id, passed, outcome: result.outcome, validity: result.validity, problems, divergences }
}

/** Runs the oracle over every task of a loaded suite. */
export async function checkSuiteWithOracle(suite: LoadedSuite, opts: OracleCheckOptions = {}): Promise<OracleSuiteCheck> {
  const pool = opts.pool ?? new EnvironmentPool()
  const concurrency = Math.max(1, opts.concurrency ?? 4)
  const checks: OracleTaskCheck[] = new Array<OracleTaskCheck>(suite.tasks.length)
  let next = 0
  try {
    const lane = async (): Promise<void> => {
      while (next < suite.tasks.length) {
        const at = next
        next += 1
        checks[at] = await checkTask(suite, suite.tasks[at] as Task, pool)
      }
    }
    await Promise.all(Array.from({ length: Math.min(concurrency, suite.tasks.length) }, lane))
  } finally {
    if (opts.pool === undefined) await pool.close()
  }
  const passed = checks.filter((c) => c.passed).length
  return { suite: suite.name, passed, failed: checks.length - passed, tasks: checks }
}
