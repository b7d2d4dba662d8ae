import { describe, expect, it } from 'vitest'
import { preforkCount } from '../../app/worker-prefork.js'

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
