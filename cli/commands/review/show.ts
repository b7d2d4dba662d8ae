import { Args } from '@oclif/core'
import { showReview, type ReviewDetail } from '../../../app/review.js'
import { openReader } from '../../../app/store-access.js'
import { resolveConfig } from '../../../stack/config.js'
import { ForgeCommand } from '../../base.js'

export default class ReviewShow extends ForgeCommand {
  static override summary = "Show a flagged attempt's review packet: why it was flagged, the run step by step, grades, tier 2, resolutions."
  static override examples = ['<%= config.bin %> review show <attempt-uid>', '<%= config.bin %> review show <attempt-uid> --json']
  static override args = {
    attempt: Args.string({ description: 'The attempt uid (run_id/config_id/task_id/attempt), as forge review list prints it.', required: true }),
  }

  async run(): Promise<ReviewDetail> {
    const { args } = await this.parse(ReviewShow)
    const reader = await openReader(resolveConfig())
    try {
      const detail = await showReview(reader, args.attempt)
      if (!this.jsonEnabled()) printReview((line) => this.log(line), detail)
      return detail
    } finally {
      await reader.close()
    }
  }
}

function printReview(log: (line: string) => void, detail: ReviewDetail): void {
  const j = detail.judgement
  const p = j.review_packet
  log(`attempt ${j.attempt_uid}   task ${j.task_id}   grading version ${j.grading_version}`)
  log(`flagged for review: ${j.needs_human_review ? 'yes' : 'no'}`)
  for (const reason of j.review_reasons) log(`  - ${reason}`)
  if (p) {
    log(`outcome ${p.outcome}   validity ${p.validity}   failure bucket ${p.failure_bucket ?? '—'}   golden ${p.golden ?? 'none'}`)
    log('')
    log(`instruction: ${p.instruction}`)
    log(`input: ${JSON.stringify(p.input)}`)
    log('')
    log('the run, step by step:')
    p.steps.forEach((step, i) => log(`  ${i + 1}. ${step}`))
    log('')
    log('grades:')
    for (const g of p.grades) log(`  ${g.passed ? 'pass' : 'FAIL'}  ${g.grader}: ${g.detail}`)
    for (const inv of p.invariants) log(`  ${inv.passed ? 'kept' : 'BROKE'}  invariant ${inv.name}${inv.detail ? `: ${inv.detail}` : ''}`)
    if (p.self_report) log(`\nthe agent's own account (not graded): ${p.self_report}`)
  }
  const t2 = j.tier2
  log('')
  log(
    `tier 2 (golden divergence): ${t2.status}` +
      (t2.divergence_step !== null ? ` at step ${t2.divergence_step}` : '') +
      (t2.confidence !== null ? `, confidence ${t2.confidence.toFixed(2)}${t2.low_confidence ? ' (low)' : ''}` : '') +
      (t2.judge ? `   [judge ${t2.judge.model}, ${t2.judge.prompt_version}, ${t2.calls} call(s)]` : ''),
  )
  if (t2.decision) log(`  decision: ${t2.decision}`)
  if (t2.explanation) log(`  why: ${t2.explanation}`)
  if (t2.error) log(`  error: ${t2.error}`)
  log('')
  if (detail.resolutions.length === 0) log('resolutions: none yet (forge review resolve <attempt> --verdict …)')
  else {
    log('resolutions (newest last; the original grade is unchanged):')
    for (const r of detail.resolutions) {
      log(`  ${new Date(r.resolved_at).toISOString()}  ${r.verdict}${r.failure_bucket ? ` (${r.failure_bucket})` : ''}${r.reviewer ? ` by ${r.reviewer}` : ''}${r.note ? `: ${r.note}` : ''}`)
    }
  }
  if (detail.trace) log(`\nstored trace: ${detail.trace.tool_calls} tool calls, ${detail.trace.spans} spans${detail.trace.truncated.length > 0 ? `, cut: ${detail.trace.truncated.join(', ')}` : ''}`)
}
