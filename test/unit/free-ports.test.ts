import { readFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { describe, expect, it } from 'vitest'
import { ephemeralPortsStart, freePorts } from '../../stack/local-stack.js'

function listenable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer()
    server.once('error', () => resolve(false))
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)))
  })
}

describe('freePorts', () => {
  it('gives distinct free ports below the range the kernel hands to outgoing connections', async () => {
    const ports = await freePorts(6)
    expect(new Set(ports).size).toBe(6)
    for (const port of ports) {
      expect(port).toBeGreaterThanOrEqual(10_000)
      expect(port).toBeLessThan(ephemeralPortsStart())
      expect(await listenable(port)).toBe(true)
    }
  })

  it.runIf(process.platform === 'linux')('reads the start of the ephemeral range from the kernel', () => {
    const [first] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)
    expect(ephemeralPortsStart()).toBe(Number(first))
  })
})
