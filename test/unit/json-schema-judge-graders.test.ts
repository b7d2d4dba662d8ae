/** The json_schema and judge graders: passing, failing and malformed configs. */
import { describe, expect, it } from 'vitest'
import { AgentTrace, Task, type GraderSpec } from '../../core/contracts/index.js'
import { GraderConfigError, gradeAll, isJudgeSpec, judgeGraderKey, judgeRequestsOf, validateGraderSpec } from '../../core/graders/index.js'
import { JudgeGraderConfig } from '../../core/graders/judge.js'
import type { GradeContext } from '../../core/plugins.js'

const task = Task.parse({ id: 't1', instruction: 'Return the order as JSON.', input: { order: 7 }, graders: [{ type: 'exact', expected: 'x' }] })
const ctx: GradeContext = { task, fixtures: {} }
const trace = (output: unknown): AgentTrace => AgentTrace.parse({ output, duration_ms: 1, self_report: 'I returned perfect JSON, all checks pass' })

function grade(spec: GraderSpec, output: unknown, context: GradeContext = ctx): { passed: boolean; score: number; detail: string } {
  expect(validateGraderSpec(spec)).toEqual({ ok: true })
  const [result] = gradeAll([spec], trace(output), context)
  if (result === undefined) throw new Error('no grade')
  return { passed: result.passed, score: result.score, detail: result.detail }
}

const orderSchema = { type: 'object', properties: { id: { type: 'integer' }, status: { enum: ['open', 'closed'] } }, required: ['id', 'status'], additionalProperties: false }

describe('json_schema grader', () => {
  it('passes structured output and JSON text (a code fence allowed) that match the schema', () => {
    expect(grade({ type: 'json_schema', schema: orderSchema }, { id: 7, status: 'open' })).toEqual({ passed: true, score: 1, detail: 'matches the schema: "{\\"id\\":7,\\"status\\":\\"open\\"}"' })
    expect(grade({ type: 'json_schema', schema: orderSchema }, '```json\n{"id": 7, "status": "closed"}\n```').passed).toBe(true)
    expect(grade({ type: 'json_schema', schema: { type: 'integer', minimum: 5 }, field: 'order.id' }, '{"order": {"id": 7}}').passed).toBe(true)
  })
  it('fails output that breaks the schema, naming each violation', () => {
    expect(grade({ type: 'json_schema', schema: orderSchema }, { id: '7', status: 'lost', note: 'x' })).toEqual({
      passed: false,
      score: 0,
      detail: 'does not match the schema: $.id: expected integer, got string "7"; $.status: "lost" is not one of ["open","closed"]; $: unexpected property "note"',
    })
  })
  it('fails output that is not JSON, and no output at all', () => {
    expect(grade({ type: 'json_schema', schema: orderSchema }, 'order 7 is open')).toEqual({
      passed: false,
      score: 0,
      detail: expect.stringMatching(/^output is not JSON \(.+\): "order 7 is open"$/),
    })
    expect(grade({ type: 'json_schema', schema: orderSchema }, undefined)).toEqual({ passed: false, score: 0, detail: 'no output to check against the schema' })
  })
  it('with parse_string false, a string output is a string', () => {
    expect(grade({ type: 'json_schema', schema: { type: 'string', maxLength: 3 }, parse_string: false }, '"ok"').passed).toBe(false)
    expect(grade({ type: 'json_schema', schema: { type: 'string', maxLength: 3 }, parse_string: false }, 'ok').passed).toBe(true)
  })
  it('rejects malformed configs: a missing or broken schema, an unknown keyword, an unknown key', () => {
    expect(validateGraderSpec({ type: 'json_schema' })).toEqual({ ok: false, problems: [{ path: ['schema'], message: 'required key missing for the json_schema grader' }] })
    expect(validateGraderSpec({ type: 'json_schema', schema: 'object' })).toEqual({
      ok: false,
      problems: [{ path: ['schema'], message: 'expected a JSON Schema (an object, or true/false)' }],
    })
    expect(validateGraderSpec({ type: 'json_schema', schema: { type: 'object', propertys: {} } })).toEqual({
      ok: false,
      problems: [{ path: ['schema'], message: '#: unsupported keyword "propertys"' }],
    })
    expect(validateGraderSpec({ type: 'json_schema', schema: {}, strict: true })).toEqual({
      ok: false,
      problems: [{ path: ['strict'], message: 'unknown key "strict" for the json_schema grader; known keys: type, name, field, schema, parse_string' }],
    })
    expect(() => gradeAll([{ type: 'json_schema', schema: { minimum: 'one' } }], trace(1), ctx)).toThrow(GraderConfigError)
  })
})

