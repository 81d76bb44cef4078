# Sourced by the benchmark scripts that run real processes (from the project's root):
# a scratch folder and process list cleaned up on exit, starting a coordinator and
# counting its finished tasks, and an ops file of many distinct ops.

# bench_scratch: $work, a scratch folder, and $pids, killed with it on exit.
bench_scratch() {
  work=$(mktemp -d)
  pids=()
  trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"' EXIT
}

# start_coordinator BINARY DIR [FLAGS...]: a coordinator on 127.0.0.1 ports the kernel
# picks, data in DIR/kb, stdout in DIR/coordinator.log and stderr in DIR/coordinator.err;
# sets $coordinator_pid (also in $pids), $client and $worker (its endpoints).
start_coordinator() {
  local bin=$1 dir=$2
  shift 2
  "$bin" --client-bind 'tcp://127.0.0.1:*' --worker-bind 'tcp://127.0.0.1:*' --metrics-port -1 \
    --data-dir "$dir/kb" "$@" > "$dir/coordinator.log" 2> "$dir/coordinator.err" &
  coordinator_pid=$!
  pids+=("$coordinator_pid")
  for _ in $(seq 100); do grep -q ready "$dir/coordinator.log" && break; sleep 0.1; done
  client=$(sed -n 's/.*ready client=\([^ ]*\).*/\1/p' "$dir/coordinator.log")
  worker=$(sed -n 's/.*worker=\([^ ]*\).*/\1/p' "$dir/coordinator.log")
  [[ -n $client ]] || { cat "$dir/coordinator.log" "$dir/coordinator.err" >&2; return 1; }
}

# done_tasks DIR: how many tasks the coordinator started by start_coordinator DIR ... -v
# has logged as done.
done_tasks() { grep -c "^coordinator: task [0-9]* done:" "$1/coordinator.err" || true; }

# write_matmul_ops N [K]: prints an ops file of N distinct MatMul shapes on Ascend910B2,
# [16*(1+i%400), K] x [K, 16*(1+i/400)], K 128 unless given.
write_matmul_ops() {
  local n=$1 k=${2:-128} i
  printf '{"soc": "Ascend910B2", "ops": ['
  for ((i = 0; i < n; i++)); do
    ((i)) && printf ','
    printf '{"name": "op%d", "op": "MatMul", "inputs": [{"shape": [%d, %d], "dtype": "float16"}, {"shape": [%d, %d], "dtype": "float16"}]}' \
      "$i" $((16 * (1 + i % 400))) "$k" "$k" $((16 * (1 + i / 400)))
  done
  printf ']}\n'
}
