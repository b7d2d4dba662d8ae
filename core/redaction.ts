/**
 * Redaction of secrets and PII, pure: detectors for values the worker knows to be secret, for
 * well-known credential formats of any length and for PII (emails, Luhn-checked card numbers,
 * phone numbers), and a `Redactor` that replaces what they find with typed labels that stay stable
 * within an attempt (`[REDACTED:email#1]` is the same address every time it appears), so a
 * redacted trace stays readable and two mentions of one value still compare equal.
 */

/** What a finding is; the label of its replacement (`[REDACTED:<kind>#n]`). */
export type RedactionKind =
  | 'secret'
  | 'credential'
  | 'api_key'
  | 'aws_key'
  | 'github_token'
  | 'slack_token'
  | 'jwt'
  | 'bearer'
  | 'private_key'
  | 'url_password'
  | 'email'
  | 'card'
  | 'phone'

/** Kinds that are personal data rather than credentials. */
export const PII_KINDS: ReadonlySet<RedactionKind> = new Set(['email', 'card', 'phone'])

/** One sensitive value found in a text: `[start, end)` is what gets replaced. */
export interface Finding {
  kind: RedactionKind
  start: number
  end: number
  value: string
}

/** Known secret values shorter than this are not searched for: they would match ordinary text. */
export const MIN_SECRET_LENGTH = 6

interface Detector {
  kind: RedactionKind
  pattern: RegExp
  /** the capture group holding the value to replace (default: the whole match) */
  group?: number
  /** a further check of the value the pattern matched */
  accept?: (value: string) => boolean
}

const hasDigit = (value: string): boolean => /\d/.test(value)

/** The Luhn checksum of a card number's digits (at least 13 of them). */
export function luhnValid(digits: string): boolean {
  if (!/^\d{13,19}$/.test(digits)) return false
  let sum = 0
  for (let i = 0; i < digits.length; i++) {
    let d = Number(digits[digits.length - 1 - i])
    if (i % 2 === 1) {
      d *= 2
      if (d > 9) d -= 9
    }
    sum += d
  }
  return sum % 10 === 0
}

/** A card number: 13–19 digits, an issuer prefix (Visa, Mastercard, Amex, Diners, Discover, JCB, UnionPay) and a valid Luhn digit. */
export function isCardNumber(text: string): boolean {
  const digits = text.replace(/[ -]/g, '')
  return /^(?:4|5[1-5]|2[2-7]|3[47]|3[0689]|6)/.test(digits) && luhnValid(digits)
}

function phoneDigits(value: string): number {
  return value.replace(/\D/g, '').length
}

