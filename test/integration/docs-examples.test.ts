/**
 * Every README example and every command's `--help` example, run as a user would run it, against one
 * real embedded stack (Temporal dev server, nats-server, ingester + chDB), from a scratch project
 * directory that holds `bin/`, `suites/`, `prices/` (links) and a copy of `examples/`, with `forge` on
 * PATH. What an example shows as its output is asserted; what it cannot do here is marked where the
 * example is written and listed at the end.
 *
 * README conventions (read by this test):
 * - ```sh / ```bash / ```shell / ```console blocks that invoke `./bin/run.js`, `forge` or `npx forge` run;
 *   a block whose lines are all forge commands runs command by command, any other one as one script.
 * - `#   text` (two or more spaces) right under a command is its output: every line must appear, in
 *   order and adjacent; `…` inside a line matches anything, a `...` line skips any number of lines.
 *   A `# text` comment (one space) is prose.
 * - A command's trailing comment `… exits N …` sets the exit code it must end with (default 0).
 * - `<!-- example: not-run (why) -->` right above a block skips it, saying why;
 *   `<!-- example: exits N -->` sets the exit code of a script block;
 *   `<!-- file: path -->` right above a block says the block is that file, whole.
 * - Placeholders get values from the store: `<run-id>` the newest run, `<other-run-id>` and
 *   `<baseline-run-id>` the run before it, `<attempt-uid>` the oldest open review flag.
 * --help examples: `<%= config.bin %>` becomes `forge`; an example in object form whose description
 * says `(needs …)` is not run; commands that serve until stopped (worker) must print their ready line
 * and exit 0 on Ctrl-C.
 */
import { spawn, spawnSync } from 'node:child_process'
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, relative } from 'node:path'
import { pathToFileURL } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { packageRoot } from '../../stack/paths.js'
import { startTestStack, type TestStack } from '../helpers/stack.js'

const root = packageRoot()
const COMMAND_TIMEOUT_MS = 110_000

// ---------------------------------------------------------------------------------------------
// README parsing

type Marker = { kind: 'not-run'; reason: string } | { kind: 'exits'; code: number } | { kind: 'file'; path: string }

interface Block {
  /** 1-based line of the opening fence */
  line: number
  lang: string
  lines: string[]
  marker: Marker | undefined
}

interface ShellCommand {
  line: number
  text: string
  shown: string[]
  exit: number
}

