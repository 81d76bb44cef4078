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

# render FILE ARGS...: helm template into FILE, for a cluster that serves the Prometheus
# Operator's ServiceMonitor CRD (render_plain: one that does not).
render_plain() {
  local out=$1
  shift
  "$helm" template tf "$chart" --namespace tunefleet "$@" >"$out" 2>"$out.err"
}
render() {
  local out=$1
  shift
  render_plain "$out" --api-versions monitoring.coreos.com/v1/ServiceMonitor \
    --api-versions monitoring.coreos.com/v1/PrometheusRule "$@"
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

# must_reject_with NAME REGEX ARGS...: like must_reject, and the error must match REGEX (extended),
# so a template's fail message, not some unrelated error, is what stopped the render.
must_reject_with() {
  local name=$1 want=$2
  shift 2
  if render "$work/bad.yaml" "$@"; then
    fail "$name" "helm template accepted: $*"
  elif grep -Eq -- "$want" "$work/bad.yaml.err"; then
    pass "$name ($(grep -m1 -E -- "$want" "$work/bad.yaml.err" | sed 's/^.*: //'))"
  else
    fail "$name" "error does not match /$want/: $(head -n 3 "$work/bad.yaml.err")"
  fi
}

# ---- dashboard ----
run "dashboard JSON parses" "$py" -m json.tool "$dashboard"
run "dashboard has one row per concern, shows every exported metric and uses their label values" "$py" - "$dashboard" "$root/common/src/status.cc" "$root/coordinator/metrics.cc" "$root/coordinator/loop_watchdog.cc" <<'EOF'
import json, re, sys
d = json.load(open(sys.argv[1]))
rows = [p["title"] for p in d["panels"] if p.get("type") == "row"]
assert len(rows) >= 3, f"expected >= 3 rows, got {rows}"
for word in ("API", "Workers", "Knowledge"):
    assert any(word in r for r in rows), f"no row about {word}: {rows}"
exprs = " ".join(t.get("expr", "") for p in d["panels"] for t in p.get("targets", []))
# Every family the coordinator registers (coordinator/metrics.cc), histograms by their
# buckets. Whole names: a substring test would count tunefleet_failed_evaluations_total
# as tunefleet_evaluations_total.
metrics = re.findall(r'Name\("(tunefleet_[a-z0-9_]+)"\)', open(sys.argv[3]).read())
assert len(metrics) >= 15, f"read only {metrics} from {sys.argv[3]}"
# The loop watchdog's gauge is computed at scrape time (coordinator/loop_watchdog.cc).
watchdog = re.findall(r'family\.name = "(tunefleet_[a-z0-9_]+)"', open(sys.argv[4]).read())
assert watchdog, f"no gauge name read from {sys.argv[4]}"
metrics += watchdog
shown = set(re.findall(r"tunefleet_[a-z0-9_]+", exprs))
shown |= {m[: -len("_bucket")] for m in shown if m.endswith("_bucket")}
missing = [m for m in metrics if m not in shown]
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
# Grafana pushes overlapping panels around on load; the layout should not depend on that.
cells = {}
for p in d["panels"]:
    g = p["gridPos"]
    assert g["x"] >= 0 and g["x"] + g["w"] <= 24, f"panel {p['title']!r} is wider than the grid"
    for x in range(g["x"], g["x"] + g["w"]):
        for y in range(g["y"], g["y"] + g["h"]):
            assert (x, y) not in cells, f"panels {cells[(x, y)]!r} and {p['title']!r} overlap"
            cells[(x, y)] = p["title"]
EOF

# ---- lint ----
run "helm lint (default values)" "$helm" lint "$chart"
run "helm lint --strict" "$helm" lint --strict "$chart"
run "helm lint --strict (CURVE, ServiceMonitor, HPA off)" "$helm" lint --strict "$chart" \
  --set security.curve.enabled=false --set metrics.serviceMonitor.enabled=false \
  --set worker.autoscaling.enabled=false

# ---- template: defaults ----
all_kinds=(StatefulSet Deployment HorizontalPodAutoscaler Service ConfigMap Secret
  PodDisruptionBudget ServiceMonitor PrometheusRule)
if render "$work/default.yaml"; then
  pass "helm template (default values)"
  expect_kinds "default values render every kind" "$work/default.yaml" "${all_kinds[@]}"
  expect_grep "grafana dashboard ConfigMap is labelled" "$work/default.yaml" '^    grafana_dashboard: "1"$'
  expect_grep "HPA is autoscaling/v2 on CPU" "$work/default.yaml" '^apiVersion: autoscaling/v2$'
  expect_grep "ServiceMonitor is monitoring.coreos.com/v1" "$work/default.yaml" '^apiVersion: monitoring.coreos.com/v1$'
  expect_grep "StatefulSet has a volumeClaimTemplate" "$work/default.yaml" '^  volumeClaimTemplates:$'
  expect_grep "liveness probe is GET /healthz on the metrics port" "$work/default.yaml" '^              path: /healthz$'
  expect_grep "readiness probe is GET /readyz on the metrics port" "$work/default.yaml" '^              path: /readyz$'
  expect_grep "probes use the metrics port" "$work/default.yaml" '^              port: metrics$'
  expect_grep "coordinator binds the contract ports" "$work/default.yaml" '"tcp://0.0.0.0:5556"'
  expect_grep "metrics and probes are served beyond the pod (the binary's default is loopback)" \
    <(sed -n '/^kind: StatefulSet$/,/^---$/p' "$work/default.yaml") '^            - --metrics-address$'
  expect_grep "workers dial the coordinator's stable name" "$work/default.yaml" \
    '"tcp://tf-tunefleet-coordinator-0\.tf-tunefleet-coordinator-hl\.tunefleet\.svc:5556"'
  expect_grep "CURVE keys are mounted" "$work/default.yaml" 'secretName: tf-tunefleet-curve'
  expect_grep "coordinator volume is not re-chowned at every start" \
    <(sed -n '/^kind: StatefulSet$/,/^---$/p' "$work/default.yaml") '^        fsGroupChangePolicy: OnRootMismatch$'
  reject_grep "HPA owns the worker replica count" \
    <(sed -n '/^kind: Deployment$/,/^---$/p' "$work/default.yaml") '^  replicas:'
else
  fail "helm template (default values)" "$(tail -n 15 "$work/default.yaml.err")"
fi

# ---- template: a cluster without the Prometheus Operator installs the defaults ----
if render_plain "$work/plain.yaml"; then
  absent_kinds "no ServiceMonitor or PrometheusRule where the cluster has no such CRD" "$work/plain.yaml" \
    ServiceMonitor PrometheusRule
else
  fail "helm template (no ServiceMonitor CRD)" "$(tail -n 15 "$work/plain.yaml.err")"
fi

# ---- template: user labels override the chart's, each key once ----
if render "$work/labels.yaml" --set grafana.dashboard.labels.grafana_dashboard=tf \
  --set metrics.serviceMonitor.labels.release=kps --set metrics.prometheusRule.labels.release=kps; then
  run "a user label replaces the chart's rather than repeating the key" "$py" - "$work/labels.yaml" <<'EOF'
import sys, yaml
class Unique(yaml.SafeLoader):
    pass
def mapping(loader, node, deep=False):
    keys = [loader.construct_object(k, deep=deep) for k, _ in node.value]
    dup = {k for k in keys if keys.count(k) > 1}
    assert not dup, f"duplicate keys {dup} at line {node.start_mark.line + 1}"
    return yaml.SafeLoader.construct_mapping(loader, node, deep)
Unique.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, mapping)
docs = [d for d in yaml.load_all(open(sys.argv[1]), Loader=Unique) if d]
cm = next(d for d in docs if d["kind"] == "ConfigMap" and "grafana_dashboard" in d["metadata"]["labels"])
assert cm["metadata"]["labels"]["grafana_dashboard"] == "tf", cm["metadata"]["labels"]
sm = next(d for d in docs if d["kind"] == "ServiceMonitor")
assert sm["metadata"]["labels"]["release"] == "kps", sm["metadata"]["labels"]
assert sm["metadata"]["labels"]["app.kubernetes.io/component"] == "coordinator", sm["metadata"]["labels"]
pr = next(d for d in docs if d["kind"] == "PrometheusRule")
assert pr["metadata"]["labels"]["release"] == "kps", pr["metadata"]["labels"]
EOF
else
  fail "helm template (user labels)" "$(tail -n 15 "$work/labels.yaml.err")"
