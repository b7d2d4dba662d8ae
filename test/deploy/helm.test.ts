/**
 * The Helm chart, offline: `helm lint --strict` and `helm template` for the default values and every
 * documented example, the rendered manifests validated strictly (unknown fields rejected) against the
 * Kubernetes API schemas by kubernetes-validate and against test/deploy/crd-schemas.json for the
 * custom resources (KEDA, Prometheus Operator), and what matters asserted on the rendered objects.
 * helm and kubernetes-validate are installed here when missing (as deploy/setup.sh does); the tests
 * skip, saying why, only when that is impossible.
 */
import { spawn, spawnSync } from 'node:child_process'
import { copyFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import { connect } from '@nats-io/transport-node'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parse, parseAllDocuments } from 'yaml'
import { afterAll, describe, expect, it } from 'vitest'
import { SweepSpec } from '../../core/contracts/sweep.js'
import { sweepCells } from '../../core/sweep.js'
import { findBinary } from '../../stack/binaries.js'
import { packageRoot } from '../../stack/paths.js'
import { BUS_ROLES, type BusRole } from '../../store/bus-auth.js'
import { externalNatsConfig, findHelm, findValidator, natsVariable } from '../helpers/helm-tools.js'

const root = packageRoot()
const chart = join(root, 'helm', 'forge')
const work = mkdtempSync(join(tmpdir(), 'forge-helm-'))
afterAll(() => rmSync(work, { recursive: true, force: true }))

const helm = findHelm()
const validator = findValidator()
const missing = [helm.why, validator.why].filter((w): w is string => w !== undefined)
if (missing.length > 0) console.warn(`helm.test: skipping the chart tests: ${missing.join('; ')}`)

interface K8sObject {
  apiVersion: string
  kind: string
  metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> }
  spec?: Record<string, unknown>
  data?: Record<string, string>
}
type Container = {
  name: string
  args?: string[]
  env?: { name: string; value?: string; valueFrom?: { secretKeyRef?: { name: string; key: string }; fieldRef?: { fieldPath: string } } }[]
  ports?: { name: string; containerPort: number }[]
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> }
  securityContext?: Record<string, unknown>
  livenessProbe?: { httpGet: { path: string; port: string } }
  readinessProbe?: { httpGet: { path: string; port: string } }
  startupProbe?: { httpGet: { path: string; port: string } }
  volumeMounts?: { name: string; mountPath: string }[]
}
type EnvVar = NonNullable<Container['env']>[number]
type PodSpec = {
  containers: Container[]
  securityContext: Record<string, unknown>
  terminationGracePeriodSeconds?: number
  automountServiceAccountToken?: boolean
  runtimeClassName?: string
  volumes?: { name: string }[]
}

let renders = 0
const run = (cmd: string, args: string[]) => spawnSync(cmd, args, { encoding: 'utf8', timeout: 120_000 })

/** `helm template` of the chart with a values file (or none); the objects, and the manifest file. */
function render(valuesFile?: string, extra: string[] = []): { objects: K8sObject[]; file: string; stderr: string; status: number } {
  const r = run(helm.path!, ['template', 'forge', chart, '--namespace', 'forge', ...(valuesFile ? ['-f', valuesFile] : []), ...extra])
  const file = join(work, `render-${++renders}.yaml`)
  writeFileSync(file, r.stdout)
  const objects = r.status === 0 ? parseAllDocuments(r.stdout).map((d) => d.toJSON() as K8sObject).filter((o) => o !== null) : []
  return { objects, file, stderr: r.stderr, status: r.status ?? -1 }
}

const find = (objects: K8sObject[], kind: string, name: string): K8sObject => {
  const found = objects.find((o) => o.kind === kind && o.metadata.name === name)
  if (!found) throw new Error(`no ${kind} ${name} rendered (have: ${objects.map((o) => `${o.kind}/${o.metadata.name}`).join(', ')})`)
  return found
}
const podOf = (o: K8sObject): PodSpec => {
  const spec = o.spec as { template?: { spec: PodSpec }; jobTemplate?: { spec: { template: { spec: PodSpec } } } }
  return (spec.jobTemplate?.spec.template.spec ?? spec.template?.spec)!
}
const envOf = (c: Container): Record<string, string> => Object.fromEntries((c.env ?? []).map((e) => [e.name, e.value ?? `<${e.valueFrom?.secretKeyRef ? `secret ${e.valueFrom.secretKeyRef.name}/${e.valueFrom.secretKeyRef.key}` : `field ${e.valueFrom?.fieldRef?.fieldPath}`}>`]))

