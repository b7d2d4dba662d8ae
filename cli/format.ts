/** Plain-text tables and figures for the terminal. */

/** A table, each cell on one line (a newline in a value, an agent's output say, shows as ⏎: it cannot make a row of its own). */
export function table(headers: string[], rows: (string | number)[][], align: ('l' | 'r')[] = []): string {
  const cells = [headers, ...rows.map((r) => r.map((cell) => String(cell).replace(/\r?\n/g, ' ⏎ ')))]
  const widths = headers.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? '').length)))
  const line = (r: string[]) =>
    r
      .map((c, i) => (align[i] === 'r' ? c.padStart(widths[i]!) : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd()
  return [line(headers), widths.map((w) => '-'.repeat(w)).join('  '), ...cells.slice(1).map(line)].join('\n')
}

export function pct(x: number | null | undefined, digits = 1): string {
  return x === null || x === undefined ? 'n/a' : `${(x * 100).toFixed(digits)}%`
}

export function interval(low: number, high: number): string {
  return `[${low.toFixed(2)}, ${high.toFixed(2)}]`
}

export function counts(record: Record<string, number>): string {
  const entries = Object.entries(record).sort((a, b) => b[1] - a[1])
  return entries.length === 0 ? 'none' : entries.map(([k, v]) => `${k} ${v}`).join(', ')
}

/** US dollars with enough digits for sub-cent figures; n/a when unavailable (never $0 for unknown). */
export function usd(x: number | null | undefined): string {
  if (x === null || x === undefined) return 'n/a'
  if (x === 0) return '$0'
  return Math.abs(x) < 0.01 ? `$${x.toPrecision(3)}` : `$${x.toFixed(4)}`
}

/** A number with a fixed number of decimals; n/a when unavailable. */
export function num(x: number | null | undefined, digits = 1): string {
  return x === null || x === undefined ? 'n/a' : x.toFixed(digits)
}

/** Milliseconds, whole above 10 ms. */
export function ms(x: number | null | undefined): string {
  if (x === null || x === undefined) return 'n/a'
  return x >= 10 ? x.toFixed(0) : x.toFixed(1)
}

/** A signed percentage-point difference of two rates, e.g. -12.5 pp. */
export function pp(x: number | null | undefined): string {
  return x === null || x === undefined ? 'n/a' : `${x >= 0 ? '+' : ''}${(x * 100).toFixed(1)} pp`
}

/** A p-value, readable at both ends. */
export function pValue(p: number): string {
  return p < 0.0001 ? '<0.0001' : p.toFixed(4)
}
