/**
 * The judge activity, on its own task queue (default `forge-judge`) so it is rate-limited apart
 * from agents: tier-2 golden divergence for failed attempts of tasks with a golden trace, and the
 * LLM-judge metrics. It reads the attempt's stored trace by attempt_uid (never through workflow
 * history) from the results stream, or from the store once the ingester trimmed it off the stream,
 * and publishes a JudgeOutcome. A judge that cannot answer is data (errored rows, tier 2
 * `errored`); only infrastructure errors (NATS, the store) throw and are retried.
 */
import { ApplicationFailure } from '@temporalio/common'
import type { JetStreamClient } from '@nats-io/jetstream'
import type { NatsConnection } from '@nats-io/transport-node'
import { StoredTrace, type AgentTrace, type Judgement, type JudgeSettings, type MetricValue, type Task, type Tier2Result } from '../../core/contracts/index.js'
import { divergenceRequest, tier2FromCall, tier2Status } from '../../core/judge/divergence.js'
import type { JudgeCallOutcome, JudgeRequest } from '../../core/judge/protocol.js'
import { judgeDecoding } from '../../core/judge/protocol.js'
import { attemptKeyOf } from '../../core/identity.js'
import { judgeMetricValues, metricsRequest, selectJudgeMetrics } from '../../core/metrics/index.js'
import { auditEntryOf } from '../../core/audit.js'
import { wellFormed } from '../../core/well-formed.js'
import { judgeAuditRows, judgementKey } from '../../store/audit.js'
import { publishJudgeOutcome, readStoredTrace, resultsKey } from '../../store/bus.js'
import type { StoreReader } from '../../store/clickhouse.js'
import { getStoredTrace } from '../../store/grading-repositories.js'
import { judgeScopeOf } from '../../core/run-scope.js'
import { grantHolds, grantRefusal } from '../../store/grants.js'
import type { JudgeActivities, JudgeInput, JudgeSummary } from '../activity-types.js'
import { SuiteLoadError } from '../../engine/errors.js'
import { goldenTraceOf, judgementOf } from '../../engine/grading-pipeline.js'
import type { Logger } from '../../engine/logger.js'
import { loadSuiteCached } from '../../engine/suite-loader.js'
import { askJudge, resolveJudgeEndpoint, type JudgeEndpoint } from '../../engine/judge/client.js'
import type { RateLimiter } from '../../engine/judge/rate-limit.js'

export interface JudgeActivityDeps {
  nc: NatsConnection
  js: JetStreamClient
  logger: Logger
  /** where the judge endpoint is read from (default process.env) */
  env?: NodeJS.ProcessEnv
  now?: () => number
  /** extra pacing of calls inside one activity (default none: Temporal rate-limits the activities) */
  limiter?: RateLimiter
  /** where a trace trimmed off the results stream (FORGE_RESULTS_KEEP after it was stored) is read; none: the stream only */
  reader?: StoreReader
  /** the key grants are checked under (store/grants.ts; default: the bus connection's results key) */
  resultsKey?: () => string | undefined
}

const unlimited: RateLimiter = { acquire: async () => undefined }

export function createJudgeActivities(deps: JudgeActivityDeps): JudgeActivities {
  const now = deps.now ?? Date.now
  return {
    async judgeAttempt(input: JudgeInput): Promise<JudgeSummary> {
      // before its suite is loaded or anything is published: the run's judge grant
      if (!grantHolds((deps.resultsKey ?? resultsKey)(), 'judge', judgeScopeOf(input), input.grant)) {
        throw ApplicationFailure.nonRetryable(grantRefusal(`judging attempt ${input.attempt_uid}`), 'GrantError')
      }
      const suite = await loadSuiteCached(input.suite_path, input.run_id).catch((error: unknown) => {
        throw error instanceof SuiteLoadError ? ApplicationFailure.nonRetryable(error.message, 'SuiteLoadError') : error
      })
      const task = suite.tasks.find((t) => t.id === input.task_id)
      if (!task) throw ApplicationFailure.nonRetryable(`suite ${suite.name} (${suite.path}) has no task "${input.task_id}"`, 'UnknownTaskError')
      const raw = await readStoredTrace(deps.nc, input.attempt_uid)
      // the ingester trims what the store holds off the stream (FORGE_RESULTS_KEEP): a trace judged later is in the store
      const stored = raw !== undefined ? StoredTrace.parse(raw) : deps.reader !== undefined ? await getStoredTrace(deps.reader, input.attempt_uid) : undefined
      // published and acknowledged before the attempt activity returned: missing from both means it was lost
      if (stored === undefined) throw ApplicationFailure.retryable(`no stored trace for attempt ${input.attempt_uid} in the results stream${deps.reader !== undefined ? ' or the store' : ''}`, 'TraceNotFound')
      // the grant is the run's: the trace judged must be one of its attempts
      if (stored.run_id !== input.run_id || stored.config_id !== input.config_id || stored.task_id !== input.task_id) {
        throw ApplicationFailure.nonRetryable(`refused judging attempt ${input.attempt_uid}: it is an attempt of run ${stored.run_id}, not of ${input.run_id}`, 'GrantError')
      }
      const { metrics, judgement, tier2 } = await judgeStoredAttempt({
        task,
        golden: goldenTraceOf(suite, task),
        stored,
        settings: input.judge,
        goldenDivergence: input.golden_divergence,
        judgeMetrics: input.metrics,
        env: deps.env ?? process.env,
        limiter: deps.limiter ?? unlimited,
        now,
      })
      // the judge model's text may hold half a UTF-16 pair: stored as U+FFFD, before the audit digests (core/well-formed.ts)
      const outcome = wellFormed({ ...attemptKeyOf(stored), grading_version: 1, metrics, judgement })
      // the judge's rows replace the attempt worker's judgement: they are a result of their own in the run's audit trail
      const audit = auditEntryOf(stored.run_id, 'judgement', judgementKey(outcome), judgeAuditRows(outcome))
      await publishJudgeOutcome(deps.js, { ...outcome, audit })
      deps.logger.debug({ run_id: input.run_id, task_id: input.task_id, attempt: input.attempt, attempt_uid: input.attempt_uid, span_id: 'attempt', parent_span_id: null, category: 'grading', tier2: tier2?.status, metrics: metrics.length }, 'judged')
      return { attempt_uid: input.attempt_uid, tier2: tier2?.status ?? 'not_applicable', needs_human_review: judgement?.needs_human_review ?? false, metrics: metrics.length }
    },
  }
}

