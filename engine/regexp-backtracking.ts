/**
 * Regular expressions a suite brings — a `regex` or `file` grader's pattern, a tool schema's
 * `pattern` — run on agent text in the worker, and a pattern with nested quantifiers backtracks
 * exponentially: `^(a+)+$` on forty `a` and a `b` would hold the worker's event loop for days. V8 can
 * fall back to its linear-time engine once a match has backtracked too much; grading
 * (`gradeAttempt`) and the tool proxy (`createToolBox`) turn that on for their process before they
 * compile a suite's patterns, whichever process runs them (a worker, the CLI's regrade and oracle). Patterns the linear engine cannot run (backreferences, lookaround) keep backtracking:
 * Forge's own patterns are written to be linear (ARCHITECTURE "Agent text").
 */
import v8 from 'node:v8'

let done = false

/** Makes every regular expression compiled from now on fall back to V8's linear engine on excessive backtracking. */
export function boundRegexpBacktracking(): void {
  if (done) return
  done = true
  v8.setFlagsFromString('--enable-experimental-regexp-engine-on-excessive-backtracks')
}
