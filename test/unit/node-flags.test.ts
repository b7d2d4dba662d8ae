/**
 * The V8 flags Forge adds when it starts a worker or the ingester (stack/node-flags.ts): only those the
 * process is not given already, by its command line or NODE_OPTIONS; the container entrypoint adds the same.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { SERVER_NODE_FLAGS, serverNodeFlags, withoutServerFlags } from '../../stack/node-flags.js'
import { packageRoot } from '../../stack/paths.js'

describe('serverNodeFlags', () => {
  it('adds a larger young generation to a process started without one', () => {
    expect(SERVER_NODE_FLAGS).toEqual(['--max-semi-space-size=64'])
    expect(serverNodeFlags([], {})).toEqual(['--max-semi-space-size=64'])
    expect(serverNodeFlags(['--enable-source-maps'], { NODE_OPTIONS: '--max-old-space-size=4096' })).toEqual(['--max-semi-space-size=64'])
  })

  it("leaves a flag the user gives, on the command line or in NODE_OPTIONS, in either spelling, as the user's", () => {
    expect(serverNodeFlags(['--max-semi-space-size=8'], {})).toEqual([])
    expect(serverNodeFlags([], { NODE_OPTIONS: '--trace-gc --max_semi_space_size=8' })).toEqual([])
    expect(serverNodeFlags([], { NODE_OPTIONS: '  --max-semi-space-size=128  ' })).toEqual([])
  })

  it("strips Forge's flags, and only those, from what a build stamp compares", () => {
    expect(withoutServerFlags(['--enable-source-maps', '--max-semi-space-size=64'])).toEqual(['--enable-source-maps'])
    expect(withoutServerFlags(['--max-semi-space-size=8'])).toEqual(['--max-semi-space-size=8'])
  })

  it('are the flags the container entrypoint starts a worker, a judge worker and an ingester with', () => {
    const script = readFileSync(join(packageRoot(), 'deploy', 'entrypoint.sh'), 'utf8')
    expect(script).toContain(`v8_flags=${SERVER_NODE_FLAGS.join(' ')}\n`)
    for (const role of ['worker', 'judge', 'ingester']) expect(script).toMatch(new RegExp(`\\n\\s*${role}\\) exec "\\$node" \\$v8_flags "\\$root/bin/run.js" `))
  })
})