export interface JudgeStoredAttemptInput {
  task: Task
  /** the task's golden trace as the suite holds it (goldenTraceOf); undefined: none to localize against */
  golden: AgentTrace | undefined
  stored: StoredTrace
  settings: JudgeSettings
  goldenDivergence: boolean
  judgeMetrics: boolean
  /** where the judge endpoint is read from (FORGE_JUDGE_BASE_URL / FORGE_JUDGE_API_KEY, else OPENAI_*) */
  env: NodeJS.ProcessEnv
  limiter?: RateLimiter
  now: () => number
}

/**
 * Tier 2 and the judge metrics of one stored attempt, and the judgement (revision 2) when tier 2
 * ran. Judge failures come back as data: tier 2 `errored`, metric rows `errored`.
 */
export async function judgeStoredAttempt(input: JudgeStoredAttemptInput): Promise<{ metrics: MetricValue[]; judgement: Judgement | null; tier2: Tier2Result | undefined }> {
  const { task, stored, settings } = input
  let endpoint: JudgeEndpoint | undefined
  let endpointError = ''
  try {
    endpoint = resolveJudgeEndpoint(input.env, settings.model)
  } catch (error) {
    endpointError = (error as Error).message
  }
  const ask = async <T>(request: JudgeRequest<T>): Promise<JudgeCallOutcome<T>> => {
    if (endpoint === undefined) {
      return { ok: false, error: endpointError, malformed: false, calls: 0, stamp: { model: settings.model, prompt_version: request.prompt_version, decoding: judgeDecoding(settings) } }
    }
    return askJudge(request, { endpoint, model: settings.model, settings, limiter: input.limiter ?? unlimited })
  }

  let tier2: Tier2Result | undefined
  if (input.goldenDivergence) {
    if (input.golden === undefined) tier2 = tier2Status('not_run', `the suite no longer has a golden trace for ${task.id}`)
    else {
      const request = divergenceRequest({ instruction: task.instruction, input: task.input, grades: stored.grades, golden: input.golden, run: stored.trace, maxChars: settings.max_prompt_chars })
      tier2 = tier2FromCall(await ask(request), settings.min_confidence)
    }
  }

  let metrics: MetricValue[] = []
  if (input.judgeMetrics) {
    const selected = selectJudgeMetrics(settings.metrics)
    if (selected.length > 0) {
      const request = metricsRequest({ instruction: task.instruction, input: task.input, trace: stored.trace, metrics: selected, maxChars: settings.max_prompt_chars })
      metrics = judgeMetricValues(selected, await ask(request))
    }
  }

  // tier 3 decided again now that tier 2 is known (revision 2 replaces the attempt worker's), on the grades stored with the trace
  const graded = {
    grades: stored.grades,
    invariants: stored.invariants,
    verdict: { outcome: stored.outcome, validity: stored.validity, failure_bucket: stored.failure_bucket },
    hasGolden: input.golden !== undefined,
  }
  const judgement = tier2 === undefined ? null : judgementOf({ key: attemptKeyOf(stored), task, trace: stored.trace, graded, tier2, gradingVersion: 1, revision: 2, createdAt: input.now() })
  return { metrics, judgement, tier2 }
}
