/**
 * The stamp a warm worker or warm CLI is compared by (stack/warm-workers.ts buildStampOf): another
 * value of any variable Node reads once as it starts (START_ENV) is another stamp, so a claimer
 * that trusts other CA certificates, say, does not run on a process that started trusting these.
 */
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { NODE_FLAGS } from '../../stack/node-flags.js'
import { buildStampOf, START_ENV } from '../../stack/warm-workers.js'

const saved = new Map(START_ENV.map((name) => [name, process.env[name]]))
afterEach(() => {
  for (const [name, value] of saved) {
    if (value === undefined) delete process.env[name]
    else process.env[name] = value
  }
})

const builtFile = join(import.meta.dirname, 'no-such-build.js')

describe('buildStampOf', () => {
  it('differs by every variable Node reads as it starts, the CA certificates among them', () => {
    expect(START_ENV).toContain('NODE_EXTRA_CA_CERTS')
    expect(START_ENV).toContain('NODE_OPTIONS')
    const stamps = new Set([buildStampOf(builtFile)])
    for (const name of START_ENV) {
      process.env[name] = `/tmp/forge-stamp-${name}`
      stamps.add(buildStampOf(builtFile))
      process.env[name] = saved.get(name) ?? ''
      if (saved.get(name) === undefined) delete process.env[name]
    }
    expect(stamps.size).toBe(START_ENV.length + 1)
  })

  it('is the same for the same environment, and for variables a command reads itself (FORGE_*, PATH)', () => {
    const before = buildStampOf(builtFile)
    const path = process.env['PATH']
    process.env['FORGE_STAMP_TEST'] = '1'
    process.env['PATH'] = `${path ?? ''}:/tmp`
    try {
      expect(buildStampOf(builtFile)).toBe(before)
    } finally {
      delete process.env['FORGE_STAMP_TEST']
      process.env['PATH'] = path
    }
  })

  it("is the same with the worker's flags on top of a claimer's (a worker it started) and differs with any other flag", () => {
    const before = buildStampOf(builtFile)
    const argv = [...process.execArgv]
    try {
      process.execArgv.push(...NODE_FLAGS.worker)
      expect(buildStampOf(builtFile)).toBe(before)
      process.execArgv.push('--max-old-space-size=512')
      expect(buildStampOf(builtFile)).not.toBe(before)
    } finally {
      process.execArgv.splice(0, process.execArgv.length, ...argv)
    }
  })
})
