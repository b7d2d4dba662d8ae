import { z } from 'zod'
import type { Grade } from '../contracts/index.js'

/** Keys every grader config accepts: `name` labels the grade (default: the grader type). */
export const baseConfigShape = {
  name: z.string().min(1).optional(),
}

/** The optional dot path into a structured output that the text graders share. */
export const fieldShape = {
  field: z.string().min(1).optional(),
}

export type GradeBody = Omit<Grade, 'grader'>

export function passFail(passed: boolean, detail: string): GradeBody {
  return { passed, score: passed ? 1 : 0, detail }
}
