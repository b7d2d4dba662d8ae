/**
 * Nightly sweeps as Temporal Schedules (`forge schedule create | list | pause | delete | trigger`):
 * Temporal starts SweepWorkflow on the cron itself, so no cron service is needed and a restart of
 * anything loses nothing. A schedule carries the checked sweep spec; its id names the workflows it
 * starts (`forge-sweep-<id>-<time>`), and so the sweeps they record.
 */
import { Client, Connection, ScheduleAlreadyRunning, ScheduleNotFoundError, ScheduleOverlapPolicy, type ScheduleHandle } from '@temporalio/client'
import type { SweepSpec } from '../core/contracts/sweep.js'
import { SWEEP_WORKFLOW_PREFIX } from '../core/sweep.js'
import type { ForgeConfig } from '../stack/config.js'
import { ConfigError } from '../stack/errors.js'
import { stackUp } from '../stack/local-stack.js'
import { temporalConnectOptions } from '../stack/temporal-connection.js'
import type { SweepWorkflow, SweepWorkflowInput } from '../workflows/sweep.js'
import { checkSweep, grantField, loadSweepFile } from './sweep.js'

export interface ScheduleInfo {
  id: string
  sweep: string
  cron: string
  timezone: string
  paused: boolean
  note: string
  /** the next times Temporal will start the sweep (ISO 8601) */
  next_runs: string[]
  /** the sweeps it started most recently: their workflow ids */
  recent: { at: string; workflow_id: string }[]
}

export interface CreateScheduleRequest {
  file: string
  id: string
  cron: string
  timezone?: string
  /** replace the schedule's spec and sweep if it exists (the chart's upgrade hook) */
  update?: boolean
  paused?: boolean
  note?: string
}

const ID = /^[A-Za-z0-9][A-Za-z0-9_-]{0,39}$/

async function scheduleClient<T>(config: ForgeConfig, use: (client: Client) => Promise<T>): Promise<T> {
  const address = config.temporal.address ?? (await stackUp(config)).temporalAddress
  const connection = await Connection.connect(temporalConnectOptions(address))
  try {
    return await use(new Client({ connection, namespace: config.temporal.namespace }))
  } finally {
    await connection.close()
  }
}

function checkId(id: string): void {
  if (!ID.test(id)) throw new ConfigError(`a schedule id is 1–40 letters, digits, _ or -, starting with a letter or digit; got "${id}"`)
}

export async function createSchedule(config: ForgeConfig, request: CreateScheduleRequest): Promise<ScheduleInfo> {
  checkId(request.id)
  if (request.cron.trim().split(/\s+/).length !== 5) {
    throw new ConfigError(`--cron takes five fields (minute hour day-of-month month day-of-week), e.g. "0 2 * * *"; got "${request.cron}"`)
  }
  const spec = await loadSweepFile(request.file)
  await checkSweep(spec)
  const timezone = request.timezone ?? 'UTC'
  const action = {
    type: 'startWorkflow' as const,
    workflowType: 'SweepWorkflow',
    workflowId: `${SWEEP_WORKFLOW_PREFIX}${request.id}`,
    taskQueue: config.temporal.taskQueue,
    // the cron travels with the sweep in the action's arguments: updatable, and what `schedule list` shows
    // granted (store/grants.ts): the workers run the sweep each night because this CLI, holding the results key, scheduled it
    args: [{ spec, schedule_id: request.id, schedule: { cron: request.cron, timezone }, ...grantField(spec) }] as Parameters<typeof SweepWorkflow>,
  }
  const scheduleSpec = { cronExpressions: [request.cron], timezone }
  return scheduleClient(config, async (client) => {
    try {
      await client.schedule.create({
        scheduleId: request.id,
        spec: scheduleSpec,
        action,
        // a night that overruns skips the next start rather than stacking sweeps; after an outage
        // Temporal starts what it missed within the last hour
        policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: '1 hour' },
        state: { paused: request.paused ?? false, ...(request.note ? { note: request.note } : {}) },
      })
    } catch (error) {
      if (!(error instanceof ScheduleAlreadyRunning)) throw asConfigError(error, request.id)
      if (!request.update) throw new ConfigError(`schedule "${request.id}" exists: pass --update to replace its sweep and cron, or delete it first`)
      const handle = client.schedule.getHandle(request.id)
      await handle.update((previous) => ({ ...previous, spec: scheduleSpec, action })).catch((e: unknown) => {
        throw asConfigError(e, request.id)
      })
    }
    return describe(client.schedule.getHandle(request.id))
  })
}

