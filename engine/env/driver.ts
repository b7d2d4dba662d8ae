/**
 * What a fixture kind implements. A driver builds a kind's starting state once per pool (the
 * template: seed files plus conditions) and stamps out per-attempt instances from it; every state
 * it reports is read back from the live instance, never remembered.
 */
import type { EnvironmentFixture } from '../../core/contracts/index.js'
import type { EnvQueryResult, FixtureState } from '../../core/env-diff.js'
import type { FixtureHandle } from '../../core/plugins.js'

export interface TemplateContext {
  /** absolute path of the suite's fixtures directory */
  fixturesDir: string
  /** an empty directory the template may keep its files in */
  dir: string
}

export interface FixtureTemplate {
  /** the state every instance must start from (and be restored to) */
  readonly baseline: FixtureState
  /** what is wrong with a read-back state against the author's `expect` ([] when nothing) */
  expectations(state: FixtureState): string[]
  /** a new instance with its own copy of the baseline, its files under `dir` */
  instantiate(dir: string): Promise<FixtureInstance>
  dispose(): Promise<void>
}

export interface FixtureInstance {
  /** what the attempt's tools get (ToolRunContext.env) */
  readonly handle: FixtureHandle
  /** reads the instance's current state back */
  capture(): Promise<FixtureState>
  /** a read-only query against the current state (sqlite) */
  query?(sql: string): EnvQueryResult
  /** puts the baseline back (the pool verifies it afterwards) */
  restore(): Promise<void>
  close(): Promise<void>
}

export interface FixtureDriver<F extends EnvironmentFixture = EnvironmentFixture> {
  kind: F['kind']
  template(spec: F, ctx: TemplateContext): Promise<FixtureTemplate>
}

export type FixtureDrivers = { [K in EnvironmentFixture['kind']]: FixtureDriver<Extract<EnvironmentFixture, { kind: K }>> }
