import { describe, expect, it } from 'vitest'
import { hasLoneSurrogateEscape, wellFormed, wellFormedText } from '../../core/well-formed.js'

const encode = (value: unknown): Uint8Array => new TextEncoder().encode(JSON.stringify(value))

describe('well-formed text', () => {
  it('replaces each lone surrogate with U+FFFD and keeps pairs', () => {
    expect(wellFormedText('a\ud800b')).toBe('a\ufffdb')
    expect(wellFormedText('a\udc00b')).toBe('a\ufffdb')
    expect(wellFormedText('\udc00\ud800')).toBe('\ufffd\ufffd')
    expect(wellFormedText('end \ud83d')).toBe('end \ufffd')
    expect(wellFormedText('pair \ud83d\ude00 ok')).toBe('pair \ud83d\ude00 ok')
    const clean = 'nothing to do é 😀'
    expect(wellFormedText(clean)).toBe(clean)
  })

  it('copies only along the paths to what changed, keys included', () => {
    const untouched = { deep: { list: ['x', 1, null, true] } }
    const value = { ok: 'fine', untouched, list: ['a', 'b\ud800'], ['key\udc00']: 1 }
    const made = wellFormed(value)
    expect(made).toEqual({ ok: 'fine', untouched, list: ['a', 'b\ufffd'], 'key\ufffd': 1 })
    expect(made).not.toBe(value)
    expect(made.untouched).toBe(untouched)
    expect(value.list[1]).toBe('b\ud800')
    const clean = { a: ['b', { c: 'd' }] }
    expect(wellFormed(clean)).toBe(clean)
  })

  it("finds a lone surrogate in JSON.stringify's output by its escape, never a pair or an escaped backslash", () => {
    expect(hasLoneSurrogateEscape(encode({ s: 'half \ud800' }))).toBe(true)
    expect(hasLoneSurrogateEscape(encode({ s: 'low \udfff' }))).toBe(true)
    expect(hasLoneSurrogateEscape(encode({ s: 'pair \ud83d\ude00' }))).toBe(false)
    // the text backslash-u-d-8-0-0 (a backslash escaped as \\) is not an escape
    expect(hasLoneSurrogateEscape(encode({ s: '\\ud800 as text' }))).toBe(false)
    expect(hasLoneSurrogateEscape(encode({ s: '\\\ud800' }))).toBe(true)
    // \ud followed by something other than 8–f is a different code point (U+D7FF and below are fine)
    expect(hasLoneSurrogateEscape(encode({ s: '\\ud7ff' }))).toBe(false)
    expect(hasLoneSurrogateEscape(encode({ s: 'nothing' }))).toBe(false)
    expect(hasLoneSurrogateEscape(encode(wellFormed({ s: 'half \ud800' })))).toBe(false)
  })
})
