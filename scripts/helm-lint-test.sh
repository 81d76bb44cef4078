#!/usr/bin/env bash
# Checks the Helm chart (helm/tunefleet) and the compose files (docker/) without a cluster or
# a Docker engine: helm lint (plain and --strict), helm template with several value sets and the
# kinds each must render, values.schema.json rejecting bad values, the Grafana dashboard JSON,
# and the YAML of docker/. Ends with an "N passed, M failed" line; exits non-zero on any failure.
#
#   scripts/helm-lint-test.sh            (from anywhere; helm comes from scripts/helm.sh)
#   TUNEFLEET_HELM=/path/to/helm scripts/helm-lint-test.sh
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
chart=$root/helm/tunefleet
dashboard=$chart/dashboards/tunefleet.json
# Debian's Python (with python3-yaml) is /usr/bin/python3, not the first python3 on PATH.
py=/usr/bin/python3
[[ -x $py ]] || py=$(command -v python3)

passed=0
failed=0
pass() { echo "PASS: $1"; passed=$((passed + 1)); }
fail() { echo "FAIL: $1${2:+: $2}"; failed=$((failed + 1)); }
summary() {
  echo "$passed passed, $failed failed"
  ((failed == 0))
}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if ! helm=$("$root/scripts/helm.sh"); then
  fail "helm binary" "scripts/helm.sh could not provide helm"
  summary
  exit 1
fi
pass "helm binary ($("$helm" version --short 2>/dev/null))"

# run NAME CMD...: passes when CMD exits 0; on failure shows the tail of its output.
run() {
  local name=$1
  shift
  if "$@" >"$work/out" 2>&1; then
    pass "$name"
  else
    fail "$name" "$(tail -n 15 "$work/out")"
  fi
}

# render FILE ARGS...: helm template into FILE.
render() {
  local out=$1
  shift
  "$helm" template tf "$chart" --namespace tunefleet "$@" >"$out" 2>"$out.err"
}

