/**
 * The V8 flags Forge adds when it starts a worker or the ingester (stack/node-flags.ts): only those the
 * process is not given already, by its command line or NODE_OPTIONS; the container entrypoint adds the same.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { NODE_FLAGS, nodeFlagsFor, withoutWorkerFlags } from '../../stack/node-flags.js'
import { packageRoot } from '../../stack/paths.js'

describe('nodeFlagsFor', () => {
  it('adds a larger young generation to a worker or an ingester started without one', () => {
    expect(NODE_FLAGS).toEqual({ worker: ['--max-semi-space-size=64', '--min-semi-space-size=16'], ingester: ['--max-semi-space-size=32'] })
    expect(nodeFlagsFor('worker', [], {})).toEqual(['--max-semi-space-size=64', '--min-semi-space-size=16'])
    expect(nodeFlagsFor('ingester', ['--enable-source-maps'], { NODE_OPTIONS: '--max-old-space-size=4096' })).toEqual(['--max-semi-space-size=32'])
  })

  it("leaves a flag the user gives, on the command line or in NODE_OPTIONS, in either spelling, as the user's", () => {
    expect(nodeFlagsFor('worker', ['--max-semi-space-size=8'], {})).toEqual([])
    // either bound of the young generation is the user's setting of it: Forge adds neither
    expect(nodeFlagsFor('worker', ['--min-semi-space-size=1'], {})).toEqual([])
    expect(nodeFlagsFor('worker', ['--max-old-space-size=512'], {})).toEqual(['--max-semi-space-size=64', '--min-semi-space-size=16'])
    expect(nodeFlagsFor('worker', [], { NODE_OPTIONS: '--trace-gc --max_semi_space_size=8' })).toEqual([])
    expect(nodeFlagsFor('ingester', [], { NODE_OPTIONS: '  --max-semi-space-size=128  ' })).toEqual([])
  })

  it("strips the worker's flags, and only those, from what a build stamp compares", () => {
    expect(withoutWorkerFlags(['--enable-source-maps', '--max-semi-space-size=64', '--min-semi-space-size=16'])).toEqual(['--enable-source-maps'])
    expect(withoutWorkerFlags(['--max-semi-space-size=8'])).toEqual(['--max-semi-space-size=8'])
  })

  it('are the flags the container entrypoint starts a worker and an ingester with (a judge worker, none)', () => {
    const script = readFileSync(join(packageRoot(), 'deploy', 'entrypoint.sh'), 'utf8')
    for (const role of ['worker', 'ingester'] as const) {
      const flags = NODE_FLAGS[role].join(' ')
      expect(script).toContain(`      ${role}) v8_flags=${NODE_FLAGS[role].length > 1 ? `'${flags}'` : flags} ;;\n`)
      expect(script).toMatch(new RegExp(`\\n\\s*${role}\\) exec "\\$node" \\$v8_flags "\\$root/bin/run.js" ${role} "\\$@"`))
    }
    expect(script).toContain('judge) exec "$node" "$root/bin/run.js" worker --role judge "$@"')
  })
})
