/**
 * The chart's test tools: helm (PATH, else $(go env GOPATH)/bin, else `go install`) and
 * kubernetes-validate (PATH, else Python's scripts directory, else `pip install`), as deploy/setup.sh
 * installs them; each answers with its path or why it cannot be had.
 */
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { join } from 'node:path'

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

