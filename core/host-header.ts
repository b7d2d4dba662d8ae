/**
 * Which `Host` a local web server of Forge answers. A server on 127.0.0.1 is not private to this
 * machine's user: any web page the user opens can make the browser call it, and with DNS rebinding
 * (the page's own name re-resolved to 127.0.0.1) the browser treats the answers as the page's own and
 * lets its script read them — every stored run, trace and answer of `forge ui`, or the stack's model
 * server's compute. What rebinding cannot forge is the `Host` header: it names the attacker's domain.
 * So a request is answered only when its Host is an IP address, `localhost` (or a `*.localhost`
 * name, which browsers resolve to loopback themselves), or a name the operator allowed — the rule
 * Vite, webpack-dev-server and Jupyter apply for the same reason.
 */

/** The host part of a Host header (lower case, no port, no trailing dot; IPv6 without brackets); undefined when malformed. */
export function hostOfHeader(header: string): string | undefined {
  const value = header.trim().toLowerCase()
  const bracketed = /^\[([0-9a-f:.]+)\](?::(\d{1,5}))?$/.exec(value)
  if (bracketed) return bracketed[1]
  const plain = /^([a-z0-9._-]+?)\.?(?::(\d{1,5}))?$/.exec(value)
  return plain?.[1] === undefined || plain[1] === '' ? undefined : plain[1]
}

const IPV4 = /^(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)$/

/** True for an IPv4 dotted quad or an IPv6 address (as `hostOfHeader` returns it, without brackets). */
export function isIpLiteral(host: string): boolean {
  if (IPV4.test(host)) return true
  // IPv6: hex groups and colons (at least two), an embedded IPv4 at the end allowed
  return host.includes(':') && /^[0-9a-f:]+(?:\d+\.\d+\.\d+\.\d+)?$/.test(host) && host.split(':').length >= 3
}

/**
 * Whether a request with this Host header may be answered: an IP address, localhost or a
 * `*.localhost` name, or one of `allowedNames` (host names, matched without case). A request
 * without a Host header (HTTP/1.0; browsers always send one) is answered.
 */
export function hostAllowed(header: string | undefined, allowedNames: readonly string[] = []): boolean {
  if (header === undefined) return true
  const host = hostOfHeader(header)
  if (host === undefined) return false
  if (isIpLiteral(host) || host === 'localhost' || host.endsWith('.localhost')) return true
  return allowedNames.some((name) => name.toLowerCase().replace(/\.$/, '') === host)
}

/** A host name as `--allow-host` takes it, or a problem with it (a port, a scheme, a space). */
export function allowedHostName(value: string): { ok: true; name: string } | { ok: false; problem: string } {
  const name = value.trim().toLowerCase().replace(/\.$/, '')
  if (name === '') return { ok: false, problem: 'is empty' }
  if (!/^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*$/.test(name)) {
    return { ok: false, problem: 'is not a host name (letters, digits, dots and hyphens; no scheme, port or path)' }
  }
  return { ok: true, name }
}
