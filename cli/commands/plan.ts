import { Flags } from '@oclif/core'
import { planSweep, type SweepPlan } from '../../core/hypothesis.js'
import { ConfigError } from '../../stack/errors.js'
import { ForgeCommand } from '../base.js'
import { pct } from '../format.js'

export default class Plan extends ForgeCommand {
  static override summary = 'Size a sweep: attempts per task needed to detect a given drop in success rate with 80% power.'
  static override description =
    "For forge compare's per-task two-sided two-proportion test at level alpha (normal approximation, equal attempts in both " +
    'runs). With --tasks N it also gives the attempts for alpha/N per task (Bonferroni), an upper bound for what ' +
    'Benjamini–Hochberg across N tasks needs. Fisher\'s exact test, used for small counts, is more conservative.'
  static override examples = [
    '<%= config.bin %> plan --detect 0.1 --baseline-rate 0.9',
    '<%= config.bin %> plan --detect 0.05 --baseline-rate 0.95 --tasks 8 --json',
    '<%= config.bin %> plan --detect 0.2 --baseline-rate 0.7 --power 0.9 --alpha 0.01',
  ]
  static override flags = {
    detect: Flags.string({ summary: 'The drop in success rate to detect, as a fraction (0.1 = 10 points).', required: true }),
    'baseline-rate': Flags.string({ summary: 'The success rate today, as a fraction (e.g. 0.9).', required: true }),
    alpha: Flags.string({ summary: 'Significance level of the test (default 0.05).', default: '0.05' }),
    power: Flags.string({ summary: 'Chance to detect the drop when it is real (default 0.8).', default: '0.8' }),
    tasks: Flags.integer({ summary: 'Tasks compared at once (default 1).', default: 1, min: 1, max: 1_000_000 }),
  }

  async run(): Promise<SweepPlan> {
    const { flags } = await this.parse(Plan)
    const number = (flag: string, value: string): number => {
      const x = Number(value)
      if (!Number.isFinite(x)) throw new ConfigError(`--${flag} must be a number, got "${value}"`)
      return x
    }
    let plan: SweepPlan
    try {
      plan = planSweep({
        baselineRate: number('baseline-rate', flags['baseline-rate']),
        drop: number('detect', flags.detect),
        alpha: number('alpha', flags.alpha),
        power: number('power', flags.power),
        tasks: flags.tasks,
      })
    } catch (error) {
      if (error instanceof RangeError) throw new ConfigError(error.message)
      throw error
    }
    if (!this.jsonEnabled()) {
      const to = plan.baseline_rate - plan.detect_drop
      this.log(
        `to detect ${pct(plan.baseline_rate)} → ${pct(to)} with ${pct(plan.power, 0)} power at alpha ${plan.alpha} (two-sided): ` +
          `${plan.attempts} attempts per task in each run`,
      )
      if (plan.tasks > 1) {
        this.log(
          `across ${plan.tasks} tasks (alpha/${plan.tasks} per task, an upper bound for Benjamini–Hochberg): ` +
            `${plan.attempts_all_tasks} attempts per task, ${plan.attempts_per_run} per run`,
        )
      }
      this.log(`e.g. forge run --suite <suite> --attempts ${plan.tasks > 1 ? plan.attempts_all_tasks : plan.attempts}`)
    }
    return plan
  }
}
