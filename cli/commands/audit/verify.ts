import { Flags } from '@oclif/core'
import { verifyRun } from '../../../app/audit.js'
import type { AuditReport } from '../../../core/audit.js'
import { resolveConfig } from '../../../config/index.js'
import { EXIT, ForgeCommand } from '../../base.js'

export default class AuditVerify extends ForgeCommand {
  static override summary = "Verify a run's audit trail: recompute its hash chain, every result's content hash and every stored row; report the first broken link."
  static override description =
    'Exit codes: 0 intact, 1 tampered (or never sealed), 2 bad input, 5 store error. With FORGE_AUDIT_KEY set, the signature of the run\'s head is checked too, ' +
    'which is what shows a chain rewritten whole.'
  static override examples = ['<%= config.bin %> audit verify', '<%= config.bin %> audit verify --run-id <run-id> --json']
  static override flags = {
    'run-id': Flags.string({ char: 'r', summary: 'The run (default: the latest).' }),
  }

  async run(): Promise<AuditReport> {
    const { flags } = await this.parse(AuditVerify)
    const report = await verifyRun(resolveConfig(), flags['run-id'])
    if (!this.jsonEnabled()) printAuditReport((line) => this.log(line), report)
    if (!report.intact) process.exitCode = EXIT.failure
    return report
  }
}

function printAuditReport(log: (line: string) => void, report: AuditReport): void {
  const signature = report.signature_valid === null ? '' : report.signature_valid ? ', head signature valid' : ', head signature INVALID'
  if (report.intact) {
    log(`run ${report.run_id}: audit trail intact — ${report.links} link(s), head ${report.head}${signature}`)
    return
  }
  const [first] = report.problems
  log(`run ${report.run_id}: audit trail BROKEN — ${report.problems.length} problem(s) in ${report.links} link(s)${signature}`)
  if (first !== undefined) log(`first broken link: ${first.seq === null ? 'outside the chain' : `#${first.seq}`} ${first.entry}: ${first.kind.replace(/_/g, ' ')}: ${first.detail}`)
  for (const problem of report.problems.slice(1, 20)) log(`  ${problem.seq === null ? '—' : `#${problem.seq}`} ${problem.entry}: ${problem.kind.replace(/_/g, ' ')}: ${problem.detail}`)
  if (report.problems.length > 20) log(`  … and ${report.problems.length - 20} more (--json lists them all)`)
}
