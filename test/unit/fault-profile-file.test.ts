/** Fault profiles from files and flags: loud validation naming file, field and value; the example profiles load. */
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { faultPlanOf, faultsFromFlags, loadFaultProfile, parseSweep, profileHash } from '../../app/faults.js'
import { FaultProfile } from '../../core/contracts/index.js'
import { faultProfileJsonSchema } from '../../core/fault-json-schema.js'
import { validateJson } from '../../core/json-schema.js'
import { ConfigError } from '../../stack/errors.js'

const dir = mkdtempSync(path.join(tmpdir(), 'forge-faults-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
const file = (name: string, text: string) => {
  const p = path.join(dir, name)
  writeFileSync(p, text)
  return p
}

describe('fault profile files', () => {
  it('ships example profiles that load, and that the exported JSON Schema accepts', async () => {
    const examples = readdirSync('examples/faults').filter((f) => f.endsWith('.yaml'))
    expect(examples.sort()).toEqual(['flaky-tools.yaml', 'model-gateway.yaml', 'outage-burst.yaml', 'recovery-curve.yaml'])
    const schema = faultProfileJsonSchema()
    for (const example of examples) {
      const profile = await loadFaultProfile(path.join('examples/faults', example))
      expect(FaultProfile.parse(profile)).toEqual(profile)
      const { parse } = await import('yaml')
      const { readFileSync } = await import('node:fs')
      expect(validateJson(parse(readFileSync(path.join('examples/faults', example), 'utf8')), schema)).toEqual([])
    }
  })

  it('lists every problem of a file at once, each with file, field and value', async () => {
    const bad = file('bad.yaml', 'name: x\nrules:\n  - rate: 1.5\n    kinds: [explode]\n  - rate: 0.1\n    mode: burst\n    target: model\n    tools: [a]\n    colour: red\n')
    const error = await loadFaultProfile(bad).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(ConfigError)
    const lines = (error as Error).message.split('\n').map((l) => l.trim())
    expect(lines[0]).toBe('invalid fault profile:')
    expect(lines).toContain(`${bad}: rules[0].rate: Too big: expected number to be <=1 (got 1.5)`)
    expect(lines.some((l) => l.startsWith(`${bad}: rules[0].kinds`) && l.includes('"explode"'))).toBe(true)
    expect(lines).toContain(`${bad}: rules[1]: unknown field colour`)
  })

  it('says which file cannot be read or parsed', async () => {
    await expect(loadFaultProfile(path.join(dir, 'missing.yaml'))).rejects.toThrow(`--fault-profile ${path.join(dir, 'missing.yaml')}: cannot read the file (ENOENT)`)
    await expect(loadFaultProfile(file('syntax.yaml', 'rules: [\n'))).rejects.toThrow(/YAML syntax error/)
  })
})

describe('fault flags', () => {
  it('builds the one-off profile and refuses what does not go together', async () => {
    expect(await faultsFromFlags({})).toBeUndefined()
    const one = await faultsFromFlags({ rate: '0.3', kinds: '500,timeout', mode: 'burst', window: 3, target: 'all' })
    expect(one?.profile.rules).toEqual([
      { target: 'tools', mode: 'burst', rate: 0.3, window: 3, kinds: ['500', 'timeout'] },
      { target: 'model', mode: 'burst', rate: 0.3, window: 3, kinds: ['500', 'timeout'] },
    ])
    expect(one?.sweep).toBeUndefined()
    await expect(faultsFromFlags({ kinds: '500' })).rejects.toThrow('--fault-kinds applies only with --fault-rate, --fault-sweep or --fault-profile')
    await expect(faultsFromFlags({ rate: '1.2' })).rejects.toThrow('--fault-rate must be a fail rate between 0 and 1, got "1.2"')
    await expect(faultsFromFlags({ rate: '0.1', kinds: 'boom' })).rejects.toThrow('--fault-kinds: unknown fault kind "boom" (kinds: timeout, 500, garbage, rate_limit, slow)')
    await expect(faultsFromFlags({ rate: '0.1', window: 3 })).rejects.toThrow('--fault-window applies only with --fault-mode burst')
    await expect(faultsFromFlags({ rate: '0.1', profile: 'x.yaml' })).rejects.toThrow('--fault-profile and --fault-rate do not go together')
    await expect(faultsFromFlags({ rate: '0.1', sweep: '0,0.1' })).rejects.toThrow('--fault-rate and --fault-sweep do not go together')
  })

  it('takes sweep rates from the flag, else from the profile', async () => {
    expect(parseSweep('0.4, 0,0.1,0.1')).toEqual([0, 0.1, 0.4])
    expect(() => parseSweep('0,x')).toThrow('--fault-sweep: "x" is not a fail rate between 0 and 1')
    const fromFlag = await faultsFromFlags({ sweep: '0,0.2', kinds: '500' })
    expect(fromFlag?.sweep).toEqual([0, 0.2])
    const fromProfile = await faultsFromFlags({ profile: 'examples/faults/recovery-curve.yaml' })
    expect(fromProfile?.sweep).toEqual([0, 0.1, 0.2, 0.4])
    expect((await faultsFromFlags({ profile: 'examples/faults/recovery-curve.yaml', sweep: '0,0.5' }))?.sweep).toEqual([0, 0.5])
  })

  it('stamps a plan: the hash ignores name and description, the rate changes it', () => {
    const p = FaultProfile.parse({ name: 'a', rules: [{ rate: 0.2, mode: 'burst' }, { rate: 0.1 }] })
    const plan = faultPlanOf(p, 'sw')
    expect(plan).toMatchObject({ profile_hash: profileHash(p), mode: 'mixed', rate: 0.2, sweep_id: 'sw' })
    expect(plan.profile_hash).toMatch(/^[0-9a-f]{64}$/)
    expect(profileHash({ ...p, name: 'b', description: 'c' })).toBe(plan.profile_hash)
    expect(profileHash({ ...p, timeout_ms: 10 })).not.toBe(plan.profile_hash)
  })
})
