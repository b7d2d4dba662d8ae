/**
 * Inline SVG charts for reports: rates with Wilson intervals as error bars, histograms and a
 * rate curve. Pure string building; every chart carries a <title> and an aria-label so it reads
 * without the picture, and its numbers also appear in a table next to it.
 */
import { esc, fmt } from './html.js'

export interface RateBar {
  label: string
  rate: number | null
  low: number
  high: number
  k: number
  n: number
}

const W = 760

/** One row per item: a dot at the rate and a bar over its Wilson 95% interval; an optional dashed reference line (the suite rate). */
export function wilsonChart(opts: { id: string; title: string; rows: readonly RateBar[]; reference?: { value: number; label: string } | null }): string {
  const labelWidth = Math.min(260, Math.max(80, ...opts.rows.map((r) => r.label.length * 6.4 + 12)))
  const plot = W - labelWidth - 110
  const rowH = 18
  const top = 22
  const height = top + opts.rows.length * rowH + 26
  const x = (v: number) => labelWidth + v * plot
  const parts: string[] = []
  for (const tick of [0, 0.25, 0.5, 0.75, 1]) {
    parts.push(`<line x1="${x(tick)}" x2="${x(tick)}" y1="${top - 4}" y2="${height - 22}" stroke="#e3e7ed"/>`)
    parts.push(`<text x="${x(tick)}" y="${height - 8}" text-anchor="middle">${tick * 100}%</text>`)
  }
  if (opts.reference) {
    parts.push(
      `<line class="reference" x1="${x(opts.reference.value)}" x2="${x(opts.reference.value)}" y1="${top - 10}" y2="${height - 22}" stroke="#2f5fb3" stroke-dasharray="4 3"/>`,
      `<text x="${x(opts.reference.value) + 4}" y="${top - 10}" fill="#2f5fb3">${esc(opts.reference.label)}</text>`,
    )
  }
  opts.rows.forEach((row, i) => {
    const y = top + i * rowH + rowH / 2
    const label = row.label.length > 40 ? `${row.label.slice(0, 39)}…` : row.label
    parts.push(`<g class="bar" data-label="${esc(row.label)}"><title>${esc(`${row.label}: ${row.k}/${row.n} = ${fmt.pct(row.rate)}, Wilson 95% ${fmt.interval(row.low, row.high)}`)}</title>`)
    parts.push(`<text x="${labelWidth - 8}" y="${y + 4}" text-anchor="end">${esc(label)}</text>`)
    parts.push(`<line x1="${x(row.low)}" x2="${x(row.high)}" y1="${y}" y2="${y}" stroke="#5f6b7a" stroke-width="2"/>`)
    parts.push(`<line x1="${x(row.low)}" x2="${x(row.low)}" y1="${y - 4}" y2="${y + 4}" stroke="#5f6b7a"/>`)
    parts.push(`<line x1="${x(row.high)}" x2="${x(row.high)}" y1="${y - 4}" y2="${y + 4}" stroke="#5f6b7a"/>`)
    if (row.rate !== null) parts.push(`<circle cx="${x(row.rate)}" cy="${y}" r="4" fill="${row.rate >= 0.5 ? '#1a7f37' : '#c62828'}"/>`)
    parts.push(`<text x="${labelWidth + plot + 10}" y="${y + 4}">${esc(`${fmt.pct(row.rate)} (${row.k}/${row.n})`)}</text></g>`)
  })
  return svg(opts.id, opts.title, W, height, parts)
}

export interface Bin {
  label: string
  n: number
}

