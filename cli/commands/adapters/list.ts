import { Flags } from '@oclif/core'
import { adapterNames, describeAdapters, type AdapterInfo } from '../../../engine/adapters/index.js'
import { ConfigError } from '../../../stack/errors.js'
import { ForgeCommand } from '../../base.js'

export default class AdaptersList extends ForgeCommand {
  static override summary = 'List the agent adapters forge run --adapter takes, with what each does and the --adapter-config it accepts.'
  static override description =
    'Every adapter config is strict: a key not listed here is refused before a run starts (exit 2, naming the key). ' +
    '--json prints each adapter\'s name, description and config JSON Schema (draft 2020-12).'
  static override examples = [
    '<%= config.bin %> adapters list',
    '<%= config.bin %> adapters list --adapter react',
    '<%= config.bin %> adapters list --json',
    "<%= config.bin %> adapters list --adapter subprocess --json | jq '.[0].config_schema.properties.command'",
  ]
  static override flags = {
    adapter: Flags.string({ char: 'a', summary: `Only this adapter (${adapterNames().join(', ')}).` }),
  }

  async run(): Promise<AdapterInfo[]> {
    const { flags } = await this.parse(AdaptersList)
    const all = describeAdapters()
    const shown = flags.adapter === undefined ? all : all.filter((a) => a.name === flags.adapter)
    if (shown.length === 0) throw new ConfigError(`--adapter: unknown adapter "${flags.adapter}" (known adapters: ${adapterNames().join(', ')})`)
    if (!this.jsonEnabled()) {
      for (const [i, info] of shown.entries()) {
        if (i > 0) this.log('')
        this.log(`${info.name} — ${info.description}`)
        for (const line of configLines(info.config_schema)) this.log(`  ${line}`)
      }
    }
    return shown
  }
}

/** One line per config field: name, type, required or default, description. */
function configLines(schema: Record<string, unknown>): string[] {
  const properties = (schema['properties'] ?? {}) as Record<string, Record<string, unknown>>
  const required = new Set(Array.isArray(schema['required']) ? (schema['required'] as string[]) : [])
  const width = Math.max(0, ...Object.keys(properties).map((name) => name.length))
  return Object.entries(properties).map(([name, property]) => {
    const status = required.has(name) ? 'required' : property['default'] !== undefined ? `default ${JSON.stringify(property['default'])}` : 'optional'
    return `${name.padEnd(width)}  ${typeName(property)}, ${status}: ${String(property['description'] ?? '')}`
  })
}

function typeName(property: Record<string, unknown>): string {
  if (Array.isArray(property['enum'])) return (property['enum'] as unknown[]).map((v) => JSON.stringify(v)).join('|')
  if (Array.isArray(property['anyOf'])) return (property['anyOf'] as Record<string, unknown>[]).map(typeName).join('|')
  const type = property['type']
  if (type === 'array') {
    const items = property['items']
    return `${typeof items === 'object' && items !== null ? typeName(items as Record<string, unknown>) : 'any'}[]`
  }
  if (Array.isArray(type)) return type.join('|')
  return typeof type === 'string' ? type : 'any'
}
