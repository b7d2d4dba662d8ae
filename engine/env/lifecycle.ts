/**
 * The environment lifecycle of one attempt: seed → read the seed back and verify it → (the agent
 * runs) → capture the end state → restore → verify the restore. A seed that cannot be verified
 * means the agent must not run (no model is charged for a world nobody set up); a restore that
 * cannot be verified quarantines the instance so it cannot contaminate a later attempt.
 */
import type { EnvironmentReport, Task } from '../../core/contracts/index.js'
import { describeChange, diffEnvState, envQueryKey, sameState, type EnvQuery, type EnvState, type EnvironmentView, type FixtureState } from '../../core/env-diff.js'
import type { FixtureHandle, LoadedSuite } from '../../core/plugins.js'
import { environmentFixtures, sharedEnvironmentPool, type EnvironmentInstance, type EnvironmentPool } from './pool.js'

export interface EnvironmentSession {
  readonly instance: EnvironmentInstance
  /** what the attempt's tools get, by fixture name */
  readonly handles: Readonly<Record<string, FixtureHandle>>
  /** the verified starting state */
  readonly start: EnvState
  /** after the agent stopped: the end state, its diff from the start and the graders' queries */
  capture(queries: EnvQuery[]): Promise<EnvironmentView>
  /** restores the baseline and verifies it: the instance goes back to the pool, or into quarantine */
  restore(): Promise<EnvironmentReport>
}

export type EnvironmentStart =
  | { status: 'none' }
  | { status: 'ready'; session: EnvironmentSession }
  | { status: 'seed_unverified'; report: EnvironmentReport }

export interface StartEnvironmentOptions {
  suite: LoadedSuite
  task: Task
  /** default: the worker process's shared pool */
  pool?: EnvironmentPool
}

/** How a read-back state differs from what was seeded, in a few words. */
function mismatch(name: string, expected: FixtureState, actual: FixtureState): string {
  const changes = diffEnvState({ [name]: expected }, { [name]: actual })
  const shown = changes.slice(0, 3).map(describeChange).join('; ')
  return changes.length === 0 ? `${name}: differs from the seed` : `${name}: differs from the seed: ${shown}${changes.length > 3 ? `; … ${changes.length - 3} more` : ''}`
}

/** Reads every fixture of an instance back and checks it against the baseline and the author's `expect`. */
async function verify(instance: EnvironmentInstance): Promise<{ state: EnvState; problems: string[] }> {
  const state: EnvState = {}
  const problems: string[] = []
  for (const { spec, template, instance: live } of instance.fixtures) {
    try {
      const read = await live.capture()
      state[spec.name] = read
      if (!sameState(read, template.baseline)) problems.push(mismatch(spec.name, template.baseline, read))
      problems.push(...template.expectations(read).map((p) => `${spec.name}: ${p}`))
    } catch (error) {
      problems.push(`${spec.name}: cannot read it back: ${error instanceof Error ? error.message : String(error)}`)
    }
  }
  return { state, problems }
}

/**
 * Seeds (or reuses) an instance for the attempt and verifies its starting state. `none` when the
 * task has no environment fixtures.
 */
export async function startEnvironment(opts: StartEnvironmentOptions): Promise<EnvironmentStart> {
  const { suite, task } = opts
  if (environmentFixtures(task).length === 0) return { status: 'none' }
  const pool = opts.pool ?? sharedEnvironmentPool()

  let instance: EnvironmentInstance
  try {
    instance = await pool.acquire(suite, task)
  } catch (error) {
    const detail = `seeding failed: ${error instanceof Error ? error.message : String(error)}`
    return { status: 'seed_unverified', report: { instance: '', status: 'seed_unverified', reused: false, detail } }
  }

  const seeded = await verify(instance)
  if (seeded.problems.length > 0) {
    const reason = `seed not verified: ${seeded.problems.join('; ')}`
    const record = await pool.quarantine(instance, suite, reason)
    return { status: 'seed_unverified', report: { instance: instance.id, status: 'seed_unverified', reused: instance.uses > 1, detail: `${reason} (instance quarantined, kept at ${record.dir})` } }
  }

  const handles: Record<string, FixtureHandle> = {}
  for (const f of instance.fixtures) handles[f.spec.name] = f.instance.handle
  let restored: Promise<EnvironmentReport> | undefined

  return {
    status: 'ready',
    session: {
      instance,
      handles,
      start: seeded.state,
      async capture(queries) {
        const end: EnvState = {}
        for (const { spec, instance: live } of instance.fixtures) end[spec.name] = await live.capture()
        const answers: EnvironmentView['queries'] = {}
        for (const query of queries) {
          const live = instance.fixtures.find((f) => f.spec.name === query.fixture)?.instance
          answers[envQueryKey(query)] =
            live?.query === undefined ? { ok: false, error: `fixture "${query.fixture}" cannot answer queries` } : live.query(query.sql)
        }
        return { start: seeded.state, end, diff: diffEnvState(seeded.state, end), queries: answers }
      },
      restore() {
        restored ??= (async (): Promise<EnvironmentReport> => {
          const reused = instance.uses > 1
          const failures: string[] = []
          for (const { spec, instance: live } of instance.fixtures) {
            try {
              await live.restore()
            } catch (error) {
              failures.push(`${spec.name}: restore failed: ${error instanceof Error ? error.message : String(error)}`)
            }
          }
          const check = await verify(instance)
          failures.push(...check.problems)
          if (failures.length === 0) {
            await pool.release(instance)
            return { instance: instance.id, status: 'restored', reused, detail: '' }
          }
          const reason = `restore not verified: ${failures.join('; ')}`
          const record = await pool.quarantine(instance, suite, reason)
          return { instance: instance.id, status: 'quarantined', reused, detail: `${reason} (instance quarantined, kept at ${record.dir})` }
        })()
        return restored
      },
    },
  }
}