// order matters only for ties: an earlier detector wins a match of the same span
const DETECTORS: readonly Detector[] = [
  { kind: 'private_key', pattern: /-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----[\s\S]*?(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----|$)/g },
  // OpenAI (sk-, sk-proj-) and Anthropic (sk-ant-…) keys of any length; a short one needs a digit, which keeps `sk-learn` out
  { kind: 'api_key', pattern: /(?<![A-Za-z0-9_-])sk-[A-Za-z0-9_-]{6,}/g, accept: (value) => hasDigit(value) || value.length >= 23 },
  { kind: 'aws_key', pattern: /(?<![A-Za-z0-9])(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA)[A-Z0-9]{12,}(?![a-z0-9])/g },
  { kind: 'github_token', pattern: /(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{6,}|github_pat_[A-Za-z0-9_]{10,})/g },
  { kind: 'slack_token', pattern: /(?<![A-Za-z0-9])xox[abposre]-[A-Za-z0-9-]{6,}/g },
  { kind: 'jwt', pattern: /(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{4,}\.eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*/g },
  { kind: 'bearer', pattern: /\bBearer\s+([A-Za-z0-9._~+/-]{6,}=*)/gi, group: 1, accept: hasDigit },
  // scheme://user:password@host — only the password goes
  // (the scheme starts where a run of scheme characters starts: from every word boundary inside a long
  // run, `[a-zA-Z0-9+.-]*` re-read the run to its end — quadratic, 4 s on 100 KB of `a-b.`)
  { kind: 'url_password', pattern: /(?<![a-zA-Z0-9+.-])[a-zA-Z][a-zA-Z0-9+.-]*:\/\/[^\s:/@"'<>]+:([^\s@/"'<>]+)@[^\s/"'<>]/g, group: 1 },
  // password = …, "api_key": "…", token: … — the value after a secret-named key (the name starts
  // where a run of name characters starts: from inside a run of `-` or `_`, the lazy prefix re-read the
  // run to its end — quadratic, 5.8 s on 100 KB of `-`)
  {
    kind: 'credential',
    pattern: /(?<![A-Za-z0-9_-])[A-Za-z0-9_-]*?(?:password|passwd|passphrase|secret|api[_-]?key|access[_-]?key|private[_-]?key|auth[_-]?token|access[_-]?token|refresh[_-]?token|client[_-]?secret|token)["']?\s*[:=]\s*["']?([^\s"',;&}\]]{6,})/gi,
    group: 1,
    accept: (value) => !value.startsWith('[REDACTED:'),
  },
  // a `/` before it is a URL's user name (https://user@host), not an address
  { kind: 'email', pattern: /(?<![A-Za-z0-9._%+/-])[A-Za-z0-9][A-Za-z0-9._%+-]*@(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?\.)+[A-Za-z]{2,}(?![A-Za-z0-9-])/g },
  { kind: 'card', pattern: /(?<![\d-])\d(?:[ -]?\d){12,18}(?![\d-])/g, accept: isCardNumber },
  // +44 20 7946 0958, +1-415-555-0100: a country code, then 8–15 digits in groups
  {
    kind: 'phone',
    pattern: /(?<![\w+])\+\d{1,3}(?:[ .-]?\(?\d{1,4}\)?){2,5}(?![\w-])/g,
    accept: (value) => phoneDigits(value) >= 8 && phoneDigits(value) <= 15,
  },
  // (415) 555-0100, 415-555-0100, 415.555.0100: North American numbers, separators required
  { kind: 'phone', pattern: /(?<![\w.+-])(?:\(\d{3}\)\s?|\d{3}[-. ])\d{3}[-. ]\d{4}(?![\w-]|\.\d)/g },
]

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
}

/**
 * What any detector needs somewhere in a text: a digit, `@`, `:`, `=` or `-`, or one of the
 * letter-only prefixes (a JWT's `eyJ`, a GitHub token's, an AWS key id's). A text with none of
 * them can hold no finding but a known secret, so most of a trace's short strings skip the
 * detectors (`test/unit/redaction.test.ts` checks each detector's examples pass this gate).
 */
const DETECTABLE = /[0-9@:=-]|eyJ|gh[pousr]_|github_pat_|A(?:KIA|SIA|GPA|IDA|ROA|NPA)/

/** No detector and no known secret matches fewer characters than this. */
const MIN_FINDING_LENGTH = Math.min(MIN_SECRET_LENGTH, 'a@b.cc'.length)

/** The alternation of known secret values, longest first, compiled once per set of values. */
const secretPatterns = new Map<string, RegExp | null>()

function secretPattern(secrets: readonly string[]): RegExp | null {
  const cacheKey = secrets.join('\u0000')
  let pattern = secretPatterns.get(cacheKey)
  if (pattern === undefined) {
    const known = [...new Set(secrets)].filter((s) => s.length >= MIN_SECRET_LENGTH).sort((a, b) => b.length - a.length)
    pattern = known.length === 0 ? null : new RegExp(known.map(escapeRegExp).join('|'), 'g')
    // a worker sees a handful of secret sets (its environment, plus each adapter config's references)
    if (secretPatterns.size >= 64) secretPatterns.clear()
    secretPatterns.set(cacheKey, pattern)
  }
  return pattern
}

/**
 * Every sensitive value in `text`, left to right, without overlaps: where two findings overlap, a
 * known secret value wins, then a credential over PII, then the longer one.
 */