export async function listSchedules(config: ForgeConfig): Promise<ScheduleInfo[]> {
  return scheduleClient(config, async (client) => {
    const found: ScheduleInfo[] = []
    for await (const summary of client.schedule.list()) {
      if (summary.action?.type !== 'startWorkflow' || summary.action.workflowType !== 'SweepWorkflow') continue
      try {
        found.push(await describe(client.schedule.getHandle(summary.scheduleId)))
      } catch (error) {
        // deleted between the listing and now
        if (!(error instanceof ScheduleNotFoundError)) throw error
      }
    }
    return found.sort((a, b) => a.id.localeCompare(b.id))
  })
}

export async function pauseSchedule(config: ForgeConfig, id: string, opts: { unpause?: boolean; note?: string } = {}): Promise<ScheduleInfo> {
  checkId(id)
  return scheduleClient(config, async (client) => {
    const handle = client.schedule.getHandle(id)
    try {
      if (opts.unpause) await handle.unpause(opts.note ?? 'unpaused with forge schedule pause --unpause')
      else await handle.pause(opts.note ?? 'paused with forge schedule pause')
    } catch (error) {
      throw asConfigError(error, id)
    }
    return describe(handle)
  })
}

export async function deleteSchedule(config: ForgeConfig, id: string): Promise<{ id: string; deleted: true }> {
  checkId(id)
  return scheduleClient(config, async (client) => {
    try {
      await client.schedule.getHandle(id).delete()
    } catch (error) {
      throw asConfigError(error, id)
    }
    return { id, deleted: true as const }
  })
}

/** Starts the schedule's sweep now (even while paused), as if its time had come. */
export async function triggerSchedule(config: ForgeConfig, id: string): Promise<ScheduleInfo> {
  checkId(id)
  return scheduleClient(config, async (client) => {
    const handle = client.schedule.getHandle(id)
    try {
      await handle.trigger(ScheduleOverlapPolicy.ALLOW_ALL)
    } catch (error) {
      throw asConfigError(error, id)
    }
    return describe(handle)
  })
}

async function describe(handle: ScheduleHandle): Promise<ScheduleInfo> {
  const d = await handle.describe()
  const [input] = (d.action.type === 'startWorkflow' ? d.action.args : []) as Partial<SweepWorkflowInput>[]
  return {
    id: d.scheduleId,
    sweep: input?.spec?.name ?? '',
    cron: input?.schedule?.cron ?? '',
    timezone: input?.schedule?.timezone ?? '',
    paused: d.state.paused,
    note: d.state.note ?? '',
    next_runs: d.info.nextActionTimes.slice(0, 3).map((t) => t.toISOString()),
    recent: d.info.recentActions.map((a) => ({ at: a.takenAt.toISOString(), workflow_id: a.action.workflow.workflowId })),
  }
}

function asConfigError(error: unknown, id: string): Error {
  if (error instanceof ScheduleNotFoundError) return new ConfigError(`no schedule "${id}" (see forge schedule list)`, { cause: error })
  const message = (error as Error).message ?? String(error)
  // the server validates cron and time zone; its answer names the problem
  if (/invalid|cron|time ?zone|location/i.test(message)) return new ConfigError(`schedule "${id}": Temporal refused it: ${message}`, { cause: error })
  return error as Error
}

