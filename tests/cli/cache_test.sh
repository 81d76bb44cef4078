#!/usr/bin/env bash
# `tunefleet cache export | import | stats` with the real binaries: what a local `tune`
# wrote moves into a running coordinator's knowledge base and is served from there;
# exports of both agree; a second import changes nothing; a file with a bad line is
# refused whole, naming the line; the folder a coordinator holds can be read but not
# imported into behind its back.
source "$(dirname "$0")/harness.sh"
OPS="$SRC/examples/bert_base_layer_ops.json"
PY=/usr/bin/python3

timeout 300 "$TF" tune "$OPS" --data-dir "$OUT/a" --budget 10 > /dev/null || fail "tune exited $?"
"$TF" cache export --data-dir "$OUT/a" --out "$OUT/a.jsonl" 2> "$OUT/export.err" || fail "local export exited $?"
n=$(wc -l < "$OUT/a.jsonl")
[ "$n" -ge 2 ] || fail "the local export holds $n entries"
grep -qx "exported $n entries to $OUT/a.jsonl" "$OUT/export.err" || fail "export: $(cat "$OUT/export.err")"
"$TF" cache stats --data-dir "$OUT/a" --json > "$OUT/stats.json" || fail "local stats exited $?"
$PY -c "import json,sys; s=json.load(open(sys.argv[1])); sys.exit(0 if s['entries']==$n and s['stale_entries']==0 else 1)" \
  "$OUT/stats.json" || fail "stats: $(cat "$OUT/stats.json")"

start_coordinator
"$TF" lookup "$OPS" --coordinator "$CL" > /dev/null
[ $? -eq 3 ] || fail "a fresh coordinator already knows the ops"
"$TF" cache import "$OUT/a.jsonl" --coordinator "$CL" > "$OUT/import.out" || fail "import exited $?: $(cat "$OUT/import.out")"
grep -q "^imported $OUT/a.jsonl: $n added, 0 replaced" "$OUT/import.out" || fail "import: $(cat "$OUT/import.out")"
"$TF" lookup "$OPS" --coordinator "$CL" > "$OUT/lookup.out" || fail "lookup after the import exited $?: $(cat "$OUT/lookup.out")"

# The coordinator's export holds the same entries (op, config, latency) as the file.
"$TF" cache export --coordinator "$CL" --out "$OUT/b.jsonl" 2> /dev/null || fail "export from the coordinator exited $?"
same='import json,sys
rows=lambda p: sorted((e["op_key_hash"], e["best_config_index"], e["best_latency_us"]) for e in map(json.loads, open(p)))
sys.exit(0 if rows(sys.argv[1]) == rows(sys.argv[2]) else 1)'
$PY -c "$same" "$OUT/a.jsonl" "$OUT/b.jsonl" || fail "the exports differ: $(diff "$OUT/a.jsonl" "$OUT/b.jsonl")"
# From standard input; and Ctrl-C is heard while the pipe stays open with nothing in it
# (it used to wait for the input's end).
"$TF" cache import - --coordinator "$CL" --dry-run < "$OUT/a.jsonl" > "$OUT/stdin.out" \
  && grep -q "$n kept" "$OUT/stdin.out" || fail "import from stdin: $(cat "$OUT/stdin.out")"
(sleep 30 | "$TF" cache import - --coordinator "$CL" > /dev/null 2> "$OUT/stdin.err") &
spid=$!
pids+=($spid)
ipid=
for _ in $(seq 100); do ipid=$(pgrep -P $spid -f "cache import" || true); [ -n "$ipid" ] && break; sleep 0.1; done
[ -n "$ipid" ] || fail "the stdin import is not running"
catches_signal "$ipid" INT || fail "the stdin import never handles SIGINT"
kill -INT "$ipid"
for _ in $(seq 30); do kill -0 "$ipid" 2> /dev/null || break; sleep 0.1; done
kill -0 "$ipid" 2> /dev/null && fail "cache import - did not stop within 3 s of SIGINT while its input was open"
grep -q "interrupted" "$OUT/stdin.err" || fail "stdin import after SIGINT: $(cat "$OUT/stdin.err")"
pkill -P $spid sleep 2> /dev/null
"$TF" cache import "$OUT/a.jsonl" --coordinator "$CL" --json > "$OUT/again.json" || fail "second import exited $?"
grep -q "\"kept\":$n" "$OUT/again.json" || fail "a second import changed something: $(cat "$OUT/again.json")"

