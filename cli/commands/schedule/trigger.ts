import { Args } from '@oclif/core'
import { triggerSchedule, type ScheduleInfo } from '../../../app/schedules.js'
import { resolveConfig } from '../../../stack/config.js'
import { ForgeCommand } from '../../base.js'
import { printSchedules } from '../../sweep-view.js'

export default class ScheduleTrigger extends ForgeCommand {
  static override summary = "Start a schedule's sweep now, as if its time had come (also while paused)."
  static override examples = ['<%= config.bin %> schedule trigger nightly', '<%= config.bin %> schedule trigger nightly --json']
  static override args = {
    id: Args.string({ description: 'The schedule id.', required: true }),
  }

  async run(): Promise<ScheduleInfo> {
    const { args } = await this.parse(ScheduleTrigger)
    const schedule = await triggerSchedule(resolveConfig(), args.id)
    if (!this.jsonEnabled()) {
      printSchedules((line) => this.log(line), [schedule])
      this.log('triggered: see forge sweep show latest once it finished')
    }
    return schedule
  }
}
