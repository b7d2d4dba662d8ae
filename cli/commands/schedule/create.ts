import { Args, Flags } from '@oclif/core'
import { createSchedule, type ScheduleInfo } from '../../../app/schedules.js'
import { loadSweepFile } from '../../../app/sweep.js'
import { resolveConfig } from '../../../stack/config.js'
import { ForgeCommand } from '../../base.js'
import { printSchedules } from '../../sweep-view.js'

export default class ScheduleCreate extends ForgeCommand {
  static override summary = 'Schedule a sweep on a cron as a Temporal Schedule (no cron service; survives restarts).'
  static override description =
    'The sweep file is checked (every suite loads, every adapter exists) and stored in the schedule; Temporal starts SweepWorkflow at each time. ' +
    'A night that overruns skips the next start; after an outage Temporal starts what it missed within the last hour. Workers must be running (forge worker, or the fleet).'
  static override examples = [
    "<%= config.bin %> schedule create sweep.yaml --cron '0 2 * * *'",
    "<%= config.bin %> schedule create sweep.yaml --id nightly --cron '0 2 * * 1-5' --timezone Europe/Berlin",
    "<%= config.bin %> schedule create /etc/forge/sweeps/nightly.yaml --id nightly --cron '0 2 * * *' --update",
  ]
  static override args = {
    file: Args.string({ description: 'The sweep file (YAML).', required: true }),
  }
  static override flags = {
    cron: Flags.string({ summary: 'When to start the sweep: five cron fields (minute hour day-of-month month day-of-week).', required: true }),
    id: Flags.string({ summary: "The schedule's id (default: the sweep's name)." }),
    timezone: Flags.string({ summary: 'IANA time zone of the cron (default UTC).' }),
    update: Flags.boolean({ summary: 'Replace the sweep and cron of an existing schedule instead of failing.' }),
    paused: Flags.boolean({ summary: 'Create it paused (forge schedule pause <id> --unpause starts it).' }),
    note: Flags.string({ summary: 'A note shown with the schedule.' }),
  }

  async run(): Promise<ScheduleInfo> {
    const { args, flags } = await this.parse(ScheduleCreate)
    const id = flags.id ?? (await loadSweepFile(args.file)).name
    const schedule = await createSchedule(resolveConfig(), {
      file: args.file,
      id,
      cron: flags.cron,
      ...(flags.timezone ? { timezone: flags.timezone } : {}),
      ...(flags.update ? { update: true } : {}),
      ...(flags.paused ? { paused: true } : {}),
      ...(flags.note ? { note: flags.note } : {}),
    })
    if (!this.jsonEnabled()) printSchedules((line) => this.log(line), [schedule])
    return schedule
  }
}
