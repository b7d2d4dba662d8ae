import { Flags } from '@oclif/core'
import { resolve } from 'node:path'
import { writeRunReport, type WrittenReport } from '../../app/report.js'
import { openReader } from '../../app/store-access.js'
import { resolveConfig } from '../../stack/config.js'
import { ConfigError } from '../../stack/errors.js'
import { ForgeCommand } from '../base.js'

export default class Report extends ForgeCommand {
  static override summary = "Write a run's report as one self-contained HTML file (no external assets, opens from disk, can be mailed)."
  static override description =
    'The report holds the run stamps (suite hash, agent, model, price table, fault profile, seed), a banner when harness errors ' +
    'exceed 2% of attempts, per-task success with Wilson 95% intervals (table and chart), the suite rate, outcome, validity and ' +
    'failure-bucket counts, pass@k / pass^k, latency and cost distributions, cost per success, recovery under injected faults, ' +
    'judge agreement when the run was judged and, with --compare or --baseline, the regression table and tool-pattern changes. ' +
    'Figures are aggregated in ClickHouse, the same as forge stats. The failed attempts are listed with links to trace pages ' +
    'written into <report name>-traces/ beside the report.'
  static override examples = [
    '<%= config.bin %> report --out report.html',
    '<%= config.bin %> report --run-id <run-id> --out out/report.html --compare <other-run-id>',
    '<%= config.bin %> report --baseline main --out report.html --max-traces 50',
    '<%= config.bin %> report --run-id <run-id> --out report.html --json',
  ]
  static override flags = {
    'run-id': Flags.string({ char: 'r', summary: 'The run (default: the latest).' }),
    out: Flags.string({ char: 'o', summary: 'The report file to write (.html).', required: true }),
    compare: Flags.string({ summary: 'Compare with this earlier run: regression table and tool-pattern changes.' }),
    baseline: Flags.string({ char: 'b', summary: 'Compare with a baseline: latest, a name, name@version or a commit hash.' }),
    k: Flags.integer({ summary: 'Attempt counts for pass@k and pass^k (repeatable; default 1, 3, 5).', multiple: true, min: 1, max: 1000 }),
    'max-failed': Flags.integer({ summary: 'Failed attempts listed in the report (default 500); the rest are counted.', min: 0, max: 100_000, default: 500 }),
    'max-traces': Flags.integer({ summary: 'Trace pages written for the listed failed attempts (default 200; 0 = none).', min: 0, max: 100_000, default: 200 }),
  }

  async run(): Promise<WrittenReport> {
    const { flags } = await this.parse(Report)
    if (flags.compare !== undefined && flags.baseline !== undefined) throw new ConfigError('give either --compare <run> or --baseline <ref>, not both')
    const reader = await openReader(resolveConfig())
    try {
      const written = await writeRunReport(reader, {
        out: resolve(flags.out),
        now: Date.now(),
        maxFailed: flags['max-failed'],
        maxTraces: flags['max-traces'],
        ...(flags['run-id'] ? { runId: flags['run-id'] } : {}),
        ...(flags.compare ? { compare: flags.compare } : {}),
        ...(flags.baseline ? { baseline: flags.baseline } : {}),
        ...(flags.k ? { ks: [...new Set(flags.k)].sort((a, b) => a - b) } : {}),
      })
      if (!this.jsonEnabled()) {
        this.log(`report of run ${written.run_id} (${written.attempts} attempts): ${written.out} (${(written.bytes / 1024).toFixed(1)} KiB)`)
        if (written.harness_banner) this.warn('harness errors exceed 2% of attempts: the report leads with a banner')
        this.log(
          written.traces_dir
            ? `${written.traces_written} trace pages of failed attempts in ${written.traces_dir}`
            : `no trace pages written (${written.failed_attempts} failed attempts${flags['max-traces'] === 0 ? ', --max-traces 0' : ''})`,
        )
      }
      return written
    } finally {
      await reader.close()
    }
  }
}
