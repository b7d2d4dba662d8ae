import { describe, expect, it } from 'vitest'
import { labelledSamples, renderPrometheus } from '../../core/prometheus.js'

describe('renderPrometheus', () => {
  it('renders HELP, TYPE and samples with escaped labels in the 0.0.4 text format', () => {
    const text = renderPrometheus([
      { name: 'forge_attempts_total', help: 'Attempts\nfinished.', type: 'counter', samples: labelledSamples('outcome', { pass: 3, fail: 1 }) },
      { name: 'forge_ingest_lag_seconds', help: 'Lag.', type: 'gauge', samples: [{ labels: { queue: 'a"b\\c' }, value: 0.25 }] },
      { name: 'forge_empty', help: 'No samples.', type: 'gauge', samples: [] },
      { name: 'forge_inf', help: 'Infinite.', type: 'gauge', samples: [{ value: Infinity }, { value: Number.NaN }] },
    ])
    expect(text).toBe(
      [
        '# HELP forge_attempts_total Attempts\\nfinished.',
        '# TYPE forge_attempts_total counter',
        'forge_attempts_total{outcome="fail"} 1',
        'forge_attempts_total{outcome="pass"} 3',
        '# HELP forge_ingest_lag_seconds Lag.',
        '# TYPE forge_ingest_lag_seconds gauge',
        'forge_ingest_lag_seconds{queue="a\\"b\\\\c"} 0.25',
        '# HELP forge_empty No samples.',
        '# TYPE forge_empty gauge',
        '# HELP forge_inf Infinite.',
        '# TYPE forge_inf gauge',
        'forge_inf +Inf',
        'forge_inf NaN',
        '',
      ].join('\n'),
    )
  })

  it('rejects names and labels Prometheus would refuse, and a family listed twice', () => {
    expect(() => renderPrometheus([{ name: 'forge-bad', help: '', type: 'gauge', samples: [] }])).toThrow('invalid metric name "forge-bad"')
    expect(() => renderPrometheus([{ name: 'forge_x', help: '', type: 'gauge', samples: [{ labels: { 'bad-label': 'v' }, value: 1 }] }])).toThrow(
      'invalid label name "bad-label" on metric "forge_x"',
    )
    expect(() => renderPrometheus([{ name: 'forge_x', help: '', type: 'gauge', samples: [{ labels: { __name__: 'v' }, value: 1 }] }])).toThrow('invalid label name')
    const twice = { name: 'forge_x', help: '', type: 'gauge' as const, samples: [] }
    expect(() => renderPrometheus([twice, twice])).toThrow('metric "forge_x" is listed twice')
    expect(renderPrometheus([])).toBe('')
  })
})
