import { Args } from '@oclif/core'
import type { FaultProfile } from '../../../core/contracts/index.js'
import { profileMode } from '../../../core/faults.js'
import { loadFaultProfile, profileHash } from '../../../app/faults.js'
import { ForgeCommand } from '../../base.js'

export default class FaultsValidate extends ForgeCommand {
  static override summary = 'Validate fault profiles: every problem of every file at once, each naming the file, field and value.'
  static override examples = ['<%= config.bin %> faults validate examples/faults/*.yaml', '<%= config.bin %> faults validate examples/faults/outage-burst.yaml --json']
  static override strict = false
  static override args = { file: Args.string({ description: 'fault profile files (YAML or JSON)', required: true }) }

  async run(): Promise<{ file: string; hash: string; mode: string; rules: number; profile: FaultProfile }[]> {
    const { argv } = await this.parse(FaultsValidate)
    const results = []
    for (const file of argv as string[]) {
      // the first invalid file stops with exit 2 and every problem of that file
      const profile = await loadFaultProfile(file)
      results.push({ file, hash: profileHash(profile), mode: profileMode(profile), rules: profile.rules.length, profile })
      if (!this.jsonEnabled()) this.log(`ok    ${file}: ${profile.name}, ${profile.rules.length} rule(s), ${profileMode(profile)}, hash ${profileHash(profile).slice(0, 12)}${profile.sweep ? `, sweep ${profile.sweep.join(', ')}` : ''}`)
    }
    return results
  }
}
