import { existsSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

/** The directory holding Forge's package.json, whether running from dist/ or from sources. */
export function packageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url))
  for (;;) {
    if (existsSync(join(dir, 'package.json')) && existsSync(join(dir, 'suites'))) return dir
    const parent = dirname(dir)
    if (parent === dir) throw new Error(`cannot find Forge's package root above ${fileURLToPath(import.meta.url)}`)
    dir = parent
  }
}

/** The compiled entry point of a Forge process role (dist/…); tests and the CLI spawn these. */
export function distEntry(relative: string): string {
  return join(packageRoot(), 'dist', relative)
}
