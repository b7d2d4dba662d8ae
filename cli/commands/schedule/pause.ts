import { Args, Flags } from '@oclif/core'
import { pauseSchedule, type ScheduleInfo } from '../../../app/schedules.js'
import { resolveConfig } from '../../../stack/config.js'
import { ForgeCommand } from '../../base.js'
import { printSchedules } from '../../sweep-view.js'

export default class SchedulePause extends ForgeCommand {
  static override summary = 'Pause a sweep schedule (or resume it with --unpause).'
  static override examples = ["<%= config.bin %> schedule pause nightly --note 'model provider outage'", '<%= config.bin %> schedule pause nightly --unpause']
  static override args = {
    id: Args.string({ description: 'The schedule id.', required: true }),
  }
  static override flags = {
    unpause: Flags.boolean({ summary: 'Resume the schedule.' }),
    note: Flags.string({ summary: 'Why (shown by forge schedule list).' }),
  }

  async run(): Promise<ScheduleInfo> {
    const { args, flags } = await this.parse(SchedulePause)
    const schedule = await pauseSchedule(resolveConfig(), args.id, { ...(flags.unpause ? { unpause: true } : {}), ...(flags.note ? { note: flags.note } : {}) })
    if (!this.jsonEnabled()) printSchedules((line) => this.log(line), [schedule])
    return schedule
  }
}
