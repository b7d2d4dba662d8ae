/** Cohen's κ against hand-computed values, including the degenerate cases. */
import { describe, expect, it } from 'vitest'
import { cohensKappa, TRUSTED_KAPPA, type AgreementPair } from '../../core/agreement.js'

/** pairs from a 2 × 2 table: pp both pass, ff both fail, pf judge pass / graders fail, fp judge fail / graders pass */
function table(pp: number, ff: number, pf: number, fp: number): AgreementPair[] {
  const rep = (n: number, pair: AgreementPair): AgreementPair[] => Array.from({ length: n }, () => ({ ...pair }))
  return [
    ...rep(pp, { judge: true, programmatic: true }),
    ...rep(ff, { judge: false, programmatic: false }),
    ...rep(pf, { judge: true, programmatic: false }),
    ...rep(fp, { judge: false, programmatic: true }),
  ]
}

describe("Cohen's κ", () => {
  it('matches hand-computed values', () => {
    // p_o = 35/50 = 0.7; judge pass 25/50, graders pass 30/50; p_e = 0.5·0.6 + 0.5·0.4 = 0.5; κ = 0.2/0.5 = 0.4
    expect(cohensKappa(table(20, 15, 5, 10))).toEqual({
      n: 50,
      table: { both_pass: 20, both_fail: 15, judge_pass_programmatic_fail: 5, judge_fail_programmatic_pass: 10 },
      raw_agreement: 0.7,
      chance_agreement: 0.5,
      kappa: expect.closeTo(0.4, 12),
      verdict: 'untrustworthy',
      note: 'κ 0.400 < 0.7: the judge is untrustworthy on this set',
    })
    // p_o = 0.6; p_e = 0.6·0.7 + 0.4·0.3 = 0.54; κ = 0.06/0.46 = 0.130435
    expect(cohensKappa(table(45, 15, 15, 25)).kappa).toBeCloseTo(0.06 / 0.46, 12)
    // p_o = 0.6; p_e = 0.6·0.3 + 0.4·0.7 = 0.46; κ = 0.14/0.54 = 0.259259
    expect(cohensKappa(table(25, 35, 35, 5)).kappa).toBeCloseTo(0.14 / 0.54, 12)
  })
  it('is 1 for perfect agreement over both classes', () => {
    // p_e = 0.9·0.9 + 0.1·0.1 = 0.82
    expect(cohensKappa(table(45, 5, 0, 0))).toMatchObject({ raw_agreement: 1, chance_agreement: expect.closeTo(0.82, 12), kappa: 1, verdict: 'trustworthy' })
  })
  it('trusts the judge from κ = 0.7 up, not below', () => {
    // p_o = 0.85; judge pass 0.50, graders pass 0.51; p_e = 0.5; κ = 0.35/0.5 = 0.7
    expect(cohensKappa(table(43, 42, 7, 8))).toMatchObject({ kappa: expect.closeTo(0.7, 12), verdict: 'trustworthy' })
    // p_o = 0.84, p_e = 0.5; κ = 0.68
    expect(cohensKappa(table(42, 42, 8, 8))).toMatchObject({ kappa: expect.closeTo(0.68, 12), verdict: 'untrustworthy' })
    expect(TRUSTED_KAPPA).toBe(0.7)
  })
  it('sees through high raw agreement that is mostly chance', () => {
    // p_o = 0.9; both say pass 95%: p_e = 0.95² + 0.05² = 0.905; κ = −0.005/0.095 = −0.0526
    const a = cohensKappa(table(90, 0, 5, 5))
    expect(a).toMatchObject({ raw_agreement: 0.9, kappa: expect.closeTo(-0.005 / 0.095, 12), verdict: 'untrustworthy' })
    expect(a.note).toBe('κ -0.053 < 0.7: the judge is untrustworthy on this set (raw agreement 90.0% is mostly chance)')
  })
  it('is undefined (not 0, not 1) when both raters put every attempt in the same one class', () => {
    expect(cohensKappa(table(10, 0, 0, 0))).toEqual({
      n: 10,
      table: { both_pass: 10, both_fail: 0, judge_pass_programmatic_fail: 0, judge_fail_programmatic_pass: 0 },
      raw_agreement: 1,
      chance_agreement: 1,
      kappa: null,
      verdict: 'unavailable',
      note: 'κ is undefined: both the judge and the graders said "pass" for all 10 attempts, so agreement cannot be told apart from chance; include attempts of both classes',
    })
    expect(cohensKappa(table(0, 7, 0, 0))).toMatchObject({ raw_agreement: 1, kappa: null, verdict: 'unavailable', note: expect.stringContaining('said "fail" for all 7 attempts') })
  })
  it('is 0 when one rater uses one class only and the other does not', () => {
    // judge always pass; graders pass 8 of 10: p_o = 0.8, p_e = 1·0.8 + 0·0.2 = 0.8, κ = 0
    expect(cohensKappa(table(8, 0, 2, 0))).toMatchObject({ raw_agreement: 0.8, chance_agreement: 0.8, kappa: 0, verdict: 'untrustworthy' })
    // graders always fail, judge passes 3 of 10
    expect(cohensKappa(table(0, 7, 3, 0))).toMatchObject({ raw_agreement: 0.7, kappa: 0, verdict: 'untrustworthy' })
  })
  it('is unavailable with no overlap at all', () => {
    expect(cohensKappa([])).toEqual({
      n: 0,
      table: { both_pass: 0, both_fail: 0, judge_pass_programmatic_fail: 0, judge_fail_programmatic_pass: 0 },
      raw_agreement: null,
      chance_agreement: null,
      kappa: null,
      verdict: 'unavailable',
      note: 'no attempt has both a judge and a programmatic verdict: agreement is unavailable',
    })
  })
})
