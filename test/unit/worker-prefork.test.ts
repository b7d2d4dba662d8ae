import { describe, expect, it } from 'vitest'
import { preforkCount } from '../../app/worker-prefork.js'
import { warmSocketOfLog, warmSocketPath } from '../../stack/warm-workers.js'

describe('how many workers forge run forks before it parses its flags', () => {
  it('follows --workers, capped like the pool caps processes; one by default', () => {
    expect(preforkCount(['--suite', 'smoke'], 4)).toBe(1)
    expect(preforkCount(['--workers', '3'], 4)).toBe(3)
    expect(preforkCount(['--workers=2', '--attempts', '9'], 4)).toBe(2)
    expect(preforkCount(['--workers', '50'], 4)).toBe(4)
    // the last one wins, as in oclif
    expect(preforkCount(['--workers', '2', '--workers', '1'], 4)).toBe(1)
  })

  it('forks none for help, a dry run, --workers 0, or a value it cannot read', () => {
    for (const argv of [['--help'], ['-h'], ['--dry-run'], ['--workers', '0'], ['--workers=0'], ['--workers'], ['--workers', 'many'], ['--workers', '-1'], ['--version']]) {
      expect(preforkCount(argv, 4), argv.join(' ')).toBeUndefined()
    }
  })
})

describe("a forked worker's warm socket: its slot's, where it may stay after its run", () => {
  it('is the warm socket of the slot whose log it writes', () => {
    expect(warmSocketOfLog('/home/u/.forge/logs/worker-0.log')).toBe(warmSocketPath('/home/u/.forge', 0))
    expect(warmSocketOfLog('/home/u/.forge/logs/worker-12.log')).toBe('/home/u/.forge/warm/worker-12.sock')
  })

  it('is none for a log of another name or place, or a path too long for a unix socket', () => {
    for (const log of ['/home/u/.forge/logs/ingester.log', '/home/u/.forge/logs/worker-x.log', '/home/u/.forge/other/worker-0.log', `/${'d'.repeat(120)}/logs/worker-0.log`]) {
      expect(warmSocketOfLog(log), log).toBeUndefined()
    }
  })
})
