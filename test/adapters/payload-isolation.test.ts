/**
 * Ground truth never reaches an agent: for each out-of-process or module adapter, an agent that
 * dumps everything it can see — environment, argv, working directory and its files, stdin, its
 * payload, the tool list, every request body — shows none of the task's expected values, grader
 * patterns or thresholds, invariants, golden trace, or anything of another task.
 * (The oracle is the one adapter that receives the golden, by design; see oracle.test.ts.)
 */
import { existsSync, readFileSync, readdirSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import type { AgentAdapter, LoadedSuite } from '../../core/plugins.js'
import { httpAdapter } from '../../engine/adapters/http.js'
import { moduleAdapter } from '../../engine/adapters/module.js'
import { subprocessAdapter } from '../../engine/adapters/subprocess.js'
import { loadSuite } from '../../engine/suite-loader.js'
import { makeSuite, removeTempSuites } from '../suites/temp-suite.js'
import { agentPath, attempt } from './helpers.js'
import { json, startService } from './service.js'

/** Everything of the suite an agent must never see, each a string unlikely to occur by chance. */
const SECRETS = {
  expected: 'SENTINEL-EXPECTED-4f2a',
  contains: 'SENTINEL-CONTAINS-5d1c',
  pattern: 'SENTINEL-PATTERN-9b7e',
  numericExpected: '982451653',
  tolerance: '0.000123457',
  invariant: 'sentinel_invariant_3c5e',
  goldenOutput: 'SENTINEL-GOLDEN-OUTPUT-3e8d',
  goldenReport: 'SENTINEL-GOLDEN-REPORT-6a0f',
  goldenArg: 'SENTINEL-GOLDEN-ARG-2c4b',
  otherTaskId: 'zeta_other_task_7e3',
  otherInstruction: 'SENTINEL-OTHER-INSTRUCTION-8d2f',
  otherInput: 'SENTINEL-OTHER-INPUT-1a9c',
  otherExpected: 'SENTINEL-OTHER-EXPECTED-0b6d',
}
/** What the agent is meant to see: proves the dump really captured the payload. */
const VISIBLE = 'visible-input-7c1'

const suiteDir = makeSuite({
  'invariants.mjs': `export const invariants = { always_ok: () => ({ passed: true }), ${SECRETS.invariant}: () => ({ passed: true }) }\n`,
  'tasks/alpha.yaml': `id: alpha
instruction: Echo the message.
input:
  message: ${VISIBLE}
tools: [echo]
disallowed_tools: [shout]
budget: { max_tool_calls: 5, max_retries_per_tool: 1, max_duration_ms: 10000 }
outcome_graders:
  - type: exact
    expected: ${SECRETS.expected}
  - type: contains
    expected: ${SECRETS.contains}
  - type: regex
    pattern: ${SECRETS.pattern}
  - type: numeric
    expected: ${SECRETS.numericExpected}
    tolerance: ${SECRETS.tolerance}
invariants: [${SECRETS.invariant}]
golden: alpha
`,
  'tasks/beta.yaml': `id: ${SECRETS.otherTaskId}
instruction: ${SECRETS.otherInstruction}
input:
  secret: ${SECRETS.otherInput}
tools: [shout]
graders:
  - type: exact
    expected: ${SECRETS.otherExpected}
`,
  'goldens/alpha.json': JSON.stringify({
    output: SECRETS.goldenOutput,
    self_report: SECRETS.goldenReport,
    tool_calls: [{ index: 0, name: 'echo', args: { message: SECRETS.goldenArg }, result: SECRETS.goldenArg, retry_index: 0, started_ms: 0, duration_ms: 1 }],
    duration_ms: 5,
  }),
})
afterAll(() => removeTempSuites())

const suite: LoadedSuite = await loadSuite(suiteDir)
const task = suite.tasks.find((t) => t.id === 'alpha')!

function leaks(haystack: string): string[] {
  return Object.entries(SECRETS)
    .filter(([, secret]) => haystack.includes(secret))
    .map(([name]) => name)
}

async function observe(adapter: AgentAdapter, config: Record<string, unknown>): Promise<string> {
  const { result } = await attempt(adapter, config, suite, task)
  expect(result.error).toBe('')
  return result.output
}

describe('payload isolation', () => {
  it('the secrets are really in the suite (so a leak would show)', () => {
    const files = (dir: string): string[] => readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? files(join(dir, e.name)) : [readFileSync(join(dir, e.name), 'utf8')]))
    expect(leaks(files(suiteDir).join('\n')).sort()).toEqual(Object.keys(SECRETS).sort())
  })

  it.each<[string, { protocol?: string }]>([
    ['stdio', {}],
    ['http', { protocol: 'http' }],
  ])('subprocess (%s): environment, argv, working directory, stdin and tool list carry no ground truth', async (_label, extra) => {
    const dumped = await observe(subprocessAdapter, { command: ['node', agentPath('dump-everything.mjs')], ...extra })
    expect(dumped).toContain(VISIBLE)
    expect(leaks(dumped)).toEqual([])
    const dump = JSON.parse(dumped) as { env: Record<string, string>; stdin: { payload: Record<string, unknown> }; files: Record<string, unknown>; cwd: string }
    expect(Object.keys(dump.stdin.payload).sort()).toEqual(['budget', 'disallowed_tools', 'input', 'instruction', 'tools'])
    const allowedEnv = ['PATH', 'HOME', 'LANG', 'TMPDIR', ...(extra.protocol === 'http' ? ['FORGE_TOOL_URL', 'FORGE_TOOL_TOKEN'] : [])]
    expect(Object.keys(dump.env).filter((k) => !allowedEnv.includes(k))).toEqual([])
    // a fresh empty directory (the sandbox's own tmpfs), not the worker's (which may hold the suite): no file,
    // and no directory but those on the way to the agent's own code when a checkout lies under /tmp (its mountpoint)
    const agentDir = relative('/tmp', dirname(agentPath('dump-everything.mjs')))
    const entries = (tree: Record<string, unknown>, prefix = ''): string[] =>
      Object.entries(tree).flatMap(([name, value]) => (typeof value === 'object' && value !== null ? [`${prefix}${name}/`, ...entries(value as Record<string, unknown>, `${prefix}${name}/`)] : [`${prefix}${name}`]))
    expect(entries(dump.files).filter((entry) => !`${agentDir}/`.startsWith(entry))).toEqual([])
    expect(dump.cwd).toBe('/tmp')
  })

  it('subprocess without the sandbox: a fresh working directory, removed after the attempt', async () => {
    const dumped = await observe(subprocessAdapter, { command: ['node', agentPath('dump-everything.mjs')], sandbox: false })
    expect(leaks(dumped)).toEqual([])
    const dump = JSON.parse(dumped) as { files: Record<string, unknown>; cwd: string }
    expect(dump.files).toEqual({})
    expect(dump.cwd).not.toBe(process.cwd())
    // removed after the attempt, so nothing carries over to the next one
    expect(existsSync(dump.cwd)).toBe(false)
  })

  it('module: the payload, tools, context and process the agent sees carry no ground truth', async () => {
    const dumped = await observe(moduleAdapter, { path: agentPath('dump-module.mjs') })
    expect(dumped).toContain(VISIBLE)
    expect(leaks(dumped)).toEqual([])
    const dump = JSON.parse(dumped) as { payload: Record<string, unknown>; toolsKeys: string[]; contextKeys: string[] }
    expect(Object.keys(dump.payload).sort()).toEqual(['budget', 'disallowed_tools', 'input', 'instruction', 'tools'])
    expect(dump.toolsKeys.sort()).toEqual(['call', 'specs'])
    expect(dump.contextKeys.sort()).toEqual(['llm', 'seed', 'signal'])
  })

  it('http: the reset and invoke requests and the tool list carry no ground truth', async () => {
    let listed: unknown
    const svc = await startService({
      'POST /reset': (_req, res) => json(res, 200, {}),
      'POST /invoke': async (req, res) => {
        const { tools } = req.body as { tools: { url: string; token: string } }
        listed = await (await fetch(tools.url, { headers: { authorization: `Bearer ${tools.token}` } })).json()
        json(res, 200, { output: 'done' })
      },
    })
    try {
      await observe(httpAdapter, { base_url: svc.url })
      const seen = JSON.stringify({ requests: svc.requests, listed })
      expect(seen).toContain(VISIBLE)
      expect(leaks(seen)).toEqual([])
      expect(Object.keys((svc.requests[1]!.body as { payload: object }).payload).sort()).toEqual(['budget', 'disallowed_tools', 'input', 'instruction', 'tools'])
    } finally {
      await svc.close()
    }
  })
})
