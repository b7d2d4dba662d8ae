/**
 * The warm CLI's process (stack/warm-cli.ts): loads oclif, its config and the run command's modules,
 * listens on its socket, runs the one `forge run` that connects as that `forge` process would, and
 * exits. Started detached by the run before (`leaveWarmCli`), as
 * `node dist/cli-bundle/warm-cli.js --warm-cli-socket <FORGE_HOME/warm/cli.sock>`.
 */
import { chmodSync, rmSync, writeSync } from 'node:fs'
import { createServer, type Socket } from 'node:net'
import { dirname, join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { readSetting } from '../config/index.js'
import { packageRoot } from '../stack/paths.js'
import { cliBuildStamp, forgetWarmCli, leaveWarmCli, markWarmCliProcess, WARM_CLI_ARG, type StreamTraits, type WarmRunRequest } from '../stack/warm-cli.js'
import { jsonLine, onJsonLines } from '../stack/warm-workers.js'
import { Config, execute } from './oclif.js'

/** how long a client that connected may take to send its command */
const REQUEST_WAIT_MS = 5_000
const SIGNALS: readonly string[] = ['SIGINT', 'SIGTERM', 'SIGHUP']

/** A line in the warm CLI's log (its standard error is the log file until a run takes its streams). */
function say(line: string): void {
  writeSync(2, `${new Date().toISOString()} warm CLI ${process.pid}: ${line}\n`)
}

async function main(): Promise<void> {
  const socketPath = process.argv[process.argv.indexOf(WARM_CLI_ARG) + 1] ?? ''
  const home = dirname(dirname(socketPath))
  // what it runs, as a client compares it: its Node, flags and build as it started
  const stamp = cliBuildStamp()
  markWarmCliProcess()
  process.env['OCLIF_DISABLE_ENGINE_WARNING'] = '1'
  const started = performance.now()
  const config = await Config.load(pathToFileURL(join(packageRoot(), 'bin', 'run.js')).href)
  // what `forge run` loads before its workflow starts, and the report it loads while it runs
  await config.findCommand('run')?.load()
  await import('./hooks/init.js')
  await import('../app/run-report.js')
  const idleMs = readSetting('warmWorkerIdle') * 1000

  let taken = false
  const server = createServer((socket) => {
    // one client only (one that connected as the first did is left to run its command itself); this one leaves the next warm CLI as it exits
    if (taken) return void socket.destroy()
    taken = true
    server.close()
    forgetWarmCli(home)
    clearTimeout(idle)
    serve(socket, config, stamp, home)
  })
  const idle = setTimeout(() => {
    say(`no forge run for ${idleMs / 1000} s; exiting`)
    forgetWarmCli(home)
    process.exit(0)
  }, idleMs)
  // a socket file left by a warm CLI that was killed: this one's pid file names it now
  rmSync(socketPath, { force: true })
  server.listen(socketPath, () => {
    chmodSync(socketPath, 0o600)
    say(`loaded in ${Math.round(performance.now() - started)} ms; waiting for the next forge run on ${socketPath}`)
  })
  server.on('error', (error) => {
    say(`cannot listen on ${socketPath}: ${error.message}; exiting`)
    process.exit(1)
  })
}

/** Serves the one client: its command, then its exit code. */
function serve(socket: Socket, config: Awaited<ReturnType<typeof Config.load>>, stamp: string, home: string): void {
  socket.on('error', () => undefined)
  socket.write(jsonLine({ warmCli: { pid: process.pid, build: stamp } }))
  let running = false
  let finished = false
  const waiting = setTimeout(() => process.exit(0), REQUEST_WAIT_MS)
  const realExit = process.exit.bind(process)
  // the command ends as its process would have: its exit code, or once nothing is left to do
  const finish = (code: unknown): void => {
    if (finished) return
    finished = true
    const exitCode = Number.isInteger(Number(code)) ? Number(code) : 1
    socket.ref()
    socket.end(jsonLine({ exit: exitCode }), () => {
      leaveSuccessor(home)
      realExit(exitCode)
    })
    // a client that stopped reading cannot keep this process
    setTimeout(() => realExit(exitCode), 2_000).unref()
  }
  socket.on('close', () => {
    if (!running) realExit(0)
    // the client went before its command ended: it was killed, and the command goes as it would have with it
    if (!finished) process.kill(process.pid, 'SIGKILL')
  })
  onJsonLines(socket, (message) => {
    if (!running) {
      clearTimeout(waiting)
      const request = message['forgeRun'] as WarmRunRequest | undefined
      if (request === undefined || !validRequest(request)) {
        // told to stop (forge stack down, another build), or not one of ours
        socket.end()
        return
      }
      running = true
      say(`running forge ${request.argv.map((a) => JSON.stringify(a)).join(' ')} in ${request.cwd}`)
      takeProcessOf(request, socket, () => finished)
      process.exit = ((code?: number | string | null) => finish(code ?? process.exitCode ?? 0)) as typeof process.exit
      process.once('beforeExit', () => finish(process.exitCode ?? 0))
      // the connection alone does not keep this process: it ends when the command leaves nothing to do
      socket.unref()
      void execute({ args: request.argv, loadOptions: config })
      return
    }
    const signal = message['signal']
    if (typeof signal === 'string' && SIGNALS.includes(signal)) process.kill(process.pid, signal)
  })
}

/**
 * The command it ran is over: the next `forge run` of this home finds a warm CLI again, whatever this
 * one ran (a dry run, a refused run) — under the client's settings, which it has taken.
 */
function leaveSuccessor(home: string): void {
  try {
    if (readSetting('warmCli') && readSetting('warmWorkers') > 0) leaveWarmCli(home, process.env, { fromWarmCli: true })
  } catch {
    // a setting the command refused, or no way to start one: the next run starts as it always did
  }
}

function validRequest(request: WarmRunRequest): boolean {
  return (
    Array.isArray(request.argv) &&
    request.argv.every((a) => typeof a === 'string') &&
    typeof request.cwd === 'string' &&
    typeof request.env === 'object' &&
    request.env !== null &&
    Object.values(request.env).every((v) => typeof v === 'string')
  )
}

/** Takes the client's environment, working directory, arguments and streams: its standard output and error go over the socket. */
function takeProcessOf(request: WarmRunRequest, socket: Socket, finished: () => boolean): void {
  for (const name of Object.keys(process.env)) if (!(name in request.env)) delete process.env[name]
  Object.assign(process.env, request.env)
  process.chdir(request.cwd)
  process.argv = [process.execPath, join(packageRoot(), 'bin', 'run.js'), ...request.argv]
  const redirect = (stream: NodeJS.WriteStream, key: 'out' | 'err', traits: StreamTraits): void => {
    const write = (chunk: string | Uint8Array, encoding?: BufferEncoding | ((error?: Error | null) => void), callback?: (error?: Error | null) => void): boolean => {
      // after the exit code nothing more is said, as nothing is after a process exits
      if (!finished()) socket.write(jsonLine({ [key]: typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8') }))
      const done = typeof encoding === 'function' ? encoding : callback
      if (done) process.nextTick(done)
      return true
    }
    Object.assign(stream, { write, isTTY: traits.tty, columns: traits.columns })
  }
  redirect(process.stdout, 'out', request.stdout)
  redirect(process.stderr, 'err', request.stderr)
}

await main()
