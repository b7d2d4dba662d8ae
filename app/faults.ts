/**
 * Fault profiles for `forge run`: reading and validating `faults.yaml` (every problem at once, each
 * naming the file, field and value), the one-off profile of `--fault-rate …`, sweep rates, and the
 * FaultPlan a run carries (the profile plus the stamps recorded on the run).
 */
import { createHash } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { resolve } from 'node:path'
import { FaultKind, FaultMode, FaultPlan, FaultProfile, FaultTarget, type FaultProfileInput } from '../core/contracts/index.js'
import { FAULT_KINDS, nominalRate, profileFromShorthand, profileIdentity, profileMode } from '../core/faults.js'
import { formatIssuePath } from '../core/suite-validation.js'
import { ConfigError } from '../stack/errors.js'

/** Validates a parsed profile; a ConfigError lists every problem as `<where>: <field>: <message> (got <value>)`. */
export function parseFaultProfile(data: unknown, where: string): FaultProfile {
  const parsed = FaultProfile.safeParse(data)
  if (parsed.success) return parsed.data
  const problems = parsed.error.issues.map((issue) => {
    const field = formatIssuePath(issue.path) || '(profile)'
    const value = valueAt(data, issue.path)
    const shown = value === undefined ? '' : ` (got ${JSON.stringify(value)})`
    const message = issue.code === 'unrecognized_keys' ? `unknown field${issue.keys.length > 1 ? 's' : ''} ${issue.keys.join(', ')}` : issue.message
    return `${where}: ${field}: ${message}${issue.code === 'unrecognized_keys' ? '' : shown}`
  })
  throw new ConfigError(`invalid fault profile:\n  ${problems.join('\n  ')}`)
}

function valueAt(data: unknown, path: readonly PropertyKey[]): unknown {
  let current = data
  for (const key of path) {
    if (typeof current !== 'object' || current === null) return undefined
    current = (current as Record<PropertyKey, unknown>)[key]
  }
  return current
}

/** Reads a fault profile file (YAML or JSON); a missing file, bad syntax or invalid field is a ConfigError naming it. */
export async function loadFaultProfile(file: string): Promise<FaultProfile> {
  const path = resolve(file)
  let text: string
  try {
    text = await readFile(path, 'utf8')
  } catch (error) {
    throw new ConfigError(`--fault-profile ${file}: cannot read the file (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`)
  }
  // the YAML parser loads for a profile file only: a run without one does not load it (issue 15)
  const { default: YAML } = await import('yaml')
  const doc = YAML.parseDocument(text, { prettyErrors: true })
  if (doc.errors.length > 0) {
    throw new ConfigError(`--fault-profile ${file}: YAML syntax error: ${doc.errors.map((e) => e.message.split('\n')[0]).join('; ')}`)
  }
  return parseFaultProfile(doc.toJS() as unknown, file)
}

/** What `forge run` was told about faults on the command line. */
export interface FaultFlags {
  profile?: string
  rate?: string
  kinds?: string
  mode?: string
  window?: number
  target?: string
  sweep?: string
}

/** Parses `0,0.1,0.2` into rates; a bad one is a ConfigError naming it. */
export function parseSweep(text: string, flag = '--fault-sweep'): number[] {
  const parts = text.split(',').map((p) => p.trim()).filter((p) => p !== '')
  if (parts.length === 0) throw new ConfigError(`${flag} needs a comma-separated list of fail rates, e.g. 0,0.1,0.2,0.4`)
  const rates = parts.map((part) => {
    const rate = Number(part)
    if (!Number.isFinite(rate) || rate < 0 || rate > 1) throw new ConfigError(`${flag}: "${part}" is not a fail rate between 0 and 1`)
    return rate
  })
  return [...new Set(rates)].sort((a, b) => a - b)
}

