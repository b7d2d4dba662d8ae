/**
 * The provenance manifest of a generated adversarial suite (`adversarial.json`), and reading it: a
 * module of its own, without the generator's YAML parser and suite loader, because the statistics of
 * every run read it (per-family figures) — `forge run`'s report loaded the generator for it (issue 15).
 */
import { readFile } from 'node:fs/promises'
import path from 'node:path'
import type { GeneratedTask, MutationFamily, Provenance } from '../core/adversarial.js'

export const PROVENANCE_FILE = 'adversarial.json'

/** One entry of `adversarial.json`'s tasks. */
export interface ProvenanceEntry extends Provenance {
  injection?: GeneratedTask['injection']
  garbage?: unknown[]
  /** set by `forge generate keep-failing`: the run whose attempts failed it */
  kept_from?: { run_id: string; passed: number; attempts: number }
}

/** `adversarial.json`: what the suite was generated from, and every task's provenance. */
export interface ProvenanceManifest {
  generator: 'forge generate adversarial'
  generator_version: string
  parent: { name: string; path: string; content_hash: string }
  seed: string
  families: MutationFamily[]
  per_task: number
  honeypot_tool: string
  tasks: Record<string, ProvenanceEntry>
}

/** The provenance manifest of a generated suite directory, or undefined when it is not one. */
export async function readProvenance(suiteDir: string): Promise<ProvenanceManifest | undefined> {
  try {
    const data = JSON.parse(await readFile(path.join(suiteDir, PROVENANCE_FILE), 'utf8')) as ProvenanceManifest
    return typeof data === 'object' && data !== null && typeof data.tasks === 'object' ? data : undefined
  } catch {
    return undefined
  }
}
