import { Flags } from '@oclif/core'
import { newestRunId } from '../../app/compare.js'
import { judgeAgreement, type JudgeAgreementReport } from '../../app/judge-agreement.js'
import { openReader } from '../../app/store-access.js'
import type { Agreement } from '../../core/agreement.js'
import { resolveConfig } from '../../stack/config.js'
import { ForgeCommand } from '../base.js'
import { pct, table } from '../format.js'

export default class JudgeAgreement extends ForgeCommand {
  static override summary = "Cohen's κ between the LLM judge and the programmatic graders on the overlap set, with raw agreement and n; κ < 0.7 = untrustworthy."
  static override description =
    'The overlap set is the attempts with both a programmatic verdict (every non-judge tier-0 grade passed) and a judge verdict: ' +
    'a tier-0 judge grader, or the correctness judge metric. Raw agreement is shown beside κ because it flatters a judge when ' +
    'nearly every attempt passes; κ corrects for chance. κ is unavailable (not zero) with no overlap or when both raters used one class only.'
  static override examples = ['<%= config.bin %> judge-agreement', '<%= config.bin %> judge-agreement --run-id <run-id> --json']
  static override flags = {
    'run-id': Flags.string({ char: 'r', summary: 'The run (default: the latest).' }),
    'grading-version': Flags.integer({ summary: 'Which grading of the run (default: the newest; 1 = the original).', min: 1 }),
  }

  async run(): Promise<JudgeAgreementReport> {
    const { flags } = await this.parse(JudgeAgreement)
    const reader = await openReader(resolveConfig())
    try {
      const runId = flags['run-id'] ?? (await newestRunId(reader))
      const report = await judgeAgreement(reader, runId, flags['grading-version'])
      if (!this.jsonEnabled()) {
        this.log(`run ${report.run_id}, grading version ${report.grading_version}: ${report.attempts} attempts; trusted at κ ≥ ${report.threshold}`)
        this.log('')
        const row = (label: string, a: Agreement): (string | number)[] => [
          label,
          a.n,
          `${a.table.both_pass}/${a.table.both_fail}/${a.table.judge_pass_programmatic_fail}/${a.table.judge_fail_programmatic_pass}`,
          pct(a.raw_agreement),
          a.kappa === null ? 'n/a' : a.kappa.toFixed(3),
          a.verdict,
        ]
        this.log(
          table(
            ['judge', 'n', 'pp/ff/pf/fp', 'raw agreement', 'κ', 'verdict'],
            [...report.sources.map((s) => row(s.source, s)), row('overall', report.overall)],
            ['l', 'r', 'r', 'r', 'r', 'l'],
          ),
        )
        this.log('(pp: both pass, ff: both fail, pf: judge pass / graders fail, fp: judge fail / graders pass)')
        this.log('')
        for (const s of [...report.sources, { ...report.overall, source: 'overall' }]) this.log(`${s.source}: ${s.note}`)
      }
      return report
    } finally {
      await reader.close()
    }
  }
}
