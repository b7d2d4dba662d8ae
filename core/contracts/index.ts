/**
 * Forge's contracts: every shape that crosses a process, a file or a wire boundary.
 * YAML and JSON come in, these schemas turn them into typed objects; nothing else parses them.
 *
 * One file per domain noun; import from this index (test/unit/contracts-index.test.ts pins its names).
 */
export * from './task.js' // Task, TaskFile, Budget, BudgetLimit, ToolSpec, JsonSchemaObject, GraderSpec, SuiteManifest
export * from './fixture.js' // FixtureSpec and its kinds, EnvironmentFixture, the *Condition unions
export * from './payload.js' // InvocationPayload
export * from './trace.js' // AgentTrace, AgentTraceInput, ToolCall, Span, TokenUsage
export * from './outcome.js' // Outcome, Validity, FailureBucket, FAILURE_BUCKETS
export * from './attempt-key.js' // AttemptKey
export * from './grading.js' // Grade, InvariantResult, JudgeStamp, MetricValue, Tier2*, ReviewPacket, Judgement, JudgeOutcome, AttemptRegrade, ReviewResolution
export * from './result.js' // AttemptResult, EnvironmentReport, StoredTrace
export * from './run.js' // RunPlan, RunRecord, JudgeSettings, JudgeSettingsInput, SequentialRule
export * from './baseline.js' // BaselineRecord
export * from './audit.js' // AuditEntryMessage, AuditLinkMessage, AuditRecord
export * from './faults.js' // FaultKind, FaultTarget, FaultMode, FaultRule, FaultProfile, FaultPlan
