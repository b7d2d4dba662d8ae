/**
 * Outcome belongs to the agent, validity to the instrument: every pass rate is reported twice,
 * with explicit denominators — over all attempts, and over the attempts whose evidence stands
 * (validity `valid` or `degraded`; `invalid` ones are excluded and counted). Pure.
 */
import { rateOf, suiteRate, type Rate, type SuiteRate } from './stats.js'

export interface OutcomeValidityCount {
  task_id: string
  outcome: string
  validity: string
  n: number
}

export interface ValidityRates {
  /** passes over every attempt */
  all: Rate
  /** passes over attempts whose validity is valid or degraded */
  valid: Rate
  /** attempts left out of `valid` because their evidence is compromised (validity invalid) */
  invalid: number
}

/** Per task: the pass rate over all attempts and the validity-filtered rate beside it. */
export function validityRates(rows: readonly OutcomeValidityCount[]): Map<string, ValidityRates> {
  const counts = new Map<string, { k: number; n: number; kValid: number; nValid: number }>()
  for (const row of rows) {
    const c = counts.get(row.task_id) ?? { k: 0, n: 0, kValid: 0, nValid: 0 }
    counts.set(row.task_id, c)
    const passed = row.outcome === 'pass' ? row.n : 0
    c.k += passed
    c.n += row.n
    if (row.validity !== 'invalid') {
      c.kValid += passed
      c.nValid += row.n
    }
  }
  return new Map([...counts].map(([task, c]) => [task, { all: rateOf(c.k, c.n), valid: rateOf(c.kValid, c.nValid), invalid: c.n - c.nValid }]))
}

/** A suite's two rates: each the unweighted mean of its task rates (tasks with n = 0 left out). */
export function suiteValidityRates(tasks: readonly ValidityRates[]): { all: SuiteRate; valid: SuiteRate; invalid: number; n: number; n_valid: number } {
  return {
    all: suiteRate(tasks.map((t) => t.all)),
    valid: suiteRate(tasks.map((t) => t.valid)),
    invalid: tasks.reduce((sum, t) => sum + t.invalid, 0),
    n: tasks.reduce((sum, t) => sum + t.all.n, 0),
    n_valid: tasks.reduce((sum, t) => sum + t.valid.n, 0),
  }
}
