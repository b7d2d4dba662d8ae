/**
 * The local model server's own figures, apart from the harness's: the stack's model server process
 * (as `forge run --model local` starts it) serving SmolLM2-135M-Instruct on this machine's CPU.
 *   - load: spawn to listening (the model is loaded before it listens)
 *   - time to first token: streamed completions one at a time
 *   - completions/s: 32-token answers and grammar-constrained tool calls, one client and many
 *   - memory: the server's RSS after loading and its peak (VmHWM)
 *   FORGE_BENCH_MODEL (default local), FORGE_MODEL_PARALLEL / _THREADS / _CONTEXT as for the stack
 */
import { readSetting, SETTINGS } from '../config/index.js'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { availableParallelism, loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { resolveLocalModel } from '../engine/llm/local/models.js'
import { resolveConfig } from '../stack/config.js'
import { stackDown } from '../stack/local-stack.js'
import { ensureModelServer } from '../stack/model-server.js'

function memory(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  try {
    return Number(new RegExp(`${field}:\\s+(\\d+)`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024
  } catch {
    return 0
  }
}

const quantile = (values: number[], q: number): number => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0
}

export async function modelServerBench(): Promise<void> {
  const home = mkdtempSync(join(tmpdir(), 'forge-bench-model-'))
  const config = resolveConfig({ ...process.env, FORGE_HOME: home, FORGE_TEMPORAL_ADDRESS: '', FORGE_NATS_URL: '', FORGE_CLICKHOUSE_URL: '' })
  const env = { ...process.env }
  delete env[SETTINGS.localModelUrl.variable]
  try {
    const model = resolveLocalModel(readSetting('benchModel'))
    const spawned = performance.now()
    const server = await ensureModelServer(config, model, () => undefined, env)
    const loadMs = performance.now() - spawned
    const pid = server.pid ?? 0
    const headers = { 'content-type': 'application/json', ...(server.key ? { authorization: `Bearer ${server.key}` } : {}) }
    const rssLoaded = memory(pid, 'VmRSS')
    const health = (await (await fetch(server.url.replace(/\/v1$/, '/health'), { headers })).json()) as { parallel: number; context_size: number }

    const prompt = (i: number) => [
      { role: 'system', content: 'You are an agent under evaluation. Solve the task.' },
      { role: 'user', content: `Evaluate the expression and answer with the number.\n\nInput:\n{"expression": "${i} * (3 + 4)"}` },
    ]
    const calculator = {
      type: 'function',
      function: { name: 'calculator', description: 'Evaluates an arithmetic expression.', parameters: { type: 'object', properties: { expression: { type: 'string' } }, required: ['expression'] } },
    }
    const complete = async (body: Record<string, unknown>): Promise<{ completion_tokens: number }> => {
      const res = await fetch(`${server.url}/chat/completions`, { method: 'POST', headers, body: JSON.stringify({ model: model.name, temperature: 0, ...body }) })
      if (!res.ok) throw new Error(`model server answered ${res.status}: ${await res.text()}`)
      return ((await res.json()) as { usage: { completion_tokens: number } }).usage
    }
    // warm-up: grammar compilation, first-use allocations
    await complete({ messages: prompt(0), max_tokens: 8 })
    await complete({ messages: prompt(0), tools: [calculator], max_tokens: 32 })

    const ttft: number[] = []
    for (let i = 0; i < 10; i++) {
      const started = performance.now()
      const res = await fetch(`${server.url}/chat/completions`, { method: 'POST', headers, body: JSON.stringify({ model: model.name, messages: prompt(i), max_tokens: 16, stream: true, temperature: 0 }) })
      const reader = res.body!.getReader()
      const decoder = new TextDecoder()
      let seen = ''
      let first: number | undefined
      for (;;) {
        const { value, done } = await reader.read()
        if (done) break
        seen += decoder.decode(value, { stream: true })
        // the first chunk is the role; the first token is the first chunk with content
        if (first === undefined && /"content":"[^"]/.test(seen)) first = performance.now() - started
      }
      ttft.push(first ?? performance.now() - started)
    }

    const throughput = async (label: string, clients: number, total: number, body: (i: number) => Record<string, unknown>): Promise<string> => {
      let next = 0
      let tokens = 0
      const started = performance.now()
      await Promise.all(
        Array.from({ length: clients }, async () => {
          for (let i = next++; i < total; i = next++) {
            const usage = await complete(body(i))
            tokens += usage.completion_tokens
          }
        }),
      )
      const seconds = (performance.now() - started) / 1000
      return `  ${label.padEnd(44)} ${(total / seconds).toFixed(2).padStart(6)} completions/s, ${(tokens / seconds).toFixed(0).padStart(4)} output tokens/s (${total} in ${seconds.toFixed(1)} s)`
    }
    const answer = (i: number) => ({ messages: prompt(i), max_tokens: 32 })
    const toolCall = (i: number) => ({ messages: prompt(i), tools: [calculator], tool_choice: 'required', max_tokens: 32 })
    const lines = [
      await throughput('32-token answers, 1 client', 1, 8, answer),
      await throughput(`32-token answers, ${health.parallel * 4} clients`, health.parallel * 4, 24, answer),
      await throughput('tool calls (grammar), 1 client', 1, 8, toolCall),
      await throughput(`tool calls (grammar), ${health.parallel * 4} clients`, health.parallel * 4, 24, toolCall),
    ]
    console.log(
      `model server: ${model.name} (${model.path}), ${health.parallel} parallel sequences × ${health.context_size} context tokens, ` +
        `CPU (${availableParallelism()} cores, load average ${loadavg()[0]!.toFixed(1)} when done)`,
    )
    console.log(`  load (spawn → listening)                     ${(loadMs / 1000).toFixed(1)} s`)
    console.log(`  time to first token (streamed, 10 one by one) p50 ${quantile(ttft, 0.5).toFixed(0)} ms, p90 ${quantile(ttft, 0.9).toFixed(0)} ms`)
    for (const line of lines) console.log(line)
    console.log(`  memory: RSS ${rssLoaded.toFixed(0)} MiB after loading, ${memory(pid, 'VmRSS').toFixed(0)} MiB now, peak ${memory(pid, 'VmHWM').toFixed(0)} MiB`)
  } finally {
    await stackDown(config)
    rmSync(home, { recursive: true, force: true })
  }
}
