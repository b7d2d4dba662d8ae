import { Flags } from '@oclif/core'
import { readdirSync } from 'node:fs'
import type { SuiteProblem } from '../../../core/suite-validation.js'
import { SuiteLoadError } from '../../../engine/errors.js'
import { checkSuiteWithOracle, type OracleSuiteCheck } from '../../../engine/oracle-check.js'
import { builtinSuitesDir, loadSuite } from '../../../engine/suite-loader.js'
import { EXIT, ForgeCommand } from '../../base.js'

interface SuiteVerdict {
  suite: string
  path: string
  ok: boolean
  tasks: number
  problems: SuiteProblem[]
  /** with --oracle: each task replayed from its golden through the real tools and graded */
  oracle?: OracleSuiteCheck
}

export default class TasksValidate extends ForgeCommand {
  static override summary = 'Validate suites: every task file, tool, invariant, grader config, golden and fixture.'
  static override description =
    'Reports every problem of every suite at once, each naming its file and field. Exits 2 when any suite has a problem. With --oracle, also replays every task\'s golden trace through the real tools and environment and exits 1 unless every task passes.'
  static override examples = [
    '<%= config.bin %> tasks validate',
    '<%= config.bin %> tasks validate --suite examples/my-suite',
    '<%= config.bin %> tasks validate --suite smoke --suite toy_math --json',
    '<%= config.bin %> tasks validate --suite core --oracle',
  ]
  static override flags = {
    suite: Flags.string({ char: 's', summary: 'Suite name, directory or npm package (repeatable; default: every bundled suite).', multiple: true }),
    oracle: Flags.boolean({
      summary: "Also prove every task solvable: replay its golden through the real tools and environment (the oracle adapter, in process) and require a pass.",
      default: false,
    }),
  }

  async run(): Promise<{ ok: boolean; suites: SuiteVerdict[] }> {
    const { flags } = await this.parse(TasksValidate)
    const refs = flags.suite ?? readdirSync(builtinSuitesDir(), { withFileTypes: true }).filter((d) => d.isDirectory()).map((d) => d.name).sort()
    const suites: SuiteVerdict[] = []
    for (const ref of refs) {
      try {
        const suite = await loadSuite(ref)
        if (flags.oracle) {
          const oracle = await checkSuiteWithOracle(suite)
          suites.push({ suite: suite.name, path: suite.path, ok: oracle.failed === 0, tasks: suite.tasks.length, problems: [], oracle })
        } else {
          suites.push({ suite: suite.name, path: suite.path, ok: true, tasks: suite.tasks.length, problems: [] })
        }
      } catch (error) {
        if (!(error instanceof SuiteLoadError)) throw error
        suites.push({ suite: ref, path: error.suitePath, ok: false, tasks: 0, problems: error.problems })
      }
    }
    const ok = suites.every((s) => s.ok)
    if (!this.jsonEnabled()) {
      for (const s of suites) {
        const proven = s.oracle === undefined ? '' : `, oracle passed ${s.oracle.passed}/${s.tasks}`
        if (s.ok) this.log(`ok    ${s.suite}: ${s.tasks} tasks${proven} (${s.path})`)
        else if (s.oracle !== undefined && s.problems.length === 0) {
          this.log(`FAIL  ${s.suite}: oracle passed ${s.oracle.passed}/${s.tasks} (${s.path})`)
          for (const t of s.oracle.tasks.filter((c) => !c.passed)) this.log(`        ${t.task_id}: ${t.outcome}/${t.validity}: ${t.problems.join('; ') || 'no detail'}`)
        } else {
          this.log(`FAIL  ${s.suite}: ${s.problems.length} problem(s) (${s.path})`)
          for (const p of s.problems) this.log(`        ${p.file}: ${p.path ? `${p.path}: ` : ''}${p.message}`)
        }
      }
    }
    if (!this.jsonEnabled()) {
      // stale goldens still pass, but their recorded results no longer match what the tools return
      for (const s of suites) for (const t of s.oracle?.tasks ?? []) for (const d of t.divergences) this.log(`warn  ${s.suite}/${t.task_id}: golden diverges: ${d}`)
    }
    if (!ok) {
      if (this.jsonEnabled()) this.logJson({ ok, suites })
      // a suite that loads but has a task the oracle cannot pass is a failed run (1), not bad input (2)
      this.exit(suites.some((s) => s.problems.length > 0) ? EXIT.badInput : EXIT.failure)
    }
    return { ok, suites }
  }
}
