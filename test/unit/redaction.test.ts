import { describe, expect, it } from 'vitest'
import {
  findSensitive,
  isCardNumber,
  looksLikeSecretField,
  looksLikeSecretName,
  luhnValid,
  piiValuesIn,
  Redactor,
  secretValuesOf,
  type RedactionKind,
} from '../../core/redaction.js'
import { KNOWN_SECRET, knownFalsePositives, lookAlikes, places, plantIn, planted, SHORT_OPENAI_KEY } from '../fixtures/redaction-corpus.js'

const redactorFor = (): Redactor => new Redactor({ secrets: [KNOWN_SECRET] })

describe('redaction corpus: recall and precision', () => {
  it('redacts every planted secret and PII value in answers, tool arguments, tool results and errors (recall 100%), with its kind', () => {
    const misses: string[] = []
    const wrongKind: string[] = []
    for (const item of planted) {
      for (const place of places) {
        const redactor = redactorFor()
        const stored = JSON.stringify(redactor.value(plantIn(place, item.text ?? item.value)))
        if (stored.includes(item.value)) misses.push(`${item.kind} in ${place}: ${item.value}`)
        else if (!stored.includes(`[REDACTED:${item.kind}#1]`)) wrongKind.push(`${item.kind} in ${place}: ${stored}`)
      }
    }
    const total = planted.length * places.length
    const recall = (total - misses.length) / total
    console.log(`redaction recall: ${total - misses.length}/${total} planted (${planted.length} values × ${places.length} places) = ${(recall * 100).toFixed(1)}%`)
    expect({ misses, wrongKind }).toEqual({ misses: [], wrongKind: [] })
  })

  it('leaves clean look-alikes alone; the false positives are the listed ones and are reported', () => {
    const falsePositives: string[] = []
    for (const text of lookAlikes) {
      for (const place of places) {
        const original = plantIn(place, text)
        const redacted = redactorFor().value(original)
        if (JSON.stringify(redacted) !== JSON.stringify(original)) falsePositives.push(`${place}: ${text}`)
      }
    }
    const checked = lookAlikes.length * places.length
    const truePositives = planted.length * places.length
    const precision = truePositives / (truePositives + falsePositives.length)
    console.log(
      `redaction precision: ${falsePositives.length} false positive(s) in ${checked} look-alike placements (${lookAlikes.length} texts × ${places.length} places); precision ${(precision * 100).toFixed(1)}%${falsePositives.length > 0 ? `: ${falsePositives.join(' | ')}` : ''}`,
    )
    expect(falsePositives).toEqual(knownFalsePositives.flatMap((text) => places.map((place) => `${place}: ${text}`)))
  })
})

