/**
 * Self-contained HTML pages: one file, no external assets, a Content-Security-Policy that forbids
 * every network request (styles and scripts are inline, images are data: URIs), so a page opens from
 * disk or a mail attachment and shows the same thing everywhere.
 */

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }

/** Text or an attribute value made safe for HTML. */
export function esc(value: string | number): string {
  return String(value).replace(/[&<>"']/g, (c) => ESCAPES[c]!)
}

/** JSON safe to embed inside a <script> element (no `</script>`, no HTML comment openers). */
export function scriptJson(value: unknown): string {
  return JSON.stringify(value).replace(/</g, '\\u003c').replace(/>/g, '\\u003e').replace(/&/g, '\\u0026').replace(/\u2028/g, '\\u2028').replace(/\u2029/g, '\\u2029')
}

/** `connect-src 'none'` and `default-src 'none'`: a rendered page can fetch nothing, from disk or from `forge ui`. */
export const CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'self'"

const BASE_CSS = `
:root { --fg:#1d2228; --muted:#5f6b7a; --line:#d8dee6; --bg:#fff; --soft:#f4f6f9; --pass:#1a7f37; --fail:#c62828; --warn:#b26a00; --accent:#2f5fb3; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg); background: var(--bg); margin: 0; padding: 24px 32px 64px; max-width: 1280px; }
h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 17px; margin: 32px 0 8px; border-bottom: 1px solid var(--line); padding-bottom: 4px; }
h3 { font-size: 15px; margin: 20px 0 6px; }
.muted { color: var(--muted); } .small { font-size: 12px; }
table { border-collapse: collapse; margin: 6px 0 12px; font-variant-numeric: tabular-nums; }
th, td { text-align: left; padding: 3px 10px 3px 0; border-bottom: 1px solid var(--line); vertical-align: top; }
th { font-weight: 600; color: var(--muted); font-size: 12px; }
td.num, th.num { text-align: right; }
a { color: var(--accent); }
code, pre { font: 12px/1.4 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
pre { background: var(--soft); padding: 6px 8px; margin: 2px 0; max-height: 320px; overflow: auto; white-space: pre-wrap; word-break: break-word; }
.banner { border: 2px solid var(--fail); background: #fdecea; color: #7f1d1d; padding: 10px 14px; margin: 12px 0; font-weight: 600; }
.note { border-left: 3px solid var(--warn); background: #fff7e6; padding: 6px 10px; margin: 8px 0; }
.cards { display: flex; flex-wrap: wrap; gap: 12px; margin: 8px 0; align-items: flex-start; }
.card { border: 1px solid var(--line); padding: 8px 12px; min-width: 150px; }
.card .v { font-size: 20px; font-weight: 600; } .card .l { color: var(--muted); font-size: 12px; }
.pass { color: var(--pass); } .fail { color: var(--fail); } .warn { color: var(--warn); }
svg text { font: 11px system-ui, sans-serif; fill: var(--fg); }
nav.crumbs { margin-bottom: 8px; font-size: 13px; }
`

export interface PageOptions {
  title: string
  body: string
  css?: string
  script?: string
}

/** A whole HTML document with the CSP, the base styles and optional inline CSS and script. */
export function page(opts: PageOptions): string {
  return [
    '<!doctype html>',
    '<html lang="en"><head><meta charset="utf-8">',
    `<meta http-equiv="Content-Security-Policy" content="${esc(CSP)}">`,
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    `<title>${esc(opts.title)}</title>`,
    `<style>${BASE_CSS}${opts.css ?? ''}</style>`,
    '</head><body>',
    opts.body,
    opts.script ? `<script>${opts.script}</script>` : '',
    '</body></html>',
    '',
  ].join('\n')
}

/** A table from header cells and rows of already-escaped cells; `num` columns right-aligned. */
export function htmlTable(opts: { id?: string; headers: string[]; rows: string[][]; num?: number[]; rowAttrs?: string[] }): string {
  const numeric = new Set(opts.num ?? [])
  const head = opts.headers.map((h, i) => `<th${numeric.has(i) ? ' class="num"' : ''}>${esc(h)}</th>`).join('')
  const body = opts.rows
    .map((row, r) => `<tr${opts.rowAttrs?.[r] ? ` ${opts.rowAttrs[r]}` : ''}>${row.map((c, i) => `<td${numeric.has(i) ? ' class="num"' : ''}>${c}</td>`).join('')}</tr>`)
    .join('\n')
  return `<table${opts.id ? ` id="${esc(opts.id)}"` : ''}><thead><tr>${head}</tr></thead><tbody>\n${body}\n</tbody></table>`
}

/** Figures as a report prints them (the same rounding as the terminal's `forge stats`). */
export const fmt = {
  pct(x: number | null | undefined, digits = 1): string {
    return x === null || x === undefined ? 'n/a' : `${(x * 100).toFixed(digits)}%`
  },
  interval(low: number, high: number): string {
    return `[${low.toFixed(2)}, ${high.toFixed(2)}]`
  },
  usd(x: number | null | undefined): string {
    if (x === null || x === undefined) return 'n/a'
    if (x === 0) return '$0'
    return Math.abs(x) < 0.01 ? `$${x.toPrecision(3)}` : `$${x.toFixed(4)}`
  },
  num(x: number | null | undefined, digits = 1): string {
    return x === null || x === undefined ? 'n/a' : x.toFixed(digits)
  },
  ms(x: number | null | undefined): string {
    if (x === null || x === undefined) return 'n/a'
    return x >= 10 ? x.toFixed(0) : x.toFixed(1)
  },
  pp(x: number | null | undefined): string {
    return x === null || x === undefined ? 'n/a' : `${x >= 0 ? '+' : ''}${(x * 100).toFixed(1)} pp`
  },
  p(p: number): string {
    return p < 0.0001 ? '<0.0001' : p.toFixed(4)
  },
  counts(record: Record<string, number>): string {
    const entries = Object.entries(record).sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
    return entries.length === 0 ? 'none' : entries.map(([k, v]) => `${k} ${v}`).join(', ')
  },
  date(ms: number | null | undefined): string {
    return ms === null || ms === undefined ? 'n/a' : new Date(ms).toISOString().replace('T', ' ').replace(/\.\d+Z$/, ' UTC')
  },
}
