/**
 * The workspace fixture: a per-attempt copy of a directory of files. Only regular files are
 * copied — no VCS metadata (.git, .hg, .svn), no symlinks that could lead back into the suite —
 * so the agent finds nothing to mine for answers.
 */
import { createHash } from 'node:crypto'
import { copyFile, mkdir, readFile, readdir, rm, stat } from 'node:fs/promises'
import path from 'node:path'
import type { WorkspaceCondition, WorkspaceFixture } from '../../core/contracts/index.js'
import { TEXT_LIMIT, type FileState, type WorkspaceState } from '../../core/env-diff.js'
import type { WorkspaceHandle } from '../../core/plugins.js'
import type { FixtureDriver, FixtureInstance, FixtureTemplate } from './driver.js'
import { FixtureSeedError } from './errors.js'

const SKIPPED = new Set(['.git', '.hg', '.svn', '.DS_Store', 'node_modules'])

/** Relative paths (`/`-separated) of the regular files under `root`, sorted. */
export async function listRegularFiles(root: string): Promise<string[]> {
  const out: string[] = []
  const walk = async (dir: string, prefix: string): Promise<void> => {
    for (const entry of await readdir(dir, { withFileTypes: true })) {
      if (SKIPPED.has(entry.name)) continue
      const relative = prefix === '' ? entry.name : `${prefix}/${entry.name}`
      if (entry.isDirectory()) await walk(path.join(dir, entry.name), relative)
      else if (entry.isFile()) out.push(relative)
    }
  }
  await walk(root, '')
  return out.sort()
}

/** Copies the regular files of `from` into `to` (created), skipping VCS metadata and symlinks. */
export async function copyTree(from: string, to: string): Promise<void> {
  await mkdir(to, { recursive: true })
  for (const file of await listRegularFiles(from)) {
    const target = path.join(to, ...file.split('/'))
    await mkdir(path.dirname(target), { recursive: true })
    await copyFile(path.join(from, ...file.split('/')), target)
  }
}

function fileState(bytes: Buffer): FileState {
  const state: FileState = { sha256: createHash('sha256').update(bytes).digest('hex'), size: bytes.length }
  if (bytes.length <= TEXT_LIMIT && !bytes.includes(0)) {
    const text = bytes.toString('utf8')
    if (!text.includes('\uFFFD')) state.text = text
  }
  return state
}

/** Reads every file under `root` back: digest, size and (small text) content. */
export async function captureWorkspace(root: string): Promise<WorkspaceState> {
  const files: Record<string, FileState> = {}
  for (const file of await listRegularFiles(root)) files[file] = fileState(await readFile(path.join(root, ...file.split('/'))))
  return { kind: 'workspace', files }
}

/** Resolves a path of a condition inside `root`, refusing anything that escapes it. */
function inside(root: string, relative: string, fixture: string): string {
  const resolved = path.resolve(root, relative)
  if (resolved !== root && !resolved.startsWith(`${root}${path.sep}`)) throw new FixtureSeedError(fixture, `path "${relative}" leaves the workspace`)
  return resolved
}

async function applyCondition(root: string, condition: WorkspaceCondition, fixture: string): Promise<void> {
  for (const relative of condition.paths) {
    const target = inside(root, relative, fixture)
    if (condition.type === 'missing_records') {
      await rm(target, { recursive: true, force: true })
      continue
    }
    const isFile = await stat(target).then((s) => s.isFile(), () => false)
    if (!isFile) throw new FixtureSeedError(fixture, `duplicate_records: "${relative}" is not a file of the workspace`)
    const ext = path.extname(target)
    await copyFile(target, `${target.slice(0, target.length - ext.length)}${condition.suffix}${ext}`)
  }
}

export const workspaceDriver: FixtureDriver<WorkspaceFixture> = {
  kind: 'workspace',
  async template(spec, ctx): Promise<FixtureTemplate> {
    const source = path.resolve(ctx.fixturesDir, spec.from)
    const templateRoot = path.join(ctx.dir, 'files')
    try {
      await copyTree(source, templateRoot)
    } catch (error) {
      throw new FixtureSeedError(spec.name, `cannot copy ${spec.from}: ${error instanceof Error ? error.message : String(error)}`, { cause: error })
    }
    for (const condition of spec.conditions) await applyCondition(templateRoot, condition, spec.name)
    const baseline = await captureWorkspace(templateRoot)
    return {
      baseline,
      expectations(state) {
        if (state.kind !== 'workspace') return [`expected a workspace state, got ${state.kind}`]
        const problems: string[] = []
        for (const file of spec.expect?.files ?? []) if (state.files[file] === undefined) problems.push(`expected file "${file}" is missing`)
        for (const file of spec.expect?.absent ?? []) if (state.files[file] !== undefined) problems.push(`file "${file}" should be absent but exists`)
        return problems
      },
      async instantiate(dir): Promise<FixtureInstance> {
        const root = path.join(dir, spec.name)
        await rm(root, { recursive: true, force: true })
        await copyTree(templateRoot, root)
        const handle: WorkspaceHandle = { kind: 'workspace', name: spec.name, root }
        return {
          handle,
          capture: () => captureWorkspace(root),
          async restore() {
            await rm(root, { recursive: true, force: true })
            await copyTree(templateRoot, root)
          },
          async close() {
            // the pool removes the instance directory
          },
        }
      },
      async dispose() {
        await rm(templateRoot, { recursive: true, force: true })
      },
    }
  },
}
