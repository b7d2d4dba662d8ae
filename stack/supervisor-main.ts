/** Entry point of the stack's detached supervisor process (started by stackUp; stopped by stackDown). */
import { resolveConfig } from '../config/index.js'
import { readStackState } from './local-stack.js'
import { superviseStack } from './supervisor.js'

const config = resolveConfig()
const line = (text: string): void => console.log(`${new Date().toISOString()} ${text}`)
const supervisor = superviseStack(config, {
  log: line,
  // a newer supervisor took over, or the stack was taken down: this one ends
  keepGoing: () => readStackState(config.home).supervisor?.pid === process.pid,
})
line(`supervising the stack under ${config.home} (pid ${process.pid})`)
const stop = (): void => void supervisor.stop().then(() => process.exit(0))
process.once('SIGTERM', stop)
process.once('SIGINT', stop)
// the loop ended by itself (replaced, or the stack is down)
const watch = setInterval(() => {
  if (readStackState(config.home).supervisor?.pid !== process.pid) {
    clearInterval(watch)
    stop()
  }
}, 2_000)
