import { Args } from '@oclif/core'
import { deleteSchedule } from '../../../app/schedules.js'
import { resolveConfig } from '../../../stack/config.js'
import { ForgeCommand } from '../../base.js'

export default class ScheduleDelete extends ForgeCommand {
  static override summary = 'Delete a sweep schedule (sweeps it already started keep running; stored sweeps stay).'
  static override examples = ['<%= config.bin %> schedule delete nightly']
  static override args = {
    id: Args.string({ description: 'The schedule id.', required: true }),
  }

  async run(): Promise<{ id: string; deleted: true }> {
    const { args } = await this.parse(ScheduleDelete)
    const result = await deleteSchedule(resolveConfig(), args.id)
    if (!this.jsonEnabled()) this.log(`deleted schedule ${result.id}`)
    return result
  }
}
