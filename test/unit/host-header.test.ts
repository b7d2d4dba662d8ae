import { describe, expect, it } from 'vitest'
import { allowedHostName, hostAllowed, hostOfHeader, isIpLiteral } from '../../core/host-header.js'

describe('hostOfHeader', () => {
  it('takes the host out of a Host header: lower case, without port, trailing dot or IPv6 brackets', () => {
    expect(hostOfHeader('Example.COM:4600')).toBe('example.com')
    expect(hostOfHeader('example.com.')).toBe('example.com')
    expect(hostOfHeader('example.com.:80')).toBe('example.com')
    expect(hostOfHeader('[::1]:4600')).toBe('::1')
    expect(hostOfHeader('[::FFFF:127.0.0.1]')).toBe('::ffff:127.0.0.1')
    expect(hostOfHeader('127.0.0.1')).toBe('127.0.0.1')
  })

  it('says nothing of what is no host', () => {
    for (const bad of ['', ':80', 'a b', 'user@host', 'host:port', 'host:123456', '[::1', 'http://x', 'host/path']) expect(hostOfHeader(bad), bad).toBeUndefined()
  })
})

describe('isIpLiteral', () => {
  it('knows IPv4 dotted quads and IPv6 addresses from names', () => {
    for (const ip of ['127.0.0.1', '10.1.2.3', '0.0.0.0', '255.255.255.255', '::1', '::', 'fe80::1', '::ffff:127.0.0.1', '2001:db8::8a2e:370:7334']) expect(isIpLiteral(ip), ip).toBe(true)
    for (const name of ['localhost', '127.0.0.1.nip.io', '256.0.0.1', '1.2.3', '01.2.3.4x', 'a:b', 'dead:beef', 'example.com']) expect(isIpLiteral(name), name).toBe(false)
  })
})

describe('hostAllowed', () => {
  it('answers requests addressed to an IP address, localhost or a *.localhost name', () => {
    for (const host of ['127.0.0.1:4600', '127.0.0.1', '[::1]:4600', '192.168.1.20:4600', 'localhost', 'LocalHost:4600', 'localhost.', 'ui.localhost:4600', undefined]) expect(hostAllowed(host), String(host)).toBe(true)
  })

  it('refuses any other name — what a page doing DNS rebinding sends — unless the operator allowed it', () => {
    for (const host of ['rebind.attacker.example:4600', '127.0.0.1.nip.io:4600', 'localhost.attacker.example', 'attacker-localhost', 'forge.example.com', '', 'a b']) expect(hostAllowed(host), host).toBe(false)
    expect(hostAllowed('forge.example.com:4600', ['forge.example.com'])).toBe(true)
    expect(hostAllowed('FORGE.example.com.', ['forge.EXAMPLE.com'])).toBe(true)
    expect(hostAllowed('x.forge.example.com', ['forge.example.com'])).toBe(false)
  })
})

describe('allowedHostName', () => {
  it('takes host names, lower-cased, and names what else it was given', () => {
    expect(allowedHostName(' Forge.Example.COM. ')).toEqual({ ok: true, name: 'forge.example.com' })
    expect(allowedHostName('box-1')).toEqual({ ok: true, name: 'box-1' })
    expect(allowedHostName('')).toEqual({ ok: false, problem: 'is empty' })
    for (const bad of ['http://forge.example.com', 'forge.example.com:8080', 'forge.example.com/ui', '-x.example', 'a..b', '*.example.com']) {
      expect(allowedHostName(bad), bad).toEqual({ ok: false, problem: 'is not a host name (letters, digits, dots and hyphens; no scheme, port or path)' })
    }
  })
})
