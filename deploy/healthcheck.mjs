// The image's HEALTHCHECK (no curl in a slim image): GET /healthz of this container's role.
// One-off commands (run, sweep, …) serve no endpoint, so their containers count as healthy.
import { readFileSync } from 'node:fs'
import { request } from 'node:http'

const home = process.env.FORGE_HOME || `${process.env.TMPDIR || '/tmp'}/forge`
let role = 'job'
try {
  role = readFileSync(`${home}/.role`, 'utf8').trim()
} catch {
  // the entrypoint has not started a role yet
}
if (role === 'job') process.exit(0)
const port = Number(process.env.FORGE_HEALTH_PORT || 9464)
const req = request({ host: '127.0.0.1', port, path: '/healthz', timeout: 3000 }, (res) => {
  res.resume()
  process.exit(res.statusCode === 200 ? 0 : 1)
})
req.on('timeout', () => req.destroy(new Error('timed out')))
req.on('error', (error) => {
  console.error(`healthcheck: ${role} on port ${port}: ${error.message}`)
  process.exit(1)
})
req.end()