fi

# ---- template: CURVE and ServiceMonitor off (values file override) ----
cat >"$work/insecure.yaml" <<'EOF'
security:
  curve:
    enabled: false
metrics:
  serviceMonitor:
    enabled: false
  prometheusRule:
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
  absent_kinds "override drops Secret, ServiceMonitor, PrometheusRule, HPA" "$work/off.yaml" \
    Secret ServiceMonitor PrometheusRule HorizontalPodAutoscaler
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

# ---- template: a long release name ----
# The StatefulSet controller labels each pod controller-revision-hash=NAME-<10 characters>, at
# most 63, so a StatefulSet name over 52 characters never gets its pod.
long_release=$(printf 'r%.0s' {1..45})
if "$helm" template "$long_release" "$chart" --namespace tunefleet >"$work/long.yaml" 2>"$work/long.yaml.err"; then
  pass "helm template (45-character release name)"
  run "long release name: StatefulSet name <= 52; workers dial its pod behind the headless Service" \
    "$py" - "$work/long.yaml" <<'EOF'
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
def one(kind, pred=lambda d: True):
    found = [d for d in docs if d["kind"] == kind and pred(d)]
    assert len(found) == 1, f"expected one {kind}, got {len(found)}"
    return found[0]
sts = one("StatefulSet")
name = sts["metadata"]["name"]
assert len(name) <= 52, f"StatefulSet name {name!r} has {len(name)} characters"
headless = one("Service", lambda d: d["spec"].get("clusterIP") == "None")
assert sts["spec"]["serviceName"] == headless["metadata"]["name"], \
    f"serviceName {sts['spec']['serviceName']!r} != headless Service {headless['metadata']['name']!r}"
