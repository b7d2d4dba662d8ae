/**
 * `forge judge-agreement`: how far the LLM judge agrees with the programmatic graders on the
 * overlap set (attempts with both verdicts), as Cohen's κ with the raw agreement and n. Two judge
 * sources are measured apart: tier-0 `judge` graders (asked only when the deterministic graders
 * passed) and the `correctness` judge metric (which never sees the graders or their expected values).
 */
import { cohensKappa, TRUSTED_KAPPA, type Agreement, type AgreementPair } from '../core/agreement.js'
import type { Grade } from '../core/contracts/index.js'
import type { StoreReader } from '../store/clickhouse.js'
import { agreementRows, latestGradingVersion } from '../store/grading-repositories.js'
import { getRun } from '../store/repositories.js'
import { ConfigError } from '../stack/errors.js'

export interface AgreementSource extends Agreement {
  source: 'judge_grader' | 'correctness_metric'
  /** attempts that had a judge verdict of this source but no programmatic grade (not in the overlap) */
  judge_only: number
}

export interface JudgeAgreementReport {
  run_id: string
  grading_version: number
  threshold: number
  /** attempts of the run at that grading version */
  attempts: number
  sources: AgreementSource[]
  /** every pair of both sources together */
  overall: Agreement
}

const isJudgeGrade = (grade: Grade): boolean => grade.judge !== undefined
const judged = (grade: Grade): boolean => grade.judge !== undefined && grade.judge.model !== ''

export async function judgeAgreement(reader: StoreReader, runId: string, gradingVersion?: number): Promise<JudgeAgreementReport> {
  const run = await getRun(reader, runId)
  if (!run) throw new ConfigError(`no run "${runId}" is stored (see forge runs list)`)
  const version = gradingVersion ?? (await latestGradingVersion(reader, runId))
  const rows = await agreementRows(reader, runId, version)
  const pairs = { judge_grader: [] as AgreementPair[], correctness_metric: [] as AgreementPair[] }
  const judgeOnly = { judge_grader: 0, correctness_metric: 0 }
  for (const row of rows) {
    const programmaticGrades = row.grades.filter((grade) => !isJudgeGrade(grade))
    const programmatic = programmaticGrades.length > 0 ? programmaticGrades.every((grade) => grade.passed) : undefined
    const judgeGrades = row.grades.filter(judged)
    if (judgeGrades.length > 0) {
      const judge = judgeGrades.every((grade) => grade.passed)
      if (programmatic === undefined) judgeOnly.judge_grader++
      else pairs.judge_grader.push({ programmatic, judge })
    }
    if (row.correctness !== null) {
      if (programmatic === undefined) judgeOnly.correctness_metric++
      else pairs.correctness_metric.push({ programmatic, judge: row.correctness })
    }
  }
  const sources = (['judge_grader', 'correctness_metric'] as const).map((source) => ({ source, ...cohensKappa(pairs[source]), judge_only: judgeOnly[source] }))
  return {
    run_id: runId,
    grading_version: version,
    threshold: TRUSTED_KAPPA,
    attempts: rows.length,
    sources,
    overall: cohensKappa([...pairs.judge_grader, ...pairs.correctness_metric]),
  }
}
