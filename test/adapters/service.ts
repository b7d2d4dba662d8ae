/** A scriptable fake agent service for the http adapter tests: records every request it gets. */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'

export interface ServiceRequest {
  method: string
  path: string
  headers: IncomingMessage['headers']
  body: unknown
}

export type Handler = (req: ServiceRequest, res: ServerResponse) => void | Promise<void>

export interface FakeService {
  url: string
  requests: ServiceRequest[]
  close(): Promise<void>
}

export async function startService(routes: Record<string, Handler>): Promise<FakeService> {
  const requests: ServiceRequest[] = []
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8')
      let body: unknown = text
      try {
        body = JSON.parse(text)
      } catch {
        // kept as text
      }
      const request: ServiceRequest = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, body }
      requests.push(request)
      const handler = routes[`${request.method} ${request.path}`]
      if (handler === undefined) {
        res.writeHead(404).end()
        return
      }
      void Promise.resolve(handler(request, res)).catch((error: unknown) => res.writeHead(500).end(String(error)))
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      }),
  }
}

export function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body))
}

/** Calls a tool through the harness's endpoint named in an invoke body. */
export async function callTool(invokeBody: unknown, name: string, args: unknown): Promise<{ ok: boolean; result?: unknown; error?: string }> {
  const { tools } = invokeBody as { tools: { url: string; token: string } }
  const res = await fetch(`${tools.url}/${name}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${tools.token}`, 'content-type': 'application/json' },
    body: JSON.stringify(args),
  })
  return (await res.json()) as { ok: boolean; result?: unknown; error?: string }
}
