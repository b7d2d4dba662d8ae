import { describe, expect, it } from 'vitest'
import { StoredTrace } from '../../core/contracts/index.js'
import { buildTraceView } from '../../core/span-tree.js'
import { CSP, esc, scriptJson } from '../../app/render/html.js'
import { wilsonChart } from '../../app/render/svg.js'
import { renderTrace } from '../../app/render/trace-html.js'

const hostile = '</script><img src=x onerror="alert(1)">'

const trace = StoredTrace.parse({
  attempt_uid: 'r/c/t/0',
  run_id: 'r',
  config_id: 'c',
  suite: 's',
  task_id: 't',
  attempt: 0,
  outcome: 'fail',
  validity: 'valid',
  failure_bucket: 'wrong_answer',
  grades: [{ grader: 'exact', passed: false, score: 0, detail: hostile }],
  invariants: [],
  trace: {
    output: hostile,
    tool_calls: [{ index: 0, name: 'echo', args: { text: hostile }, result: hostile, retry_index: 0, started_ms: 1, duration_ms: 1 }],
    spans: [
      { span_id: 'attempt', parent_span_id: null, category: 'attempt', name: 'r/c/t/0', start_ms: 0, duration_ms: 4, attributes: {} },
      { span_id: 'tool-0', parent_span_id: 'attempt', category: 'tool', name: 'echo', start_ms: 1, duration_ms: 1, attributes: {} },
    ],
    duration_ms: 4,
  },
  stored_at: 0,
})

describe('self-contained pages', () => {
  it('escapes whatever the agent wrote: no markup from a trace reaches the page', () => {
    const html = renderTrace(buildTraceView(trace))
    expect(html).not.toContain('<img')
    expect(html).not.toContain('onerror="alert')
    expect(html).toContain(esc(hostile))
    // the page's only script is its own
    expect(html.match(/<script>/g)).toHaveLength(1)
  })
  it('forbids every network request through its CSP and references nothing outside the file', () => {
    const html = renderTrace(buildTraceView(trace))
    expect(CSP).toMatch(/default-src 'none'/)
    expect(html).toContain(`<meta http-equiv="Content-Security-Policy" content="${esc(CSP)}">`)
    expect(html).not.toMatch(/\b(src|href)="(https?:)?\/\//)
    expect(html).not.toMatch(/@import|url\(/)
  })
  it('embeds JSON in a script without closing it', () => {
    expect(scriptJson({ a: hostile })).not.toContain('</script>')
    expect(JSON.parse(scriptJson({ a: hostile }))).toEqual({ a: hostile })
  })
})

describe('wilsonChart', () => {
  it('draws each rate at its place with its interval as an error bar, and the reference line', () => {
    const svg = wilsonChart({
      id: 'w',
      title: 'rates',
      rows: [{ label: 'a', rate: 0.5, low: 0.2, high: 0.8, k: 5, n: 10 }],
      reference: { value: 0.5, label: 'suite 50.0%' },
    })
    // label column 80 px wide, plot 760 − 80 − 110 = 570 px: 0.5 → 365, 0.2 → 194, 0.8 → 536
    expect(svg).toContain('<circle cx="365" cy="31" r="4"')
    expect(svg).toContain('<line x1="194" x2="536" y1="31" y2="31"')
    expect(svg).toContain('<line class="reference" x1="365" x2="365"')
    expect(svg).toContain('<title>a: 5/10 = 50.0%, Wilson 95% [0.20, 0.80]</title>')
  })
})
