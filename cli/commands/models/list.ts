import { listModels, type ModelsReport } from '../../../app/models.js'
import { ForgeCommand } from '../../base.js'
import { table } from '../../format.js'

export default class ModelsList extends ForgeCommand {
  static override summary = 'List the local models (GGUF files) that --model local:<name> can run, and where they are.'
  static override description =
    'Looks in FORGE_MODELS_DIR (when set), then in .models/ of the Forge package. Models that ship inside registry packages ' +
    'but are not installed yet are listed with the command that installs them.'
  static override examples = ['<%= config.bin %> models list', 'FORGE_MODELS_DIR=~/models <%= config.bin %> models list --json']

  async run(): Promise<ModelsReport> {
    await this.parse(ModelsList)
    const report = listModels()
    if (this.jsonEnabled()) return report
    if (report.installed.length === 0) this.log(`no local models installed in ${report.dirs.join(', ')}`)
    else
      this.log(
        table(
          ['model', '--model', 'size', 'from', 'path'],
          report.installed.map((m) => [m.name, m.spec, `${(m.bytes / 1024 / 1024).toFixed(0)} MiB`, m.source, m.path]),
          ['l', 'l', 'r', 'l', 'l'],
        ),
      )
    for (const entry of report.available) this.log(`not installed: ${entry.name} — ${entry.description}; install it with: ${entry.pull}`)
    this.log(`searched: ${report.dirs.join(', ')}; \`--model local\` means ${report.default}`)
    return report
  }
}