/** Vertical bars, one per bin, labelled under every few bars; counts on hover. */
export function histogramChart(opts: { id: string; title: string; bins: readonly Bin[]; xLabel: string }): string {
  const height = 200
  const left = 44
  const bottom = 40
  const plotW = W - left - 10
  const plotH = height - bottom - 14
  const max = Math.max(1, ...opts.bins.map((b) => b.n))
  const barW = opts.bins.length === 0 ? 0 : Math.min(80, plotW / opts.bins.length)
  const parts: string[] = []
  for (const frac of [0, 0.5, 1]) {
    const y = 14 + plotH * (1 - frac)
    parts.push(`<line x1="${left}" x2="${W - 10}" y1="${y}" y2="${y}" stroke="#e3e7ed"/>`, `<text x="${left - 6}" y="${y + 4}" text-anchor="end">${Math.round(max * frac)}</text>`)
  }
  const every = Math.max(1, Math.ceil(opts.bins.length / 10))
  opts.bins.forEach((bin, i) => {
    const h = (bin.n / max) * plotH
    const x0 = left + i * barW
    parts.push(
      `<rect class="bin" x="${(x0 + 1).toFixed(1)}" y="${(14 + plotH - h).toFixed(1)}" width="${Math.max(1, barW - 2).toFixed(1)}" height="${h.toFixed(1)}" fill="#6d8fd0"><title>${esc(`${bin.label}: ${bin.n}`)}</title></rect>`,
    )
    if (i % every === 0) parts.push(`<text x="${(x0 + barW / 2).toFixed(1)}" y="${height - bottom + 14}" text-anchor="middle">${esc(bin.label)}</text>`)
  })
  parts.push(`<text x="${left + plotW / 2}" y="${height - 6}" text-anchor="middle" fill="#5f6b7a">${esc(opts.xLabel)}</text>`)
  return svg(opts.id, opts.title, W, height, parts)
}

/** Points with Wilson error bars joined by a line: a rate against an ordinal x (e.g. faults met). */
export function rateCurve(opts: { id: string; title: string; points: readonly (RateBar & { x: string })[]; xLabel: string }): string {
  const height = 220
  const left = 44
  const bottom = 40
  const plotW = W - left - 20
  const plotH = height - bottom - 14
  const step = opts.points.length <= 1 ? plotW / 2 : plotW / (opts.points.length - 1)
  const px = (i: number) => left + (opts.points.length <= 1 ? plotW / 2 : i * step)
  const py = (v: number) => 14 + plotH * (1 - v)
  const parts: string[] = []
  for (const tick of [0, 0.5, 1]) parts.push(`<line x1="${left}" x2="${W - 20}" y1="${py(tick)}" y2="${py(tick)}" stroke="#e3e7ed"/>`, `<text x="${left - 6}" y="${py(tick) + 4}" text-anchor="end">${tick * 100}%</text>`)
  const line = opts.points
    .map((p, i) => (p.rate === null ? null : `${px(i).toFixed(1)},${py(p.rate).toFixed(1)}`))
    .filter((p): p is string => p !== null)
  if (line.length > 1) parts.push(`<polyline points="${line.join(' ')}" fill="none" stroke="#2f5fb3" stroke-width="1.5"/>`)
  opts.points.forEach((p, i) => {
    parts.push(`<g class="point"><title>${esc(`${p.label}: ${p.k}/${p.n} = ${fmt.pct(p.rate)}, Wilson 95% ${fmt.interval(p.low, p.high)}`)}</title>`)
    parts.push(`<line x1="${px(i)}" x2="${px(i)}" y1="${py(p.high)}" y2="${py(p.low)}" stroke="#5f6b7a" stroke-width="2"/>`)
    if (p.rate !== null) parts.push(`<circle cx="${px(i)}" cy="${py(p.rate)}" r="4" fill="#2f5fb3"/>`)
    parts.push(`<text x="${px(i)}" y="${height - bottom + 14}" text-anchor="middle">${esc(p.x)}</text></g>`)
  })
  parts.push(`<text x="${left + plotW / 2}" y="${height - 6}" text-anchor="middle" fill="#5f6b7a">${esc(opts.xLabel)}</text>`)
  return svg(opts.id, opts.title, W, height, parts)
}

function svg(id: string, title: string, width: number, height: number, parts: string[]): string {
  return (
    `<svg id="${esc(id)}" class="chart" role="img" aria-label="${esc(title)}" xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}">` +
    `<title>${esc(title)}</title>${parts.join('')}</svg>`
  )
}