/** The keys of the bus Secret (values.yaml `bus`), and the bus variables each Forge container gets from it. */
const BUS_SECRET_KEYS = ['cli-password', 'cli-user', 'ingester-password', 'ingester-user', 'results-key', 'worker-password', 'worker-user']
const BUS_ENV = ['FORGE_NATS_USER', 'FORGE_NATS_PASSWORD', 'FORGE_RESULTS_KEY']
/** The bus Secret a values file names (`bus.existingSecret`), else the one the chart generates. */
const busSecretOf = (valuesFile?: string): string =>
  (valuesFile ? (parse(readFileSync(valuesFile, 'utf8')) as { bus?: { existingSecret?: string } }).bus?.existingSecret : undefined) || 'forge-bus'
/** The role a workload connects to the bus as: attempt and judge pods are workers; sweep and schedule jobs the CLI. */
const busRoleOf = (o: K8sObject): BusRole => (o.kind === 'Job' || o.kind === 'CronJob' ? 'cli' : o.metadata.name === 'forge-ingester' ? 'ingester' : 'worker')
const workloadsOf = (objects: K8sObject[]) => objects.filter((o) => ['Deployment', 'Job', 'CronJob'].includes(o.kind))
const busEnvOf = (c: Container): EnvVar[] => (c.env ?? []).filter((e) => BUS_ENV.includes(e.name))
const fromSecret = (secret: string, role: BusRole): EnvVar[] => [
  { name: 'FORGE_NATS_USER', valueFrom: { secretKeyRef: { name: secret, key: `${role}-user` } } },
  { name: 'FORGE_NATS_PASSWORD', valueFrom: { secretKeyRef: { name: secret, key: `${role}-password` } } },
  { name: 'FORGE_RESULTS_KEY', valueFrom: { secretKeyRef: { name: secret, key: 'results-key' } } },
]

const examplesDir = join(chart, 'examples')
const valuesFiles: [string, string | undefined][] = [
  ['default values', undefined],
  ...readdirSync(examplesDir)
    .filter((f) => f.endsWith('.yaml'))
    .sort()
    .map((f): [string, string] => [`examples/${f}`, join(examplesDir, f)]),
]

