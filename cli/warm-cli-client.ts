/**
 * `forge run` on the warm CLI of its FORGE_HOME (stack/warm-cli.ts): what `bin/run.js` loads, before
 * oclif, when its command is `run`: bundled into one file of its own (`dist/cli-bundle/warm-cli-client.js`,
 * scripts/bundle-cli.mjs) with the few small modules of Forge's it needs and only Node's own beside
 * them (~6 ms to load, against ~10.5 as separate files): when no warm CLI takes the run, the process
 * goes on to start as it always did.
 */
import { rmSync } from 'node:fs'
import { connect } from 'node:net'
import { constants } from 'node:os'
import { earlyHome, earlyWarmCli } from '../config/early.js'
import { cliBuildStamp, warmCliSocketPath, type WarmRunRequest } from '../stack/warm-cli.js'
import { jsonLine, onJsonLines } from '../stack/warm-workers.js'

/** the signals a client hands on to the warm CLI running its command */
const FORWARDED: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP']

/**
 * Runs `forge <argv>` on this FORGE_HOME's warm CLI, its output written here as it comes. Resolves
 * the command's exit code, or undefined when no warm CLI took it (none listens, FORGE_WARM_CLI is
 * off, it runs another build, it did not answer within `helloMs`): the caller runs it itself then.
 */
export function runOnWarmCli(argv: string[], helloMs = 1_000): Promise<number | undefined> {
  if (earlyWarmCli() !== true) return Promise.resolve(undefined)
  const path = warmCliSocketPath(earlyHome())
  return new Promise((settle) => {
    const socket = connect(path)
    let running = false
    let done = false
    let raised: NodeJS.Signals | undefined
    const forward = (signal: NodeJS.Signals): void => {
      raised = signal
      socket.write(jsonLine({ signal }))
    }
    const finish = (code: number | undefined): void => {
      if (done) return
      done = true
      clearTimeout(timer)
      for (const signal of FORWARDED) process.off(signal, forward)
      socket.destroy()
      settle(code)
    }
    // a warm CLI that does not say hello (hung, or busy with another client) leaves the run to this process
    const timer = setTimeout(() => finish(undefined), helloMs)
    socket.on('error', (error: NodeJS.ErrnoException) => {
      // nobody listens: a warm CLI that was killed left its socket file
      if (!running && (error.code === 'ECONNREFUSED' || error.code === 'ECONNRESET')) rmSync(path, { force: true })
    })
    socket.on('close', () => {
      if (!running) return finish(undefined)
      if (done) return
      // it died before it said its exit code: of the signal handed on, as this process would have, else a failure
      const signalled = raised !== undefined ? 128 + constants.signals[raised] : 1
      if (raised === undefined) process.stderr.write('forge: the warm CLI running this command ended without its exit code (FORGE_HOME/logs/cli-warm.log); FORGE_WARM_CLI=0 runs forge run in its own process\n')
      finish(signalled)
    })
    onJsonLines(socket, (message) => {
      if (!running) {
        const hello = message['warmCli'] as { build?: unknown } | undefined
        if (hello === undefined) return finish(undefined)
        if (hello.build !== cliBuildStamp()) {
          // another build, Node, NODE_OPTIONS or CA certificates: it stops, and this process runs the command
          socket.end(jsonLine({ forgeCliStop: true }))
          return finish(undefined)
        }
        running = true
        clearTimeout(timer)
        const request: WarmRunRequest = {
          argv,
          cwd: process.cwd(),
          env: Object.fromEntries(Object.entries(process.env).filter((entry): entry is [string, string] => entry[1] !== undefined)),
          stdout: { tty: process.stdout.isTTY === true, columns: process.stdout.columns },
          stderr: { tty: process.stderr.isTTY === true, columns: process.stderr.columns },
        }
        socket.write(jsonLine({ forgeRun: request }))
        for (const signal of FORWARDED) process.on(signal, forward)
        return
      }
      if (typeof message['out'] === 'string') process.stdout.write(message['out'])
      else if (typeof message['err'] === 'string') process.stderr.write(message['err'])
      else if (typeof message['exit'] === 'number') finish(message['exit'])
    })
  })
}
