{{/* Names and labels */}}
{{- define "forge.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "forge.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "forge.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ include "forge.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: forge
{{- end -}}

{{/* selector labels of one component: (dict "ctx" $ "component" "worker") */}}
{{- define "forge.selectorLabels" -}}
app.kubernetes.io/name: {{ include "forge.name" .ctx }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "forge.componentLabels" -}}
{{ include "forge.labels" .ctx }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "forge.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{- define "forge.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "forge.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* a URL with $(USER):$(PASSWORD)@ after each scheme, the variables defined just before it: (dict "url" … "user" "FORGE_NATS_USER" "password" "FORGE_NATS_PASSWORD") */}}
{{- define "forge.urlWithCredentials" -}}
{{- $parts := list -}}
{{- range $u := splitList "," .url -}}
{{- $parts = append $parts (regexReplaceAll "^([a-z]+://)" (trim $u) (printf "${1}$(%s):$(%s)@" $.user $.password)) -}}
{{- end -}}
{{- join "," $parts -}}
{{- end -}}

{{/* the ClickHouse URL: inserts through the Distributed table wait for the shards on a cluster (ack after commit) */}}
{{- define "forge.clickhouseUrl" -}}
{{- $url := .Values.clickhouse.url -}}
{{- if .Values.clickhouse.cluster -}}
{{- $url = printf "%s%sch_insert_distributed_sync=1" $url (ternary "&" "?" (contains "?" $url)) -}}
{{- end -}}
{{- if .Values.clickhouse.credentials.existingSecret -}}
{{- include "forge.urlWithCredentials" (dict "url" $url "user" "FORGE_CLICKHOUSE_USER" "password" "FORGE_CLICKHOUSE_PASSWORD") -}}
{{- else -}}
{{- $url -}}
{{- end -}}
{{- end -}}

{{/* the settings every Forge container gets: where Temporal, NATS and ClickHouse are, and how to reach them */}}
{{- define "forge.serverEnv" -}}
- name: FORGE_TEMPORAL_ADDRESS
  value: {{ .Values.temporal.address | quote }}
- name: FORGE_TEMPORAL_NAMESPACE
  value: {{ .Values.temporal.namespace | quote }}
- name: FORGE_TASK_QUEUE
  value: {{ .Values.temporal.taskQueue | quote }}
- name: FORGE_JUDGE_TASK_QUEUE
  value: {{ .Values.temporal.judgeTaskQueue | quote }}
{{- if .Values.temporal.tls.enabled }}
- name: FORGE_TEMPORAL_TLS
  value: "1"
{{- if .Values.temporal.tls.serverName }}
- name: FORGE_TEMPORAL_TLS_SERVER_NAME
  value: {{ .Values.temporal.tls.serverName | quote }}
{{- end }}
{{- if .Values.temporal.tls.existingSecret }}
- name: FORGE_TEMPORAL_TLS_CA_FILE
  value: /etc/forge/temporal-tls/ca.crt
- name: FORGE_TEMPORAL_TLS_CERT_FILE
  value: /etc/forge/temporal-tls/tls.crt
- name: FORGE_TEMPORAL_TLS_KEY_FILE
  value: /etc/forge/temporal-tls/tls.key
{{- end }}
{{- end }}
{{- if .Values.temporal.apiKey.existingSecret }}
- name: FORGE_TEMPORAL_API_KEY
  valueFrom:
    secretKeyRef:
      name: {{ .Values.temporal.apiKey.existingSecret }}
      key: {{ .Values.temporal.apiKey.key }}
{{- end }}
- name: FORGE_NATS_URL
  value: {{ .Values.nats.url | quote }}
{{- if .Values.clickhouse.credentials.existingSecret }}
- name: FORGE_CLICKHOUSE_USER
  valueFrom:
    secretKeyRef:
      name: {{ .Values.clickhouse.credentials.existingSecret }}
      key: {{ .Values.clickhouse.credentials.userKey }}
- name: FORGE_CLICKHOUSE_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ .Values.clickhouse.credentials.existingSecret }}
      key: {{ .Values.clickhouse.credentials.passwordKey }}
{{- end }}
- name: FORGE_CLICKHOUSE_URL
  value: {{ include "forge.clickhouseUrl" . | quote }}
{{- if .Values.clickhouse.cluster }}
- name: FORGE_CLICKHOUSE_CLUSTER
  value: {{ .Values.clickhouse.cluster | quote }}
