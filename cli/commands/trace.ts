import { Flags } from '@oclif/core'
import { mkdirSync, writeFileSync } from 'node:fs'
import { dirname, extname, resolve } from 'node:path'
import { openReader } from '../../app/store-access.js'
import { getTraceView, type TraceRequest } from '../../app/trace.js'
import { renderTrace } from '../../app/render/trace-html.js'
import { traceLines } from '../../app/render/trace-text.js'
import type { TraceView } from '../../core/span-tree.js'
import { resolveConfig } from '../../stack/config.js'
import { ConfigError } from '../../stack/errors.js'
import { ForgeCommand } from '../base.js'

export default class Trace extends ForgeCommand {
  static override summary = "Show one attempt's span tree: in the terminal (indented by span depth), or as a self-contained HTML page with --out."
  static override description =
    'The tree runs attempt → environment seed/verify → agent → model calls and tool calls → grading → restore, with timings, ' +
    'tokens, cost, arguments and results (redacted as stored), injected faults and budget refusals marked, the grader verdicts, ' +
    'the failure bucket and tier-2 localisation. Name the attempt by --attempt-uid, or by --run-id, --task and --attempt.'
  static override examples = [
    { description: 'Example (needs a stored run of a suite with task add; test/integration/report-cli.test.ts runs forge trace).', command: '<%= config.bin %> trace --run-id r20261130024500-a1b2c3 --task add --attempt 3' },
    { description: 'Example (needs a stored run of a suite with task add; test/integration/report-cli.test.ts runs forge trace).', command: '<%= config.bin %> trace --run-id r20261130024500-a1b2c3 --task add --attempt 3 --out trace.html' },
    { description: 'Example (needs a stored run of a suite with task add; test/integration/report-cli.test.ts runs forge trace).', command: '<%= config.bin %> trace --attempt-uid r20261130024500-a1b2c3/mock-1a2b3c4d/add/3 --full' },
    { description: 'Example (needs a stored run of a suite with task add; test/integration/report-cli.test.ts runs forge trace).', command: '<%= config.bin %> trace --run-id r20261130024500-a1b2c3 --task add --attempt 0 --json' },
  ]
  static override flags = {
    'run-id': Flags.string({ char: 'r', summary: 'The run the attempt belongs to.' }),
    task: Flags.string({ char: 't', summary: 'The task id.' }),
    attempt: Flags.integer({ char: 'n', summary: 'The attempt number (from 0).', min: 0 }),
    'attempt-uid': Flags.string({ char: 'u', summary: 'The attempt uid (run_id/config_id/task_id/attempt), instead of --run-id, --task and --attempt.' }),
    out: Flags.string({ char: 'o', summary: 'Write a self-contained HTML page here instead of printing.' }),
    full: Flags.boolean({ summary: 'Print arguments and results whole (default: one line each).' }),
  }

  async run(): Promise<TraceView | { out: string; bytes: number; attempt_uid: string }> {
    const { flags } = await this.parse(Trace)
    const request = traceRequest(flags)
    if (flags.out !== undefined && !['.html', '.htm'].includes(extname(flags.out).toLowerCase())) throw new ConfigError(`--out must name an .html file, got "${flags.out}"`)
    const reader = await openReader(resolveConfig())
    let view: TraceView
    try {
      view = await getTraceView(reader, request)
    } finally {
      await reader.close()
    }
    if (flags.out !== undefined) {
      const out = resolve(flags.out)
      const html = renderTrace(view)
      mkdirSync(dirname(out), { recursive: true })
      writeFileSync(out, html)
      if (!this.jsonEnabled()) this.log(`trace of ${view.attempt_uid} (${view.nodes} nodes): ${out}`)
      return { out, bytes: Buffer.byteLength(html), attempt_uid: view.attempt_uid }
    }
    if (!this.jsonEnabled()) for (const line of traceLines(view, { full: flags.full, width: process.stdout.columns || 160 })) this.log(line)
    return view
  }
}

function traceRequest(flags: { 'run-id'?: string | undefined; task?: string | undefined; attempt?: number | undefined; 'attempt-uid'?: string | undefined }): TraceRequest {
  if (flags['attempt-uid'] !== undefined) {
    const extra = (['run-id', 'task', 'attempt'] as const).filter((f) => flags[f] !== undefined)
    if (extra.length > 0) throw new ConfigError(`--attempt-uid names the attempt already: drop ${extra.map((f) => `--${f}`).join(', ')}`)
    return { attemptUid: flags['attempt-uid'] }
  }
  const missing = (['run-id', 'task', 'attempt'] as const).filter((f) => flags[f] === undefined)
  if (missing.length > 0) throw new ConfigError(`name the attempt: --attempt-uid, or --run-id, --task and --attempt (missing ${missing.map((f) => `--${f}`).join(', ')})`)
  return { runId: flags['run-id']!, taskId: flags.task!, attempt: flags.attempt! }
}
