/**
 * The `pydantic-ai` adapter: a PydanticAI agent (PyPI `pydantic-ai-slim[openai]`) run by a small
 * Python bridge (python/pydantic_ai_bridge.py) as an out-of-process agent. It is the subprocess
 * adapter with a fixed command: a new process — and a new Agent object — per attempt, the
 * JSON-lines protocol on stdio for tool calls (through ctx.tools), the model through the attempt's
 * LLM gateway (OPENAI_BASE_URL / OPENAI_API_KEY are the gateway's URL and per-attempt token), and
 * the process group stopped when the attempt ends.
 */
import path from 'node:path'
import { z } from 'zod'
import { readSetting } from '../../config/index.js'
import type { InvocationPayload } from '../../core/contracts/index.js'
import type { AdapterContext, AdapterOutput, AgentAdapter } from '../../core/plugins.js'
import { LlmConfigError } from '../llm/errors.js'
import { packageRoot } from '../suite-files.js'
import { parseAdapterConfig } from './config-schema.js'
import { ModelAdapterConfig, decodingFor, systemPrompt } from './model-config.js'
import { sandboxConfigShape } from '../sandbox/config.js'
import { parseSubprocessConfig, runSubprocessAgent, subprocessAdapter } from './subprocess.js'

/** ctx.config of the pydantic-ai adapter: a model adapter's, plus the Python interpreter and the sandbox. */
export const PydanticAiConfig = ModelAdapterConfig.extend({
  python: z.string().min(1).optional().describe('Python interpreter with pydantic-ai-slim[openai] installed; default: $FORGE_PYTHON, else python3.'),
  ...sandboxConfigShape,
}).describe('Config of the pydantic-ai adapter (--adapter-config; --model sets model).')

/** The bridge script, shipped beside the sources (not compiled, so not under dist/). */
export function bridgePath(): string {
  return path.join(packageRoot(), 'engine', 'adapters', 'python', 'pydantic_ai_bridge.py')
}

export const pydanticAiAdapter: AgentAdapter = {
  name: 'pydantic-ai',
  ...(subprocessAdapter.stopGraceMs !== undefined ? { stopGraceMs: subprocessAdapter.stopGraceMs } : {}),
  async invoke(payload: InvocationPayload, ctx: AdapterContext): Promise<AdapterOutput> {
    const config = parseAdapterConfig('pydantic-ai', PydanticAiConfig, ctx.config, (message) => new LlmConfigError(message))
    const python = config.python ?? readSetting('python')
    const settings = {
      model: config.model,
      decoding: decodingFor(config, ctx.seed),
      system_prompt: systemPrompt(payload, config),
      max_steps: config.max_steps,
    }
    const bridge = parseSubprocessConfig({
      command: [python, bridgePath()],
      llm: true,
      env: { FORGE_PYDANTIC_AI: JSON.stringify(settings), PYTHONUNBUFFERED: '1', PYTHONDONTWRITEBYTECODE: '1' },
      sandbox: config.sandbox,
    })
    return runSubprocessAgent(payload, ctx, bridge, 'pydantic-ai')
  },
}