- name: FORGE_CLICKHOUSE_KEEPER_PATH
  value: {{ .Values.clickhouse.keeperPath | quote }}
{{- end }}
{{- if .Values.trustedCaSecret }}
- name: NODE_EXTRA_CA_CERTS
  value: /etc/forge/trusted-ca/ca.crt
{{- end }}
- name: FORGE_HEALTH_PORT
  value: {{ .Values.metrics.port | quote }}
- name: FORGE_LOG_LEVEL
  value: {{ .Values.logLevel | quote }}
- name: FORGE_HOME
  value: /tmp/forge
{{- end -}}

{{/* the Secret with the bus's per-role users and the results key (templates/bus-secret.yaml) */}}
{{- define "forge.busSecretName" -}}
{{- .Values.bus.existingSecret | default (printf "%s-bus" (include "forge.fullname" .)) -}}
{{- end -}}

{{/* one role's NATS user and password and the results key, from the bus Secret; TLS file paths: (dict "ctx" $ "role" "worker") */}}
{{- define "forge.busEnv" -}}
{{- $secret := include "forge.busSecretName" .ctx -}}
{{- if not (has .role (list "worker" "ingester" "cli")) -}}
{{- fail (printf "forge.busEnv: unknown bus role %q" .role) -}}
{{- end -}}
- name: FORGE_NATS_USER
  valueFrom:
    secretKeyRef:
      name: {{ $secret }}
      key: {{ .role }}-user
- name: FORGE_NATS_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ $secret }}
      key: {{ .role }}-password
- name: FORGE_RESULTS_KEY
  valueFrom:
    secretKeyRef:
      name: {{ $secret }}
      key: results-key
{{- with .ctx.Values.bus.tls }}
{{- if .existingSecret }}
{{- if ne (empty .certKey) (empty .keyKey) }}
{{- fail "bus.tls: certKey and keyKey go together (both set for mutual TLS, both \"\" for none)" }}
{{- end }}
- name: FORGE_NATS_TLS_CA
  value: /etc/forge/nats-tls/{{ .caKey }}
{{- if .certKey }}
- name: FORGE_NATS_TLS_CERT
  value: /etc/forge/nats-tls/{{ .certKey }}
- name: FORGE_NATS_TLS_KEY
  value: /etc/forge/nats-tls/{{ .keyKey }}
{{- end }}
{{- end }}
{{- end }}
{{- end -}}

{{/* model endpoint and keys: worker, judge and sweep jobs only */}}
{{- define "forge.modelEnv" -}}
{{- if .Values.models.baseUrl }}
- name: OPENAI_BASE_URL
  value: {{ .Values.models.baseUrl | quote }}
{{- end }}
{{- if .Values.models.judgeModel }}
- name: FORGE_JUDGE_MODEL
  value: {{ .Values.models.judgeModel | quote }}
{{- end }}
{{- range .Values.models.secretEnv }}
- name: {{ .name }}
  valueFrom:
    secretKeyRef:
      name: {{ .secretName }}
      key: {{ .key }}
{{- end }}
{{- end -}}

