import { Flags } from '@oclif/core'
import { FAMILY_LABELS, MUTATION_FAMILIES, type MutationFamily } from '../../../core/adversarial.js'
import { generateAdversarialSuite, type GenerateAdversarialReport } from '../../../app/generate-adversarial.js'
import { ForgeCommand } from '../../base.js'

export default class GenerateAdversarial extends ForgeCommand {
  static override summary = 'Write a new suite of seeded adversarial mutations of a suite: missing tools, corrupted input, tiny budgets, conflicting constraints, injected instructions.'
  static override description =
    'Each generated task records its provenance (parent task, mutation family, parameters, seed) in the task file and in ' +
    'adversarial.json, and carries graders for the behaviour that is correct under its mutation. The suite is validated and every ' +
    'golden replayed by the oracle before it is written (a task the oracle cannot pass is dropped and listed). Same seed, same suite. ' +
    `Families: ${MUTATION_FAMILIES.map((f) => `${f} (${FAMILY_LABELS[f]})`).join('; ')}.`
  static override examples = [
    '<%= config.bin %> generate adversarial --suite smoke --out ./smoke-adversarial --seed 7',
    '<%= config.bin %> generate adversarial --suite core --out ./core-adv --mutations missing_tool,prompt_injection --per-task 2',
  ]
  static override flags = {
    suite: Flags.string({ char: 's', summary: 'The suite to mutate: a bundled name, a directory or an npm package.', required: true }),
    out: Flags.string({ char: 'o', summary: 'Directory to write the generated suite into (must be empty, or use --force).', required: true }),
    seed: Flags.string({ summary: 'Seed of every mutation choice: the same seed writes the same suite.', default: '0' }),
    mutations: Flags.string({ summary: `Comma-separated mutation families (default: all): ${MUTATION_FAMILIES.join(', ')}.` }),
    'per-task': Flags.integer({ summary: 'Variants per task and family (default 1).', default: 1, min: 1, max: 20 }),
    force: Flags.boolean({ summary: 'Replace --out when it is not empty.', default: false }),
    oracle: Flags.boolean({ summary: "Replay every generated golden with the oracle and drop tasks it cannot pass (default on).", allowNo: true, default: true }),
  }

  async run(): Promise<GenerateAdversarialReport> {
    const { flags } = await this.parse(GenerateAdversarial)
    const report = await generateAdversarialSuite({
      suite: flags.suite,
      out: flags.out,
      seed: flags.seed,
      ...(flags.mutations !== undefined ? { mutations: flags.mutations.split(',').map((m) => m.trim()).filter((m) => m !== '') } : {}),
      perTask: flags['per-task'],
      force: flags.force,
      oracle: flags.oracle,
    })
    if (!this.jsonEnabled()) {
      this.log(`wrote suite ${report.suite} to ${report.out}: ${report.tasks} tasks from suite ${report.parent.name} (seed ${report.seed})`)
      for (const family of MUTATION_FAMILIES) {
        const n = report.by_family[family]
        if (n !== undefined) this.log(`  ${family.padEnd(24)} ${String(n).padStart(4)}  ${FAMILY_LABELS[family as MutationFamily]}`)
      }
      if (report.oracle !== null) this.log(`oracle: ${report.oracle.passed}/${report.oracle.checked} generated goldens pass${report.dropped.length > 0 ? `; dropped ${report.dropped.length}` : ''}`)
      for (const d of report.dropped) this.log(`  dropped ${d.task_id}: ${d.problems.join('; ')}`)
      if (report.skipped.length > 0) this.log(`not applicable: ${report.skipped.length} task × family pair(s) (--json lists why)`)
    }
    return report
  }
}