client = one("Service", lambda d: d["spec"].get("clusterIP") != "None")
pod_labels = sts["spec"]["template"]["metadata"]["labels"]
for svc in (headless, client):
    sel = svc["spec"]["selector"]
    assert sel.items() <= pod_labels.items(), f"Service {svc['metadata']['name']} selects {sel}, pods are {pod_labels}"
port = next(p["port"] for p in headless["spec"]["ports"] if p["name"] == "worker")
want = f"tcp://{name}-0.{headless['metadata']['name']}.tunefleet.svc:{port}"
args = one("Deployment")["spec"]["template"]["spec"]["containers"][0]["args"]
got = args[args.index("--coordinator") + 1]
assert got == want, f"workers dial {got!r}, the coordinator pod is {want!r}"
EOF
else
  fail "helm template (45-character release name)" "$(tail -n 15 "$work/long.yaml.err")"
fi

# ---- NOTES.txt (rendered by install --dry-run=client; no cluster needed) ----
notes() { "$helm" install tf "$chart" --namespace tunefleet --dry-run=client "$@" 2>&1 | sed -n '/^NOTES:/,$p'; }
notes >"$work/notes-default.txt"
expect_grep "NOTES: warns that no client key is listed" "$work/notes-default.txt" 'no tunefleet CLI can submit or look up'
expect_grep "NOTES: the CLI needs --curve-dir with CURVE on" "$work/notes-default.txt" '--curve-dir DIR'
notes --set "security.curve.keys.clientPublic={$key}" >"$work/notes-client.txt"
reject_grep "NOTES: no client-key warning once one is listed" "$work/notes-client.txt" 'no tunefleet CLI can submit'
notes --set security.curve.existingSecret=my-curve-keys >"$work/notes-existing.txt"
reject_grep "NOTES: no client-key warning with existingSecret" "$work/notes-existing.txt" 'no tunefleet CLI can submit'
notes --set security.curve.enabled=false >"$work/notes-off.txt"
reject_grep "NOTES: no --curve-dir hint with CURVE off" "$work/notes-off.txt" '--curve-dir'

