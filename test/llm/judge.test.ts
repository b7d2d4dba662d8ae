/**
 * The judge against a scripted OpenAI-compatible judge (test/fakes/scripted-openai.ts): strict JSON,
 * one retry of a malformed reply, then `errored`; tier 2 on stored attempts; the tier-0 `judge`
 * grader inside an attempt (deterministic graders first); the self-report never graded.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { AgentTrace, JudgeSettings, StoredTrace, type AttemptResult } from '../../core/contracts/index.js'
import { divergenceRequest } from '../../core/judge/divergence.js'
import type { AgentAdapter } from '../../core/plugins.js'
import { runAttempt } from '../../engine/attempt-runner.js'
import { askJudge, resolveJudgeEndpoint } from '../../engine/judge/client.js'
import { judgeStoredAttempt } from '../../workers/judge/activities.js'
import { startScriptedOpenAI, type ChatRequest, type ScriptedOpenAI, type ScriptedReply } from '../fakes/scripted-openai.js'
import { fakeSuite, fakeTask } from '../unit/fake-suite.js'

let judge: ScriptedOpenAI | undefined
afterEach(async () => {
  await judge?.close()
  judge = undefined
})

const divergenceReply = (confidence: number, step: number | null = 1): ScriptedReply => ({
  content: JSON.stringify({ divergence_step: step, decision: 'answered without calling the upper tool', explanation: 'the answer was never upper-cased', confidence }),
})
const MALFORMED: ScriptedReply = { content: 'The run went wrong at step 1, I think.' }
const FENCED: ScriptedReply = { content: '```json\n{"divergence_step": 1}\n```' }
const settings = JudgeSettings.parse({ model: 'judge-model', max_tokens: 256, metrics: ['correctness', 'safety'] })
const env = (baseURL: string): NodeJS.ProcessEnv => ({ FORGE_JUDGE_BASE_URL: baseURL, FORGE_JUDGE_API_KEY: 'sk-judge', OPENAI_BASE_URL: 'http://127.0.0.1:1/v1', OPENAI_API_KEY: 'sk-agent' })

const golden = AgentTrace.parse({ output: 'ABC', duration_ms: 1, tool_calls: [{ index: 0, name: 'upper', args: { value: 'abc' }, result: 'ABC', retry_index: 0, started_ms: 0, duration_ms: 1 }] })
const failedRun = AgentTrace.parse({ output: 'abc', duration_ms: 1, self_report: 'SELF-REPORT: upper-cased it, done' })
const task = fakeTask({ golden: 'task_one' })
const stored: StoredTrace = StoredTrace.parse({
  attempt_uid: 'run1/c0/task_one/0',
  run_id: 'run1',
  config_id: 'c0',
  suite: 'fake',
  task_id: 'task_one',
  attempt: 0,
  outcome: 'fail',
  validity: 'valid',
  failure_bucket: 'wrong_answer',
  grades: [{ grader: 'exact', passed: false, score: 0, detail: 'expected "ABC", got "abc"' }],
  invariants: [],
  trace: failedRun,
  stored_at: 1,
})

describe('askJudge', () => {
  const request = () => divergenceRequest({ instruction: task.instruction, input: task.input, grades: stored.grades, golden, run: failedRun, maxChars: 4000 })

  it('takes a valid reply at once, and records model, prompt version and decoding settings', async () => {
    judge = await startScriptedOpenAI([divergenceReply(0.9)])
    const outcome = await askJudge(request(), { endpoint: resolveJudgeEndpoint(env(judge.baseURL)), model: 'judge-model', settings })
    expect(outcome).toEqual({
      ok: true,
      value: { divergence_step: 1, decision: 'answered without calling the upper tool', explanation: 'the answer was never upper-cased', confidence: 0.9 },
      stamp: { model: 'judge-model', prompt_version: 'golden-divergence/2', decoding: { temperature: 0, max_tokens: 256, seed: 0, response_format: 'json_schema' } },
      calls: 1,
      usage: { input_tokens: 10, output_tokens: 5, latency_ms: expect.any(Number) },
    })
    expect(judge.requests).toHaveLength(1)
    const sent = judge.requests[0]!
    expect(sent.authorization).toBe('Bearer sk-judge')
    expect(sent.body).toMatchObject({
      model: 'judge-model',
      temperature: 0,
      max_tokens: 256,
      seed: 0,
      response_format: { type: 'json_schema', json_schema: { name: 'golden_divergence', strict: true, schema: request().schema } },
    })
    expect(sent.body.messages.map((m) => m.role)).toEqual(['system', 'user'])
  })

  it('retries a malformed reply once, showing the judge its reply and what was wrong', async () => {
    judge = await startScriptedOpenAI([MALFORMED, divergenceReply(0.8)])
    const outcome = await askJudge(request(), { endpoint: { baseURL: judge.baseURL }, model: 'judge-model', settings })
    expect(outcome).toMatchObject({ ok: true, calls: 2, value: { confidence: 0.8 } })
    expect(judge.requests[1]!.body.messages.slice(-2)).toEqual([
      { role: 'assistant', content: 'The run went wrong at step 1, I think.' },
      {
        role: 'user',
        content:
          'That reply was rejected: the reply does not start with a JSON object: "The run went wrong at step 1, I think.". Answer again with one JSON object that matches the requested shape exactly, and nothing else: no prose, no code fence.',
      },
    ])
  })

  it('gives up after a second malformed reply', async () => {
    judge = await startScriptedOpenAI([FENCED, MALFORMED, divergenceReply(0.9)])
    const outcome = await askJudge(request(), { endpoint: { baseURL: judge.baseURL }, model: 'judge-model', settings })
    expect(outcome).toMatchObject({ ok: false, malformed: true, calls: 2, error: 'malformed reply twice: the reply does not start with a JSON object: "The run went wrong at step 1, I think."' })
    expect(judge.requests).toHaveLength(2)
  })

  it('reports a judge that refuses the request as an error, not as malformed', async () => {
    judge = await startScriptedOpenAI([{ status: 400, content: 'model not found' }])
    const outcome = await askJudge(request(), { endpoint: { baseURL: judge.baseURL }, model: 'nope', settings })
    expect(outcome).toMatchObject({ ok: false, malformed: false, calls: 1, error: expect.stringContaining('the judge could not be asked: 400') })
  })

  it('finds the judge at FORGE_JUDGE_BASE_URL / FORGE_JUDGE_API_KEY, else OPENAI_BASE_URL / OPENAI_API_KEY', () => {
    expect(resolveJudgeEndpoint(env('http://judge:1/v1'))).toEqual({ baseURL: 'http://judge:1/v1', apiKey: 'sk-judge' })
    expect(resolveJudgeEndpoint({ OPENAI_BASE_URL: 'http://agent:2/v1', OPENAI_API_KEY: 'sk-agent' })).toEqual({ baseURL: 'http://agent:2/v1', apiKey: 'sk-agent' })
    expect(resolveJudgeEndpoint({})).toEqual({ baseURL: 'https://api.openai.com/v1' })
    expect(() => resolveJudgeEndpoint({ FORGE_JUDGE_BASE_URL: 'judge:1' })).toThrow('FORGE_JUDGE_BASE_URL must be an http(s) URL, got "judge:1"')
  })
})

/** a judge that answers tier-2 questions from `divergence` and judge-metric questions from `metrics`, by turn */
function purposeScript(divergence: ScriptedReply[], metrics: ScriptedReply[]): (request: ChatRequest, turn: number) => ScriptedReply {
  return (request, turn) => {
    const system = String(request.messages[0]?.content ?? '')
    const script = system.includes('You rate a finished run') ? metrics : divergence
    return script[turn] ?? { status: 500, content: 'script exhausted' }
  }
}
const metricsReply: ScriptedReply = { content: JSON.stringify({ scores: { correctness: { score: 1, reason: 'lower case' }, safety: { score: 5, reason: 'harmless' } } }) }

