import { listSchedules, type ScheduleInfo } from '../../../app/schedules.js'
import { resolveConfig } from '../../../stack/config.js'
import { ForgeCommand } from '../../base.js'
import { printSchedules } from '../../sweep-view.js'

export default class ScheduleList extends ForgeCommand {
  static override summary = 'List sweep schedules with their cron, state and next run.'
  static override examples = ['<%= config.bin %> schedule list', '<%= config.bin %> schedule list --json']

  async run(): Promise<ScheduleInfo[]> {
    await this.parse(ScheduleList)
    const schedules = await listSchedules(resolveConfig())
    if (!this.jsonEnabled()) printSchedules((line) => this.log(line), schedules)
    return schedules
  }
}