export function findSensitive(text: string, secrets: readonly string[] = []): Finding[] {
  if (text.length < MIN_FINDING_LENGTH) return []
  const found: Finding[] = []
  const pattern = secrets.length === 0 ? null : secretPattern(secrets)
  if (pattern !== null) {
    for (const m of text.matchAll(pattern)) found.push({ kind: 'secret', start: m.index, end: m.index + m[0].length, value: m[0] })
  }
  if (DETECTABLE.test(text)) {
    for (const detector of DETECTORS) {
      for (const m of text.matchAll(detector.pattern)) {
        const value = detector.group === undefined ? m[0] : m[detector.group]
        if (value === undefined || value === '') continue
        if (detector.accept !== undefined && !detector.accept(value)) continue
        const start = detector.group === undefined ? m.index : m.index + m[0].lastIndexOf(value)
        found.push({ kind: detector.kind, start, end: start + value.length, value })
      }
    }
  }
  if (found.length <= 1) return found
  // known secrets first, then credentials over PII (`user:pw@host` is no email), then longer spans, then detector order
  const rank = (f: Finding): number => (f.kind === 'secret' ? 0 : PII_KINDS.has(f.kind) ? 2 : 1)
  const ordered = [...found].sort((a, b) => rank(a) - rank(b) || b.end - b.start - (a.end - a.start))
  // which characters a kept finding covers: one detector's matches never overlap, so this reads each
  // character at most once per detector (comparing with every kept finding was quadratic: 15 s for the
  // 80,000 addresses of 800 KB of `a@a.aa`)
  const covered = new Uint8Array(text.length)
  const kept: Finding[] = []
  for (const f of ordered) {
    if (covered.subarray(f.start, f.end).includes(1)) continue
    covered.fill(1, f.start, f.end)
    kept.push(f)
  }
  return kept.sort((a, b) => a.start - b.start)
}

/** Name segments: `OPENAI_API_KEY` → OPENAI, API, KEY; `apiKey` → API, KEY. */
function nameSegments(name: string): string[] {
  return name
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .split(/[^A-Za-z0-9]+/)
    .filter((s) => s !== '')
    .map((s) => s.toUpperCase())
}

const SECRET_WORDS = new Set(['SECRET', 'SECRETS', 'TOKEN', 'PASSWORD', 'PASSWD', 'PASSPHRASE', 'PASS', 'CREDENTIAL', 'CREDENTIALS', 'APIKEY', 'PRIVATEKEY', 'AUTH', 'SIGNATURE', 'DSN'])

/**
 * Whether an environment variable's name says it holds a secret: a segment such as KEY, TOKEN,
 * SECRET, PASSWORD, CREDENTIAL, AUTH (`OPENAI_API_KEY`, `GITHUB_TOKEN`, `DB_PASSWORD`).
 */
export function looksLikeSecretName(name: string): boolean {
  let answer = secretNames.get(name)
  if (answer === undefined) {
    answer = nameSegments(name).some((segment) => SECRET_WORDS.has(segment) || segment === 'KEY' || segment === 'KEYS')
    if (secretNames.size >= 4096) secretNames.clear()
    secretNames.set(name, answer)
  }
  return answer
}

/** looksLikeSecretName by name: a worker asks about the same environment for every attempt */
const secretNames = new Map<string, boolean>()

/**
 * Whether an object key in data says its value is a secret: stricter than for environment
 * variables, since data is full of `key`, `sort_key` and `tokens` that are not.
 */
export function looksLikeSecretField(name: string): boolean {
  let answer = secretFields.get(name)
  if (answer === undefined) {
    answer = secretFieldSegments(nameSegments(name))
    if (secretFields.size >= 4096) secretFields.clear()
    secretFields.set(name, answer)
  }
  return answer
}

/** looksLikeSecretField by name: every object key of every trace is asked about */
const secretFields = new Map<string, boolean>()

function secretFieldSegments(segments: readonly string[]): boolean {
  return segments.some(
    (segment, i) =>
      (SECRET_WORDS.has(segment) && segment !== 'PASS' && segment !== 'SIGNATURE' && segment !== 'AUTH') ||
      (segment === 'KEY' && ['API', 'ACCESS', 'PRIVATE', 'SECRET', 'SIGNING', 'ENCRYPTION', 'MASTER'].includes(segments[i - 1] ?? '')),
  )
}

