import { Args, Flags } from '@oclif/core'
import { compareStoredRuns, type CompareReport } from '../../app/compare.js'
import { openReader } from '../../app/store-access.js'
import { DEFAULT_THRESHOLDS } from '../../core/compare.js'
import { resolveConfig } from '../../stack/config.js'
import { ConfigError } from '../../stack/errors.js'
import { EXIT, ForgeCommand } from '../base.js'
import { printComparison } from '../compare-view.js'
import { compareSweeps } from '../../app/fault-stats.js'
import { printCurveComparison } from '../fault-view.js'

export default class Compare extends ForgeCommand {
  static override summary = 'Compare two runs (or a baseline and a run) task by task and flag regressions; exits 6 when one is found.'
  static override description =
    'Per task: a two-proportion z-test (Fisher exact when an expected cell count is below 5), Benjamini–Hochberg across ' +
    "tasks; a task is flagged only when significant after correction and its rate dropped. Also flags tool usage that changed " +
    '(which tools are called, and the usual order — tested the same way), and cost per attempt, p50/p90 latency or tool calls ' +
    "per attempt that increased: every attempt's value is ranked in the store and tested (Mann–Whitney U per task, van Elteren " +
    'per suite with tasks as strata, Benjamini–Hochberg across all of them); a figure is flagged only when significant after ' +
    'correction, higher in the candidate AND grown beyond the allowed deltas. --json gives each figure its test, p, adjusted p (q) ' +
    'and verdict. Warns when the suite content, price table, judge model or judge prompt differ. ' +
    'Exit codes: 0 no regression, 6 regression found, 2 bad input, 5 store error.'
  static override examples = [
    '<%= config.bin %> compare <baseline-run-id> <run-id>',
    '<%= config.bin %> compare --baseline latest',
    '<%= config.bin %> compare --baseline main <run-id> --json',
    '<%= config.bin %> compare --baseline main@2 --max-cost-increase 0.1 --fdr 0.1',
    {
      description: "Two agents' recovery curves, rate by rate (needs two stored fault sweeps: forge run --fault-sweep prints their ids).",
      command: '<%= config.bin %> compare --fault-sweep <sweep-id> --fault-sweep <other-sweep-id>',
    },
  ]
  static override args = {
    run_a: Args.string({ description: 'The reference run (or, with --baseline, the candidate run).' }),
    run_b: Args.string({ description: 'The candidate run (default: the newest run).' }),
  }
  static override flags = {
    baseline: Flags.string({ char: 'b', summary: 'Compare against a baseline: latest (for the run\'s suite), a name, name@version, or a commit hash.' }),
    fdr: Flags.string({ summary: `False-discovery rate for Benjamini–Hochberg, for success, tool usage and cost/latency/tool calls (default ${DEFAULT_THRESHOLDS.fdr}).` }),
    'max-cost-increase': Flags.string({ summary: `Relative increase of cost per attempt that is flagged (default ${DEFAULT_THRESHOLDS.cost_increase}).` }),
    'max-latency-increase': Flags.string({ summary: `Relative increase of p50/p90 latency that is flagged (default ${DEFAULT_THRESHOLDS.latency_increase}) …` }),
    'min-latency-ms': Flags.string({ summary: `… when it is also at least this many ms (default ${DEFAULT_THRESHOLDS.latency_min_ms}).` }),
    'max-tool-calls-increase': Flags.string({ summary: `Relative increase of tool calls per attempt that is flagged (default ${DEFAULT_THRESHOLDS.tool_calls_increase}) …` }),
    'min-tool-calls': Flags.string({ summary: `… when it is also at least this many calls per attempt (default ${DEFAULT_THRESHOLDS.tool_calls_min}).` }),
    'fault-sweep': Flags.string({ summary: "Compare two agents' recovery curves instead: give two fault sweep ids (forge run --fault-sweep prints them).", multiple: true }),
  }

  async run(): Promise<CompareReport | Awaited<ReturnType<typeof compareSweeps>>> {
    const { args, flags } = await this.parse(Compare)
    const faultSweeps = flags['fault-sweep']
    if (faultSweeps !== undefined) {
      if (faultSweeps.length !== 2 || args.run_a !== undefined || flags.baseline !== undefined) throw new ConfigError('--fault-sweep compares recovery curves: give it exactly twice (--fault-sweep A --fault-sweep B) and no runs or --baseline')
      const reader = await openReader(resolveConfig())
      try {
        const curves = await compareSweeps(reader, faultSweeps[0]!, faultSweeps[1]!)
        if (!this.jsonEnabled()) printCurveComparison((line) => this.log(line), curves.comparison)
        return curves
      } finally {
        await reader.close()
      }
    }
    const thresholds = {
      ...numberFlag('fdr', flags.fdr, 'fdr', 0, 1),
      ...numberFlag('max-cost-increase', flags['max-cost-increase'], 'cost_increase', 0, Infinity),
      ...numberFlag('max-latency-increase', flags['max-latency-increase'], 'latency_increase', 0, Infinity),
      ...numberFlag('min-latency-ms', flags['min-latency-ms'], 'latency_min_ms', 0, Infinity),
      ...numberFlag('max-tool-calls-increase', flags['max-tool-calls-increase'], 'tool_calls_increase', 0, Infinity),
      ...numberFlag('min-tool-calls', flags['min-tool-calls'], 'tool_calls_min', 0, Infinity),
    }
    const reader = await openReader(resolveConfig())
    try {
      if (flags.baseline && args.run_b) throw new ConfigError('with --baseline give at most one run (the candidate)')
      // with --baseline the one positional run is the candidate
      const request = flags.baseline
        ? { baseline: flags.baseline, ...(args.run_a ? { runB: args.run_a } : {}) }
        : { ...(args.run_a ? { runA: args.run_a } : {}), ...(args.run_b ? { runB: args.run_b } : {}) }
      const report = await compareStoredRuns(reader, { ...request, thresholds })
      if (!this.jsonEnabled()) printComparison((line) => this.log(line), report)
      if (report.regression) process.exitCode = EXIT.regression
      return report
    } finally {
      await reader.close()
    }
  }
}

function numberFlag<K extends string>(flag: string, value: string | undefined, key: K, min: number, max: number): Partial<Record<K, number>> {
  if (value === undefined) return {}
  const x = Number(value)
  if (!Number.isFinite(x) || x < min || x > max) throw new ConfigError(`--${flag} must be a number from ${min} to ${max}, got "${value}"`)
  return { [key]: x } as Partial<Record<K, number>>
}
