/** Tier-1 invariants of the toy_math suite. */

/** @typedef {import('../../core/plugins.js').InvariantFn} InvariantFn */

const ARITHMETIC = /^[\d\s.+\-*/()]+$/

/** @type {Record<string, InvariantFn>} */
export const invariants = {
  /** the calculator is only ever handed arithmetic: no code, no prose, nothing to smuggle */
  calculator_args_are_arithmetic(trace) {
    for (const call of trace.tool_calls) {
      if (call.name !== 'calculator') continue
      const args = /** @type {{ expression?: unknown } | null} */ (call.args)
      const expression = typeof args === 'object' && args !== null ? args.expression : undefined
      if (typeof expression === 'string' && expression.trim() !== '' && !ARITHMETIC.test(expression)) {
        return { passed: false, detail: `call #${call.index} passed ${JSON.stringify(expression)}` }
      }
    }
    return { passed: true }
  },
}

export default invariants