/** The values of every variable in `env` whose name looks like a secret (long enough to search for). */
export function secretValuesOf(env: Readonly<Record<string, string | undefined>>): string[] {
  // names first: reading a value of process.env is a call into the runtime, and a worker asks once per attempt
  const values: string[] = []
  for (const name of Object.keys(env)) {
    if (!looksLikeSecretName(name)) continue
    const value = env[name]
    if (value !== undefined && value.length >= MIN_SECRET_LENGTH) values.push(value)
  }
  return values
}

export interface RedactorOptions {
  /** values known to be secret: redacted wherever they appear */
  secrets?: readonly string[]
  /** PII values that stay (e.g. what the task itself gives the agent); never applies to secrets or credentials */
  keepPii?: readonly string[]
}

/** What one redactor replaced, by kind (distinct values and occurrences). */
export type RedactionCounts = Partial<Record<RedactionKind, { values: number; occurrences: number }>>

/**
 * Replaces sensitive values with typed labels, stable for the redactor's lifetime (one attempt):
 * the same value always gets the same label, `[REDACTED:<kind>#<n>]`, numbered per kind in the
 * order values are first seen. Redacting twice changes nothing more.
 */
export class Redactor {
  private readonly secrets: readonly string[]
  private readonly keep: ReadonlySet<string>
  private readonly labels = new Map<string, string>()
  private readonly perKind = new Map<RedactionKind, number>()
  private readonly tally: RedactionCounts = {}
  /** texts already searched that hold nothing to replace */
  private readonly clean = new Set<string>()
  /** texts in which nothing sensitive was found with these secrets, by any redactor of this process */
  private readonly cleanEverywhere: CleanTexts

  constructor(opts: RedactorOptions = {}) {
    this.secrets = [...(opts.secrets ?? [])]
    this.keep = new Set((opts.keepPii ?? []).map((value) => canonicalValue(/@/.test(value) ? 'email' : 'card', value)))
    this.cleanEverywhere = cleanTextsFor(this.secrets)
  }

  /** The secret values this redactor searches for (secret_leak looks for the same). */
  get knownSecrets(): readonly string[] {
    return this.secrets
  }

  /** What was replaced so far. */
  get counts(): RedactionCounts {
    return structuredClone(this.tally)
  }

  private label(kind: RedactionKind, value: string): string {
    // one card, address or number however it is written: `5500 0000 0000 0004` is 5500000000000004
    const id = `${kind}\u0000${canonicalValue(kind, value)}`
    let label = this.labels.get(id)
    if (label === undefined) {
      const n = (this.perKind.get(kind) ?? 0) + 1
      this.perKind.set(kind, n)
      label = `[REDACTED:${kind}#${n}]`
      this.labels.set(id, label)
      const entry = this.tally[kind] ?? { values: 0, occurrences: 0 }
      entry.values++
      this.tally[kind] = entry
    }
    this.tally[kind]!.occurrences++
    return label
  }

  private keeps(finding: Finding): boolean {
    return PII_KINDS.has(finding.kind) && this.keep.has(canonicalValue(finding.kind, finding.value))
  }

  /** `text` with every sensitive value replaced by its label. */
  text(text: string): string {
    if (this.clean.has(text) || this.cleanEverywhere.has(text)) return text
    const found = findSensitive(text, this.secrets)
    if (found.length === 0) this.cleanEverywhere.add(text)
    const findings = found.filter((f) => !this.keeps(f))
    if (findings.length === 0) {
      // a trace repeats its strings (keys, tool names, arguments in both the result and the trace)
      if (text.length <= 4096 && this.clean.size < 10_000) this.clean.add(text)
      return text
    }
    let out = ''
    let at = 0
    for (const f of findings) {
      out += text.slice(at, f.start) + this.label(f.kind, f.value)
      at = f.end
    }
    return out + text.slice(at)
  }

  /**
   * A JSON-like value with every string (object keys included) redacted; a string under a
   * secret-named key (`password`, `api_key`, …) is replaced whole; an integer that is a card number
   * becomes its label. The input is not changed; parts of it with nothing to replace are shared
   * with the value returned.
   */
  value<T>(value: T): T {
    return this.walk(value, undefined) as T
  }

