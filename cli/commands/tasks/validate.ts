import { Flags } from '@oclif/core'
import { readdirSync } from 'node:fs'
import type { SuiteProblem } from '../../../core/suite-validation.js'
import { SuiteLoadError } from '../../../workers/errors.js'
import { builtinSuitesDir, loadSuite } from '../../../workers/suite-loader.js'
import { EXIT, ForgeCommand } from '../../base.js'

interface SuiteVerdict {
  suite: string
  path: string
  ok: boolean
  tasks: number
  problems: SuiteProblem[]
}

export default class TasksValidate extends ForgeCommand {
  static override summary = 'Validate suites: every task file, tool, invariant, grader config, golden and fixture.'
  static override description = 'Reports every problem of every suite at once, each naming its file and field. Exits 2 when any suite has a problem.'
  static override examples = [
    '<%= config.bin %> tasks validate',
    '<%= config.bin %> tasks validate --suite ./my-suite',
    '<%= config.bin %> tasks validate --suite smoke --suite toy_math --json',
  ]
  static override flags = {
    suite: Flags.string({ char: 's', summary: 'Suite name, directory or npm package (repeatable; default: every bundled suite).', multiple: true }),
  }

  async run(): Promise<{ ok: boolean; suites: SuiteVerdict[] }> {
    const { flags } = await this.parse(TasksValidate)
    const refs = flags.suite ?? readdirSync(builtinSuitesDir(), { withFileTypes: true }).filter((d) => d.isDirectory()).map((d) => d.name).sort()
    const suites: SuiteVerdict[] = []
    for (const ref of refs) {
      try {
        const suite = await loadSuite(ref)
        suites.push({ suite: suite.name, path: suite.path, ok: true, tasks: suite.tasks.length, problems: [] })
      } catch (error) {
        if (!(error instanceof SuiteLoadError)) throw error
        suites.push({ suite: ref, path: error.suitePath, ok: false, tasks: 0, problems: error.problems })
      }
    }
    const ok = suites.every((s) => s.ok)
    if (!this.jsonEnabled()) {
      for (const s of suites) {
        if (s.ok) this.log(`ok    ${s.suite}: ${s.tasks} tasks (${s.path})`)
        else {
          this.log(`FAIL  ${s.suite}: ${s.problems.length} problem(s) (${s.path})`)
          for (const p of s.problems) this.log(`        ${p.file}: ${p.path ? `${p.path}: ` : ''}${p.message}`)
        }
      }
    }
    if (!ok) {
      if (this.jsonEnabled()) this.logJson({ ok, suites })
      this.exit(EXIT.badInput)
    }
    return { ok, suites }
  }
}
