import { Flags } from '@oclif/core'
import { keepFailing, type KeepFailingReport } from '../../../app/keep-failing.js'
import { openReader } from '../../../app/store-access.js'
import { resolveConfig } from '../../../stack/config.js'
import { ForgeCommand } from '../../base.js'

export default class GenerateKeepFailing extends ForgeCommand {
  static override summary = 'Keep the generated adversarial tasks an agent failed in a run as a growing corpus suite.'
  static override description =
    'Every task of the run (a suite written by forge generate adversarial) with at least one attempt that did not pass is copied, ' +
    'with its golden and provenance (and the run it was kept from), into --into, which becomes (or stays) a valid suite. Tasks the ' +
    'corpus already holds are not copied twice. The corpus only keeps mutations of one version of one parent suite.'
  static override examples = [
    { description: 'The failed tasks of a run of a generated suite (needs a stored run of one: forge generate adversarial, then forge run).', command: '<%= config.bin %> generate keep-failing --run-id <run-id> --into ./corpus/smoke' },
    { description: 'The corpus is a suite: run it against the next version of the agent (needs an OpenAI-compatible model server).', command: '<%= config.bin %> run --suite ./corpus/smoke --adapter react --model gpt-4o-mini' },
  ]
  static override flags = {
    'run-id': Flags.string({ char: 'r', summary: 'A run of a generated adversarial suite.', required: true }),
    into: Flags.string({ summary: 'The corpus suite directory (created when missing).', required: true }),
  }

  async run(): Promise<KeepFailingReport> {
    const { flags } = await this.parse(GenerateKeepFailing)
    const reader = await openReader(resolveConfig())
    try {
      const report = await keepFailing(reader, { runId: flags['run-id'], into: flags.into })
      if (!this.jsonEnabled()) {
        this.log(`kept ${report.kept.length} failing task(s) of run ${report.run_id} in ${report.corpus} (${report.tasks} task(s) in the corpus now)`)
        for (const k of report.kept) this.log(`  ${k.task_id}: passed ${k.passed}/${k.attempts}`)
        if (report.already.length > 0) this.log(`already kept: ${report.already.join(', ')}`)
      }
      return report
    } finally {
      await reader.close()
    }
  }
}