describe('Redactor', () => {
  it('gives each value a typed label that is stable within the redactor and numbered per kind', () => {
    const r = new Redactor()
    const text = r.text('mail jane@example.com or bob@example.org; again jane@example.com, card 4111 1111 1111 1111')
    expect(text).toBe('mail [REDACTED:email#1] or [REDACTED:email#2]; again [REDACTED:email#1], card [REDACTED:card#1]')
    // the same redactor keeps the numbering across values of one attempt
    expect(r.value({ to: 'bob@example.org', from: 'jane@example.com' })).toEqual({ to: '[REDACTED:email#2]', from: '[REDACTED:email#1]' })
    expect(r.counts).toEqual({ email: { values: 2, occurrences: 5 }, card: { values: 1, occurrences: 1 } })
  })

  it('a text seen again is redacted and counted again; a clean one stays as it was (the redactor remembers clean texts only)', () => {
    const r = new Redactor({ secrets: [KNOWN_SECRET] })
    const dirty = `key ${KNOWN_SECRET} and jane@example.com`
    expect(r.text(dirty)).toBe(r.text(dirty))
    expect(r.text('plain words only')).toBe('plain words only')
    expect(r.text('plain words only')).toBe('plain words only')
    expect(r.counts).toEqual({ secret: { values: 1, occurrences: 2 }, email: { values: 1, occurrences: 2 } })
    // a known secret needs none of the characters the format detectors look for
    expect(findSensitive('xx SECRETVALUEONLYLETTERS yy', ['SECRETVALUEONLYLETTERS'])).toEqual([{ kind: 'secret', start: 3, end: 25, value: 'SECRETVALUEONLYLETTERS' }])
    // one secret set and another: each finds its own values
    expect(findSensitive('alpha-secret beta-secret', ['alpha-secret']).map((f) => f.value)).toEqual(['alpha-secret'])
    expect(findSensitive('alpha-secret beta-secret', ['beta-secret']).map((f) => f.value)).toEqual(['beta-secret'])
  })

  it('a text one redactor found clean is clean for the next with the same secrets, and searched again by one that knows another secret', () => {
    const text = 'the deploy token is tok-Q7zX-unguessable today'
    expect(new Redactor({ secrets: [KNOWN_SECRET] }).text(text)).toBe(text)
    expect(new Redactor({ secrets: [KNOWN_SECRET] }).text(text)).toBe(text)
    // another attempt whose agent was handed that token: the shared memory of clean texts is per set of secrets
    const r = new Redactor({ secrets: [KNOWN_SECRET, 'tok-Q7zX-unguessable'] })
    expect(r.text(text)).toBe('the deploy token is [REDACTED:secret#1] today')
    expect(new Redactor().text(text)).toBe(text)
    expect(new Redactor({ secrets: ['tok-Q7zX-unguessable'] }).text(text)).toBe('the deploy token is [REDACTED:secret#1] today')
    // a text with PII a task keeps is clean for that redactor only
    const mail = 'write to jo.baker@example.com'
    expect(new Redactor({ keepPii: ['jo.baker@example.com'] }).text(mail)).toBe(mail)
    expect(new Redactor().text(mail)).toBe('write to [REDACTED:email#1]')
  })

  it('is idempotent: redacting a redacted value changes nothing', () => {
    const r = new Redactor({ secrets: [KNOWN_SECRET] })
    const once = r.value({ out: `key ${SHORT_OPENAI_KEY} and ${KNOWN_SECRET}`, password: 'hunter22', n: 4111111111111111 })
    expect(once).toEqual({ out: 'key [REDACTED:api_key#1] and [REDACTED:secret#1]', password: '[REDACTED:credential#1]', n: '[REDACTED:card#1]' })
    expect(r.value(once)).toEqual(once)
  })

  it('replaces only the secret part of a bearer header, a URL and an assignment', () => {
    const r = new Redactor()
    expect(r.text('Authorization: Bearer abc123def456 ok')).toBe('Authorization: Bearer [REDACTED:bearer#1] ok')
    expect(r.text('DATABASE_URL=postgres://app:S3cr3tPw@db:5432/x')).toBe('DATABASE_URL=postgres://app:[REDACTED:url_password#1]@db:5432/x')
    expect(r.text('api_key: "zz9-plural-z-alpha"')).toBe('api_key: "[REDACTED:credential#1]"')
  })

  it('a known secret wins over a format that overlaps it, and short known values are not searched for', () => {
    const r = new Redactor({ secrets: ['sk-test-SECRET123', 'abc'] })
    expect(r.text('key=sk-test-SECRET123; abc')).toBe('key=[REDACTED:secret#1]; abc')
  })

  it('redacts a PEM block cut off before its END line', () => {
    expect(new Redactor().text('-----BEGIN PRIVATE KEY-----\nMIIEv…[truncated 4000 bytes]')).toBe('[REDACTED:private_key#1]')
  })

  it('keeps PII the task itself gives the agent, never a secret', () => {
    const keep = piiValuesIn('Reply to Jo.Baker@Example.com about card 4111111111111111')
    expect(keep).toEqual(['jo.baker@example.com', '4111111111111111'])
    const r = new Redactor({ keepPii: keep, secrets: [KNOWN_SECRET] })
    expect(r.text(`jo.baker@example.com, 4111111111111111, sam@example.com, ${KNOWN_SECRET}`)).toBe('jo.baker@example.com, 4111111111111111, [REDACTED:email#1], [REDACTED:secret#1]')
  })

  it('redacts object keys and nested values without changing the input', () => {
    const input = { 'jane@example.com': { orders: [1, 2] }, nested: [{ note: 'call (415) 555-0199' }] }
    const before = structuredClone(input)
    expect(new Redactor().value(input)).toEqual({ '[REDACTED:email#1]': { orders: [1, 2] }, nested: [{ note: 'call [REDACTED:phone#1]' }] })
    expect(input).toEqual(before)
  })

  it('labels an integer card number (13 to 19 digits) and leaves every shorter integer as it is', () => {
    const r = new Redactor()
    // 13-digit Visa numbers with a valid Luhn digit; a 12-digit one with a Visa prefix and a valid Luhn
    // digit all the same, and other integers (a timestamp in ms has 13 digits and no issuer prefix)
    expect(r.value({ card: 4000000000006, test_visa: 4222222222222, twelve: 400000000002, counts: [0, 42, 999999999999, 1796458292087] })).toEqual({
      card: '[REDACTED:card#1]',
      test_visa: '[REDACTED:card#2]',
      twelve: 400000000002,
      counts: [0, 42, 999999999999, 1796458292087],
    })
  })

  it('keeps a "__proto__" key an agent sent as the data it is, redacted like any other', () => {
    const sent = JSON.parse(`{"note": "${SHORT_OPENAI_KEY}", "__proto__": {"text": "call (415) 555-0199"}}`) as Record<string, unknown>
    const out = new Redactor().value(sent)
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype)
    expect(JSON.parse(JSON.stringify(out))).toEqual(JSON.parse('{"note": "[REDACTED:api_key#1]", "__proto__": {"text": "call [REDACTED:phone#1]"}}'))
  })
})

