/**
 * The image holds what the npm package ships (package.json `files`): a path the package needs at run
 * time and the Dockerfile forgets fails only inside the image (the sandbox's in-sandbox scripts were
 * missing from it). `deploy` is the exception: the image takes its entrypoint and healthcheck only.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { packageRoot } from '../../stack/paths.js'

const root = packageRoot()
const dockerfile = readFileSync(join(root, 'deploy', 'Dockerfile'), 'utf8')
const runtime = dockerfile.slice(dockerfile.lastIndexOf('\nFROM '))

describe('the image', () => {
  it("copies every path of the package's files into its runtime stage", () => {
    const files = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { files: string[] }).files
    const missing = files.filter((path) => path !== 'deploy' && !runtime.includes(`COPY --from=build /src/${path} ./${path}\n`))
    expect(missing).toEqual([])
    expect(runtime).toMatch(/COPY --from=build \/src\/deploy\/entrypoint\.sh \/src\/deploy\/healthcheck\.mjs \.\/deploy\//)
  })
})
