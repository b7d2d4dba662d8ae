/**
 * The `langgraph` adapter: a LangGraph JS graph — an `agent` node (a LangChain OpenAI chat model
 * with the allowlisted tools bound) and a `tools` node that calls them through ctx.tools — built
 * anew for every attempt and compiled without a checkpointer, so no state survives an attempt.
 * The model is reached through the attempt's LLM gateway (chat completions, not streamed).
 * LangChain is imported on first use, so workers that never run this adapter never load it.
 */
import type { AIMessage, BaseMessage } from '@langchain/core/messages'
import type { InvocationPayload } from '../../core/contracts/index.js'
import type { AdapterContext, AdapterOutput, AgentAdapter } from '../../core/plugins.js'
import {
  decodingFor,
  errorMessage,
  openAiTools,
  parseModelConfig,
  parseToolArguments,
  systemPrompt,
  toolResultContent,
  userPrompt,
} from './model-config.js'

export const langgraphAdapter: AgentAdapter = {
  name: 'langgraph',
  async invoke(payload: InvocationPayload, ctx: AdapterContext): Promise<AdapterOutput> {
    const config = parseModelConfig('langgraph', ctx.config)
    const decoding = decodingFor(config, ctx.seed)
    const endpoint = await ctx.llm()
    const [{ StateGraph, MessagesAnnotation, START, END, GraphRecursionError }, { ChatOpenAICompletions }, messages] = await Promise.all([
      import('@langchain/langgraph'),
      import('@langchain/openai'),
      import('@langchain/core/messages'),
    ])

    const { seed, max_tokens: maxTokens, top_p: topP, stop, ...sampling } = decoding
    const chat = new ChatOpenAICompletions({
      model: config.model,
      apiKey: endpoint.apiKey,
      configuration: { baseURL: endpoint.baseURL },
      // a retry is the agent's decision, and the harness's budget counts every call
      maxRetries: 0,
      timeout: ctx.budget.max_duration_ms,
      ...sampling,
      ...(topP !== undefined ? { topP } : {}),
      ...(maxTokens !== undefined ? { maxTokens } : {}),
      ...(stop !== undefined ? { stop: typeof stop === 'string' ? [stop] : stop } : {}),
      ...(seed !== undefined ? { modelKwargs: { seed } } : {}),
    })
    const tools = openAiTools(payload.tools)
    const model = tools.length > 0 ? chat.bindTools(tools) : chat

    const lastAi = (state: { messages: BaseMessage[] }): AIMessage | undefined => {
      const last = state.messages[state.messages.length - 1]
      return last !== undefined && messages.isAIMessage(last) ? last : undefined
    }
    const wantsTools = (message: AIMessage | undefined): boolean =>
      (message?.tool_calls?.length ?? 0) > 0 || (message?.invalid_tool_calls?.length ?? 0) > 0

    // a new graph per attempt, compiled without a checkpointer: nothing is saved or reused
    const graph = new StateGraph(MessagesAnnotation)
      .addNode('agent', async (state) => ({ messages: [await model.invoke(state.messages, { signal: ctx.signal })] }))
      .addNode('tools', async (state) => {
        const message = lastAi(state)
        const results: BaseMessage[] = []
        for (const call of message?.tool_calls ?? []) {
          const outcome = await ctx.tools.call(call.name, call.args)
          results.push(new messages.ToolMessage({ tool_call_id: call.id ?? '', content: toolResultContent(outcome) }))
        }
        // arguments that were not JSON: the proxy records the call as malformed
        for (const call of message?.invalid_tool_calls ?? []) {
          const outcome = await ctx.tools.call(call.name ?? '', parseToolArguments(call.args ?? ''))
          results.push(new messages.ToolMessage({ tool_call_id: call.id ?? '', content: toolResultContent(outcome) }))
        }
        return { messages: results }
      })
      .addEdge(START, 'agent')
      .addConditionalEdges('agent', (state) => (wantsTools(lastAi(state)) ? 'tools' : END), ['tools', END])
      .addConditionalEdges('tools', () => (ctx.tools.exhausted || ctx.signal.aborted ? END : 'agent'), ['agent', END])
      .compile()

    const errors: NonNullable<AdapterOutput['errors']> = []
    let final: { messages: BaseMessage[] }
    try {
      final = await graph.invoke(
        { messages: [new messages.SystemMessage(systemPrompt(payload, config)), new messages.HumanMessage(userPrompt(payload))] },
        // each model call is one agent step and one tools step
        { recursionLimit: 2 * config.max_steps, signal: ctx.signal },
      )
    } catch (error) {
      if (error instanceof GraphRecursionError) {
        errors.push({ kind: 'max_steps', message: `no final answer after ${config.max_steps} model calls` })
        return { output: undefined, errors }
      }
      const status = statusOf(error)
      if (status === 'budget') return { output: undefined, errors: [{ kind: 'budget_exhausted', message: errorMessage(error) }] }
      if (status === 'infrastructure') throw new Error(`model call failed: ${errorMessage(error)}`, { cause: error })
      if (ctx.signal.aborted) return { output: undefined, errors: [{ kind: 'aborted', message: 'the attempt was stopped during the graph run' }] }
      return { output: undefined, errors: [{ kind: 'model_error', message: errorMessage(error) }] }
    }
    const answer = lastAi(final)
    if (answer === undefined || wantsTools(answer)) return { output: undefined, errors }
    return { output: typeof answer.content === 'string' ? answer.content : answer.text, errors }
  },
}

/** What a failed model call inside the graph was: the token budget, the model server, or the agent's request. */
function statusOf(error: unknown): 'budget' | 'infrastructure' | 'agent' {
  const fields = error as { status?: unknown; code?: unknown; error?: { code?: unknown }; lc_error_code?: unknown; message?: unknown }
  const code = fields.code ?? fields.error?.code
  if (code === 'max_tokens_budget_exhausted' || (typeof fields.message === 'string' && fields.message.includes('token budget exhausted'))) return 'budget'
  if (typeof fields.status === 'number' && fields.status >= 500) return 'infrastructure'
  const name = error instanceof Error ? error.constructor.name : ''
  if (name === 'APIConnectionError' || name === 'APIConnectionTimeoutError') return 'infrastructure'
  return 'agent'
}
