/**
 * The `openai` package, loaded by the first model call (an LLM adapter's attempt, a judge's
 * question): ~150 modules that a worker running mock or subprocess agents, and `forge run` itself,
 * would otherwise load at start-up (issue 15).
 */
import type OpenAI from 'openai'

let loaded: typeof OpenAI | undefined

/** The package's client class, loading it once. */
export async function loadOpenAI(): Promise<typeof OpenAI> {
  return (loaded ??= (await import('openai')).default)
}

/** The client class once something loaded it; until then no error can be one of its classes. */
export function loadedOpenAI(): typeof OpenAI | undefined {
  return loaded
}
