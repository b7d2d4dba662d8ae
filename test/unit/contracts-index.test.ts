import { describe, expect, it } from 'vitest'
import * as contracts from '../../core/contracts/index.js'

/**
 * The names core/contracts/index.ts exported when it was one 628-line file (before the split by
 * domain), plus the fault contracts (issue 13) and the attempt message (issue 15). ~110 files import from the index, so it must keep exporting exactly these.
 */
const RUNTIME_NAMES = [
  'AgentTrace',
  'AttemptKey',
  // issue 15: an attempt's one message (result with its stored trace)
  'AttemptMessage',
  'AttemptRegrade',
  'AttemptResult',
  // issue 11: the audit trail's messages
  'AuditEntryMessage',
  'AuditLinkMessage',
  'AuditRecord',
  'BaselineRecord',
  'Budget',
  'BudgetLimit',
  'EnvironmentReport',
  'FAILURE_BUCKETS',
  'FailureBucket',
  'FaultKind',
  'FaultMode',
  'FaultPlan',
  'FaultProfile',
  'FaultRule',
  'FaultTarget',
  'FileFixture',
  'FixtureSpec',
  'Grade',
  'GraderSpec',
  'HttpCondition',
  'HttpFixture',
  'InvariantResult',
  'InvocationPayload',
  'JsonSchemaObject',
  'JudgeOutcome',
  'JudgeSettings',
  'JudgeStamp',
  'Judgement',
  'MetricValue',
  'Outcome',
  'ReviewPacket',
  'ReviewResolution',
  'RunPlan',
  'RunRecord',
  'SequentialRule',
  'Span',
  'SqliteCondition',
  'SqliteFixture',
  'StoredTrace',
  'SuiteManifest',
  'Task',
  'Tier2Result',
  'Tier2Status',
  'TokenUsage',
  'ToolCall',
  'ToolSpec',
  'Validity',
  'WorkspaceCondition',
  'WorkspaceFixture',
]

/**
 * The exported types, checked by the compiler (`npx tsc -p tsconfig.test.json`): a type the index
 * stops exporting makes this tuple fail to typecheck.
 */
export type ExportedTypes = [
  contracts.AgentTrace,
  contracts.AgentTraceInput,
  contracts.AttemptRegrade,
  contracts.AttemptResult,
  contracts.BaselineRecord,
  contracts.Budget,
  contracts.BudgetLimit,
  contracts.EnvironmentFixture,
  contracts.EnvironmentReport,
  contracts.FailureBucket,
  contracts.FaultKind,
  contracts.FaultMode,
  contracts.FaultPlan,
  contracts.FaultProfile,
  contracts.FaultProfileInput,
  contracts.FaultRule,
  contracts.FaultRuleInput,
  contracts.FaultTarget,
  contracts.FileFixture,
  contracts.FixtureSpec,
  contracts.Grade,
  contracts.GraderSpec,
  contracts.HttpCondition,
  contracts.HttpFixture,
  contracts.InvariantResult,
  contracts.InvocationPayload,
  contracts.JudgeOutcome,
  contracts.JudgeSettings,
  contracts.JudgeSettingsInput,
  contracts.JudgeStamp,
  contracts.Judgement,
  contracts.MetricValue,
  contracts.Outcome,
  contracts.ReviewPacket,
  contracts.ReviewResolution,
  contracts.RunPlan,
  contracts.RunRecord,
  contracts.SequentialRule,
  contracts.Span,
  contracts.SqliteCondition,
  contracts.SqliteFixture,
  contracts.StoredTrace,
  contracts.SuiteManifest,
  contracts.Task,
  contracts.TaskFile,
  contracts.Tier2Result,
  contracts.Tier2Status,
  contracts.TokenUsage,
  contracts.ToolCall,
  contracts.ToolSpec,
  contracts.Validity,
  contracts.WorkspaceCondition,
  contracts.WorkspaceFixture,
]

describe('core/contracts index', () => {
  it('re-exports exactly the names the single-file module exported', () => {
    expect(Object.keys(contracts).sort()).toEqual([...RUNTIME_NAMES].sort())
  })

  it('exports every name but the failure-bucket list as a zod schema', () => {
    const notSchemas = RUNTIME_NAMES.filter((name) => {
      const value: unknown = (contracts as Record<string, unknown>)[name]
      return typeof (value as { safeParse?: unknown } | undefined)?.safeParse !== 'function'
    })
    expect(notSchemas).toEqual(['FAILURE_BUCKETS'])
  })
})