# ---- every rendered document is well-formed ----
run "rendered manifests parse as YAML with apiVersion/kind/name" "$py" - \
  "$work/default.yaml" "$work/off.yaml" "$work/existing.yaml" "$work/long.yaml" <<'EOF'
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
must_reject "schema rejects a lower-case binary suffix (500ki)" --set coordinator.persistence.size=500ki
must_reject "schema rejects memory=512mb" --set worker.resources.requests.memory=512mb
must_reject "schema rejects a negative number as a quantity" --set worker.resources.requests.cpu=-1
must_reject_with "chart rejects autoscaling without a CPU request" 'needs worker.resources.requests.cpu' \
  --set worker.resources=null
for removed in coordinator.service coordinator.livenessProbe coordinator.pdb worker.pdb metrics grafana \
  serviceAccount security.curve.mountPath worker.pdb.maxUnavailable coordinator.persistence.accessModes; do
  must_reject "schema requires $removed (null removes it)" --set "$removed=null"
done
must_reject_with "chart rejects scrapeTimeout longer than interval" \
  'scrapeTimeout \(30s\) must not be longer than .*interval \(15s\)' --set metrics.serviceMonitor.scrapeTimeout=30s
must_reject_with "chart compares minutes with minutes (scrapeTimeout 2m, interval 1m)" \
  'scrapeTimeout \(2m\) must not be longer' \
  --set metrics.serviceMonitor.scrapeTimeout=2m --set metrics.serviceMonitor.interval=1m
must_reject_with "chart rejects client port = worker port" 'must be three different ports' \
  --set coordinator.ports.worker=5555
must_reject_with "chart rejects metrics port = worker port" 'must be three different ports' \
  --set coordinator.ports.metrics=5556

# ---- values.schema.json and the chart's checks accept valid values ----
run "accepts binary-suffixed quantities (500Ki, 524288Ki)" render "$work/ki.yaml" \
  --set coordinator.persistence.size=500Ki --set worker.resources.limits.memory=524288Ki \
  --set coordinator.resources.requests.memory=512Ki --set worker.resources.requests.cpu=1500m
run "accepts targetCPUUtilizationPercentage above 100" render "$work/cpu.yaml" \
  --set worker.autoscaling.targetCPUUtilizationPercentage=150
run "accepts scrapeTimeout below interval across units (30s, 1m)" render "$work/scrape.yaml" \
  --set metrics.serviceMonitor.scrapeTimeout=30s --set metrics.serviceMonitor.interval=1m

# ---- alerts (alerts/tunefleet.rules.yaml) ----
alerts=$chart/alerts/tunefleet.rules.yaml
if promtool=$("$root/scripts/promtool.sh"); then
  run "alert rules pass promtool check rules" "$promtool" check rules "$alerts"
  # Each alert fires on the series that mean trouble, names them, and stays quiet on a
  # healthy coordinator.
  run "alert rules pass their promtool unit tests" bash -c 'cd "$1" && "$2" test rules tunefleet.rules.test.yaml' _ \
    "$chart/alerts" "$promtool"
else
  fail "promtool binary" "scripts/promtool.sh could not provide promtool"