/**
 * The profile a run injects, from `--fault-profile` or the shorthand flags, and the sweep rates
 * (`--fault-sweep`, else the profile's `sweep`), or undefined when no fault flag was given.
 */
export async function faultsFromFlags(flags: FaultFlags): Promise<{ profile: FaultProfile; sweep: number[] | undefined } | undefined> {
  const shorthand = (['kinds', 'mode', 'window', 'target'] as const).filter((name) => flags[name] !== undefined)
  if (flags.profile !== undefined && (flags.rate !== undefined || shorthand.length > 0)) {
    throw new ConfigError(`--fault-profile and --fault-${flags.rate !== undefined ? 'rate' : shorthand[0]} do not go together: put the rule in the profile`)
  }
  if (flags.profile === undefined && flags.rate === undefined && flags.sweep === undefined) {
    if (shorthand.length > 0) throw new ConfigError(`--fault-${shorthand[0]} applies only with --fault-rate, --fault-sweep or --fault-profile`)
    return undefined
  }
  const sweep = flags.sweep === undefined ? undefined : parseSweep(flags.sweep)
  if (flags.profile !== undefined) {
    const profile = await loadFaultProfile(flags.profile)
    return { profile, sweep: sweep ?? profile.sweep }
  }
  if (flags.rate !== undefined && sweep !== undefined) throw new ConfigError('--fault-rate and --fault-sweep do not go together: a sweep runs every rate it lists')
  const rate = flags.rate === undefined ? (sweep?.[sweep.length - 1] ?? 0) : Number(flags.rate)
  if (!(rate >= 0 && rate <= 1)) throw new ConfigError(`--fault-rate must be a fail rate between 0 and 1, got "${flags.rate}"`)
  const kinds = flags.kinds === undefined ? undefined : flags.kinds.split(',').map((k) => k.trim()).filter((k) => k !== '')
  for (const kind of kinds ?? []) {
    if (!FaultKind.safeParse(kind).success) throw new ConfigError(`--fault-kinds: unknown fault kind "${kind}" (kinds: ${FAULT_KINDS.join(', ')})`)
  }
  if (kinds !== undefined && kinds.length === 0) throw new ConfigError(`--fault-kinds needs at least one of ${FAULT_KINDS.join(', ')}`)
  const mode = flags.mode === undefined ? undefined : FaultMode.safeParse(flags.mode)
  if (mode !== undefined && !mode.success) throw new ConfigError(`--fault-mode must be uniform or burst, got "${flags.mode}"`)
  if (flags.window !== undefined && mode?.data !== 'burst') throw new ConfigError('--fault-window applies only with --fault-mode burst')
  const targets = flags.target === undefined || flags.target === 'tools' ? ['tools' as const] : flags.target === 'all' ? (['tools', 'model'] as const) : [flags.target]
  for (const target of targets) if (!FaultTarget.safeParse(target).success) throw new ConfigError(`--fault-target must be tools, model or all, got "${flags.target}"`)
  const input: FaultProfileInput = profileFromShorthand({
    rate,
    ...(kinds !== undefined ? { kinds: kinds.map((k) => FaultKind.parse(k)) } : {}),
    ...(mode?.data !== undefined ? { mode: mode.data } : {}),
    ...(flags.window !== undefined ? { window: flags.window } : {}),
    targets: targets.map((t) => FaultTarget.parse(t)),
  })
  return { profile: parseFaultProfile(input, 'the --fault-* flags'), sweep }
}

/** The sha256 of what changes a profile's faults (its name and description left out). */
export function profileHash(profile: FaultProfile): string {
  return createHash('sha256').update(profileIdentity(profile)).digest('hex')
}

/** What a run carries: the profile and its stamps. */
export function faultPlanOf(profile: FaultProfile, sweepId = ''): FaultPlan {
  return FaultPlan.parse({ profile, profile_hash: profileHash(profile), mode: profileMode(profile), rate: nominalRate(profile), sweep_id: sweepId })
}
