import { describe, expect, it } from 'vitest'
import { schemaProblems } from '../../core/json-schema.js'
import { nestedRepetition, patternHazard } from '../../core/regex-safety.js'

describe('nestedRepetition', () => {
  it('finds a repeated group that itself repeats, and says where', () => {
    expect(nestedRepetition('^(a+)+$')).toBe('(a+)+')
    expect(nestedRepetition('^(\\w+\\s?)*$')).toBe('(\\w+\\s?)*')
    expect(nestedRepetition('([a-z]+\\.)+[a-z]{2,}')).toBe('([a-z]+\\.)+')
    expect(nestedRepetition('x(?:(?:ab)*c)+y')).toBe('(?:(?:ab)*c)+')
    expect(nestedRepetition('((a)+b){2,}')).toBe('((a)+b){2,}')
    expect(nestedRepetition('(a*)*?')).toBe('(a*)*?')
    expect(nestedRepetition('(?<word>\\w+)+')).toBe('(?<word>\\w+)+')
  })

  it('leaves alone what repeats only once over, bounded, or inside a class or escape', () => {
    for (const safe of [
      '^\\s*9\\s*$',
      "\\b(can(not|'t|’t)|won('t|’t)|will not)\\b",
      '^(?![\\s\\S]*(Daly City|Berkeley))',
      'Casey Lin[\\s\\S]*Avery Stone[\\s\\S]*Emery Walsh',
      '(\\d{1,3})(,\\d{3})*',
      '(a+){2}',
      '(a+)?',
      '[(a+)+]',
      '\\(a+\\)+',
      '(?<=x+)y',
      '^(?:answer-poison-store-13|CANARY-EXPECTED-poison_store-6b10fe)$',
    ]) {
      expect([safe, nestedRepetition(safe)]).toEqual([safe, undefined])
    }
  })

  it("refuses a tool schema's pattern and patternProperties that nest a repetition, and still says when one does not compile", () => {
    const problems = schemaProblems({ type: 'object', properties: { name: { type: 'string', pattern: '^([a-z]+ ?)*$' } }, patternProperties: { '^(x+)+$': { type: 'string' } } })
    expect(problems).toHaveLength(2)
    expect(problems.join('\n')).toContain('repeats a group that itself repeats ("([a-z]+ ?)*")')
    expect(problems.join('\n')).toContain('pattern "^(x+)+$" repeats a group that itself repeats')
    expect(schemaProblems({ type: 'string', pattern: '(' }).join('')).toMatch(/does not compile: /)
  })

  it('explains the hazard in a validation message', () => {
    expect(patternHazard('^(a+)+$')).toMatch(/^repeats a group that itself repeats \("\(a\+\)\+"\): some texts make such a pattern backtrack exponentially/)
    expect(patternHazard('^a+$')).toBeUndefined()
  })
})