describe('tier 2 on a stored attempt (the judge activity without NATS)', () => {
  const judgeIt = () =>
    judgeStoredAttempt({ task, golden, stored, settings, goldenDivergence: true, judgeMetrics: true, env: env(judge!.baseURL), now: () => 7 })

  it('valid JSON: the earliest wrong decision is localized; a confident localization is not flagged', async () => {
    judge = await startScriptedOpenAI(purposeScript([divergenceReply(0.9)], [metricsReply]))
    const { tier2, judgement, metrics } = await judgeIt()
    expect(tier2).toEqual({
      status: 'localized',
      divergence_step: 1,
      decision: 'answered without calling the upper tool',
      explanation: 'the answer was never upper-cased',
      confidence: 0.9,
      low_confidence: false,
      calls: 1,
      error: '',
      judge: { model: 'judge-model', prompt_version: 'golden-divergence/2', decoding: { temperature: 0, max_tokens: 256, seed: 0, response_format: 'json_schema' } },
    })
    expect(judgement).toMatchObject({ revision: 2, tier0_failed: true, needs_human_review: false, review_reasons: [], review_packet: null, created_at: 7 })
    expect(metrics.map((m) => [m.metric, m.status, m.value, m.passed, m.judge?.prompt_version])).toEqual([
      ['correctness', 'scored', 0, false, 'judge-metrics/2'],
      ['safety', 'scored', 1, true, 'judge-metrics/2'],
    ])
    // tier 2 never flips success: the judgement carries the stored outcome
    expect(judgement?.tier0_failed).toBe(true)
    // the judge never sees the agent's self-report
    expect(JSON.stringify(judge.requests.map((r) => r.body.messages))).not.toContain('SELF-REPORT')
  })

  it('malformed then valid JSON: localized after the one retry', async () => {
    judge = await startScriptedOpenAI(purposeScript([MALFORMED, divergenceReply(0.7)], [metricsReply]))
    const { tier2, judgement } = await judgeIt()
    expect(tier2).toMatchObject({ status: 'localized', calls: 2, confidence: 0.7, low_confidence: false })
    expect(judgement?.needs_human_review).toBe(false)
  })

  it('malformed twice: tier 2 is errored and the attempt is flagged for human review, with its packet', async () => {
    judge = await startScriptedOpenAI(purposeScript([MALFORMED, FENCED], [MALFORMED, MALFORMED]))
    const { tier2, judgement, metrics } = await judgeIt()
    expect(tier2).toMatchObject({ status: 'errored', calls: 2, low_confidence: true, error: 'malformed reply twice: the reply is wrapped in a code fence, not bare JSON' })
    expect(judgement).toMatchObject({
      needs_human_review: true,
      review_reasons: ['golden_divergence_errored'],
      review_packet: { outcome: 'fail', failure_bucket: 'wrong_answer', golden: 'task_one', self_report: 'SELF-REPORT: upper-cased it, done', tier2: { status: 'errored' } },
    })
    expect(metrics.map((m) => m.status)).toEqual(['errored', 'errored'])
  })

  it('a low-confidence localization is flagged', async () => {
    judge = await startScriptedOpenAI(purposeScript([divergenceReply(0.2)], [metricsReply]))
    const { judgement } = await judgeIt()
    expect(judgement).toMatchObject({ needs_human_review: true, review_reasons: ['golden_divergence_low_confidence'], tier2: { status: 'localized', low_confidence: true } })
  })
})

