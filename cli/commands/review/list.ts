import { Flags } from '@oclif/core'
import { listReviews, type ReviewState } from '../../../app/review.js'
import { openReader } from '../../../app/store-access.js'
import type { ReviewQueueEntry } from '../../../store/grading-repositories.js'
import { resolveConfig } from '../../../stack/config.js'
import { ForgeCommand } from '../../base.js'
import { table } from '../../format.js'

export default class ReviewList extends ForgeCommand {
  static override summary = 'List attempts flagged for human review (tier 3), oldest first: open ones by default.'
  static override description =
    'An attempt is flagged when tier 0 failed and its task has no golden trace, or when golden divergence (tier 2) was ' +
    'low-confidence, found nothing, errored or could not run. The flag never changes the outcome.'
  static override examples = [
    '<%= config.bin %> review list',
    '<%= config.bin %> review list --run-id <run-id> --state all',
    '<%= config.bin %> review list --state resolved --json',
  ]
  static override flags = {
    'run-id': Flags.string({ char: 'r', summary: 'Only this run.' }),
    state: Flags.string({ summary: 'open (no resolution yet), resolved, or all.', options: ['open', 'resolved', 'all'], default: 'open' }),
    limit: Flags.integer({ char: 'l', summary: 'How many.', default: 100, min: 1, max: 100_000 }),
  }

  async run(): Promise<ReviewQueueEntry[]> {
    const { flags } = await this.parse(ReviewList)
    const reader = await openReader(resolveConfig())
    try {
      const entries = await listReviews(reader, { state: flags.state as ReviewState, limit: flags.limit, ...(flags['run-id'] ? { runId: flags['run-id'] } : {}) })
      if (!this.jsonEnabled()) {
        if (entries.length === 0) this.log(`no ${flags.state === 'all' ? '' : `${flags.state} `}reviews${flags['run-id'] ? ` for run ${flags['run-id']}` : ''}`)
        else
          this.log(
            table(
              ['attempt', 'task', 'tier 2', 'why', 'resolution'],
              entries.map((e) => [
                e.attempt_uid,
                e.task_id,
                e.tier2_status,
                e.review_reasons.map((r) => r.split(':')[0]).join(', '),
                e.resolutions === 0 ? 'open' : `${e.resolution}${e.reviewer ? ` (${e.reviewer})` : ''}${e.resolutions > 1 ? ` [${e.resolutions}]` : ''}`,
              ]),
            ),
          )
      }
      return entries
    } finally {
      await reader.close()
    }
  }
}
