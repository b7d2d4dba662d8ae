/**
 * Judge agreement: Cohen's κ between an LLM judge and the programmatic graders on the overlap set
 * (attempts that have both), with the raw agreement and n beside it. Raw agreement flatters a judge
 * when nearly every attempt passes (two raters that both say "pass" agree by chance); κ corrects
 * for that. Below κ ≈ 0.7 the judge is not to be trusted. Pure.
 */

/** κ at or above this: the judge may be trusted on this kind of task. */
export const TRUSTED_KAPPA = 0.7

export interface AgreementPair {
  /** the programmatic graders' pass/fail (the source of truth where it exists) */
  programmatic: boolean
  judge: boolean
}

export interface Agreement {
  n: number
  /** 2 × 2 table of the overlap set */
  table: { both_pass: number; both_fail: number; judge_pass_programmatic_fail: number; judge_fail_programmatic_pass: number }
  /** observed agreement p_o; null when n = 0 */
  raw_agreement: number | null
  /** agreement expected by chance p_e from the two raters' marginals; null when n = 0 */
  chance_agreement: number | null
  /** (p_o − p_e) / (1 − p_e); null when n = 0 or when p_e = 1 (both raters put every attempt in the same one class) */
  kappa: number | null
  /** `trustworthy` at κ ≥ 0.7; `untrustworthy` below; `unavailable` when κ cannot be computed */
  verdict: 'trustworthy' | 'untrustworthy' | 'unavailable'
  note: string
}

/** Cohen's κ of two binary raters over paired labels. */
export function cohensKappa(pairs: readonly AgreementPair[]): Agreement {
  const table = { both_pass: 0, both_fail: 0, judge_pass_programmatic_fail: 0, judge_fail_programmatic_pass: 0 }
  for (const pair of pairs) {
    if (pair.judge && pair.programmatic) table.both_pass++
    else if (!pair.judge && !pair.programmatic) table.both_fail++
    else if (pair.judge) table.judge_pass_programmatic_fail++
    else table.judge_fail_programmatic_pass++
  }
  const n = pairs.length
  if (n === 0) {
    return { n, table, raw_agreement: null, chance_agreement: null, kappa: null, verdict: 'unavailable', note: 'no attempt has both a judge and a programmatic verdict: agreement is unavailable' }
  }
  const observed = (table.both_pass + table.both_fail) / n
  const judgePass = (table.both_pass + table.judge_pass_programmatic_fail) / n
  const programmaticPass = (table.both_pass + table.judge_fail_programmatic_pass) / n
  const chance = judgePass * programmaticPass + (1 - judgePass) * (1 - programmaticPass)
  // p_e = 1 only when both raters used one and the same class for every attempt: κ is 0/0
  if (Math.abs(1 - chance) < 1e-12) {
    const cls = judgePass === 1 ? 'pass' : 'fail'
    return {
      n,
      table,
      raw_agreement: observed,
      chance_agreement: chance,
      kappa: null,
      verdict: 'unavailable',
      note: `κ is undefined: both the judge and the graders said "${cls}" for all ${n} attempts, so agreement cannot be told apart from chance; include attempts of both classes`,
    }
  }
  const kappa = (observed - chance) / (1 - chance)
  const trusted = kappa >= TRUSTED_KAPPA
  return {
    n,
    table,
    raw_agreement: observed,
    chance_agreement: chance,
    kappa,
    verdict: trusted ? 'trustworthy' : 'untrustworthy',
    note: trusted
      ? `κ ${kappa.toFixed(3)} ≥ ${TRUSTED_KAPPA}: the judge agrees with the programmatic graders well beyond chance`
      : `κ ${kappa.toFixed(3)} < ${TRUSTED_KAPPA}: the judge is untrustworthy on this set${observed >= 0.8 ? ` (raw agreement ${(observed * 100).toFixed(1)}% is mostly chance)` : ''}`,
  }
}
