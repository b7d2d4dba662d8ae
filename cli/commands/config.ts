import { reportSettings, type SettingReport } from '../../config/index.js'
import { ConfigError } from '../../core/errors.js'
import { ForgeCommand } from '../base.js'
import { table } from '../format.js'

export default class Config extends ForgeCommand {
  static override summary = 'Show every FORGE_* setting: its value, where it came from (env or default) and what it sets.'
  static override description =
    'Settings come from FORGE_* environment variables; an unset or empty variable takes its default. Secrets are never printed. ' +
    'An invalid value is listed with its problem and the command exits with code 2, as every other command would.'
  static override examples = ['<%= config.bin %> config', '<%= config.bin %> config --json', 'FORGE_HOME=/tmp/forge <%= config.bin %> config']

  async run(): Promise<SettingReport[]> {
    await this.parse(Config)
    const settings = reportSettings()
    const problems = settings.filter((s) => s.problem !== undefined)
    if (!this.jsonEnabled()) {
      const shown = (s: SettingReport) => (s.problem !== undefined ? `${String(s.value)} (invalid)` : s.value === null ? '-' : String(s.value))
      this.log(table(['variable', 'value', 'source', 'description'], settings.map((s) => [s.variable, shown(s), s.source, s.description])))
    }
    if (problems.length > 0) throw new ConfigError(problems.map((s) => s.problem).join('; '))
    return settings
  }
}