describe.skipIf(missing.length > 0)('helm/forge', () => {
  it('has the documented examples', () => {
    expect(valuesFiles.map(([name]) => name)).toEqual(['default values', 'examples/hpa-cronjob.yaml', 'examples/nightly-50-workers.yaml', 'examples/self-contained.yaml', 'examples/temporal-cloud-cluster.yaml'])
  })

  it.each(valuesFiles)('%s: lints strictly, renders, and every manifest validates strictly against the API schemas', (_name, valuesFile) => {
    const lint = run(helm.path!, ['lint', '--strict', chart, ...(valuesFile ? ['-f', valuesFile] : [])])
    expect(lint.status, lint.stdout + lint.stderr).toBe(0)
    const { objects, file, status, stderr } = render(valuesFile)
    expect(status, stderr).toBe(0)
    const k8s = run(validator.path!, ['--strict', file])
    expect(k8s.status, k8s.stdout + k8s.stderr).toBe(0)
    expect(`${k8s.stdout}${k8s.stderr}`).not.toMatch(/ERROR/)
    const builtin = objects.filter((o) => !/keda\.sh|monitoring\.coreos\.com/.test(o.apiVersion))
    // one "passed" line per built-in object: none was skipped for lack of a schema
    expect(k8s.stdout.match(/passed for resource/g)?.length ?? 0).toBe(builtin.length)
    const crds = run('python3', [join(root, 'test', 'deploy', 'validate-crds.py'), file])
    expect(crds.status, crds.stdout + crds.stderr).toBe(0)
    expect(crds.stdout.match(/^OK /gm)?.length ?? 0).toBe(objects.length - builtin.length)
    // the only Secret ever rendered is the generated bus Secret: every other key and password is only referenced
    expect(objects.filter((o) => o.kind === 'Secret').map((o) => o.metadata.name)).toEqual(busSecretOf(valuesFile) === 'forge-bus' ? ['forge-bus'] : [])
  })

  it('default values: workers autoscale from 0 on the task-queue backlog, drain for the longest attempt, probe the health endpoint, run locked down', () => {
    const { objects } = render()
    expect(objects.map((o) => `${o.kind}/${o.metadata.name}`).sort()).toEqual([
      'Deployment/forge-ingester',
      'Deployment/forge-judge',
      'Deployment/forge-worker',
      'NetworkPolicy/forge-agents',
      'NetworkPolicy/forge-ingester',
      'NetworkPolicy/forge-jobs',
      'PodDisruptionBudget/forge-ingester',
      'PodDisruptionBudget/forge-judge',
      'PodDisruptionBudget/forge-worker',
      'ScaledObject/forge-worker',
      'Secret/forge-bus',
      'Service/forge-metrics',
      'ServiceAccount/forge',
    ])
    const worker = find(objects, 'Deployment', 'forge-worker')
    // the scaler owns the replica count
    expect(worker.spec!['replicas']).toBeUndefined()
    const pod = podOf(worker)
    const [c] = pod.containers
    expect(c!.args).toEqual(['worker', '--role', 'attempts', '--concurrency', '50'])
    expect(pod.terminationGracePeriodSeconds).toBe(630)
    expect(envOf(c!)).toMatchObject({
      FORGE_SHUTDOWN_GRACE_MS: '600000',
      FORGE_TEMPORAL_ADDRESS: 'temporal-frontend.temporal.svc.cluster.local:7233',
      FORGE_TASK_QUEUE: 'forge-attempts',
      FORGE_NATS_URL: 'nats://nats.nats.svc.cluster.local:4222',
      FORGE_CLICKHOUSE_URL: 'http://clickhouse.clickhouse.svc.cluster.local:8123',
      FORGE_HEALTH_PORT: '9464',
      FORGE_HOME: '/tmp/forge',
      FORGE_WORKER_ID: '<field metadata.name>',
    })
    expect(c!.startupProbe!.httpGet).toEqual({ path: '/healthz', port: 'metrics' })
    expect(c!.livenessProbe!.httpGet).toEqual({ path: '/healthz', port: 'metrics' })
    expect(c!.readinessProbe!.httpGet).toEqual({ path: '/readyz', port: 'metrics' })
    expect(c!.ports).toEqual([{ name: 'metrics', containerPort: 9464, protocol: 'TCP' }])
    expect(c!.resources).toEqual({ requests: { cpu: '500m', memory: '1Gi' }, limits: { cpu: '2', memory: '2Gi' } })
    expect(c!.securityContext).toEqual({ allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, privileged: false, capabilities: { drop: ['ALL'] } })
    expect(pod.securityContext).toEqual({ runAsNonRoot: true, runAsUser: 10001, runAsGroup: 10001, fsGroup: 10001, seccompProfile: { type: 'RuntimeDefault' } })
    expect(pod.automountServiceAccountToken).toBe(false)
    expect(c!.volumeMounts).toEqual([{ name: 'tmp', mountPath: '/tmp' }])

    const scaler = find(objects, 'ScaledObject', 'forge-worker').spec as { minReplicaCount: number; maxReplicaCount: number; scaleTargetRef: { name: string }; triggers: { type: string; metadata: Record<string, string> }[] }
    expect(scaler.minReplicaCount).toBe(0)
    expect(scaler.maxReplicaCount).toBe(20)
    expect(scaler.scaleTargetRef).toEqual({ name: 'forge-worker' })
    expect(scaler.triggers).toEqual([
      {
        type: 'temporal',
        metadata: { endpoint: 'temporal-frontend.temporal.svc.cluster.local:7233', namespace: 'default', taskQueue: 'forge-attempts', queueTypes: 'workflow,activity', targetQueueSize: '50', activationTargetQueueSize: '0' },
      },
    ])

    expect(find(objects, 'PodDisruptionBudget', 'forge-worker').spec).toMatchObject({ maxUnavailable: 1, selector: { matchLabels: { 'app.kubernetes.io/component': 'worker' } } })
    expect(find(objects, 'PodDisruptionBudget', 'forge-ingester').spec).toMatchObject({ minAvailable: 1 })
    const ingester = find(objects, 'Deployment', 'forge-ingester')
    expect(ingester.spec!['replicas']).toBe(2)
    expect(podOf(ingester).containers[0]!.args).toEqual(['ingester'])
    expect(envOf(podOf(ingester).containers[0]!)).toMatchObject({ FORGE_NATS_STREAM_REPLICAS: '3' })
    const judge = podOf(find(objects, 'Deployment', 'forge-judge')).containers[0]!
    expect(judge.args).toEqual(['judge', '--judge-concurrency', '4', '--judge-rate', '5'])
    expect(envOf(judge)).toMatchObject({ FORGE_JUDGE_TASK_QUEUE: 'forge-judge' })

    // agent pods reach DNS, Temporal, NATS, ClickHouse and public HTTPS for the model; nothing else
    const agents = find(objects, 'NetworkPolicy', 'forge-agents').spec as { podSelector: unknown; policyTypes: string[]; egress: { to: unknown[]; ports: { port: number }[] }[] }
    expect(agents.podSelector).toEqual({ matchLabels: { 'app.kubernetes.io/instance': 'forge', 'forge.dev/agent': 'true' } })
    expect(agents.policyTypes).toEqual(['Ingress', 'Egress'])
    expect(agents.egress.map((e) => e.ports.map((p) => p.port))).toEqual([[53, 53], [7233], [4222], [8123, 8443], [443]])
    expect(agents.egress[4]!.to).toEqual([{ ipBlock: { cidr: '0.0.0.0/0', except: ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '169.254.0.0/16'] } }])
    const ingesterPolicy = find(objects, 'NetworkPolicy', 'forge-ingester').spec as { egress: { ports: { port: number }[] }[] }
    expect(ingesterPolicy.egress.map((e) => e.ports.map((p) => p.port))).toEqual([[53, 53], [4222], [8123, 8443]])
  })

  it('examples/nightly-50-workers.yaml: 50 pods, keys from Secrets, a Temporal Schedule of a valid sweep, a ServiceMonitor', () => {
    const { objects } = render(join(examplesDir, 'nightly-50-workers.yaml'))
    const scaler = find(objects, 'ScaledObject', 'forge-worker').spec as { maxReplicaCount: number; triggers: { metadata: Record<string, string> }[] }
    expect(scaler.maxReplicaCount).toBe(50)
    expect(scaler.triggers[0]!.metadata['targetQueueSize']).toBe('40')
    const worker = podOf(find(objects, 'Deployment', 'forge-worker'))
    const env = envOf(worker.containers[0]!)
    expect(env).toMatchObject({
      OPENAI_API_KEY: '<secret forge-model-keys/openai-api-key>',
      FORGE_NATS_USER: '<secret forge-bus-credentials/worker-user>',
      FORGE_NATS_PASSWORD: '<secret forge-bus-credentials/worker-password>',
      FORGE_RESULTS_KEY: '<secret forge-bus-credentials/results-key>',
      FORGE_NATS_URL: 'nats://nats.nats.svc.cluster.local:4222',
      FORGE_CLICKHOUSE_URL: 'http://$(FORGE_CLICKHOUSE_USER):$(FORGE_CLICKHOUSE_PASSWORD)@clickhouse.clickhouse.svc.cluster.local:8123/forge',
      FORGE_SHUTDOWN_GRACE_MS: '540000',
    })
    // Kubernetes expands $(VAR) only from variables defined earlier in the list
    const names = worker.containers[0]!.env!.map((e) => e.name)
    expect(names.indexOf('FORGE_CLICKHOUSE_PASSWORD')).toBeLessThan(names.indexOf('FORGE_CLICKHOUSE_URL'))
    // the ingester never sees a model key
    expect(envOf(podOf(find(objects, 'Deployment', 'forge-ingester')).containers[0]!)).not.toHaveProperty('OPENAI_API_KEY')

    const sweeps = find(objects, 'ConfigMap', 'forge-sweeps')
    const spec = SweepSpec.parse(parseAllDocuments(sweeps.data!['nightly.yaml']!)[0]!.toJSON())
    expect(sweepCells(spec, 'x')).toHaveLength(2 * 1 * 2 * 3)
    const hook = find(objects, 'Job', 'forge-schedule-nightly')
    expect(hook.metadata.annotations).toEqual({ 'helm.sh/hook': 'post-install,post-upgrade', 'helm.sh/hook-delete-policy': 'before-hook-creation,hook-succeeded' })
    const hookPod = podOf(hook)
    expect(hookPod.containers[0]!.args).toEqual(['schedule', 'create', '/etc/forge/sweeps/nightly.yaml', '--id', 'nightly', '--cron', '0 2 * * *', '--timezone', 'Europe/Berlin', '--update'])
    expect(hookPod.containers[0]!.volumeMounts).toContainEqual({ name: 'sweeps', mountPath: '/etc/forge/sweeps', readOnly: true })
    expect(find(objects, 'ServiceMonitor', 'forge').spec).toMatchObject({
      endpoints: [{ port: 'metrics', path: '/metrics', interval: '30s', scrapeTimeout: '10s' }],
      selector: { matchLabels: { 'app.kubernetes.io/instance': 'forge', 'forge.dev/metrics-service': 'true' } },
    })
    expect(find(objects, 'ServiceMonitor', 'forge').metadata.labels).toMatchObject({ release: 'kube-prometheus-stack' })
  })

  it('examples/temporal-cloud-cluster.yaml: API key for workers and the scaler, a private CA, ON CLUSTER ClickHouse with synchronous distributed inserts', () => {
    const { objects } = render(join(examplesDir, 'temporal-cloud-cluster.yaml'))
    const env = envOf(podOf(find(objects, 'Deployment', 'forge-worker')).containers[0]!)
    expect(env).toMatchObject({
      FORGE_TEMPORAL_ADDRESS: 'forge.a1b2c.tmprl.cloud:7233',
      FORGE_TEMPORAL_API_KEY: '<secret forge-temporal-cloud/api-key>',
      FORGE_CLICKHOUSE_CLUSTER: 'forge',
      FORGE_CLICKHOUSE_KEEPER_PATH: '/clickhouse/forge/tables',
      FORGE_CLICKHOUSE_URL: 'https://$(FORGE_CLICKHOUSE_USER):$(FORGE_CLICKHOUSE_PASSWORD)@clickhouse.clickhouse.svc.cluster.local:8443/forge?ch_insert_distributed_sync=1',
      NODE_EXTRA_CA_CERTS: '/etc/forge/trusted-ca/ca.crt',
      OPENAI_BASE_URL: 'https://llm-gateway.example.com/v1',
    })
    expect(env['FORGE_NATS_URL']).toBe(['nats-0', 'nats-1', 'nats-2'].map((n) => `tls://${n}.nats.nats.svc.cluster.local:4222`).join(','))
    // mutual TLS to NATS: the client certificate's Secret mounted read-only, its files named to Forge
    for (const o of objects.filter((x) => ['Deployment', 'Job', 'CronJob'].includes(x.kind))) {
      const pod = podOf(o)
      expect(envOf(pod.containers[0]!), o.metadata.name).toMatchObject({
        FORGE_NATS_TLS_CA: '/etc/forge/nats-tls/ca.crt',
        FORGE_NATS_TLS_CERT: '/etc/forge/nats-tls/tls.crt',
        FORGE_NATS_TLS_KEY: '/etc/forge/nats-tls/tls.key',
      })
      expect(pod.containers[0]!.volumeMounts).toContainEqual({ name: 'nats-tls', mountPath: '/etc/forge/nats-tls', readOnly: true })
      expect(pod.volumes).toContainEqual({ name: 'nats-tls', secret: { secretName: 'forge-nats-client-tls', defaultMode: 0o440 } })
    }
    const scaler = find(objects, 'ScaledObject', 'forge-worker').spec as { triggers: { metadata: Record<string, string>; authenticationRef: { name: string } }[] }
    expect(scaler.triggers[0]!.authenticationRef).toEqual({ name: 'forge-temporal' })
    expect(scaler.triggers[0]!.metadata['enableTLS']).toBe('true')
    expect(find(objects, 'TriggerAuthentication', 'forge-temporal').spec).toEqual({ secretTargetRef: [{ parameter: 'apiKey', name: 'forge-temporal-cloud', key: 'api-key' }] })
  })

  it('examples/hpa-cronjob.yaml: an HPA on the exported backlog, a CronJob sweep on the fleet, mTLS files, a ConfigMap suite, one model endpoint', () => {
    const { objects } = render(join(examplesDir, 'hpa-cronjob.yaml'))
    expect(objects.some((o) => o.kind === 'ScaledObject')).toBe(false)
    expect(objects.some((o) => o.metadata.name === 'forge-judge')).toBe(false)
    const hpa = find(objects, 'HorizontalPodAutoscaler', 'forge-worker').spec as Record<string, unknown>
    expect(hpa).toMatchObject({
      minReplicas: 1,
      maxReplicas: 10,
      metrics: [{ type: 'External', external: { metric: { name: 'forge_task_queue_backlog', selector: { matchLabels: { task_queue: 'forge-attempts', type: 'activity' } } }, target: { type: 'AverageValue', averageValue: '32' } } }],
    })
    const cron = find(objects, 'CronJob', 'forge-sweep-weekly')
    expect(cron.spec).toMatchObject({ schedule: '30 3 * * 0', timeZone: 'UTC', concurrencyPolicy: 'Forbid' })
    const cronPod = podOf(cron)
    expect(cronPod.containers[0]!.args).toEqual(['sweep', '/etc/forge/sweeps/weekly.yaml', '--workers', '0'])
    expect(cronPod.securityContext).toMatchObject({ runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } })
    const worker = podOf(find(objects, 'Deployment', 'forge-worker'))
    expect(worker.runtimeClassName).toBe('gvisor')
    expect(worker.containers[0]!.args).toEqual(['worker', '--role', 'all', '--concurrency', '16'])
    expect(envOf(worker.containers[0]!)).toMatchObject({
      FORGE_TEMPORAL_TLS: '1',
      FORGE_TEMPORAL_TLS_SERVER_NAME: 'temporal.internal',
      FORGE_TEMPORAL_TLS_CA_FILE: '/etc/forge/temporal-tls/ca.crt',
      FORGE_TEMPORAL_TLS_CERT_FILE: '/etc/forge/temporal-tls/tls.crt',
      FORGE_TEMPORAL_TLS_KEY_FILE: '/etc/forge/temporal-tls/tls.key',
    })
    expect(worker.containers[0]!.volumeMounts).toEqual(
      expect.arrayContaining([
        { name: 'temporal-tls', mountPath: '/etc/forge/temporal-tls', readOnly: true },
        { name: 'suite-support-regressions', mountPath: '/etc/forge/suites/support-regressions', readOnly: true },
      ]),
    )
    const agents = find(objects, 'NetworkPolicy', 'forge-agents').spec as { egress: { to: unknown[]; ports: { port: number }[] }[] }
    expect(agents.egress.at(-1)).toEqual({ to: [{ ipBlock: { cidr: '10.96.0.0/12' } }], ports: [{ protocol: 'TCP', port: 8000 }] })
  })

  it('examples/self-contained.yaml: a fixed-size fleet next to the official charts, no autoscaler', () => {
    const { objects } = render(join(examplesDir, 'self-contained.yaml'))
    expect(objects.filter((o) => ['ScaledObject', 'HorizontalPodAutoscaler'].includes(o.kind))).toEqual([])
    expect(find(objects, 'Deployment', 'forge-worker').spec!['replicas']).toBe(1)
    expect(envOf(podOf(find(objects, 'Deployment', 'forge-worker')).containers[0]!)).toMatchObject({ FORGE_TEMPORAL_ADDRESS: 'temporal-frontend:7233', FORGE_NATS_URL: 'nats://nats:4222' })
  })

  it.each(valuesFiles)("%s: every Forge container gets its role's NATS user and password and the results key through secretKeyRef; no manifest holds one in plain text", (_name, valuesFile) => {
    const { objects, file } = render(valuesFile)
    const secret = busSecretOf(valuesFile)
    const roles = new Set<string>()
    for (const o of workloadsOf(objects)) {
      for (const c of podOf(o).containers) {
        expect(busEnvOf(c), `${o.kind}/${o.metadata.name}`).toEqual(fromSecret(secret, busRoleOf(o)))
        roles.add(busRoleOf(o))
      }
    }
    expect([...roles]).toEqual(expect.arrayContaining(['worker', 'ingester']))
    const secrets = objects.filter((o) => o.kind === 'Secret')
    if (secret !== 'forge-bus') {
      expect(secrets).toEqual([])
      return
    }
    // generated: one user and password per role and a 64-hex-digit results key, base64 in `data` only
    expect(secrets.map((o) => o.metadata)).toEqual([expect.objectContaining({ name: 'forge-bus', annotations: { 'helm.sh/resource-policy': 'keep' } })])
    const data = secrets[0]!.data!
    expect(Object.keys(data).sort()).toEqual(BUS_SECRET_KEYS)
    const plain = Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]))
    expect(plain).toMatchObject({ 'worker-user': 'forge-worker', 'ingester-user': 'forge-ingester', 'cli-user': 'forge-cli', 'results-key': expect.stringMatching(/^[0-9a-f]{64}$/) })
    const secretValues = [...BUS_ROLES.map((role) => plain[`${role}-password`]!), plain['results-key']!]
    for (const password of secretValues.slice(0, 3)) expect(password).toMatch(/^[A-Za-z0-9]{32}$/)
    expect(new Set(secretValues).size).toBe(4)
    const manifest = readFileSync(file, 'utf8')
    for (const value of secretValues) {
      expect(manifest.split(value).length - 1, 'a password or the key in plain text').toBe(0)
      expect(manifest.split(Buffer.from(value).toString('base64')).length - 1, 'base64 only in the Secret').toBe(1)
    }
  })

  it('bus.existingSecret names the Secret every role reads (and none is rendered); bus.tls mounts the CA and, for mutual TLS, the client certificate', () => {
    const values = join(work, 'existing-bus.yaml')
    writeFileSync(
      values,
      [
        'bus:',
        '  existingSecret: team-bus',
        '  tls: { existingSecret: nats-ca, certKey: "", keyKey: "" }',
        'sweeps:',
        '  files:',
        '    nightly: { name: nightly, suites: [smoke], adapters: [react], models: [m], seeds: ["1"], attempts: 1 }',
        '  schedules: [{ name: nightly, cron: "0 2 * * *", sweep: nightly }]',
        '  cronJobs: [{ name: weekly, cron: "0 3 * * 0", sweep: nightly }]',
        '',
      ].join('\n'),
    )
    const { objects, status, stderr } = render(values)
    expect(status, stderr).toBe(0)
    expect(objects.filter((o) => o.kind === 'Secret')).toEqual([])
    const seen = Object.fromEntries(
      workloadsOf(objects).map((o) => {
        const [c] = podOf(o).containers
        expect(busEnvOf(c!), o.metadata.name).toEqual(fromSecret('team-bus', busRoleOf(o)))
        const tls = Object.fromEntries(Object.entries(envOf(c!)).filter(([k]) => k.startsWith('FORGE_NATS_TLS_')))
        expect(tls, o.metadata.name).toEqual({ FORGE_NATS_TLS_CA: '/etc/forge/nats-tls/ca.crt' })
        expect(podOf(o).volumes).toContainEqual({ name: 'nats-tls', secret: { secretName: 'nats-ca', defaultMode: 0o440 } })
        return [`${o.kind}/${o.metadata.name}`, busRoleOf(o)]
      }),
    )
    expect(seen).toEqual({
      'Deployment/forge-worker': 'worker',
      'Deployment/forge-judge': 'worker',
      'Deployment/forge-ingester': 'ingester',
      'Job/forge-schedule-nightly': 'cli',
      'CronJob/forge-sweep-weekly': 'cli',
    })
    // a certificate without its key (or the reverse) is refused, naming both
    const half = render(undefined, ['--set', 'bus.tls.existingSecret=nats-client', '--set', 'bus.tls.keyKey='])
    expect(half.status).not.toBe(0)
    expect(half.stderr).toContain('bus.tls: certKey and keyKey go together')
  })

  it('rejects bad values with the key named, and the validator catches a misspelled container field', () => {
    const typo = run(helm.path!, ['lint', '--strict', chart, '--set', 'worker.concurency=5'])
    expect(typo.status).not.toBe(0)
    expect(typo.stdout + typo.stderr).toContain("additional properties 'concurency' not allowed")
    const inlineKey = join(work, 'inline-key.yaml')
    writeFileSync(inlineKey, 'models:\n  secretEnv:\n    - name: OPENAI_API_KEY\n      value: sk-live-123\n')
    const inline = run(helm.path!, ['lint', '--strict', chart, '-f', inlineKey])
    expect(inline.status).not.toBe(0)
    expect(inline.stdout + inline.stderr).toMatch(/secretEnv\/0.*(missing propert|additional properties 'value')/s)
    // the single shared NATS user is gone: every role has its own from the bus Secret
    const shared = run(helm.path!, ['lint', '--strict', chart, '--set', 'nats.credentials.existingSecret=forge-nats'])
    expect(shared.status).not.toBe(0)
    expect(shared.stdout + shared.stderr).toContain("additional properties 'credentials' not allowed")
    const badSecret = run(helm.path!, ['lint', '--strict', chart, '--set', 'bus.existingSecret=Forge_Bus'])
    expect(badSecret.status).not.toBe(0)
    expect(badSecret.stdout + badSecret.stderr).toMatch(/bus.existingSecret|existingSecret.*does not match pattern/s)
    const unknownSweep = render(undefined, ['--set', 'sweeps.schedules[0].name=nightly', '--set', 'sweeps.schedules[0].cron=0 2 * * *', '--set', 'sweeps.schedules[0].sweep=nope'])
    expect(unknownSweep.status).not.toBe(0)
    expect(unknownSweep.stderr).toContain('sweeps.schedules nightly: sweep "nope" is not in sweeps.files')

    const misspelled = join(work, 'misspelled.yaml')
    writeFileSync(misspelled, 'worker:\n  extraEnv:\n    - name: FORGE_X\n      valu: "1"\n')
    const { file, status } = render(misspelled)
    expect(status).toBe(0)
    const k8s = run(validator.path!, ['--strict', file])
    expect(k8s.status).not.toBe(0)
    expect(k8s.stdout + k8s.stderr).toContain("'valu' was unexpected")
  })

  it('starts every container with a command and flags the forge CLI accepts', async () => {
    const accepted = new Map<string, Set<string>>()
    const flagsOf = async (command: string): Promise<Set<string>> => {
      if (!accepted.has(command)) {
        const base = join(root, 'dist', 'cli', 'commands', ...command.split(' '))
        const mod = (await import(existsSync(`${base}.js`) ? `${base}.js` : join(base, 'index.js'))) as { default: { flags?: Record<string, unknown> } }
        accepted.set(command, new Set(Object.keys(mod.default.flags ?? {}).map((f) => `--${f}`)))
      }
      return accepted.get(command)!
    }
    let checked = 0
    for (const [, valuesFile] of valuesFiles) {
      for (const o of render(valuesFile).objects) {
        if (!['Deployment', 'Job', 'CronJob'].includes(o.kind)) continue
        for (const c of podOf(o).containers) {
          const [role, ...rest] = c.args!
          // deploy/entrypoint.sh: worker and judge are `forge worker`, ingester `forge ingester`, the rest pass through
          const words = role === 'judge' ? ['worker'] : role === 'worker' || role === 'ingester' ? [role] : [role!, ...(rest[0] && !rest[0].startsWith('-') && !rest[0].startsWith('/') ? [rest.shift()!] : [])]
          const flags = await flagsOf(words.join(' '))
          for (const arg of rest.filter((a) => a.startsWith('--'))) expect(flags, `${o.kind}/${o.metadata.name}: forge ${words.join(' ')} ${arg}`).toContain(arg)
          checked++
        }
      }
    }
    expect(checked).toBeGreaterThanOrEqual(15)
  })
})