describe('detectors', () => {
  it('Luhn and card issuer prefixes', () => {
    expect([luhnValid('4111111111111111'), luhnValid('4111111111111112'), luhnValid('79927398713'), isCardNumber('1234567812345670'), isCardNumber('4012888888881881')]).toEqual([
      true,
      false,
      false,
      false,
      true,
    ])
  })

  it('secret-looking environment variable names and data fields', () => {
    const names = ['OPENAI_API_KEY', 'GITHUB_TOKEN', 'DB_PASSWORD', 'AWS_SECRET_ACCESS_KEY', 'SENTRY_DSN', 'FORGE_AUDIT_KEY', 'PATH', 'HOME', 'KEYBOARD_LAYOUT', 'PWD', 'MONKEY']
    expect(names.filter(looksLikeSecretName)).toEqual(['OPENAI_API_KEY', 'GITHUB_TOKEN', 'DB_PASSWORD', 'AWS_SECRET_ACCESS_KEY', 'SENTRY_DSN', 'FORGE_AUDIT_KEY'])
    const fields = ['password', 'apiKey', 'api_key', 'client_secret', 'access_token', 'key', 'sort_key', 'max_tokens', 'tokens', 'author']
    expect(fields.filter(looksLikeSecretField)).toEqual(['password', 'apiKey', 'api_key', 'client_secret', 'access_token'])
  })

  it('secret values of an environment: secret names only, long enough', () => {
    expect(secretValuesOf({ OPENAI_API_KEY: 'sk-test-SECRET123', HOME: '/home/me', MY_TOKEN: 'abc', EMPTY_SECRET: undefined })).toEqual(['sk-test-SECRET123'])
    // and it reads only the values of secret-looking names (a worker asks of process.env every attempt)
    const read: string[] = []
    const env = new Proxy({ OPENAI_API_KEY: 'sk-test-SECRET123', HOME: '/home/me', PATH: '/bin' } as Record<string, string>, { get: (target, name: string) => (read.push(name), target[name]) })
    expect(secretValuesOf(env)).toEqual(['sk-test-SECRET123'])
    expect(read).toEqual(['OPENAI_API_KEY'])
  })

  it('finds findings left to right without overlaps', () => {
    const kinds = (text: string): RedactionKind[] => findSensitive(text).map((f) => f.kind)
    expect(kinds('a@b.io then AKIAIOSFODNN7EXAMPLE then +1-415-555-0132')).toEqual(['email', 'aws_key', 'phone'])
    // overlapping findings of several detectors: the known secret, then the credential, then the longer wins
    expect(findSensitive('x password=hunter2secret@example.com y', ['hunter2secret']).map((f) => [f.kind, f.value])).toEqual([['secret', 'hunter2secret']])
    // thousands of findings in one text, each kept once
    expect(findSensitive('a@a.aa '.repeat(10_000)).length).toBe(10_000)
  })

  it('finds a secret-named value and a URL password where a run of name or scheme characters starts, as before', () => {
    const values = (text: string) => findSensitive(text).map((f) => [f.kind, f.value])
    expect(values('----my-api_key=abcdef12 ok')).toEqual([['credential', 'abcdef12']])
    expect(values('__token: zz9plural')).toEqual([['credential', 'zz9plural']])
    expect(values('see x.https://app:S3cr3tPw@db:5432/x')).toEqual([['url_password', 'S3cr3tPw']])
    // runs that once took quadratic time still find what they hold
    expect(values(`${'-'.repeat(50_000)}password=abcdef12`)).toEqual([['credential', 'abcdef12']])
    expect(values(`${'a-b.'.repeat(10_000)}a://u:p4ssw0rd@h`)).toEqual([['url_password', 'p4ssw0rd']])
  })
})
