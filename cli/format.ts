/** Plain-text tables and figures for the terminal. */

export function table(headers: string[], rows: (string | number)[][], align: ('l' | 'r')[] = []): string {
  const cells = [headers, ...rows.map((r) => r.map(String))]
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