describe('helm/nats: what an external NATS must configure', () => {
  const files = { chartValues: join(root, 'helm', 'nats', 'forge-auth-values.yaml'), natsConf: join(root, 'helm', 'nats', 'forge-authorization.conf') }

  it('grants each role exactly what rolePermissions() gives, as NATS chart values and as nats.conf (after a change there: vitest run test/deploy/helm.test.ts -u)', async () => {
    const expected = externalNatsConfig()
    await expect(expected.chartValues).toMatchFileSnapshot(files.chartValues)
    await expect(expected.natsConf).toMatchFileSnapshot(files.natsConf)
    // and README shows both whole (test/integration/docs-examples.test.ts checks `file:` blocks too): paste them in after -u
    const readme = readFileSync(join(root, 'README.md'), 'utf8')
    expect(readme).toContain(`<!-- file: helm/nats/forge-auth-values.yaml -->\n\`\`\`yaml\n${expected.chartValues}\`\`\`\n`)
    expect(readme).toContain(`<!-- file: helm/nats/forge-authorization.conf -->\n\`\`\`text\n${expected.natsConf}\`\`\`\n`)
  })

  it('forge-authorization.conf: a real nats-server takes it; each role joins with the user and password from its environment, a wrong password is refused, a worker cannot answer store queries', async () => {
    const dir = mkdtempSync(join(work, 'nats-'))
    copyFileSync(files.natsConf, join(dir, 'forge-authorization.conf'))
    const port = await new Promise<number>((resolve) => {
      const server = createServer().listen(0, '127.0.0.1', () => {
        const { port: free } = server.address() as { port: number }
        server.close(() => resolve(free))
      })
    })
    writeFileSync(join(dir, 'nats.conf'), `listen: 127.0.0.1:${port}\njetstream { store_dir: "${join(dir, 'js')}" }\ninclude forge-authorization.conf\n`)
    const passwords = Object.fromEntries(BUS_ROLES.map((role) => [role, `${role}-secret-1`])) as Record<BusRole, string>
    const env = { ...process.env, ...Object.fromEntries(BUS_ROLES.flatMap((role) => [[natsVariable(role, 'user'), `forge-${role}`], [natsVariable(role, 'password'), passwords[role]]])) }
    const server = spawn(findBinary('nats-server'), ['-c', join(dir, 'nats.conf')], { env, stdio: ['ignore', 'ignore', 'pipe'] })
    let log = ''
    server.stderr.on('data', (d: Buffer) => (log += d.toString()))
    const url = `nats://127.0.0.1:${port}`
    try {
      const joins = async (user: string, pass: string) => {
        const nc = await connect({ servers: url, user, pass })
        await nc.close()
        return true
      }
      let up = false
      for (let i = 0; i < 100 && !up && server.exitCode === null; i++) up = await joins('forge-worker', passwords.worker).catch(async () => (await sleep(100), false))
      expect(up, log).toBe(true)
      for (const role of BUS_ROLES) expect(await joins(`forge-${role}`, passwords[role])).toBe(true)
      await expect(joins('forge-worker', passwords.ingester)).rejects.toThrow(/Authorization Violation/)
      const worker = await connect({ servers: url, user: 'forge-worker', pass: passwords.worker })
      try {
        expect(String(await worker.subscribe('forge.store.query').closed)).toMatch(/Permissions Violation for Subscription to "forge.store.query"/)
      } finally {
        await worker.close()
      }
    } finally {
      server.kill('SIGTERM')
    }
  })

  it("reads every user and password from a key the chart's bus Secret has", () => {
    const values = parse(externalNatsConfig().chartValues) as { container: { env: Record<string, { valueFrom: { secretKeyRef: { name: string; key: string } } }> } }
    const refs = Object.values(values.container.env).map((e) => e.valueFrom.secretKeyRef)
    expect(refs.map((r) => r.name)).toEqual(Array(6).fill('forge-bus'))
    expect(refs.map((r) => r.key).sort()).toEqual(BUS_SECRET_KEYS.filter((k) => k !== 'results-key'))
  })
})
