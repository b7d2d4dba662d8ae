/**
 * Forge's configuration: every FORGE_* setting (./settings.ts), read once per process from the
 * environment, validated, with its default, and grouped by what it configures. Entry points
 * (`forge` commands, worker and ingester processes, the bench) call `resolveConfig()` once and hand
 * the result, or the one setting a function needs, down. Each of Temporal, NATS and ClickHouse is
 * external when its variable is set (fleet) and embedded otherwise (a child process or chDB under
 * FORGE_HOME, default ./.forge).
 */
import { resolve } from 'node:path'
import { describeSettings, loadSettings, type BenchPart, type ForgeSettings, type LogLevel, type SettingReport } from './settings.js'

export { LOG_LEVELS, readSetting, SETTINGS, settingsEnv, type ForgeSettings, type LogLevel, type SettingName, type SettingReport } from './settings.js'

export interface ForgeConfig {
  /** FORGE_HOME, absolute */
  home: string
  temporal: { address: string | undefined; namespace: string; taskQueue: string }
  natsUrl: string | undefined
  clickhouseUrl: string | undefined
  /** the embedded chDB directory (used when clickhouseUrl is unset), absolute */
  storePath: string
  /** server binaries of the local stack; undefined: found on PATH */
  binaries: { temporal: string | undefined; natsServer: string | undefined }
  /** a worker process (workers/worker-process.ts) */
  /** `runId`: the run a `forge run` worker serves; when its parent is gone it keeps going until that run ended */
  worker: { id: string | undefined; concurrency: number; attemptLanes: number; exitWithParent: boolean; role: 'all' | 'attempts' | 'judge'; shutdownGraceMs: number; runId: string | undefined }
  /** /healthz, /readyz and /metrics of workers and the ingester; undefined: no endpoint */
  healthPort: number | undefined
  /** the OTLP/HTTP collector workers export spans to live; undefined: none */
  otlpUrl: string | undefined
  /** replicas of the results stream when the ingester creates it */
  natsStreamReplicas: number
  /** seconds a stored result stays on the results stream before the ingester trims it */
  resultsKeepSeconds: number
  judge: {
    /** worker processes also serve the judge task queue */
    worker: boolean
    /** calls per second; 0: unlimited */
    rate: number
    concurrency: number
    taskQueue: string
    model: string | undefined
    baseUrl: string | undefined
    apiKey: string | undefined
  }
  logLevel: LogLevel
  agentVersion: string | undefined
  python: string
  bench: { attempts: number; workers: number; only: BenchPart | undefined }
}

/** The configuration in `env` (default: this process's); a bad value throws a ConfigError naming each variable and value. */
export function resolveConfig(env: NodeJS.ProcessEnv = process.env, cwd = process.cwd()): ForgeConfig {
  return configOf(loadSettings(env), cwd)
}

function configOf(s: ForgeSettings, cwd: string): ForgeConfig {
  const home = resolve(cwd, s.home)
  return {
    home,
    temporal: { address: s.temporalAddress, namespace: s.temporalNamespace, taskQueue: s.taskQueue },
    natsUrl: s.natsUrl,
    clickhouseUrl: s.clickhouseUrl,
    storePath: s.storePath === undefined ? resolve(home, 'store') : resolve(cwd, s.storePath),
    binaries: { temporal: s.temporalBin, natsServer: s.natsBin },
    worker: { id: s.workerId, concurrency: s.workerConcurrency, attemptLanes: s.workerAttemptLanes, exitWithParent: s.exitWithParent, role: s.workerRole, shutdownGraceMs: s.shutdownGraceMs, runId: s.workerRunId },
    healthPort: s.healthPort,
    otlpUrl: s.otlpUrl,
    natsStreamReplicas: s.natsStreamReplicas,
    resultsKeepSeconds: s.resultsKeep,
    judge: {
      worker: s.judgeWorker,
      rate: s.judgeRate,
      concurrency: s.judgeConcurrency,
      taskQueue: s.judgeTaskQueue,
      model: s.judgeModel,
      baseUrl: s.judgeBaseUrl,
      apiKey: s.judgeApiKey,
    },
    logLevel: s.logLevel,
    agentVersion: s.agentVersion,
    python: s.python,
    bench: { attempts: s.benchAttempts, workers: s.benchWorkers, only: s.benchOnly },
  }
}

/**
 * `forge config`: every setting, the value in effect and where it came from (env or default); paths
 * as resolved against `cwd`. Invalid values are reported with their problem, not thrown.
 */
export function reportSettings(env: NodeJS.ProcessEnv = process.env, cwd = process.cwd()): SettingReport[] {
  let effective = {}
  try {
    const config = resolveConfig(env, cwd)
    effective = { home: config.home, storePath: config.storePath }
  } catch {
    // the rows name the problems
  }
  return describeSettings(env, effective)
}