fi
run "alerts name only exported metrics and label values; the PrometheusRule holds the file's groups" \
  "$py" - "$alerts" "$work/default.yaml" "$root/coordinator/metrics.cc" "$root/coordinator/loop_watchdog.cc" \
  "$root/common/src/status.cc" <<'EOF'
import re, sys, yaml
groups = yaml.safe_load(open(sys.argv[1]))["groups"]
rules = [r for g in groups for r in g["rules"]]
assert len(rules) >= 10, f"only {len(rules)} alerts"
exported = set(re.findall(r'Name\("(tunefleet_[a-z0-9_]+)"\)', open(sys.argv[3]).read()))
exported |= set(re.findall(r'family\.name = "(tunefleet_[a-z0-9_]+)"', open(sys.argv[4]).read()))
codes = set(re.findall(r'return "([A-Z_]+)";', open(sys.argv[5]).read()))
for r in rules:
    for a in ("summary", "description"):
        assert r["annotations"].get(a), f"{r['alert']} has no {a}"
    assert r["labels"]["severity"] in ("critical", "warning"), r
    for m in re.findall(r"tunefleet_[a-z0-9_]+", r["expr"]):
        base = re.sub(r"_bucket$", "", m)
        assert base in exported, f"{r['alert']} uses {m}, which the coordinator does not export"
    for c in re.findall(r'code=~"([A-Z_|]+)"', r["expr"]):
        for one in c.split("|"):
            assert one in codes, f"{r['alert']}: no status code {one}"
docs = [d for d in yaml.safe_load_all(open(sys.argv[2])) if d]
pr = next(d for d in docs if d["kind"] == "PrometheusRule")
assert pr["spec"]["groups"] == groups, "the PrometheusRule differs from alerts/tunefleet.rules.yaml"
EOF

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
hc = " ".join(svcs["coordinator"]["healthcheck"]["test"])
assert "/readyz" in hc and "9464" in hc, f"compose: the coordinator's healthcheck does not ask /readyz: {hc}"
prom = yaml.safe_load(open(os.path.join(d, "prometheus.yml")))
targets = [t for sc in prom["scrape_configs"] for c in sc.get("static_configs", []) for t in c["targets"]]
assert "coordinator:9464" in targets, f"prometheus.yml targets: {targets}"
rule_mounts = [v for v in svcs["prometheus"]["volumes"] if ":/etc/prometheus/" in v and v.endswith(".yaml:ro")]
for f in prom.get("rule_files", []):
    mount = [v for v in rule_mounts if v.split(":")[1] == "/etc/prometheus/" + f]
    assert mount and os.path.exists(os.path.join(d, mount[0].split(":")[0])), f"compose mounts no {f} for prometheus.yml"
assert prom.get("rule_files"), "prometheus.yml loads no alert rules"
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
expect_grep "Dockerfile's build stage installs only the build's packages" "$root/docker/Dockerfile" \
  'install-deps.sh --build-only'
run "install-deps --build-only has every find_package's Debian package and no test or tooling one" \
  "$py" - "$root" <<'EOF'
import subprocess, sys
root = sys.argv[1]
def listed(*args):
    return subprocess.run(["bash", f"{root}/scripts/install-deps.sh", *args], check=True,
                          capture_output=True, text=True).stdout.split()
build, full = listed("--build-only", "--print"), listed("--print")
for p in ("librocksdb-dev", "libcapnp-dev", "cppzmq-dev", "prometheus-cpp-dev", "libcli11-dev", "libfmt-dev",
          "nlohmann-json3-dev", "libonnx-dev", "libprotobuf-dev", "cmake", "ninja-build"):
    assert p in build, f"{p} missing from --build-only: {build}"
for p in ("libgtest-dev", "libbenchmark-dev", "python3-optuna", "npm"):
    assert p not in build, f"{p} in --build-only"
assert set(build) < set(full) and "libgtest-dev" in full, f"the full list lost packages: {full}"
EOF

summary
