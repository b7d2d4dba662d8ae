import { Flags } from '@oclif/core'
import { refusedHostMessage, startUi } from '../../app/ui.js'
import { allowedHostName } from '../../core/host-header.js'
import { terminalSafe } from '../../core/terminal-text.js'
import { resolveConfig } from '../../stack/config.js'
import { ConfigError } from '../../stack/errors.js'
import { ForgeCommand } from '../base.js'

export default class Ui extends ForgeCommand {
  static override summary = 'Serve a local read-only web view of the store: runs → run → task → attempt (its trace). Ctrl-C stops it.'
  static override description =
    'Pages are server-side paged and aggregated in ClickHouse, so they stay fast at 100,000+ attempts per run; no page loads a ' +
    'whole run. Add ?format=json to any page for its data. Listens on 127.0.0.1 unless --host says otherwise. Works beside a ' +
    'running stack (reads through its ingester) and without one (opens the embedded store per request, so forge run can still start). ' +
    'It answers only requests addressed to an IP address or localhost — a web page you visit could otherwise read every run through ' +
    'DNS rebinding; --allow-host adds a name (a reverse proxy that keeps the Host header, an /etc/hosts alias).'
  static override examples = ['<%= config.bin %> ui', '<%= config.bin %> ui --port 8080', '<%= config.bin %> ui --port 0 --json', '<%= config.bin %> ui --port 0 --allow-host forge.example.com']
  static override flags = {
    host: Flags.string({ summary: 'Interface to listen on (default 127.0.0.1: this machine only).', default: '127.0.0.1' }),
    port: Flags.integer({ char: 'p', summary: 'Port (default 4600; 0 = any free port).', default: 4600, min: 0, max: 65535 }),
    'page-size': Flags.integer({ summary: 'Runs or attempts per page (default 100).', default: 100, min: 1, max: 1000 }),
    'allow-host': Flags.string({ summary: 'A host name requests may be addressed to besides IP addresses and localhost (repeatable).', multiple: true, default: [] }),
  }

  async run(): Promise<void> {
    const { flags } = await this.parse(Ui)
    if (flags.host.trim() === '') throw new ConfigError('--host must name an interface, e.g. 127.0.0.1')
    const allowedHosts = flags['allow-host'].map((value) => {
      const checked = allowedHostName(value)
      if (!checked.ok) throw new ConfigError(`--allow-host "${value}" ${checked.problem}`)
      return checked.name
    })
    const refused = new Set<string>()
    const onRefusedHost = (host: string): void => {
      // once per host: a page retrying in a loop must not flood the terminal
      if (refused.size >= 20 || refused.has(host)) return
      refused.add(host)
      // on stderr with --json too (oclif's warn and logToStderr are silent then): stdout carries only the address
      process.stderr.write(`Warning: ${terminalSafe(refusedHostMessage(host))}\n`)
    }
    const server = await startUi(resolveConfig(), { host: flags.host, port: flags.port, pageSize: flags['page-size'], allowedHosts, onRefusedHost })
    // in place before the address is printed: whoever reads it may stop us at once
    const stopped = new Promise<void>((resolve) => {
      process.once('SIGINT', resolve)
      process.once('SIGTERM', resolve)
    })
    if (this.jsonEnabled()) process.stdout.write(`${JSON.stringify({ url: server.url })}\n`)
    else this.log(`forge ui: ${server.url} (read-only; Ctrl-C to stop)`)
    if (!['127.0.0.1', 'localhost', '::1'].includes(flags.host)) this.warn(`listening on ${flags.host}: anyone who can reach it can read every stored run (there is no login)`)
    await stopped
    await server.close()
  }
}
