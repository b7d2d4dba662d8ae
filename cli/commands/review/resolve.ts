import { Args, Flags } from '@oclif/core'
import { resolveReview } from '../../../app/review.js'
import type { ReviewResolution } from '../../../core/contracts/index.js'
import { resolveConfig } from '../../../stack/config.js'
import { ForgeCommand } from '../../base.js'

export default class ReviewResolve extends ForgeCommand {
  static override summary = "Record a person's resolution of a flagged attempt; stored as a new row, the original grade is never rewritten."
  static override description =
    'Resolving again adds another resolution; the newest is the current one. forge review list --state resolved shows them.'
  static override examples = [
    '<%= config.bin %> review resolve <attempt-uid> --verdict fail --failure-bucket wrong_answer --note "picked the backup shift time"',
    '<%= config.bin %> review resolve <attempt-uid> --verdict pass --note "grader too strict: answer is equivalent" --reviewer alice --json',
  ]
  static override args = {
    attempt: Args.string({ description: 'The attempt uid (run_id/config_id/task_id/attempt).', required: true }),
  }
  static override flags = {
    verdict: Flags.string({ summary: "The reviewer's verdict.", options: ['pass', 'fail', 'partial', 'violation', 'invalid', 'inconclusive'], required: true }),
    'failure-bucket': Flags.string({ summary: 'The failure bucket the reviewer assigns (for fail/partial).' }),
    note: Flags.string({ summary: 'Why.' }),
    reviewer: Flags.string({ summary: 'Who (default: $USER).' }),
  }

  async run(): Promise<ReviewResolution> {
    const { args, flags } = await this.parse(ReviewResolve)
    const resolution = await resolveReview(resolveConfig(), {
      attemptUid: args.attempt,
      verdict: flags.verdict as ReviewResolution['verdict'],
      ...(flags['failure-bucket'] !== undefined ? { failureBucket: flags['failure-bucket'] } : {}),
      ...(flags.note !== undefined ? { note: flags.note } : {}),
      ...(flags.reviewer !== undefined ? { reviewer: flags.reviewer } : {}),
    })
    if (!this.jsonEnabled()) {
      this.log(`resolved ${resolution.attempt_uid}: ${resolution.verdict}${resolution.failure_bucket ? ` (${resolution.failure_bucket})` : ''} — stored as ${resolution.resolution_id}; the original grade is unchanged`)
    }
    return resolution
  }
}
