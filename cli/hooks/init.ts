/**
 * oclif's init hook: runs before the command is loaded. For `forge run` it claims the warm workers
 * earlier runs left (stack/warm-workers.ts) and forks the rest of the run's worker processes, so they
 * load their code while forge run loads its own and plans the run (app/worker-prefork.ts). Only
 * light modules are imported here.
 */
import type { Hook } from '@oclif/core'
import { join } from 'node:path'
import { resolveConfig } from '../../config/index.js'
import { maxLocalWorkerProcesses } from '../../app/worker-pool.js'
import { adoptWarmWorkers, preforkCount, preforkWorkers } from '../../app/worker-prefork.js'

const hook: Hook<'init'> = async function ({ id, argv }) {
  if (id !== 'run') return
  try {
    const config = resolveConfig()
    const count = preforkCount(argv, maxLocalWorkerProcesses())
    if (count === undefined) return
    await adoptWarmWorkers(config.home, count)
    preforkWorkers(count, join(config.home, 'logs'))
  } catch {
    // a setting the command will refuse with a clear message: leave it to the command
  }
}

export default hook