const SHELL_LANGS = new Set(['sh', 'bash', 'shell', 'console'])
const FORGE_INVOCATION = /^(?:[A-Z_][A-Z0-9_]*=\S*\s+)*(?:\.\/bin\/run\.js|npx forge|forge)(?:\s|$)/
const FORGE_ANYWHERE = /(?:^|[\s;&|(])(?:\.\/bin\/run\.js|npx forge|forge)\s/

function parseMarker(text: string, where: string): Marker {
  const body = /^<!--\s*(example|file):\s*(.*?)\s*-->$/.exec(text)
  if (!body) throw new Error(`${where}: unreadable marker ${text}`)
  if (body[1] === 'file') return { kind: 'file', path: body[2]! }
  const notRun = /^not-run \((.+)\)$/.exec(body[2]!)
  if (notRun) return { kind: 'not-run', reason: notRun[1]! }
  const exits = /^exits (\d+)$/.exec(body[2]!)
  if (exits) return { kind: 'exits', code: Number(exits[1]) }
  throw new Error(`${where}: unknown example marker "${body[2]}" (use not-run (why) or exits N)`)
}

function readmeBlocks(markdown: string): Block[] {
  const lines = markdown.split('\n')
  const blocks: Block[] = []
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\w*)\s*$/.exec(lines[i]!)
    if (!open) continue
    let end = i + 1
    while (end < lines.length && !/^```\s*$/.test(lines[end]!)) end++
    let above = i - 1
    while (above >= 0 && lines[above]!.trim() === '') above--
    const markerText = above >= 0 && lines[above]!.startsWith('<!--') ? lines[above]!.trim() : undefined
    const marker = markerText === undefined ? undefined : parseMarker(markerText, `README.md:${above + 1}`)
    blocks.push({ line: i + 1, lang: open[1]!, lines: lines.slice(i + 1, end), marker })
    i = end
  }
  return blocks
}

/** Whether a line leaves a quote open (so the command goes on), by a small shell-quoting scan. */
function scanQuotes(text: string): { open: boolean; commentAt: number } {
  let quote: '"' | "'" | undefined
  for (let i = 0; i < text.length; i++) {
    const c = text[i]
    if (quote === "'") {
      if (c === "'") quote = undefined
    } else if (quote === '"') {
      if (c === '\\') i++
      else if (c === '"') quote = undefined
    } else if (c === '\\') i++
    else if (c === "'" || c === '"') quote = c
    else if (c === '#' && (i === 0 || /\s/.test(text[i - 1]!))) return { open: false, commentAt: i }
  }
  return { open: quote !== undefined, commentAt: -1 }
}

/** Splits a shell block into commands (backslash continuations and open quotes joined) with their shown output. */
function shellCommands(block: Block): ShellCommand[] {
  const commands: ShellCommand[] = []
  let current: ShellCommand | undefined
  let pending: { line: number; text: string } | undefined
  for (const [offset, raw] of block.lines.entries()) {
    const lineNo = block.line + 1 + offset
    if (pending) {
      pending.text += `\n${raw}`
    } else if (block.lang === 'console') {
      if (!raw.startsWith('$ ')) {
        if (current) current.shown.push(raw.trim())
        continue
      }
      pending = { line: lineNo, text: raw.slice(2) }
    } else if (raw.trim() === '') {
      current = undefined
      continue
    } else if (raw.startsWith('#')) {
      if (current && /^#(\s{2,}.*)?$/.test(raw)) current.shown.push(raw.slice(1).trim())
      else current = undefined
      continue
    } else {
      pending = { line: lineNo, text: raw }
    }
    const scan = scanQuotes(pending.text)
    if (scan.open || (scan.commentAt < 0 && pending.text.endsWith('\\'))) continue
    const comment = scan.commentAt < 0 ? '' : pending.text.slice(scan.commentAt)
    const exits = /\bexits (\d+)\b/.exec(comment)
    current = { line: pending.line, text: pending.text, shown: [], exit: exits ? Number(exits[1]) : 0 }
    commands.push(current)
    pending = undefined
  }
  if (pending) throw new Error(`README.md:${pending.line}: a command never ends (an open quote or a trailing backslash)`)
  return commands
}

interface ReadmeExample {
  name: string
  block: Block
  /** per-command run; undefined for a script block */
  commands: ShellCommand[]
  script: boolean
}

const readme = readFileSync(join(root, 'README.md'), 'utf8')
const blocks = readmeBlocks(readme)
const forgeBlocks = blocks.filter(
  (b) => SHELL_LANGS.has(b.lang) && b.lines.some((l) => !l.startsWith('#') && FORGE_ANYWHERE.test(` ${b.lang === 'console' ? l.replace(/^\$ /, '') : l}`)),
)
const readmeExamples: ReadmeExample[] = forgeBlocks.map((block) => {
  const commands = shellCommands(block)
  const script = commands.some((c) => !FORGE_INVOCATION.test(c.text))
  return { name: `README.md:${block.line}`, block, commands, script }
})
const readmeNotRun = readmeExamples.filter((e) => e.block.marker?.kind === 'not-run')
const fileBlocks = blocks.filter((b): b is Block & { marker: { kind: 'file'; path: string } } => b.marker?.kind === 'file')

// ---------------------------------------------------------------------------------------------
// --help examples, from the built command classes

interface HelpExample {
  commandId: string
  command: string
  description: string | undefined
}

function jsFiles(dir: string): string[] {
  return readdirSync(dir)
    .sort()
    .flatMap((name) => {
      const path = join(dir, name)
      if (statSync(path).isDirectory()) return jsFiles(path)
      return name.endsWith('.js') ? [path] : []
    })
}

const commandsDir = join(root, 'dist', 'cli', 'commands')
const commandClasses: { id: string; examples: unknown[] }[] = []
for (const file of jsFiles(commandsDir)) {
  const id = relative(commandsDir, file).replace(/\.js$/, '').replace(/\/index$/, '').split('/').join(' ')
  const loaded = (await import(pathToFileURL(file).href)) as { default?: { examples?: unknown[] } }
  if (loaded.default === undefined) continue
  commandClasses.push({ id, examples: loaded.default.examples ?? [] })
}
const commandIds = commandClasses.map((c) => c.id).sort((a, b) => b.length - a.length)
const helpExamples: HelpExample[] = commandClasses.flatMap(({ id, examples }) =>
  examples.map((example) => {
    const { command, description } = typeof example === 'string' ? { command: example, description: undefined } : (example as { command: string; description?: string })
    return { commandId: id, command: command.replaceAll('<%= config.bin %>', 'forge'), description }
  }),
)
const helpNeeds = (e: HelpExample): string | undefined => (e.description === undefined ? undefined : /\((needs [^)]+)\)/.exec(e.description)?.[1])

// ---------------------------------------------------------------------------------------------
// running

let stack: TestStack
let project: string
let pathDir: string
const notRun: string[] = []

beforeAll(async () => {
  stack = await startTestStack('docs')
  // a user's project: Forge's bin, bundled suites and price table next to their own files, under git
  project = mkdtempSync(join(tmpdir(), 'forge-docs-project-'))
  for (const name of ['bin', 'suites', 'prices']) symlinkSync(join(root, name), join(project, name))
  cpSync(join(root, 'examples'), join(project, 'examples'), { recursive: true })
  const git = spawnSync('sh', ['-c', 'git init -q && git -c user.name=docs -c user.email=docs@example.invalid commit -q --allow-empty -m init'], { cwd: project, encoding: 'utf8' })
  expect(git.status, git.stderr).toBe(0)
  // what `npm link` gives a user: forge on PATH
  pathDir = join(project, '.path')
  mkdirSync(pathDir)
  symlinkSync(join(root, 'bin', 'run.js'), join(pathDir, 'forge'))
})

afterAll(async () => {
  await stack?.down()
  if (project) rmSync(project, { recursive: true, force: true })
  if (notRun.length > 0) console.log(`${notRun.length} example(s) not run here:\n${notRun.map((n) => `  - ${n}`).join('\n')}`)
})

function shellEnv(): NodeJS.ProcessEnv {
  return { ...stack.env, PATH: `${pathDir}:${process.env.PATH ?? ''}` }
}

interface Outcome {
  status: number
  stdout: string
  stderr: string
}

function sh(text: string): Outcome {
  const r = spawnSync('bash', ['-c', text], { cwd: project, env: shellEnv(), encoding: 'utf8', timeout: COMMAND_TIMEOUT_MS })
  return { status: r.status ?? -1, stdout: r.stdout, stderr: r.stderr }
}

function forgeJson<T>(args: string): T {
  const r = sh(`forge ${args} --json`)
  if (r.status !== 0) throw new Error(`forge ${args} --json exited ${r.status}: ${r.stderr}`)
  return JSON.parse(r.stdout) as T
}

/** Fills `<run-id>`-style placeholders from what the store holds now; an unknown one is an error. */
function fillPlaceholders(text: string): string {
  const wanted = new Set([...text.matchAll(/<([a-z][a-z-]*)>/g)].map((m) => m[1]!))
  if (wanted.size === 0) return text
  const runs = forgeJson<{ run_id: string }[]>('runs list --limit 2')
  const values: Record<string, () => string> = {
    'run-id': () => runs[0]?.run_id ?? fail('<run-id>: no run is stored yet'),
    'other-run-id': () => runs[1]?.run_id ?? fail('<other-run-id>: fewer than two runs are stored'),
    'baseline-run-id': () => runs[1]?.run_id ?? fail('<baseline-run-id>: fewer than two runs are stored'),
    'attempt-uid': () => forgeJson<{ attempt_uid: string }[]>('review list --state open --limit 1')[0]?.attempt_uid ?? fail('<attempt-uid>: no open review flag'),
  }
  let filled = text
  for (const name of wanted) {
    const value = values[name]
    if (value === undefined) throw new Error(`unknown placeholder <${name}> in: ${text} (known: ${Object.keys(values).map((k) => `<${k}>`).join(', ')})`)
    filled = filled.replaceAll(`<${name}>`, value())
  }
  return filled
}

function fail(message: string): never {
  throw new Error(message)
}

/** Where the shown lines are not in the output (in order, adjacent, `...` skipping), a message saying which; else undefined. */
function shownMismatch(stdout: string, shown: readonly string[]): string | undefined {
  if (shown.length === 0) return undefined
  const out = stdout.split('\n').map((l) => l.trim())
  const segments: string[][] = [[]]
  for (const line of shown) {
    if (line === '...') segments.push([])
    else segments[segments.length - 1]!.push(line)
  }
  const matcher = (line: string): RegExp => new RegExp(`^${line.split('…').map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('.*')}$`)
  let from = 0
  for (const segment of segments.filter((s) => s.length > 0)) {
    const patterns = segment.map(matcher)
    let at = -1
    for (let i = from; i + patterns.length <= out.length && at < 0; i++) {
      if (patterns.every((p, j) => p.test(out[i + j]!))) at = i
    }
    if (at < 0) return `these shown lines are not in the output (in this order, adjacent):\n${segment.join('\n')}`
    from = at + patterns.length
  }
  return undefined
}

function expectRan(label: string, r: Outcome, exit: number, shown: readonly string[] = []): void {
  const context = `${label}\n--- exit ${r.status}\n--- stdout\n${r.stdout}\n--- stderr\n${r.stderr}`
  expect(r.status, context).toBe(exit)
  expect(shownMismatch(r.stdout, shown), context).toBeUndefined()
}

/** Which command an invocation runs: the longest known command id after `forge`. */
function commandIdOf(text: string): string | undefined {
  const words = text
    .replace(/^(?:[A-Z_][A-Z0-9_]*=\S*\s+)*(?:\.\/bin\/run\.js|npx forge|forge)\s+/, '')
    .split(/\s+/)
    .join(' ')
  return commandIds.find((id) => words === id || words.startsWith(`${id} `))
}

// commands that serve until stopped, with the line they write once their Ctrl-C handler is in place:
// the worker's and ingester's log line (info level, stderr; their "Ctrl-C to stop" line on stdout comes
// before it), the UI's address (stdout, after its handler; it waited out the command timeout before)
const SERVERS: Record<string, RegExp> = { worker: /"msg":"worker ready"/, ingester: /"msg":"ingester ready"/, ui: /forge ui: http|"url":"http/ }

/** Starts a serving command, waits for its ready line, stops it with Ctrl-C (SIGINT) and returns how it ended. */
async function serveThenStop(text: string, ready: RegExp): Promise<Outcome & { ready: boolean }> {
  const env = { ...shellEnv(), FORGE_LOG_LEVEL: 'info' }
  const child = spawn('bash', ['-c', `exec ${text}`], { cwd: project, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  let seen = false
  const exited = new Promise<number>((resolve) => child.on('exit', (code, signal) => resolve(code ?? (signal ? -1 : 0))))
  await new Promise<void>((resolve) => {
    const guard = setTimeout(resolve, COMMAND_TIMEOUT_MS)
    const check = (): void => {
      if (!seen && (ready.test(stderr) || ready.test(stdout))) {
        seen = true
        clearTimeout(guard)
        resolve()
      }
    }
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString()
      check()
    })
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString()
      check()
    })
    void exited.then(() => {
      clearTimeout(guard)
      resolve()
    })
  })
  if (child.exitCode === null && child.pid !== undefined) process.kill(-child.pid, 'SIGINT')
  const status = await exited
  return { status, stdout, stderr, ready: seen }
}

async function runCommand(label: string, text: string, exit: number, shown: readonly string[]): Promise<void> {
  const filled = fillPlaceholders(text.replace(/\bnpx forge\b/g, 'forge'))
  const id = commandIdOf(filled)
  const ready = id === undefined ? undefined : SERVERS[id]
  if (ready) {
    const r = await serveThenStop(filled, ready)
    expect(r.ready, `${label}: never printed its ready line ${ready}\n${r.stdout}\n${r.stderr}`).toBe(true)
    expectRan(`${label} (stopped with Ctrl-C)`, r, 0)
    return
  }
  expectRan(`${label}\n$ ${filled}`, sh(filled), exit, shown)
}

// ---------------------------------------------------------------------------------------------
// the tests: --help examples first, on a store holding only the runs made for them, then the README
// as one session from top to bottom

describe('the shown-output rule', () => {
  it('wants every shown line, in order and adjacent; … matches within a line, ... skips lines', () => {
    const out = 'starting\nrun r1-abc: 5 tasks\n  [1/5] a: 3/3\n  [2/5] b: 2/3\ntask  k/n\na     3/3\nsuite 90.0%\n'
    expect(shownMismatch(out, ['run r…: 5 tasks', '...', 'task  k/n', 'a     3/3', '...', 'suite 90.0%'])).toBeUndefined()
    expect(shownMismatch(out, ['task  k/n', 'suite 90.0%'])).toMatch(/not in the output/)
    expect(shownMismatch(out, ['suite 90.0%', '...', 'task  k/n'])).toMatch(/not in the output/)
    expect(shownMismatch(out, ['suite 91.0%'])).toMatch(/suite 91\.0%/)
  })

  it('splits a block into commands: continuations, open quotes, shown output, exits N, prose comments', () => {
    const block: Block = {
      line: 1,
      lang: 'sh',
      marker: undefined,
      lines: [
        '# prose',
        './bin/run.js sql "SELECT 1',
        '   AS one"   # exits 0',
        '#   one',
        '#   ...',
        './bin/run.js run \\',
        "  --adapter-config '{\"a\": \"#x\"}'   # exits 6: a regression",
        '# prose again',
      ],
    }
    expect(shellCommands(block)).toEqual([
      { line: 3, text: './bin/run.js sql "SELECT 1\n   AS one"   # exits 0', shown: ['one', '...'], exit: 0 },
      { line: 7, text: "./bin/run.js run \\\n  --adapter-config '{\"a\": \"#x\"}'   # exits 6: a regression", shown: [], exit: 6 },
    ])
  })
})

describe('every --help example runs', () => {
  it('finds the built commands, each with examples', () => {
    expect(commandClasses.length).toBeGreaterThan(10)
    expect(commandClasses.filter((c) => c.examples.length === 0).map((c) => c.id)).toEqual([])
  })

  it('stores two identical seeded runs the examples can name', () => {
    for (let i = 0; i < 2; i++) expectRan('seeded run', sh('forge run --suite smoke --attempts 3 --seed docs-help'), 0)
  })

  for (const example of helpExamples) {
    const needs = helpNeeds(example)
    const label = `forge ${example.commandId}: ${example.command}`
    if (needs !== undefined) {
      notRun.push(`${label} (${needs})`)
      it.skip(`${label} — not run: ${needs}`, () => {})
      continue
    }
    it(label, async () => {
      expect(commandIdOf(example.command), 'the example runs the command it documents').toBe(example.commandId)
      await runCommand(label, example.command, 0, [])
    })
  }
})

describe('every README example runs', () => {
  it('reads the README: forge blocks, markers only above forge blocks, a reason for each not-run', () => {
    expect(readmeExamples.filter((e) => e.block.marker?.kind !== 'not-run').flatMap((e) => e.commands).length).toBeGreaterThan(30)
    const stray = blocks.filter((b) => (b.marker?.kind === 'not-run' || b.marker?.kind === 'exits') && !forgeBlocks.includes(b))
    expect(stray.map((b) => `README.md:${b.line}`)).toEqual([])
    const exitsOnCommandBlocks = readmeExamples.filter((e) => e.block.marker?.kind === 'exits' && !e.script)
    expect(exitsOnCommandBlocks.map((e) => e.name), 'exits N markers are for script blocks; a command says "exits N" in its comment').toEqual([])
  })

  it('shows the worked example whole: every file of examples/my-suite, byte for byte', () => {
    const suiteDir = join(root, 'examples', 'my-suite')
    const files = listFiles(suiteDir).map((f) => `examples/my-suite/${f}`)
    const shownFiles = fileBlocks.map((b) => b.marker.path)
    expect(shownFiles.filter((p) => p.startsWith('examples/my-suite/')).sort()).toEqual(files.sort())
    for (const block of fileBlocks) {
      expect(`${block.lines.join('\n')}\n`, `README.md:${block.line} shows ${block.marker.path}`).toBe(readFileSync(join(root, block.marker.path), 'utf8'))
    }
  })

  for (const example of readmeExamples) {
    const marker = example.block.marker
    const first = example.commands[0]?.text.split('\n')[0] ?? ''
    if (marker?.kind === 'not-run') {
      notRun.push(`${example.name}: ${first} (${marker.reason})`)
      it.skip(`${example.name}: ${first} — not run: ${marker.reason}`, () => {})
      continue
    }
    if (example.script) {
      it(`${example.name} (script): ${first}`, () => {
        const text = fillPlaceholders(example.block.lines.join('\n').replace(/\bnpx forge\b/g, 'forge'))
        expectRan(`${example.name} (script)\n${text}`, sh(text), marker?.kind === 'exits' ? marker.code : 0)
      })
      continue
    }
    for (const command of example.commands) {
      it(`README.md:${command.line}: ${command.text.split('\n')[0]}`, async () => {
        await runCommand(`README.md:${command.line}`, command.text, command.exit, command.shown)
      })
    }
  }

  it('the CI snippet says "regressed" only on exit 6: a compare that could not run (exit 2) fails the job as itself', () => {
    const ci = readmeExamples.find((e) => e.script && e.block.lines.some((l) => l.includes('regressed')))
    expect(ci, 'the README has a CI snippet that echoes "regressed"').toBeDefined()
    const text = ci!.block.lines.join('\n').replace('--baseline main', '--baseline no-such-baseline')
    expect(text).toContain('no-such-baseline')
    const r = sh(text)
    expect(r.status, r.stderr).toBe(2)
    expect(r.stdout).not.toMatch(/regressed/)
  })
})

function listFiles(dir: string, prefix = ''): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    return statSync(path).isDirectory() ? listFiles(path, `${prefix}${name}/`) : [`${prefix}${name}`]
  })
}
