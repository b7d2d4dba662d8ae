import { Flags } from '@oclif/core'
import { exportToOtlp, OtlpExportError, type OtlpExportResult } from '../../app/otlp.js'
import { openReader } from '../../app/store-access.js'
import { newestRunId } from '../../app/compare.js'
import { resolveConfig } from '../../stack/config.js'
import { ConfigError } from '../../stack/errors.js'
import { ForgeCommand } from '../base.js'

export default class OtlpExport extends ForgeCommand {
  static override summary = "Send stored attempts' spans to an OpenTelemetry collector over OTLP/HTTP (JSON), to see agent traces in the tracing tools a team already runs."
  static override description =
    'One trace per attempt (trace id derived from the attempt uid, so a second export sends the same ids): the attempt, environment ' +
    'fixtures, agent, model and tool calls as spans with their timings, tokens, cost, arguments and results (redacted as stored); ' +
    'injected faults and budget refusals as span events; grades, invariants, verdict and tier 2 as events of the grading span. ' +
    'The endpoint defaults to OTEL_EXPORTER_OTLP_ENDPOINT; /v1/traces is appended unless given.'
  static override examples = [
    { description: 'Example (needs an OTLP collector and a stored run; test/integration/otlp-export.test.ts runs it).', command: '<%= config.bin %> otlp-export --run-id r20261130024500-a1b2c3 --endpoint http://127.0.0.1:4318' },
    { description: 'Example (needs an OTLP collector and a stored run; test/integration/otlp-export.test.ts runs it).', command: '<%= config.bin %> otlp-export --attempt-uid r20261130024500-a1b2c3/mock-1a2b3c4d/add/3 --endpoint https://otel.example.com/v1/traces --header "x-api-key=…"' },
    { description: 'Example (needs an OTLP collector and a stored run; test/integration/otlp-export.test.ts runs it).', command: 'OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318 <%= config.bin %> otlp-export --json' },
  ]
  static override flags = {
    'run-id': Flags.string({ char: 'r', summary: 'The run to export (default: the latest).' }),
    'attempt-uid': Flags.string({ char: 'u', summary: 'Export only this attempt.' }),
    endpoint: Flags.string({ char: 'e', summary: 'The collector: base URL (…:4318) or traces URL (…/v1/traces). Default: OTEL_EXPORTER_OTLP_ENDPOINT.' }),
    header: Flags.string({ summary: 'An extra request header, name=value (repeatable).', multiple: true }),
    'service-name': Flags.string({ summary: 'service.name of the exported resource (default forge).' }),
    batch: Flags.integer({ summary: 'Attempts per request (default 100).', min: 1, max: 10_000, default: 100 }),
  }

  async run(): Promise<OtlpExportResult> {
    const { flags } = await this.parse(OtlpExport)
    const endpoint = flags.endpoint ?? process.env['OTEL_EXPORTER_OTLP_ENDPOINT']
    if (!endpoint) throw new ConfigError('name the collector: --endpoint http://host:4318 (or set OTEL_EXPORTER_OTLP_ENDPOINT)')
    if (flags['attempt-uid'] !== undefined && flags['run-id'] !== undefined) throw new ConfigError('give --run-id or --attempt-uid, not both')
    const headers: Record<string, string> = {}
    for (const header of flags.header ?? []) {
      const at = header.indexOf('=')
      if (at <= 0) throw new ConfigError(`--header must be name=value, got "${header}"`)
      headers[header.slice(0, at).trim()] = header.slice(at + 1)
    }
    const reader = await openReader(resolveConfig())
    try {
      const target = flags['attempt-uid'] !== undefined ? { attemptUid: flags['attempt-uid'] } : { runId: flags['run-id'] ?? (await newestRunId(reader)) }
      const result = await exportToOtlp(reader, {
        endpoint,
        headers,
        batch: flags.batch,
        version: this.config.version,
        ...(flags['service-name'] ? { serviceName: flags['service-name'] } : {}),
        ...target,
      })
      if (!this.jsonEnabled()) {
        this.log(`sent ${result.spans} spans of ${result.attempts} attempts to ${result.url} in ${result.requests} request(s)`)
        if (result.rejected_spans > 0) this.warn(`the collector rejected ${result.rejected_spans} spans (partial success)`)
        if (result.missing_traces > 0) this.warn(`${result.missing_traces} attempts have no stored trace and were not sent`)
      }
      return result
    } catch (error) {
      if (!(error instanceof OtlpExportError)) throw error
      if (this.jsonEnabled()) this.logJson({ error: { name: error.name, message: error.message } })
      this.logToStderr(`Error: ${error.message}`)
      return this.exit(1)
    } finally {
      await reader.close()
    }
  }
}
