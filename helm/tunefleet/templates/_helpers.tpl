{{/* Chart name, overridable. */}}
{{- define "tunefleet.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Fully qualified app name, at most 63 characters (DNS label). */}}
{{- define "tunefleet.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "tunefleet.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Component names. Suffixes are short so names stay under 63 characters. */}}
{{/*
The coordinator's StatefulSet, client Service, PDB and ServiceMonitor name: at most 52
characters, because the StatefulSet controller labels each pod with controller-revision-hash =
NAME-<10 characters>, a label value limited to 63; past 52 it cannot create the pod. The prefix
is cut (not the whole name) so the "-coordinator" suffix survives and names stay distinct.
*/}}
{{- define "tunefleet.coordinator.fullname" -}}
{{- printf "%s-coordinator" (include "tunefleet.fullname" . | trunc 40 | trimSuffix "-") }}
{{- end }}
{{/* The headless Service (the StatefulSet's serviceName), named after the StatefulSet. */}}
{{- define "tunefleet.coordinator.headless" -}}
{{- printf "%s-hl" (include "tunefleet.coordinator.fullname" .) }}
{{- end }}
{{- define "tunefleet.worker.fullname" -}}
{{- printf "%s-worker" (include "tunefleet.fullname" . | trunc 56 | trimSuffix "-") }}
{{- end }}

{{/* Common labels; call with (dict "ctx" $ "component" "coordinator"). */}}
{{- define "tunefleet.labels" -}}
helm.sh/chart: {{ include "tunefleet.chart" .ctx }}
{{ include "tunefleet.selectorLabels" . }}
app.kubernetes.io/version: {{ .ctx.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .ctx.Release.Service }}
app.kubernetes.io/part-of: tunefleet
{{- end }}

{{- define "tunefleet.selectorLabels" -}}
app.kubernetes.io/name: {{ include "tunefleet.name" .ctx }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
{{- with .component }}
app.kubernetes.io/component: {{ . }}
{{- end }}
{{- end }}

{{- define "tunefleet.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "tunefleet.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "tunefleet.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{/* The Secret holding the CURVE keys: the user's existing one or the chart's (<= 63 characters). */}}
{{- define "tunefleet.curve.secretName" -}}
{{- default (printf "%s-curve" (include "tunefleet.fullname" . | trunc 57 | trimSuffix "-")) .Values.security.curve.existingSecret }}
{{- end }}

{{/*
The address workers dial: the coordinator pod's stable name behind the headless Service. Both
parts come from the helpers the StatefulSet and the Service use, so they always match.
*/}}
{{- define "tunefleet.coordinator.workerEndpoint" -}}
{{- printf "tcp://%s-0.%s.%s.svc:%d" (include "tunefleet.coordinator.fullname" .) (include "tunefleet.coordinator.headless" .) .Release.Namespace (int .Values.coordinator.ports.worker) }}
{{- end }}

{{/*
CURVE key volume + env, shared by coordinator and worker pods; call with
(dict "ctx" $ "component" "coordinator"|"worker"). Each pod gets only the files it needs:
workers never see the server's secret key, the coordinator never sees the worker's.
*/}}
{{- define "tunefleet.curve.volume" -}}
{{- if .ctx.Values.security.curve.enabled -}}
- name: curve-keys
  secret:
    secretName: {{ include "tunefleet.curve.secretName" .ctx }}
    # Group-readable so the non-root user (fsGroup) can read the files.
    defaultMode: 0440
    items:
      - key: server.public
        path: server.public
{{- if eq .component "coordinator" }}
      - key: server.secret
        path: server.secret
      - key: worker.public
        path: worker.public
      - key: clients.public
        path: clients.public
      - key: readers.public
        path: readers.public
{{- else }}
      - key: worker.public
        path: worker.public
      - key: worker.secret
        path: worker.secret
{{- end }}
{{- end }}
{{- end }}

{{- define "tunefleet.curve.volumeMount" -}}
{{- if .Values.security.curve.enabled -}}
- name: curve-keys
  mountPath: {{ .Values.security.curve.mountPath }}
  readOnly: true
{{- end }}
{{- end }}

{{- define "tunefleet.curve.env" -}}
- name: TUNEFLEET_CURVE_ENABLED
  value: {{ .Values.security.curve.enabled | quote }}
{{- if .Values.security.curve.enabled }}
- name: TUNEFLEET_CURVE_DIR
  value: {{ .Values.security.curve.mountPath | quote }}
{{- end }}
{{- end }}

{{/*
A Prometheus duration as used by metrics.serviceMonitor (an integer and one of ms, s, m, h;
values.schema.json allows nothing else) in milliseconds, so durations can be compared.
*/}}
{{- define "tunefleet.durationMillis" -}}
{{- $n := regexFind "^[0-9]+" . }}
{{- $scale := get (dict "ms" 1 "s" 1000 "m" 60000 "h" 3600000) (trimPrefix $n .) }}
{{- if or (not $n) (not $scale) }}
{{- fail (printf "%q is not a duration like 15s, 1m or 500ms" .) }}
{{- end }}
{{- mul (int64 $n) $scale }}
{{- end }}