describe('the tier-0 judge grader inside an attempt', () => {
  const judgeTask = fakeTask({
    outcome_graders: [
      { type: 'exact', expected: 'ABC' },
      { type: 'judge', rubric: 'The answer is the input in upper case.', model: 'judge-model' },
    ],
    golden: 'task_one',
  })
  const suite = fakeSuite({ tasks: [judgeTask], goldens: { task_one: golden } })
  const agent = (output: string, selfReport?: string): AgentAdapter => ({
    name: 'fixed',
    async invoke(payload, ctx) {
      await ctx.tools.call('upper', { value: payload.input['value'] })
      return { output, ...(selfReport !== undefined ? { self_report: selfReport } : {}) }
    },
  })
  const attempt = (adapter: AgentAdapter, withJudge?: JudgeSettings) =>
    runAttempt({ suite, task: judgeTask, adapter, runId: 'run1', configId: 'c0', attempt: 0, runSeed: 's', adapterConfig: {}, workerId: 'w', env: env(judge!.baseURL), ...(withJudge ? { judge: { settings: withJudge } } : {}) })
  const verdict = (reply: object): ScriptedReply => ({ content: JSON.stringify(reply) })

  it('asks the judge once the deterministic graders passed, and stamps its grade', async () => {
    judge = await startScriptedOpenAI([verdict({ verdict: 'pass', score: 0.95, reason: 'upper case' })])
    const { result } = await attempt(agent('ABC'))
    expect([result.outcome, result.validity, result.failure_bucket]).toEqual(['pass', 'valid', null])
    expect(result.grades[1]).toEqual({
      grader: 'judge',
      passed: true,
      score: 0.95,
      detail: 'judge judge-model [judge-grader/2]: pass, score 0.95: "upper case"',
      judge: { model: 'judge-model', prompt_version: 'judge-grader/2', decoding: { temperature: 0, max_tokens: 512, seed: 0, response_format: 'json_schema' } },
    })
    expect(judge.requests).toHaveLength(1)
  })

  it('does not ask the judge when a deterministic grader failed (saves tokens)', async () => {
    judge = await startScriptedOpenAI([verdict({ verdict: 'pass', score: 1, reason: 'x' })])
    const { result } = await attempt(agent('abc'))
    expect(judge.requests).toHaveLength(0)
    expect([result.outcome, result.failure_bucket]).toEqual(['fail', 'wrong_answer'])
    expect(result.grades[1]).toMatchObject({ passed: false, detail: 'not judged: deterministic grader(s) exact failed first: the judge was not asked' })
  })

  it('a judge that answers malformed twice makes the attempt a visible harness error (invalid), not a silent fail', async () => {
    judge = await startScriptedOpenAI([MALFORMED, MALFORMED])
    const { result } = await attempt(agent('ABC'))
    expect([result.outcome, result.validity, result.failure_bucket]).toEqual(['fail', 'invalid', 'harness_error'])
    expect(result.error).toBe('the judge could not grade: judge grader "judge" (judge-model): malformed reply twice: the reply does not start with a JSON object: "The run went wrong at step 1, I think."')
  })

  it('plans the judge worker: a failed attempt of a task with a golden asks for golden divergence and metrics', async () => {
    judge = await startScriptedOpenAI([])
    const { grading } = await attempt(agent('abc'), settings)
    expect(grading.judge).toEqual({ golden_divergence: true, metrics: true })
    expect(grading.judgement).toMatchObject({ revision: 1, tier0_failed: true, tier2: { status: 'pending' }, needs_human_review: true, review_reasons: ['golden_divergence_pending'] })
    expect(grading.metrics.filter((m) => m.kind === 'deterministic')).toHaveLength(18)
  })
})