# One line edited to a config index the op's space does not give its config: nothing of
# the file is imported, and the message names the line and what is wrong.
$PY - "$OUT/a.jsonl" "$OUT/bad.jsonl" << 'PY'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
for e in lines:
    e["best_latency_us"] *= 0.9  # all faster (and above the roofline): a partial import would show
lines[1]["best_config_index"] += 1
open(sys.argv[2], "w").write("".join(json.dumps(e) + "\n" for e in lines))
PY
"$TF" cache import "$OUT/bad.jsonl" --coordinator "$CL" > /dev/null 2> "$OUT/bad.err"
rc=$?
[ $rc -eq 2 ] || fail "an import with a refused line exited $rc, not 2"
grep -q "bad.jsonl:2: refused: best_config_index .* names another config" "$OUT/bad.err" || fail "bad import: $(cat "$OUT/bad.err")"
grep -q "nothing imported" "$OUT/bad.err" || fail "bad import: $(cat "$OUT/bad.err")"
"$TF" cache export --coordinator "$CL" --out "$OUT/c.jsonl" 2> /dev/null
$PY -c "$same" "$OUT/a.jsonl" "$OUT/c.jsonl" || fail "a refused import changed the knowledge base"
"$TF" cache import "$OUT/bad.jsonl" --coordinator "$CL" --skip-refused > "$OUT/skip.out" 2> /dev/null \
  || fail "import --skip-refused exited $?"
grep -q ": 0 added, $((n - 1)) replaced .*, 1 refused$" "$OUT/skip.out" || fail "skip-refused: $(cat "$OUT/skip.out")"

# The coordinator's folder: readable beside it, not writable behind its back.
"$TF" cache stats --data-dir "$OUT/kb" > "$OUT/stats.out" || fail "stats beside the coordinator exited $?"
grep -q "^knowledge base: $n entries" "$OUT/stats.out" || fail "stats: $(cat "$OUT/stats.out")"
"$TF" cache import "$OUT/a.jsonl" --data-dir "$OUT/kb" > /dev/null 2> "$OUT/locked.err"
rc=$?
[ $rc -eq 1 ] || fail "an import into a folder the coordinator holds exited $rc, not 1"
grep -q "import through it with --coordinator" "$OUT/locked.err" || fail "locked: $(cat "$OUT/locked.err")"
"$TF" cache import "$OUT/a.jsonl" --data-dir "$OUT/a" --coordinator "$CL" > /dev/null 2>&1
[ $? -eq 2 ] || fail "--data-dir with --coordinator was accepted"

# --out: through a symlink the target is replaced, not the link; a folder is refused.
ln -s "$OUT/real.jsonl" "$OUT/link.jsonl"
"$TF" cache export --data-dir "$OUT/a" --out "$OUT/link.jsonl" 2> /dev/null || fail "export through a symlink exited $?"
[ -L "$OUT/link.jsonl" ] || fail "export replaced the symlink with a file"
[ "$(wc -l < "$OUT/real.jsonl")" -eq "$n" ] || fail "the symlink's target does not hold the export"
"$TF" cache export --data-dir "$OUT/a" --out "$OUT" > /dev/null 2>&1
[ $? -eq 2 ] || fail "export onto a folder did not exit 2"
# import: a folder is not a file; a folder of other files gets no database; a dry run
# creates none; --json reports a refusal too.
"$TF" cache import "$OUT" --data-dir "$OUT/a" > /dev/null 2> "$OUT/err"
[ $? -eq 2 ] && grep -q "is a folder" "$OUT/err" || fail "import of a folder: $(cat "$OUT/err")"
mkdir "$OUT/notes" && echo hello > "$OUT/notes/readme.txt"
"$TF" cache import "$OUT/a.jsonl" --data-dir "$OUT/notes" > /dev/null 2> "$OUT/err"
[ $? -eq 2 ] && grep -q "holds files but no knowledge base" "$OUT/err" || fail "import into a folder of notes: $(cat "$OUT/err")"
[ ! -e "$OUT/notes/CURRENT" ] || fail "a database was made among the notes"
# A dry run into an empty folder counts against an empty knowledge base and
# writes nothing there; a refused import leaves such a folder as it found it.
mkdir "$OUT/empty"
"$TF" cache import "$OUT/a.jsonl" --data-dir "$OUT/empty" --dry-run > "$OUT/dry.out" 2> "$OUT/err" \
  || fail "a dry run into an empty folder exited $?: $(cat "$OUT/err")"
