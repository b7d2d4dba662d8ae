import { describe, expect, it } from 'vitest'
import { table } from '../../cli/format.js'
import { terminalSafe } from '../../core/terminal-text.js'

describe('terminalSafe', () => {
  it('shows every control a terminal would obey as its escape, keeping newlines, tabs and ordinary text', () => {
    expect(terminalSafe('plain text, ünïcödé, 中文, emoji 🙂\n\tindented')).toBe('plain text, ünïcödé, 中文, emoji 🙂\n\tindented')
    expect(terminalSafe('a\x1b]52;c;aGk=\x07b')).toBe('a\\u001b]52;c;aGk=\\u0007b')
    expect(terminalSafe('fail\rpass')).toBe('fail\\rpass')
    expect(terminalSafe('\x1b[8mhidden\x1b[0m')).toBe('\\u001b[8mhidden\\u001b[0m')
    expect(terminalSafe('\x00\x7f\x9b31m')).toBe('\\u0000\\u007f\\u009b31m')
    expect(terminalSafe('abc\u202egnp.exe \u2066x\u2069 \u200f')).toBe('abc\\u202egnp.exe \\u2066x\\u2069 \\u200f')
  })

  it('returns the same string when there is nothing to escape, and is idempotent', () => {
    const text = 'nothing to see'
    expect(terminalSafe(text)).toBe(text)
    const once = terminalSafe('\x1b[2J\r')
    expect(terminalSafe(once)).toBe(once)
  })
})

describe('table', () => {
  it('keeps each cell on one line: a newline in a value cannot make a row of its own', () => {
    expect(table(['task', 'output'], [['t1', 'wrong\nt2  pass'], ['t3', 'ok']])).toBe(['task  output', '----  ----------------', 't1    wrong ⏎ t2  pass', 't3    ok'].join('\n'))
  })
})