describe('judge grader', () => {
  const spec: GraderSpec = { type: 'judge', rubric: 'The answer gives order 7 as open.', reference: '{"id":7,"status":"open"}', model: 'judge-1' }
  const config = JudgeGraderConfig.parse({ rubric: spec['rubric'], reference: spec['reference'], model: 'judge-1' })
  const stamp = { model: 'judge-1', prompt_version: 'judge-grader/2', decoding: { temperature: 0 } }
  const judged = (verdict: 'pass' | 'fail', score: number): GradeContext => ({ ...ctx, judgements: { [judgeGraderKey(config)]: { ok: true, verdict, score, reason: 'because', stamp } } })

  it('is an LLM-backed grader: a judge request, built purely from the task and the trace', () => {
    expect(isJudgeSpec(spec)).toBe(true)
    expect(isJudgeSpec({ type: 'exact', expected: 'x' })).toBe(false)
    const [pending, ...rest] = judgeRequestsOf([spec, { type: 'exact', expected: 'x' }, { ...spec }], trace('{"id":7}'), ctx, { maxChars: 4000 })
    expect(rest).toEqual([]) // equal configs share one call
    expect(pending).toMatchObject({ key: judgeGraderKey(config), grader: 'judge', model: 'judge-1', request: { purpose: 'grader', prompt_version: 'judge-grader/2', schema_name: 'judge_grade' } })
    const prompt = pending!.request.messages.map((m) => m.content).join('\n')
    expect(prompt).toContain('Return the order as JSON.')
    expect(prompt).toContain('The answer gives order 7 as open.')
    expect(prompt).toContain('{"id":7,"status":"open"}')
    // the self-report is never shown to a grader
    expect(prompt).not.toContain('all checks pass')
  })
  it('passes on a pass verdict and records the judge stamp on the grade', () => {
    const [result] = gradeAll([spec], trace('{"id":7,"status":"open"}'), judged('pass', 0.9))
    expect(result).toEqual({ grader: 'judge', passed: true, score: 0.9, detail: 'judge judge-1 [judge-grader/2]: pass, score 0.9: "because"', judge: stamp })
  })
  it('fails on a fail verdict, and on a pass below min_score', () => {
    expect(grade(spec, 'x', judged('fail', 0.2))).toEqual({ passed: false, score: 0.2, detail: 'judge judge-1 [judge-grader/2]: fail, score 0.2: "because"' })
    const strict = { ...spec, min_score: 0.95 }
    const { type: _type, ...strictConfig } = strict
    const ctxStrict: GradeContext = { ...ctx, judgements: { [judgeGraderKey(JudgeGraderConfig.parse(strictConfig))]: { ok: true, verdict: 'pass', score: 0.9, reason: 'ok', stamp } } }
    expect(grade(strict, 'x', ctxStrict)).toMatchObject({ passed: false, score: 0.9, detail: expect.stringContaining('(needs 0.95)') })
  })
  it('fails, stamped as not judged, when the judge was not asked or did not answer', () => {
    const [notAsked] = gradeAll([spec], trace('x'), ctx)
    expect(notAsked).toEqual({
      grader: 'judge',
      passed: false,
      score: 0,
      detail: 'not judged: no judge verdict was recorded for this grader',
      judge: { model: '', prompt_version: 'judge-grader/2', decoding: {} },
    })
    const [noAnswer] = gradeAll([spec], trace('x'), { ...ctx, judgements: { [judgeGraderKey(config)]: { ok: false, reason: 'malformed reply twice' } } })
    expect(noAnswer).toMatchObject({ passed: false, detail: 'not judged: malformed reply twice' })
  })
  it('rejects malformed configs: no rubric, an empty model, a score outside 0–1, unknown keys', () => {
    expect(validateGraderSpec({ type: 'judge' })).toEqual({ ok: false, problems: [{ path: ['rubric'], message: 'required key missing for the judge grader' }] })
    expect(validateGraderSpec({ type: 'judge', rubric: 'r', model: '' })).toMatchObject({ ok: false, problems: [{ path: ['model'] }] })
    expect(validateGraderSpec({ type: 'judge', rubric: 'r', min_score: 2 })).toMatchObject({ ok: false, problems: [{ path: ['min_score'] }] })
    expect(validateGraderSpec({ type: 'judge', rubric: 'r', rubrik: 'x' })).toEqual({
      ok: false,
      problems: [{ path: ['rubrik'], message: 'unknown key "rubrik" for the judge grader (did you mean "rubric"?); known keys: type, name, rubric, reference, model, include_tool_calls, min_score' }],
    })
  })
})
