import { Flags } from '@oclif/core'
import { faultProfileJsonSchema } from '../../../core/fault-json-schema.js'
import { ForgeCommand } from '../../base.js'

export default class FaultsSchema extends ForgeCommand {
  static override summary = 'Print (or write) the JSON Schema of fault profile files (faults.yaml), for editor completion.'
  static override examples = [
    {
      description: 'Write it for editors; then make the first line of a profile: # yaml-language-server: $schema=./faults.schema.json',
      command: '<%= config.bin %> faults schema --out faults.schema.json',
    },
  ]
  static override flags = {
    out: Flags.string({ char: 'o', summary: 'Write the schema to this file instead of printing it.' }),
  }

  async run(): Promise<Record<string, unknown>> {
    const { flags } = await this.parse(FaultsSchema)
    return this.emitSchema(faultProfileJsonSchema(), flags.out)
  }
}
