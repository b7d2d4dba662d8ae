/** The fault flags of `forge run` and its sweep path (`--fault-sweep`): one run per fail rate, then the recovery curve. */
import { Flags } from '@oclif/core'
import type { FaultPlan, FaultProfile } from '../core/contracts/index.js'
import { FAULT_KINDS } from '../core/faults.js'
import type { FaultSweepReport } from '../app/fault-sweep.js'
import { faultPlanOf, faultsFromFlags } from '../app/faults.js'
import type { RunConfigInput } from '../app/run-config.js'
import type { ForgeConfig } from '../config/index.js'
import type { ForgeCommand } from './base.js'
import { printRecoveryCurve } from './fault-view.js'
import { pct } from './format.js'

export const faultFlags = {
  'fault-profile': Flags.string({ summary: 'Inject seeded faults from this profile (faults.yaml; schema: forge faults schema).' }),
  'fault-rate': Flags.string({ summary: 'One-off profile: each tool call fails with this probability (0..1).' }),
  'fault-kinds': Flags.string({ summary: `One-off profile: comma-separated kinds (default all): ${FAULT_KINDS.join(', ')}.` }),
  'fault-mode': Flags.string({ summary: 'One-off profile: uniform (default) or burst (contiguous windows of failing calls).', options: ['uniform', 'burst'] }),
  'fault-window': Flags.integer({ summary: 'One-off profile, burst mode: calls one outage lasts (default 5).', min: 1, max: 1000 }),
  'fault-target': Flags.string({ summary: 'One-off profile: tools (default), model (the LLM gateway) or all.', options: ['tools', 'model', 'all'] }),
  'fault-sweep': Flags.string({ summary: 'Run the suite once per fail rate (e.g. 0,0.1,0.2,0.4) and print the recovery curve.' }),
}

type FaultFlagValues = { [K in keyof typeof faultFlags]?: unknown }

/** The fault plan of a single run, or the profile and rates of a sweep; both undefined without fault flags. */
export async function faultsOf(flags: FaultFlagValues): Promise<{ plan?: FaultPlan; sweep?: { profile: FaultProfile; rates: number[] } }> {
  const str = (v: unknown) => (typeof v === 'string' ? v : undefined)
  const faults = await faultsFromFlags({
    ...(str(flags['fault-profile']) !== undefined ? { profile: str(flags['fault-profile'])! } : {}),
    ...(str(flags['fault-rate']) !== undefined ? { rate: str(flags['fault-rate'])! } : {}),
    ...(str(flags['fault-kinds']) !== undefined ? { kinds: str(flags['fault-kinds'])! } : {}),
    ...(str(flags['fault-mode']) !== undefined ? { mode: str(flags['fault-mode'])! } : {}),
    ...(typeof flags['fault-window'] === 'number' ? { window: flags['fault-window'] } : {}),
    ...(str(flags['fault-target']) !== undefined ? { target: str(flags['fault-target'])! } : {}),
    ...(str(flags['fault-sweep']) !== undefined ? { sweep: str(flags['fault-sweep'])! } : {}),
  })
  if (faults === undefined) return {}
  if (faults.sweep !== undefined) return { plan: faultPlanOf(faults.profile), sweep: { profile: faults.profile, rates: faults.sweep } }
  return { plan: faultPlanOf(faults.profile) }
}

export type SweepResult = FaultSweepReport

/** Runs a sweep, printing progress and the curve unless --json. */
export async function runSweep(command: ForgeCommand, config: ForgeConfig, run: RunConfigInput, sweep: { profile: FaultProfile; rates: number[] }): Promise<SweepResult> {
  // loaded for a sweep only: a single run does not load the sweep and its recovery statistics
  const { runFaultSweep } = await import('../app/fault-sweep.js')
  const quiet = command.jsonEnabled()
  const interrupt = new AbortController()
  const onInterrupt = () => {
    if (interrupt.signal.aborted) process.exit(130)
    interrupt.abort()
  }
  process.on('SIGINT', onInterrupt)
  const report = await runFaultSweep(config, run, sweep, interrupt.signal, (event) => {
    if (quiet) return
    if (event.kind === 'sweep-point') command.log(`fault sweep point ${event.index + 1}/${event.of}: fail rate ${event.rate} (run ${event.run_id})`)
    else if (event.kind === 'task-done') command.log(`  [${event.done_tasks}/${event.total_tasks}] ${event.task_id}: ${event.k}/${event.n} passed`)
  }).finally(() => process.off('SIGINT', onInterrupt))
  if (!quiet) {
    command.log('')
    printRecoveryCurve((line) => command.log(line), report.curve)
    const last = report.curve.points[report.curve.points.length - 1]
    if (last !== undefined) command.log(`at fail rate ${last.rate}: pass ${pct(last.pass.rate)}, recovery ${pct(last.recovery.rate)}; seed ${report.seed}; forge stats --fault-sweep ${report.sweep_id} draws it again`)
  }
  return report
}