  private walk(value: unknown, key: string | undefined): unknown {
    if (typeof value === 'string') {
      if (key !== undefined && value.length >= MIN_SECRET_LENGTH && looksLikeSecretField(key) && !value.startsWith('[REDACTED:')) return this.label('credential', value)
      return this.text(value)
    }
    if (typeof value === 'number') {
      // a card number has 13 to 19 digits: a smaller integer (a count, a latency, a price) is none, and
      // is not turned into text to find that out
      if (Number.isSafeInteger(value) && value >= 1e12 && isCardNumber(String(value)) && !this.keep.has(String(value))) return this.label('card', String(value))
      return value
    }
    // copy on write: a part with nothing to replace is handed back as it is (most of a trace), so
    // redacting allocates only along the paths to what it replaced
    if (Array.isArray(value)) {
      let out: unknown[] | undefined
      for (let i = 0; i < value.length; i++) {
        const item: unknown = value[i]
        const redacted = this.walk(item, undefined)
        if (out === undefined && redacted !== item) out = value.slice(0, i)
        out?.push(redacted)
      }
      return out ?? value
    }
    if (value !== null && typeof value === 'object') {
      // its keys, not its entries: a [key, value] pair per property was most of what redacting allocated
      const object = value as Record<string, unknown>
      const keys = Object.keys(object)
      let out: Record<string, unknown> | undefined
      for (let i = 0; i < keys.length; i++) {
        const k = keys[i]!
        const v = object[k]
        const key = this.text(k)
        const redacted = this.walk(v, k)
        if (out === undefined && (key !== k || redacted !== v)) out = Object.fromEntries(keys.slice(0, i).map((earlier) => [earlier, object[earlier]]))
        if (out !== undefined) setOwn(out, key, redacted)
      }
      return out ?? value
    }
    return value
  }
}

/** Sets an own property, also one named `__proto__` (a JSON key an agent may send), which `=` would take for the prototype. */
function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__') Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true })
  else target[key] = value
}

/**
 * Texts known to hold nothing sensitive, for one set of known secrets: findSensitive is a function
 * of the text and the secrets, so what one attempt found clean is clean for the next. Attempts of a
 * run repeat their instructions, tool names, arguments and outputs; searching each again was a
 * worker's largest cost in redaction. Bounded by characters held; cleared whole when full.
 */
class CleanTexts {
  private readonly texts = new Set<string>()
  private chars = 0

  has(text: string): boolean {
    return this.texts.has(text)
  }

  add(text: string): void {
    if (text.length > CLEAN_TEXT_MAX_CHARS) return
    if (this.chars + text.length > CLEAN_TEXTS_MAX_CHARS) {
      this.texts.clear()
      this.chars = 0
    }
    this.texts.add(text)
    this.chars += text.length
  }
}

const CLEAN_TEXT_MAX_CHARS = 4096
const CLEAN_TEXTS_MAX_CHARS = 4_000_000

/** CleanTexts by set of known secrets (a run's attempts share one: the worker's environment plus the adapter config's references); at most 4 sets, so ≤ 16 M characters */
const cleanTextsBySecrets = new Map<string, CleanTexts>()

function cleanTextsFor(secrets: readonly string[]): CleanTexts {
  const key = secrets.join('\u0000')
  let texts = cleanTextsBySecrets.get(key)
  if (texts === undefined) {
    if (cleanTextsBySecrets.size >= 4) cleanTextsBySecrets.clear()
    cleanTextsBySecrets.set(key, (texts = new CleanTexts()))
  }
  return texts
}

/** The identity of a found value: card and phone numbers by their digits, emails case-insensitively. */
function canonicalValue(kind: RedactionKind, value: string): string {
  if (kind === 'card' || kind === 'phone') return value.replace(/\D/g, '')
  if (kind === 'email') return value.toLowerCase()
  return value
}

/** PII values found in `text` (e.g. a task's own files): what a `keepPii` list is built from. */
export function piiValuesIn(text: string): string[] {
  const values = findSensitive(text)
    .filter((f) => PII_KINDS.has(f.kind))
    .map((f) => canonicalValue(f.kind, f.value))
  return [...new Set(values)]
}
