/**
 * The `single_shot` adapter: one chat completion, no tools, through the attempt's LLM gateway.
 * The model's reply is the answer. A baseline for what a model does without an agent loop.
 */
import type { AdapterContext, AdapterOutput, AgentAdapter } from '../../core/plugins.js'
import type { InvocationPayload } from '../../core/contracts/index.js'
import { decodingFor, errorMessage, gatewayClient, isInfrastructureError, modelError, parseModelConfig, systemPrompt, userPrompt } from './model-config.js'

export const singleShotAdapter: AgentAdapter = {
  name: 'single_shot',
  async invoke(payload: InvocationPayload, ctx: AdapterContext): Promise<AdapterOutput> {
    const config = parseModelConfig('single_shot', ctx.config)
    const client = await gatewayClient(await ctx.llm(), ctx)
    try {
      const completion = await client.chat.completions.create(
        {
          model: config.model,
          messages: [
            // no tools are offered, so the prompt does not mention any
            { role: 'system', content: systemPrompt({ ...payload, tools: [], disallowed_tools: [] }, config) },
            { role: 'user', content: userPrompt(payload) },
          ],
          ...decodingFor(config, ctx.seed),
        },
        { signal: ctx.signal },
      )
      const message = completion.choices[0]?.message
      if (message === undefined) return { output: undefined, errors: [{ kind: 'model_error', message: 'the model returned no choices' }] }
      return { output: message.content ?? '' }
    } catch (error) {
      if (isInfrastructureError(error)) throw new Error(`model call failed: ${errorMessage(error)}`, { cause: error })
      return { output: undefined, errors: [modelError(error)] }
    }
  },
}