grep -q "dry run, nothing written: .*: $n added" "$OUT/dry.out" || fail "dry run into an empty folder: $(cat "$OUT/dry.out")"
[ -z "$(ls "$OUT/empty")" ] || fail "a dry run wrote into the folder: $(ls "$OUT/empty")"
"$TF" cache import "$OUT/bad.jsonl" --data-dir "$OUT/empty" > /dev/null 2>&1
[ $? -eq 2 ] || fail "a refused import into an empty folder did not exit 2"
[ -z "$(ls "$OUT/empty")" ] || fail "a refused import left files in the empty folder: $(ls "$OUT/empty")"
"$TF" cache import "$OUT/bad.jsonl" --data-dir "$OUT/a" --json > "$OUT/refused.json" 2> /dev/null
[ $? -eq 2 ] || fail "a refused --json import did not exit 2"
grep -q '"written":false' "$OUT/refused.json" && grep -q '"line":2' "$OUT/refused.json" \
  || fail "--json on a refusal: $(cat "$OUT/refused.json")"

# A replayed kernel's entry is checked against its cache's measured times: a local import
# needs the cache, and a made-up faster time is refused.
cat > "$OUT/toy_cache.json" << 'JSON'
{"device_name": "Toy GPU", "kernel_name": "toy", "objective": "time",
 "tune_params_keys": ["bx", "tile"], "tune_params": {"bx": [1, 2], "tile": [1, 2, 4]},
 "cache": {"1,1": {"time": 3.0}, "1,2": {"time": 1.5}, "2,2": {"time": 2.0}, "2,4": {"time": 0.75}}}
JSON
echo '{"soc": "replay", "ops": [{"name": "toy", "op": "toy", "inputs": [{"shape": [1]}]}]}' > "$OUT/toy_ops.json"
timeout 60 "$TF" tune "$OUT/toy_ops.json" --replay-cache "$OUT/toy_cache.json" --data-dir "$OUT/r" --budget 16 > /dev/null \
  || fail "tune over the toy cache exited $?"
"$TF" cache export --data-dir "$OUT/r" --out "$OUT/r.jsonl" 2> /dev/null || fail "export of the replayed entry exited $?"
grep -q '"best_latency_us":750' "$OUT/r.jsonl" || fail "the toy kernel's best is not its measured 0.75 ms: $(cat "$OUT/r.jsonl")"
mkdir "$OUT/r2"
"$TF" cache import "$OUT/r.jsonl" --data-dir "$OUT/r2" > /dev/null 2> "$OUT/err"
[ $? -eq 2 ] && grep -q "give --replay-cache FILE" "$OUT/err" || fail "replayed entry without its cache: $(cat "$OUT/err")"
sed 's/"best_latency_us":750[.0-9]*/"best_latency_us":1/' "$OUT/r.jsonl" > "$OUT/r_fast.jsonl"
"$TF" cache import "$OUT/r_fast.jsonl" --data-dir "$OUT/r2" --replay-cache "$OUT/toy_cache.json" > /dev/null 2> "$OUT/err"
[ $? -eq 2 ] && grep -q "not the time the kernel's cache measured" "$OUT/err" || fail "made-up replay time: $(cat "$OUT/err")"
"$TF" cache import "$OUT/r.jsonl" --data-dir "$OUT/r2" --replay-cache "$OUT/toy_cache.json" > "$OUT/r2.out" \
  || fail "replayed entry with its cache exited $?"
grep -q ": 1 added" "$OUT/r2.out" || fail "replayed import: $(cat "$OUT/r2.out")"
# A field given twice in a line is refused, not read as its last value.
head -1 "$OUT/a.jsonl" | sed 's/^{/{"strategy":"x",/' > "$OUT/twice.jsonl"
"$TF" cache import "$OUT/twice.jsonl" --data-dir "$OUT/a" > /dev/null 2> "$OUT/err"
[ $? -eq 2 ] && grep -q "twice.jsonl:1: field 'strategy' is given twice" "$OUT/err" || fail "a field twice: $(cat "$OUT/err")"
# Output that cannot be written is a failure (it used to exit 0 with nothing shown).
if [ -w /dev/full ]; then
  "$TF" cache stats --data-dir "$OUT/a" > /dev/full 2> "$OUT/err"
  [ $? -eq 1 ] && grep -q "writing standard output failed" "$OUT/err" || fail "stats to a full disk: $(cat "$OUT/err")"
fi
echo "cache_cli: ok ($n entries)"
