/**
 * A GET with the Host header a browser would send for another name of this address — what a page
 * doing DNS rebinding sends (fetch() cannot set Host; node:http can).
 */
import { request } from 'node:http'

export function getWithHost(url: string, host: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'GET', headers: { ...headers, host } }, (res) => {
      let body = ''
      res.setEncoding('utf8')
      res.on('data', (chunk: string) => (body += chunk))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }))
    })
    req.on('error', reject)
    req.end()
  })
}
