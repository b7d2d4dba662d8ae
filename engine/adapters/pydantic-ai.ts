/**
 * The `pydantic-ai` adapter: a PydanticAI agent (PyPI `pydantic-ai-slim[openai]`) run by a small
 * Python bridge (python/pydantic_ai_bridge.py) as an out-of-process agent. It is the subprocess
 * adapter with a fixed command: a new process — and a new Agent object — per attempt, the
 * JSON-lines protocol on stdio for tool calls (through ctx.tools), the model through the attempt's
 * LLM gateway (OPENAI_BASE_URL / OPENAI_API_KEY are the gateway's URL and per-attempt token), and
 * the process group stopped when the attempt ends.
 */
import path from 'node:path'
import { readSetting } from '../../config/index.js'
import type { InvocationPayload } from '../../core/contracts/index.js'
import type { AdapterContext, AdapterOutput, AgentAdapter } from '../../core/plugins.js'
import { LlmConfigError } from '../llm/errors.js'
import { packageRoot } from '../suite-loader.js'
import { decodingFor, parseModelConfig, systemPrompt } from './model-config.js'
import { subprocessAdapter } from './subprocess.js'

/** The bridge script, shipped beside the sources (not compiled, so not under dist/). */
export function bridgePath(): string {
  return path.join(packageRoot(), 'engine', 'adapters', 'python', 'pydantic_ai_bridge.py')
}

export const pydanticAiAdapter: AgentAdapter = {
  name: 'pydantic-ai',
  ...(subprocessAdapter.stopGraceMs !== undefined ? { stopGraceMs: subprocessAdapter.stopGraceMs } : {}),
  async invoke(payload: InvocationPayload, ctx: AdapterContext): Promise<AdapterOutput> {
    const config = parseModelConfig('pydantic-ai', ctx.config)
    const python = ctx.config['python'] ?? readSetting('python')
    if (typeof python !== 'string' || python === '') throw new LlmConfigError('pydantic-ai adapter config python must name a Python interpreter')
    const settings = {
      model: config.model,
      decoding: decodingFor(config, ctx.seed),
      system_prompt: systemPrompt(payload, config),
      max_steps: config.max_steps,
    }
    return subprocessAdapter.invoke(payload, {
      ...ctx,
      config: {
        command: [python, bridgePath()],
        llm: true,
        env: { FORGE_PYDANTIC_AI: JSON.stringify(settings), PYTHONUNBUFFERED: '1', PYTHONDONTWRITEBYTECODE: '1' },
      },
    })
  },
}
