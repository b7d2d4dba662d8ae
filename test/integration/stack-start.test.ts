/**
 * `stack up` when the Temporal dev server exits while it starts (it picks its internal services'
 * ports itself and, rarely, one it cannot bind: a panic in its log): started again, not waited on
 * for a minute. A wrapper binary plays the first start (it answers on the frontend port, then
 * exits); the second is the real dev server.
 */
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { resolveConfig } from '../../config/index.js'
import { findBinary } from '../../stack/binaries.js'
import { stackDown, stackStatus, stackUp } from '../../stack/local-stack.js'

const home = mkdtempSync(join(tmpdir(), 'forge-stack-start-'))
afterAll(async () => {
  await stackDown(resolveConfig({ ...process.env, FORGE_HOME: home }))
  rmSync(home, { recursive: true, force: true })
})

describe('stack up', () => {
  it('starts the Temporal dev server again when it exits while starting', async () => {
    const wrapper = join(home, 'temporal-once-broken')
    writeFileSync(
      wrapper,
      `#!/bin/bash
if [ ! -e "${home}/first-start" ]; then
  touch "${home}/first-start"
  while [ "$1" != "--port" ]; do shift; done
  python3 -c "import socket, time; s = socket.socket(); s.bind(('127.0.0.1', $2)); s.listen(); time.sleep(1)"
  echo 'panic: runtime error: invalid memory address or nil pointer dereference' >&2
  exit 2
fi
exec ${JSON.stringify(findBinary('temporal', undefined))} "$@"
`,
    )
    chmodSync(wrapper, 0o755)
    const config = resolveConfig({ ...process.env, FORGE_HOME: home, FORGE_TEMPORAL_BIN: wrapper, FORGE_TEMPORAL_ADDRESS: '', FORGE_NATS_URL: '', FORGE_CLICKHOUSE_URL: '' })
    const lines: string[] = []
    const endpoints = await stackUp(config, (line) => lines.push(line), { supervisor: false })
    expect(lines.filter((line) => /the Temporal dev server exited while starting/.test(line))).toHaveLength(1)
    expect(stackStatus(config).find((row) => row.name === 'temporal')).toMatchObject({ state: 'running', detail: expect.stringContaining(endpoints.temporalAddress) as unknown })
  })
})
