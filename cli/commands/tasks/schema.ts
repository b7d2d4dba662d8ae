import { Flags } from '@oclif/core'
import { writeFileSync } from 'node:fs'
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
    const schema = taskJsonSchema()
    const text = `${JSON.stringify(schema, null, 2)}\n`
    if (flags.out) {
      writeFileSync(flags.out, text)
      if (!this.jsonEnabled()) this.log(`wrote ${flags.out}`)
    } else if (!this.jsonEnabled()) {
      process.stdout.write(text)
    }
    return schema
  }
}