describe("the agent's self-report is stored beside the trace and never graded", () => {
  it('a self-report claiming success on a failed attempt changes nothing', async () => {
    judge = await startScriptedOpenAI(() => ({ content: JSON.stringify({ verdict: 'fail', score: 0, reason: 'not upper case' }) }))
    const judgeTask = fakeTask({ outcome_graders: [{ type: 'contains', expected: 'ABC' }, { type: 'judge', rubric: 'upper case', model: 'judge-model' }], golden: 'task_one' })
    const suite = fakeSuite({ tasks: [judgeTask], goldens: { task_one: golden }, invariants: {} })
    const run = (selfReport: string | undefined) =>
      runAttempt({
        suite,
        task: judgeTask,
        adapter: { name: 'liar', invoke: async () => ({ output: 'the answer is abc (ABC)', ...(selfReport !== undefined ? { self_report: selfReport } : {}) }) },
        runId: 'run1',
        configId: 'c0',
        attempt: 0,
        runSeed: 's',
        adapterConfig: {},
        workerId: 'w',
        now: (() => {
          let t = 1_700_000_000_000
          return () => (t += 1)
        })(),
        env: env(judge!.baseURL),
        judge: { settings },
      })
    const claim = 'SELF-REPORT: I verified the answer and every check passes; the task succeeded.'
    const honest = await run(undefined)
    const lying = await run(claim)
    // stored beside the trace …
    expect(lying.result.self_report).toBe(claim)
    expect(lying.trace.self_report).toBe(claim)
    expect(lying.grading.judgement.review_packet?.self_report).toBe(claim)
    // … and it changes nothing that was graded
    const graded = (r: AttemptResult) => ({ outcome: r.outcome, validity: r.validity, failure_bucket: r.failure_bucket, grades: r.grades, invariants: r.invariants })
    expect(graded(lying.result)).toEqual(graded(honest.result))
    // contains passed, the judge failed it: a partial, however confident the agent sounds
    expect([lying.result.outcome, lying.result.failure_bucket]).toEqual(['partial', 'wrong_answer'])
    expect(lying.grading.metrics).toEqual(honest.grading.metrics)
    expect({ ...lying.grading.judgement, review_packet: null }).toEqual({ ...honest.grading.judgement, review_packet: null })
    expect(lying.grading.judge).toEqual(honest.grading.judge)
    // no judge prompt ever contained it
    expect(judge.requests.length).toBeGreaterThan(0)
    expect(JSON.stringify(judge.requests.map((r) => r.body))).not.toContain('SELF-REPORT')
  })
})
