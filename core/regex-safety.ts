/**
 * Patterns a suite runs on agent text (a `regex` or `file` grader's, a tool schema's `pattern`) must
 * not backtrack exponentially: `^(a+)+$` on forty `a` and a `b` takes V8 days, and the worker's event
 * loop with it. The usual cause is a repeated group that itself repeats — `(a+)+`, `(\w+\s?)*`,
 * `([a-z]+\.)+` — and suites are refused at validation when a pattern has one (with where it is and how
 * to fix it). Other exponential shapes (overlapping alternatives under a repetition, `(a|aa)+`) are not
 * recognised here; V8's linear fallback catches those of them it can run (engine/regexp-backtracking.ts).
 * Pure.
 */

/** The part of `pattern` where a group that repeats without bound holds a repetition without bound, e.g. `(a+)+`; undefined when none does. */
export function nestedRepetition(pattern: string): string | undefined {
  const groups: Array<{ start: number; repeats: boolean }> = [{ start: 0, repeats: false }]
  let i = 0
  /** the quantifier at `at`: its length and whether it repeats without bound (`*`, `+`, `{n,}`) */
  const quantifier = (at: number): { length: number; unbounded: boolean } => {
    const c = pattern[at]
    let length = 0
    let unbounded = false
    if (c === '*' || c === '+') {
      length = 1
      unbounded = true
    } else if (c === '?') {
      length = 1
    } else if (c === '{') {
      const braces = /^\{(\d+)(,(\d*))?\}/.exec(pattern.slice(at, at + 24))
      if (braces !== null) {
        length = braces[0].length
        unbounded = braces[2] !== undefined && braces[3] === ''
      }
    }
    if (length > 0 && pattern[at + length] === '?') length += 1 // lazy
    return { length, unbounded }
  }
  const atom = (end: number): void => {
    const q = quantifier(end)
    if (q.unbounded) groups[groups.length - 1]!.repeats = true
    i = end + q.length
  }
  while (i < pattern.length) {
    const c = pattern[i]
    if (c === '\\') {
      atom(i + 2)
    } else if (c === '[') {
      let j = i + 1
      if (pattern[j] === '^') j += 1
      if (pattern[j] === ']') j += 1
      while (j < pattern.length && pattern[j] !== ']') j += pattern[j] === '\\' ? 2 : 1
      atom(j + 1)
    } else if (c === '(') {
      groups.push({ start: i, repeats: false })
      i += 1
      // a group's prefix (?:  (?=  (?!  (?<=  (?<!  (?<name>) is no quantifier
      if (pattern[i] === '?') {
        i += 1
        if (pattern[i] === '<' && pattern[i + 1] !== '=' && pattern[i + 1] !== '!') i = pattern.indexOf('>', i) + 1
        else i += pattern[i] === '<' ? 2 : 1
      }
    } else if (c === ')' && groups.length > 1) {
      const group = groups.pop()!
      const q = quantifier(i + 1)
      if (q.unbounded && group.repeats) return pattern.slice(group.start, i + 1 + q.length)
      const parent = groups[groups.length - 1]!
      parent.repeats ||= group.repeats || q.unbounded
      i += 1 + q.length
    } else {
      atom(i + 1)
    }
  }
  return undefined
}

/** Why a suite may not run `pattern` on agent text; undefined when it may. */
export function patternHazard(pattern: string): string | undefined {
  const nested = nestedRepetition(pattern)
  if (nested === undefined) return undefined
  return (
    `repeats a group that itself repeats (${JSON.stringify(nested)}): some texts make such a pattern backtrack exponentially, ` +
    "and an agent's answer could hold the worker for hours; write it without the nesting (e.g. (a+)+ as a+)"
  )
}
