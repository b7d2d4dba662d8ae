/**
 * The chart's test tools: helm (PATH, else $(go env GOPATH)/bin, else `go install`) and
 * kubernetes-validate (PATH, else Python's scripts directory, else `pip install`), as deploy/setup.sh
 * installs them; each answers with its path or why it cannot be had.
 */
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { stringify } from 'yaml'
import { BUS_ROLES, natsAuthorization, rolePermissions, type BusRole, type BusSecrets } from '../../store/bus-auth.js'

function which(name: string): string | undefined {
  const r = spawnSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' })
  return r.status === 0 && r.stdout.trim() ? r.stdout.trim() : undefined
}

/** helm on PATH or in $(go env GOPATH)/bin, installed with go install when missing. */
export function findHelm(): { path?: string; why?: string } {
  const onPath = which('helm')
  if (onPath) return { path: onPath }
  const go = which('go')
  if (!go) return { why: 'helm is not installed and there is no Go toolchain to `go install helm.sh/helm/v3/cmd/helm@v3.22.0`' }
  const gopath = spawnSync(go, ['env', 'GOPATH'], { encoding: 'utf8' }).stdout.trim()
  const candidate = join(gopath, 'bin', 'helm')
  if (existsSync(candidate)) return { path: candidate }
  const install = spawnSync(go, ['install', 'helm.sh/helm/v3/cmd/helm@v3.22.0'], { encoding: 'utf8', env: { ...process.env, GOFLAGS: '-mod=mod' }, timeout: 900_000 })
  if (install.status === 0 && existsSync(candidate)) return { path: candidate }
  return { why: `go install helm@v3.22.0 failed: ${(install.stderr || install.error?.message || '').trim().split('\n').slice(-3).join(' ')}` }
}

/** kubernetes-validate on PATH or in Python's scripts directory, installed from PyPI when missing. */
export function findValidator(): { path?: string; why?: string } {
  const scripts = spawnSync('python3', ['-c', "import sysconfig; print(sysconfig.get_path('scripts'))"], { encoding: 'utf8' }).stdout.trim()
  const locate = () => which('kubernetes-validate') ?? (scripts && existsSync(join(scripts, 'kubernetes-validate')) ? join(scripts, 'kubernetes-validate') : undefined)
  const found = locate()
  if (found) return { path: found }
  const install = spawnSync('python3', ['-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', 'kubernetes-validate==1.37.0'], { encoding: 'utf8', timeout: 300_000 })
  const installed = locate()
  if (installed) return { path: installed }
  return { why: `pip install kubernetes-validate==1.37.0 failed: ${(install.stderr || install.error?.message || '').trim().split('\n').slice(-2).join(' ')}` }
}

/** The environment variable a NATS server reads one role's user or password from: FORGE_WORKER_PASSWORD. */
export const natsVariable = (role: BusRole, what: 'user' | 'password'): string => `FORGE_${role.toUpperCase()}_${what.toUpperCase()}`

/**
 * What an external NATS needs for Forge, generated from `rolePermissions()` (the files under
 * helm/nats/ that README "The bus" shows; test/deploy/helm.test.ts checks them): values for the official NATS chart
 * that read each role's user and password from the bus Secret through environment variables, and
 * the same `authorization` block for a hand-configured nats-server.
 */
export function externalNatsConfig(secretName = 'forge-bus'): { chartValues: string; natsConf: string } {
  // the files README shows: helm/nats/forge-auth-values.yaml and helm/nats/forge-authorization.conf
  const env: Record<string, unknown> = {}
  const users = BUS_ROLES.map((role) => {
    for (const what of ['user', 'password'] as const) env[natsVariable(role, what)] = { valueFrom: { secretKeyRef: { name: secretName, key: `${role}-${what}` } } }
    const p = rolePermissions(role)
    return {
      user: `<< $${natsVariable(role, 'user')} >>`,
      password: `<< $${natsVariable(role, 'password')} >>`,
      permissions: { publish: { allow: p.publish }, subscribe: { allow: p.subscribe }, ...(p.maxResponses !== undefined ? { allow_responses: { max: p.maxResponses } } : {}) },
    }
  })
  const header = (what: string) =>
    `# ${what}.\n# Generated from rolePermissions() (store/bus-auth.ts) by externalNatsConfig() (test/helpers/helm-tools.ts);\n` +
    `# test/deploy/helm.test.ts fails when it drifts (-u rewrites it). README "The bus: per-role NATS users and the results key".\n`
  const chartValues =
    header(`Forge's users for the official NATS chart (nats/nats), read from the Secret ${secretName}`) +
    stringify({ container: { env }, config: { merge: { authorization: { users } } } }, { lineWidth: 0, flowCollectionPadding: false })
  // natsAuthorization() quotes every user and password; a nats.conf variable reference is unquoted
  const placeholders = Object.fromEntries(BUS_ROLES.map((role) => [role, { user: `$${natsVariable(role, 'user')}`, password: `$${natsVariable(role, 'password')}` }])) as BusSecrets['users']
  const natsConf = `${header("Forge's users for nats.conf; the six variables come from the server's environment")}${natsAuthorization({ users: placeholders, results_key: '' }).replace(/"(\$FORGE_[A-Z]+_(?:USER|PASSWORD))"/g, '$1')}\n`
  return { chartValues, natsConf }
}
