/**
 * The `react` adapter: a tool-calling loop on the `openai` package against any OpenAI-compatible
 * server, through the attempt's LLM gateway. Each round the model either calls allowlisted tools
 * (OpenAI function calling; every call goes through ctx.tools) or answers; the loop ends on an
 * answer, at `max_steps`, when the harness's budget stops it, or when the attempt is aborted.
 */
import type OpenAI from 'openai'
import type { AdapterContext, AdapterOutput, AgentAdapter } from '../../core/plugins.js'
import type { InvocationPayload } from '../../core/contracts/index.js'
import {
  decodingFor,
  errorMessage,
  gatewayClient,
  isInfrastructureError,
  modelError,
  openAiTools,
  parseModelConfig,
  parseToolArguments,
  systemPrompt,
  toolResultContent,
  userPrompt,
} from './model-config.js'

type Message = OpenAI.Chat.Completions.ChatCompletionMessageParam

export const reactAdapter: AgentAdapter = {
  name: 'react',
  async invoke(payload: InvocationPayload, ctx: AdapterContext): Promise<AdapterOutput> {
    const config = parseModelConfig('react', ctx.config)
    const decoding = decodingFor(config, ctx.seed)
    const client = await gatewayClient(await ctx.llm(), ctx)
    const tools = openAiTools(payload.tools)
    const messages: Message[] = [
      { role: 'system', content: systemPrompt(payload, config) },
      { role: 'user', content: userPrompt(payload) },
    ]
    const errors: NonNullable<AdapterOutput['errors']> = []

    for (let step = 0; step < config.max_steps; step += 1) {
      if (ctx.signal.aborted) return { output: undefined, errors }
      let completion: OpenAI.Chat.Completions.ChatCompletion
      try {
        completion = await client.chat.completions.create(
          { model: config.model, messages, ...(tools.length > 0 ? { tools } : {}), ...decoding },
          { signal: ctx.signal },
        )
      } catch (error) {
        if (isInfrastructureError(error)) throw new Error(`model call failed: ${errorMessage(error)}`, { cause: error })
        errors.push(modelError(error))
        return { output: undefined, errors }
      }
      const message = completion.choices[0]?.message
      if (message === undefined) {
        errors.push({ kind: 'model_error', message: 'the model returned no choices' })
        return { output: undefined, errors }
      }
      const calls = (message.tool_calls ?? []).filter((call) => call.type === 'function')
      if (calls.length === 0) return { output: message.content ?? '', errors }

      messages.push({ role: 'assistant', content: message.content ?? null, tool_calls: calls })
      for (const call of calls) {
        const outcome = await ctx.tools.call(call.function.name, parseToolArguments(call.function.arguments))
        messages.push({ role: 'tool', tool_call_id: call.id, content: toolResultContent(outcome) })
      }
      // the harness stopped the agent (tool calls, retries, tokens or time): no answer after that
      if (ctx.tools.exhausted) return { output: undefined, errors }
    }
    errors.push({ kind: 'max_steps', message: `no final answer after ${config.max_steps} model calls` })
    return { output: undefined, errors }
  },
}
