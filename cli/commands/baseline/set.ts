import { Flags } from '@oclif/core'
import { setBaseline } from '../../../app/baselines.js'
import type { BaselineRecord } from '../../../core/contracts/index.js'
import { resolveConfig } from '../../../stack/config.js'
import { ForgeCommand } from '../../base.js'

export default class BaselineSet extends ForgeCommand {
  static override summary = 'Tag a completed run as the next version of a baseline (stored in ClickHouse).'
  static override description =
    'A baseline is a run tagged with a name, the commit hash and agent version it measured, and a timestamp. Setting a name ' +
    'again adds version n+1; older versions stay readable as name@n. forge compare --baseline <name> uses the newest.'
  static override examples = [
    '<%= config.bin %> baseline set --name main',
    '<%= config.bin %> baseline set --run-id <run-id> --name main --commit $(git rev-parse HEAD) --agent-version 1.4.2',
    '<%= config.bin %> baseline set --name nightly --note "after prompt v7" --json',
  ]
  static override flags = {
    'run-id': Flags.string({ char: 'r', summary: 'The run to tag (default: the latest).' }),
    name: Flags.string({ char: 'n', summary: 'Baseline name, e.g. main or nightly.', default: 'main' }),
    commit: Flags.string({ summary: 'Commit hash the run measured (default: git rev-parse HEAD here).' }),
    'agent-version': Flags.string({ summary: "Agent version (default: $FORGE_AGENT_VERSION, else the run's config id)." }),
    note: Flags.string({ summary: 'A free-text note stored with the baseline.' }),
  }

  async run(): Promise<BaselineRecord> {
    const { flags } = await this.parse(BaselineSet)
    const record = await setBaseline(resolveConfig(), {
      name: flags.name,
      ...(flags['run-id'] ? { runId: flags['run-id'] } : {}),
      ...(flags.commit !== undefined ? { commit: flags.commit } : {}),
      ...(flags['agent-version'] !== undefined ? { agentVersion: flags['agent-version'] } : {}),
      ...(flags.note !== undefined ? { note: flags.note } : {}),
    })
    if (!this.jsonEnabled()) {
      this.log(
        `baseline ${record.name} v${record.version} = run ${record.run_id} (suite ${record.suite}, commit ${record.commit_hash || '—'}, agent ${record.agent_version || '—'})`,
      )
    }
    return record
  }
}
