import { describe, expect, it } from 'vitest'
import { closedWith, TemporalHttpError, TemporalWorkflowEndedError } from '../../stack/temporal-http.js'

const b64 = (text: string): string => Buffer.from(text).toString('base64')

describe('a workflow close event read from the HTTP API', () => {
  it('gives a completed workflow its result from its canonical payload: json/plain as JSON, binary/null as undefined', () => {
    const completed = (payloads?: unknown[]) => closedWith({ eventType: 'EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED', workflowExecutionCompletedEventAttributes: payloads === undefined ? {} : { result: { payloads } } })
    // empty arrays and objects stay what they are (the API's shorthand had made an empty array null)
    const value = { total: 7, missing: [], none: {}, nested: [[], { a: null }] }
    expect(completed([{ metadata: { encoding: b64('json/plain') }, data: b64(JSON.stringify(value)) }])).toEqual({ kind: 'completed', result: value })
    expect(completed([{ metadata: { encoding: b64('binary/null') } }])).toEqual({ kind: 'completed', result: undefined })
    expect(completed([])).toEqual({ kind: 'completed', result: undefined })
    expect(completed()).toEqual({ kind: 'completed', result: undefined })
    expect(() => completed([{ metadata: { encoding: b64('binary/protobuf') }, data: '' }])).toThrow('a workflow result encoded "binary/protobuf", which forge run does not decode')
    expect(() => completed([{ total: 7 }])).toThrow(TemporalHttpError)
  })

  it('names how any other close ended, the root cause of a failure as its message', () => {
    const ended = (event: Parameters<typeof closedWith>[0]) => {
      const closed = closedWith(event)
      if (closed.kind !== 'ended') throw new Error(`not ended: ${closed.kind}`)
      expect(closed.error).toBeInstanceOf(TemporalWorkflowEndedError)
      return { status: closed.error.status, message: closed.error.message, messages: closed.error.messages }
    }
    expect(ended({ eventType: 'EVENT_TYPE_WORKFLOW_EXECUTION_FAILED', workflowExecutionFailedEventAttributes: { failure: { message: 'child failed', cause: { message: 'activity failed', cause: { message: 'no manifest' } } } } })).toEqual({
      status: 'failed',
      message: 'no manifest',
      messages: ['child failed', 'activity failed', 'no manifest'],
    })
    expect(ended({ eventType: 'EVENT_TYPE_WORKFLOW_EXECUTION_FAILED', workflowExecutionFailedEventAttributes: {} })).toMatchObject({ status: 'failed', message: 'Workflow execution failed' })
    expect(ended({ eventType: 'EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED' })).toMatchObject({ status: 'canceled', message: 'Workflow canceled' })
    expect(ended({ eventType: 'EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED', workflowExecutionTerminatedEventAttributes: { reason: 'by hand' } })).toMatchObject({ status: 'terminated', message: 'by hand' })
    expect(ended({ eventType: 'EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED', workflowExecutionTerminatedEventAttributes: {} })).toMatchObject({ status: 'terminated', message: 'Workflow execution terminated' })
    expect(ended({ eventType: 'EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT' })).toMatchObject({ status: 'timed_out', message: 'Workflow execution timed out' })
    expect(ended({ eventType: 'EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW', workflowExecutionContinuedAsNewEventAttributes: {} })).toMatchObject({ status: 'failed', message: 'the workflow continued as new without naming its next run' })
    expect(ended({ eventType: 'EVENT_TYPE_ACTIVITY_TASK_SCHEDULED' })).toMatchObject({ status: 'failed', message: 'unexpected close event EVENT_TYPE_ACTIVITY_TASK_SCHEDULED' })
  })

  it('follows continue-as-new to the run it names', () => {
    expect(closedWith({ eventType: 'EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW', workflowExecutionContinuedAsNewEventAttributes: { newExecutionRunId: 'r2' } })).toEqual({ kind: 'continued', runId: 'r2' })
  })
})