# expect_kinds NAME FILE KIND...: FILE contains a document of each KIND.
expect_kinds() {
  local name=$1 file=$2 missing=() k
  shift 2
  for k in "$@"; do
    grep -qx "kind: $k" "$file" || missing+=("$k")
  done
  if ((${#missing[@]})); then
    fail "$name" "missing kinds: ${missing[*]}"
  else
    pass "$name"
  fi
}

# absent_kinds NAME FILE KIND...: FILE contains no document of any KIND.
absent_kinds() {
  local name=$1 file=$2 present=() k
  shift 2
  for k in "$@"; do
    grep -qx "kind: $k" "$file" && present+=("$k")
  done
  if ((${#present[@]})); then
    fail "$name" "unexpected kinds: ${present[*]}"
  else
    pass "$name"
  fi
}

# expect_grep NAME FILE PATTERN / reject_grep NAME FILE PATTERN (extended regex).
expect_grep() { if grep -Eq -- "$3" "$2"; then pass "$1"; else fail "$1" "no match for /$3/"; fi; }
reject_grep() { if grep -Eq -- "$3" "$2"; then fail "$1" "unexpected match for /$3/"; else pass "$1"; fi; }

# must_reject NAME ARGS...: helm template with ARGS must fail (values.schema.json or a fail call).
must_reject() {
  local name=$1
  shift
  if render "$work/bad.yaml" "$@"; then
    fail "$name" "helm template accepted: $*"
  else
    pass "$name ($(grep -m1 -E "at '|error" "$work/bad.yaml.err" | sed 's/^ *//'))"
  fi
}

# ---- dashboard ----
run "dashboard JSON parses" "$py" -m json.tool "$dashboard"
run "dashboard has one row per concern and uses the exported metrics and label values" "$py" - "$dashboard" "$root/common/src/status.cc" <<'EOF'
import json, re, sys
d = json.load(open(sys.argv[1]))
rows = [p["title"] for p in d["panels"] if p.get("type") == "row"]
assert len(rows) >= 3, f"expected >= 3 rows, got {rows}"
for word in ("API", "Workers", "Knowledge"):
    assert any(word in r for r in rows), f"no row about {word}: {rows}"
exprs = " ".join(t.get("expr", "") for p in d["panels"] for t in p.get("targets", []))
metrics = ["tunefleet_tasks", "tunefleet_jobs_dispatched_total", "tunefleet_jobs_completed_total",
           "tunefleet_jobs_requeued_total", "tunefleet_evaluations_total", "tunefleet_workers_connected",
           "tunefleet_worker_slots", "tunefleet_lookups_total", "tunefleet_kb_entries",
           "tunefleet_client_requests_total", "tunefleet_duplicate_results_total",
           "tunefleet_rejected_results_total", "tunefleet_job_duration_seconds_bucket",
           "tunefleet_planning_seconds_bucket"]
missing = [m for m in metrics if m not in exprs]
assert not missing, f"metrics not on the dashboard: {missing}"
# The `code` label carries StatusCodeName() (upper case; PromQL matching is case-sensitive).
codes = set(re.findall(r'return "([A-Z_]+)";', open(sys.argv[2]).read()))
assert "OK" in codes, f"no status code names read from {sys.argv[2]}"
used = set(re.findall(r'code!?=~?"([^"]*)"', exprs))
assert used, "no panel filters on the code label"
unknown = {c for u in used for c in u.split("|") if c not in codes}
assert not unknown, f"code label values the coordinator never exports: {unknown} (it exports {sorted(codes)})"
for p in d["panels"]:
    if p.get("type") != "row":
        assert p.get("datasource", {}).get("uid") == "${datasource}", f"panel {p['title']!r}: datasource"
        assert p.get("targets"), f"panel {p['title']!r} has no query"
ids = [p["id"] for p in d["panels"]]
assert len(ids) == len(set(ids)), "duplicate panel ids"
EOF

# ---- lint ----
run "helm lint (default values)" "$helm" lint "$chart"
run "helm lint --strict" "$helm" lint --strict "$chart"
run "helm lint --strict (CURVE, ServiceMonitor, HPA off)" "$helm" lint --strict "$chart" \
  --set security.curve.enabled=false --set metrics.serviceMonitor.enabled=false \
  --set worker.autoscaling.enabled=false

# ---- template: defaults ----
all_kinds=(StatefulSet Deployment HorizontalPodAutoscaler Service ConfigMap Secret
  PodDisruptionBudget ServiceMonitor)
if render "$work/default.yaml"; then
  pass "helm template (default values)"
  expect_kinds "default values render every kind" "$work/default.yaml" "${all_kinds[@]}"
  expect_grep "grafana dashboard ConfigMap is labelled" "$work/default.yaml" '^    grafana_dashboard: "1"$'
  expect_grep "HPA is autoscaling/v2 on CPU" "$work/default.yaml" '^apiVersion: autoscaling/v2$'
  expect_grep "ServiceMonitor is monitoring.coreos.com/v1" "$work/default.yaml" '^apiVersion: monitoring.coreos.com/v1$'
  expect_grep "StatefulSet has a volumeClaimTemplate" "$work/default.yaml" '^  volumeClaimTemplates:$'
  expect_grep "probes are TCP on the client port" "$work/default.yaml" '^              port: client$'
  expect_grep "coordinator binds the contract ports" "$work/default.yaml" '"tcp://0.0.0.0:5556"'
  expect_grep "workers dial the coordinator's stable name" "$work/default.yaml" \
    '"tcp://tf-tunefleet-coordinator-0\.tf-tunefleet-coordinator-hl\.tunefleet\.svc:5556"'
  expect_grep "CURVE keys are mounted" "$work/default.yaml" 'secretName: tf-tunefleet-curve'
  reject_grep "HPA owns the worker replica count" \
    <(sed -n '/^kind: Deployment$/,/^---$/p' "$work/default.yaml") '^  replicas:'
else
  fail "helm template (default values)" "$(tail -n 15 "$work/default.yaml.err")"
fi

# ---- template: CURVE and ServiceMonitor off (values file override) ----
cat >"$work/insecure.yaml" <<'EOF'
security:
  curve:
    enabled: false
metrics:
  serviceMonitor:
    enabled: false
worker:
  autoscaling:
    enabled: false
  replicas: 3
EOF
if render "$work/off.yaml" -f "$work/insecure.yaml"; then
  pass "helm template (CURVE, ServiceMonitor, HPA off)"
  expect_kinds "override still renders the core kinds" "$work/off.yaml" \
    StatefulSet Deployment Service ConfigMap PodDisruptionBudget
  absent_kinds "override drops Secret, ServiceMonitor, HPA" "$work/off.yaml" \
    Secret ServiceMonitor HorizontalPodAutoscaler
  reject_grep "no CURVE volume when CURVE is off" "$work/off.yaml" 'curve-keys'
  expect_grep "fixed worker replicas without HPA" "$work/off.yaml" '^  replicas: 3$'
else
  fail "helm template (CURVE, ServiceMonitor, HPA off)" "$(tail -n 15 "$work/off.yaml.err")"
fi

# ---- template: existing Secret, supplied keys, no persistence ----
if render "$work/existing.yaml" --set security.curve.existingSecret=my-curve-keys \
  --set coordinator.persistence.enabled=false; then
  pass "helm template (existingSecret, no persistence)"
  absent_kinds "existingSecret: the chart creates no Secret" "$work/existing.yaml" Secret
  expect_grep "existingSecret is mounted" "$work/existing.yaml" 'secretName: my-curve-keys'
  reject_grep "no volumeClaimTemplates without persistence" "$work/existing.yaml" 'volumeClaimTemplates'
else
  fail "helm template (existingSecret, no persistence)" "$(tail -n 15 "$work/existing.yaml.err")"
fi
key=$(printf 'k%.0s' {1..40})
if render "$work/keys.yaml" --set "security.curve.keys.serverPublic=$key,security.curve.keys.serverSecret=$key" \
  --set "security.curve.keys.workerPublic=$key,security.curve.keys.workerSecret=$key" \
  --set "security.curve.keys.clientPublic={$key}"; then
  reject_grep "supplied keys replace the placeholder" "$work/keys.yaml" 'REPLACE_ME'
else
  fail "helm template (supplied CURVE keys)" "$(tail -n 15 "$work/keys.yaml.err")"
fi

# ---- every rendered document is well-formed ----
run "rendered manifests parse as YAML with apiVersion/kind/name" "$py" - \
  "$work/default.yaml" "$work/off.yaml" "$work/existing.yaml" <<'EOF'
import sys, yaml
for path in sys.argv[1:]:
    for doc in yaml.safe_load_all(open(path)):
        if doc is None:
            continue
        for field in ("apiVersion", "kind"):
            assert doc.get(field), f"{path}: document without {field}"
        name = doc.get("metadata", {}).get("name", "")
        assert name and len(name) <= 63, f"{path}: {doc['kind']} name {name!r}"
EOF

# ---- values.schema.json rejects bad values ----
must_reject "schema rejects worker.replicas=notanumber" --set worker.replicas=notanumber
must_reject "schema rejects worker.slots=0" --set worker.slots=0
must_reject "schema rejects image.pullPolicy=Sometimes" --set image.pullPolicy=Sometimes
must_reject "schema rejects an unknown worker value" --set worker.replica=2
must_reject "schema rejects a short CURVE key" --set security.curve.keys.serverPublic=short
must_reject "chart rejects minReplicas > maxReplicas" \
  --set worker.autoscaling.minReplicas=5 --set worker.autoscaling.maxReplicas=3

# ---- docker/ ----
run "docker/ YAML parses; Prometheus scrapes coordinator:9464; compose mounts the dashboard" \
  "$py" - "$root" <<'EOF'
import os, sys, yaml
root = sys.argv[1]
d = os.path.join(root, "docker")
compose = yaml.safe_load(open(os.path.join(d, "compose.yaml")))
svcs = compose["services"]
for s in ("coordinator", "worker", "prometheus", "grafana"):
    assert s in svcs, f"compose: no {s} service"
assert svcs["worker"]["deploy"]["replicas"] == 2, "compose: expected 2 workers"
assert any(str(v).endswith(":/var/lib/tunefleet") for v in svcs["coordinator"]["volumes"]), \
    "compose: coordinator has no volume for /var/lib/tunefleet"
prom = yaml.safe_load(open(os.path.join(d, "prometheus.yml")))
targets = [t for sc in prom["scrape_configs"] for c in sc.get("static_configs", []) for t in c["targets"]]
assert "coordinator:9464" in targets, f"prometheus.yml targets: {targets}"
for sub in ("datasources/prometheus.yaml", "dashboards/tunefleet.yaml"):
    yaml.safe_load(open(os.path.join(d, "grafana/provisioning", sub)))
for v in svcs["grafana"]["volumes"]:
    host = v.split(":")[0]
    if host.startswith("."):
        assert os.path.exists(os.path.join(d, host)), f"compose: grafana mounts missing {host}"
assert os.path.exists(os.path.join(d, "../helm/tunefleet/dashboards/tunefleet.json"))
EOF
expect_grep "Dockerfile builds with tests and bench off" "$root/docker/Dockerfile" \
  '-DTUNEFLEET_BUILD_TESTS=OFF -DTUNEFLEET_BUILD_BENCH=OFF'
expect_grep "Dockerfile runs as a non-root user" "$root/docker/Dockerfile" '^USER 10001'

summary
