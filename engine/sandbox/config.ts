/**
 * The `sandbox` key every adapter that runs agent code accepts (subprocess, pydantic-ai, module):
 * on by default; `false` (what `forge run --no-sandbox` sets) runs the agent without namespaces,
 * which every attempt's validity then records.
 */
import { z } from 'zod'

/** The sandbox's knobs; every field has a default, so `{}` is the default sandbox. */
export const SandboxSettings = z
  .strictObject({
    read_only: z
      .array(z.string().min(1))
      .default([])
      .describe("Extra host paths the agent may read (e.g. a virtualenv or a node_modules); the agent's own program and script directories are added automatically."),
    memory_mb: z.number().int().min(32).max(1_048_576).default(1024).describe("Memory limit of the agent's processes together, in MiB: a cgroup limit where the worker may write one, else each process's RLIMIT_DATA and the worker's watch of their sum (the largest killed past it)."),
    max_pids: z.number().int().min(8).max(65_536).default(256).describe('How many processes and threads the agent may have at once (cgroup pids limit and RLIMIT_NPROC).'),
    tmpfs_mb: z.number().int().min(1).max(65_536).default(256).describe("Size of the agent's writable scratch directory (/tmp inside the sandbox), in MiB."),
    max_open_files: z
      .number()
      .int()
      .min(64)
      .max(1_048_576)
      .default(1024)
      .describe('How many files each of the agent\'s processes may have open (RLIMIT_NOFILE): with max_pids, a bound on what it takes of the machine\'s file table.'),
  })
  .describe('The agent sandbox (own PID, mount, network, IPC and UTS namespaces).')
export type SandboxSettings = z.output<typeof SandboxSettings>

/** Spread into an adapter's config schema. */
export const sandboxConfigShape = {
  sandbox: z
    .union([z.literal(false), SandboxSettings])
    .default(SandboxSettings.parse({}))
    .describe(
      'The agent runs in its own namespaces (no /proc of the worker, no suite, no network but its tool endpoint and LLM gateway). ' +
        'false (forge run --no-sandbox) runs it unsandboxed: every attempt is then marked degraded.',
    ),
}

/** The sandbox settings of an adapter config as parsed, or false when the sandbox is off. */
export type SandboxChoice = false | SandboxSettings

/** The validity note every attempt of an unsandboxed run carries (AgentTrace.isolation_degraded). */
export function unsandboxedNote(adapter: string): string {
  return adapter === 'module'
    ? 'sandbox off: the module agent ran inside the worker process (sandbox: false), able to read the worker and its suite'
    : `sandbox off (--no-sandbox): the ${adapter} agent ran without namespaces, able to read the worker's /proc, files and network`
}

/** Adapters that run agent code, and so run it sandboxed unless the run says `sandbox: false`. */
export const SANDBOXED_ADAPTERS: readonly string[] = ['subprocess', 'pydantic-ai', 'module']

/** Whether a run of `adapter` with `config` runs agent code in the sandbox. */
export function sandboxRequested(adapter: string, config: Record<string, unknown>): boolean {
  return SANDBOXED_ADAPTERS.includes(adapter) && config['sandbox'] !== false
}

/**
 * How a run's agent code was isolated, stamped on the run: `sandbox`, `unsandboxed` (--no-sandbox),
 * `in-process` (a module agent with sandbox: false), or '' for adapters that run no agent code.
 */
export function isolationOf(adapter: string, config: Record<string, unknown>): '' | 'sandbox' | 'unsandboxed' | 'in-process' {
  if (!SANDBOXED_ADAPTERS.includes(adapter)) return ''
  if (config['sandbox'] !== false) return 'sandbox'
  return adapter === 'module' ? 'in-process' : 'unsandboxed'
}
