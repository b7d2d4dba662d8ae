/** Every key and id of an attempt from one AttemptKey; the values are pinned to what runs stored before. */
import { createHash } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { AttemptKey as AttemptKeySchema } from '../../core/contracts/index.js'
import { attemptKeyFor, attemptKeyOf, attemptSeedOf, attemptUidOf, configIdOf, mintRunId, seedKeyOf, sha256Hex, type AttemptKey } from '../../core/identity.js'

const key: AttemptKey = { attempt_uid: 'r1/c0/echo/3', run_id: 'r1', config_id: 'c0', suite: 'smoke', task_id: 'echo', attempt: 3 }

describe('attempt keys', () => {
  it('derives attempt_uid as run_id/config_id/task_id/attempt, the same as the contracts helper', () => {
    expect(attemptUidOf(key)).toBe('r1/c0/echo/3')
    expect(attemptUidOf({ run_id: 'r20240506070809-a069b8', config_id: 'mock-80a18879', task_id: 'add_two', attempt: 0 })).toBe('r20240506070809-a069b8/mock-80a18879/add_two/0')
  })

  it('builds the whole key from an attempt input, leaving its other fields out', () => {
    const input = { run_id: 'r1', config_id: 'c0', suite: 'smoke', suite_path: '/s/smoke', adapter: 'mock', adapter_config: {}, seed: 'x', task_id: 'echo', attempt: 3 }
    expect(attemptKeyFor(input)).toStrictEqual(key)
    expect(AttemptKeySchema.parse(attemptKeyFor(input))).toStrictEqual(key)
  })

  it('picks exactly the key fields, in key order, from anything that carries a key', () => {
    const result = { outcome: 'pass', attempt: 3, task_id: 'echo', grades: [], suite: 'smoke', config_id: 'c0', run_id: 'r1', attempt_uid: 'r1/c0/echo/3', trace: { output: 'x' } }
    const picked = attemptKeyOf(result)
    expect(picked).toStrictEqual(key)
    expect(Object.keys(picked)).toEqual(['attempt_uid', 'run_id', 'config_id', 'suite', 'task_id', 'attempt'])
    // a copy: changing the key does not change the result it was picked from
    picked.attempt = 9
    expect(result.attempt).toBe(3)
  })
})

describe('attempt seeds', () => {
  it('draws the seed from run seed, config, task and attempt, as attempts were seeded before', () => {
    expect(seedKeyOf({ config_id: 'c0', task_id: 'task_one', attempt: 0 }, 'seed')).toBe('seed:c0/task_one/0')
    expect(attemptSeedOf({ config_id: 'c0', task_id: 'task_one', attempt: 0 }, 'seed')).toBe(4281287043)
    expect(attemptSeedOf({ config_id: 'mock-44136fa3', task_id: 'echo', attempt: 7 }, 'rs')).toBe(3737588265)
  })

  it('leaves the run id out, so the same run seed reproduces an attempt in a new run', () => {
    const sameAttemptInAnotherRun: AttemptKey = { ...key, run_id: 'r2', attempt_uid: 'r2/c0/echo/3' }
    expect(attemptSeedOf(sameAttemptInAnotherRun, 's')).toBe(attemptSeedOf(key, 's'))
    const seeds = [attemptSeedOf(key, 's'), attemptSeedOf(key, 't'), attemptSeedOf({ ...key, attempt: 4 }, 's'), attemptSeedOf({ ...key, task_id: 'other' }, 's'), attemptSeedOf({ ...key, config_id: 'c1' }, 's')]
    expect(new Set(seeds).size).toBe(seeds.length)
  })
})

describe('run and config ids', () => {
  it('mints a run id from the UTC time to the second and the entropy it is given', () => {
    expect(mintRunId(Date.UTC(2024, 4, 6, 7, 8, 9, 999), 'a069b8')).toBe('r20240506070809-a069b8')
    expect(mintRunId(Date.UTC(1999, 11, 31, 23, 59, 59), '000000')).toBe('r19991231235959-000000')
  })

  it('names a configuration by its adapter and settings, as runs stored it; the price table is left out', () => {
    expect(configIdOf('mock', {})).toBe('mock-80a18879')
    expect(configIdOf('mock', { success_rate: 0.8, price_table: '/x/y.yaml' })).toBe('mock-49ae759d')
    expect(configIdOf('mock', { success_rate: 0.8 })).toBe('mock-49ae759d')
    expect(configIdOf('react', { model: 'gpt-4o-mini', decoding: { temperature: 0.2 }, note: 'é→✓ 😀' })).toBe('react-55960271')
    expect(configIdOf('mock', { success_rate: 0.9 })).not.toBe('mock-49ae759d')
  })

  it('hashes with SHA-256 exactly as node:crypto does, across block boundaries and in UTF-8', () => {
    const texts = [...Array.from({ length: 140 }, (_, n) => 'x'.repeat(n)), 'é→✓ 😀'.repeat(20), 'abc', JSON.stringify({ adapter: 'mock', adapterConfig: {} })]
    for (const text of texts) expect(sha256Hex(text), `${text.length} chars`).toBe(createHash('sha256').update(text).digest('hex'))
    expect(sha256Hex('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad')
  })
})
