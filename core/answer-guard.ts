/**
 * The answer guard (`forge run --guard-answers`), pure: the task's expected answers — grader
 * `expected` values and golden outputs — and a check of a tool call's arguments against them. A
 * match is replaced in what the tool receives, so an agent that tries to exfiltrate ground truth
 * through a tool (a search for the answer, an email carrying it) gets nothing out of it, and the
 * call records where the answer came from. Answers the agent was given (in its instruction or
 * input) and very short ones are not guarded: they would redact ordinary arguments.
 */
import type { AgentTrace, Task } from './contracts/index.js'

/** One expected answer and where it comes from (`outcome_graders[0].expected`, `golden.output`). */
export interface GuardedAnswer {
  source: string
  text: string
}

/** Answers shorter than this are not guarded (`42`, `yes`): they would match ordinary arguments. */
export const MIN_GUARDED_LENGTH = 3

const GRADER_ANSWER_FIELDS = ['expected', 'equals', 'json'] as const

/** The task's expected answers: grader `expected` / `equals` / `json` values and the golden's output. */
export function expectedAnswersOf(task: Task, golden?: AgentTrace): GuardedAnswer[] {
  const found: GuardedAnswer[] = []
  const add = (source: string, value: unknown): void => {
    if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') found.push({ source, text: String(value).trim() })
    else if (Array.isArray(value)) value.forEach((item, i) => add(`${source}[${i}]`, item))
    else if (value !== null && typeof value === 'object') found.push({ source, text: JSON.stringify(value) })
  }
  task.outcome_graders.forEach((grader, i) => {
    for (const field of GRADER_ANSWER_FIELDS) if (grader[field] !== undefined) add(`outcome_graders[${i}].${field}`, grader[field])
  })
  if (golden !== undefined && golden.output !== undefined && golden.output !== null) add('golden.output', golden.output)
  const given = `${task.instruction}\n${JSON.stringify(task.input)}`.toLowerCase()
  const seen = new Set<string>()
  return found.filter((answer) => {
    const key = answer.text.toLowerCase()
    if (answer.text.length < MIN_GUARDED_LENGTH || given.includes(key) || seen.has(key)) return false
    seen.add(key)
    return true
  })
}

export interface GuardedArgs {
  /** the arguments the tool receives: every expected answer replaced by `[REDACTED:answer]` */
  args: unknown
  /** where each matched answer comes from; empty when nothing matched */
  intercepted: string[]
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
}

/** Checks a tool call's arguments against the expected answers (case-insensitive, anywhere in any string or number). */
export function guardToolArgs(args: unknown, answers: readonly GuardedAnswer[]): GuardedArgs {
  if (answers.length === 0) return { args, intercepted: [] }
  const ordered = [...answers].sort((a, b) => b.text.length - a.text.length)
  const pattern = new RegExp(ordered.map((a) => escapeRegExp(a.text)).join('|'), 'gi')
  const bySource = new Map(ordered.map((a) => [a.text.toLowerCase(), a.source]))
  const intercepted = new Set<string>()
  const guardText = (text: string): string =>
    text.replace(pattern, (match) => {
      intercepted.add(bySource.get(match.toLowerCase()) ?? 'answer')
      return '[REDACTED:answer]'
    })
  const walk = (value: unknown): unknown => {
    if (typeof value === 'string') return guardText(value)
    if (typeof value === 'number') {
      const guarded = guardText(String(value))
      return guarded === String(value) ? value : guarded
    }
    if (Array.isArray(value)) return value.map(walk)
    if (value !== null && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, walk(v)]))
    return value
  }
  const guarded = walk(args)
  return { args: guarded, intercepted: [...intercepted].sort() }
}