{{/* volumes every Forge pod has: /tmp (the only writable place), TLS material, suites and sweeps */}}
{{- define "forge.volumes" -}}
- name: tmp
  emptyDir:
    sizeLimit: {{ .Values.tmpVolume.sizeLimit }}
{{- if and .Values.temporal.tls.enabled .Values.temporal.tls.existingSecret }}
- name: temporal-tls
  secret:
    secretName: {{ .Values.temporal.tls.existingSecret }}
    defaultMode: 0440
{{- end }}
{{- if .Values.bus.tls.existingSecret }}
- name: nats-tls
  secret:
    secretName: {{ .Values.bus.tls.existingSecret }}
    # 0440, written in decimal so no YAML reader takes it for 440
    defaultMode: 288
{{- end }}
{{- if .Values.trustedCaSecret }}
- name: trusted-ca
  secret:
    secretName: {{ .Values.trustedCaSecret }}
    defaultMode: 0444
{{- end }}
{{- range .Values.suites.configMaps }}
- name: suite-{{ .name }}
  configMap:
    name: {{ .configMap }}
{{- if .items }}
    items:
{{ toYaml .items | indent 6 }}
{{- end }}
{{- end }}
{{- if .Values.sweeps.files }}
- name: sweeps
  configMap:
    name: {{ include "forge.fullname" . }}-sweeps
{{- end }}
{{- end -}}

{{- define "forge.volumeMounts" -}}
- name: tmp
  mountPath: /tmp
{{- if and .Values.temporal.tls.enabled .Values.temporal.tls.existingSecret }}
- name: temporal-tls
  mountPath: /etc/forge/temporal-tls
  readOnly: true
{{- end }}
{{- if .Values.bus.tls.existingSecret }}
- name: nats-tls
  mountPath: /etc/forge/nats-tls
  readOnly: true
{{- end }}
{{- if .Values.trustedCaSecret }}
- name: trusted-ca
  mountPath: /etc/forge/trusted-ca
  readOnly: true
{{- end }}
{{- range .Values.suites.configMaps }}
- name: suite-{{ .name }}
  mountPath: /etc/forge/suites/{{ .name }}
  readOnly: true
{{- end }}
{{- if .Values.sweeps.files }}
- name: sweeps
  mountPath: /etc/forge/sweeps
  readOnly: true
{{- end }}
{{- end -}}

{{/* probes on the health endpoint every role serves */}}
{{- define "forge.probes" -}}
startupProbe:
  httpGet:
    path: /healthz
    port: metrics
  periodSeconds: 2
  failureThreshold: 90
livenessProbe:
  httpGet:
    path: /healthz
    port: metrics
  periodSeconds: 10
  timeoutSeconds: 5
  failureThreshold: 6
readinessProbe:
  httpGet:
    path: /readyz
    port: metrics
  periodSeconds: 5
  timeoutSeconds: 5
  failureThreshold: 2
{{- end -}}

{{- define "forge.podSecurity" -}}
serviceAccountName: {{ include "forge.serviceAccountName" . }}
automountServiceAccountToken: false
securityContext:
{{ toYaml .Values.podSecurityContext | indent 2 }}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
{{ toYaml . | indent 2 }}
{{- end }}
{{- end -}}

{{- define "forge.containerSecurity" -}}
securityContext:
{{ toYaml .Values.securityContext | indent 2 }}
{{- end -}}

{{/* NetworkPolicy pieces */}}
{{- define "forge.np.peer" -}}
- to:
    - namespaceSelector:
        matchLabels:
          {{- toYaml .namespaceSelector | nindent 10 }}
      {{- if .podSelector }}
      podSelector:
        matchLabels:
          {{- toYaml .podSelector | nindent 10 }}
      {{- end }}
  ports:
    {{- range .ports }}
    - protocol: TCP
      port: {{ . }}
    {{- end }}
{{- end -}}

{{- define "forge.np.dns" -}}
- to:
    - namespaceSelector:
        matchLabels:
          {{- toYaml .namespaceSelector | nindent 10 }}
      podSelector:
        matchLabels:
          {{- toYaml .podSelector | nindent 10 }}
  ports:
    - protocol: UDP
      port: 53
    - protocol: TCP
      port: 53
{{- end -}}

{{- define "forge.np.metricsIngress" -}}
ingress:
  - from:
      {{- range .np.metricsFrom }}
      - namespaceSelector:
          matchLabels:
            {{- toYaml .namespaceSelector | nindent 12 }}
        {{- if .podSelector }}
        podSelector:
          matchLabels:
            {{- toYaml .podSelector | nindent 12 }}
        {{- end }}
      {{- end }}
    ports:
      - protocol: TCP
        port: {{ .port }}
{{- end }}
