/**
 * Sweeps: a matrix of suites × adapters × models × seeds run as one tracked sweep — one run per
 * cell, each compared with its baseline — started by `forge sweep sweep.yaml` or a Temporal Schedule.
 */
import { z } from 'zod'

/** The most cells one sweep may have: its workflow history stays far below Temporal's 51,200 events. */
export const MAX_SWEEP_CELLS = 500

const sweepName = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9_-]{0,39}$/, 'must be 1–40 letters, digits, _ or -, starting with a letter or digit')

/** An adapter of the matrix: its name, or its name with settings (merged over `adapter_config`). */
export const SweepAdapter = z.union([
  z.string().min(1),
  z.object({ name: z.string().min(1), config: z.record(z.string(), z.unknown()).default({}) }).strict(),
])
export type SweepAdapter = z.infer<typeof SweepAdapter>

export const SweepSpec = z
  .object({
    /** names the sweep: its ids, its schedule and (by default) its baselines start with it */
    name: sweepName,
    /** built-in suite names, directories (relative to the sweep file) or npm packages */
    suites: z.array(z.string().min(1)).min(1),
    adapters: z.array(SweepAdapter).min(1),
    /** each sets `model` in the adapter config; empty: one cell per adapter with its own default */
    models: z.array(z.string().min(1)).default([]),
    /** each cell runs once per seed (the same seed reproduces mock agents and fault decisions) */
    seeds: z.array(z.string().min(1)).min(1).default(['1']),
    /** attempts per task in every cell */
    attempts: z.number().int().positive().max(100_000).default(5),
    /** only these tasks of every suite (default: all) */
    tasks: z.array(z.string().min(1)).optional(),
    /** settings for every adapter (an adapter's own `config` wins) */
    adapter_config: z.record(z.string(), z.unknown()).default({}),
    /** a price table file (relative to the sweep file) */
    price_table: z.string().optional(),
    /** cells (runs) in flight at once */
    cells_in_flight: z.number().int().positive().max(20).default(2),
    /** attempt activities pending at once per shard of each run (≤ 500) */
    max_in_flight: z.number().int().positive().max(500).optional(),
    /**
     * The baseline each cell is compared with, as a template over {name} {suite} {adapter} {model}
     * {seed}; characters a baseline name cannot hold become `-`.
     */
    baseline: z.string().min(1).default('{name}.{suite}.{adapter}.{model}'),
    /** after a cell passed (or had no baseline), tag its run as the baseline's next version */
    promote_baseline: z.enum(['never', 'if_no_regression']).default('never'),
  })
  .strict()
  .superRefine((spec, ctx) => {
    const cells = spec.suites.length * spec.adapters.length * Math.max(1, spec.models.length) * spec.seeds.length
    if (cells > MAX_SWEEP_CELLS) {
      ctx.addIssue({ code: 'custom', path: ['seeds'], message: `the matrix has ${cells} cells; a sweep holds at most ${MAX_SWEEP_CELLS} (split it into several sweeps)` })
    }
    for (const [field, values] of [['suites', spec.suites], ['models', spec.models], ['seeds', spec.seeds]] as const) {
      const dup = values.find((v, i) => values.indexOf(v) !== i)
      if (dup !== undefined) ctx.addIssue({ code: 'custom', path: [field], message: `"${dup}" is listed twice` })
    }
  })
export type SweepSpec = z.infer<typeof SweepSpec>
export type SweepSpecInput = z.input<typeof SweepSpec>

export const CellVerdict = z.enum(['pending', 'pass', 'regressed', 'no_baseline', 'failed'])
export type CellVerdict = z.infer<typeof CellVerdict>
export const SweepVerdict = z.enum(['pending', 'pass', 'regressed', 'no_baseline', 'failed'])
export type SweepVerdict = z.infer<typeof SweepVerdict>

export const CompareFindingCounts = z.object({
  success: z.number().int().nonnegative(),
  tool_usage: z.number().int().nonnegative(),
  cost: z.number().int().nonnegative(),
  latency: z.number().int().nonnegative(),
  tool_calls: z.number().int().nonnegative(),
})

/** One cell of a sweep: what it ran and how it compared with its baseline. */
export const SweepCell = z.object({
  cell: z.uint32(),
  run_id: z.string().min(1),
  suite: z.string(),
  adapter: z.string(),
  /** '' when the adapter used its own default */
  model: z.string(),
  seed: z.string(),
  /** the baseline name this cell is compared with */
  baseline: z.string(),
  status: z.enum(['pending', 'running', 'completed', 'failed']),
  verdict: CellVerdict,
  config_id: z.string().default(''),
  attempts: z.uint32().default(0),
  not_executed: z.uint32().default(0),
  /** the suite rate (unweighted mean of task rates); null before the cell finished */
  pass_rate: z.number().nullable().default(null),
  harness_errors: z.uint32().default(0),
  baseline_version: z.uint32().positive().nullable().default(null),
  baseline_run_id: z.string().default(''),
  baseline_pass_rate: z.number().nullable().default(null),
  findings: CompareFindingCounts.nullable().default(null),
  /** the baseline version this cell's run became (promote_baseline) */
  promoted_version: z.uint32().positive().nullable().default(null),
  error: z.string().default(''),
})
export type SweepCell = z.infer<typeof SweepCell>

/** A sweep's state; published at start, after every cell and at the end (higher revision wins). */
export const SweepRecord = z.object({
  sweep_id: z.string().min(1),
  name: z.string(),
  /** the Temporal Schedule that started it; '' for `forge sweep` */
  schedule_id: z.string().default(''),
  spec: SweepSpec,
  status: z.enum(['running', 'completed', 'failed']),
  verdict: SweepVerdict,
  started_at: z.number(),
  finished_at: z.number().nullable(),
  revision: z.uint32(),
  cells: z.array(SweepCell),
})
export type SweepRecord = z.infer<typeof SweepRecord>
