import { Flags } from '@oclif/core'
import { taskJsonSchema } from '../../../core/task-json-schema.js'
import { ForgeCommand } from '../../base.js'

export default class TasksSchema extends ForgeCommand {
  static override summary = 'Print (or write) the JSON Schema of the task file format, for editor completion.'
  static override examples = [
    {
      description: 'Write it for editors; then make the first line of a task file: # yaml-language-server: $schema=./task.schema.json',
      command: '<%= config.bin %> tasks schema --out task.schema.json',
    },
  ]
  static override flags = {
    out: Flags.string({ char: 'o', summary: 'Write the schema to this file instead of printing it.' }),
  }

  async run(): Promise<Record<string, unknown>> {
    const { flags } = await this.parse(TasksSchema)
    return this.emitSchema(taskJsonSchema(), flags.out)
  }
}
