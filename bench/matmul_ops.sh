# Sourced by the benchmarks that need many distinct ops. write_matmul_ops N: prints an
# ops file of N distinct MatMul shapes on Ascend910B2, [16*(1+i%400), 128] x [128, 16*(1+i/400)].
write_matmul_ops() {
  local n=$1 i
  printf '{"soc": "Ascend910B2", "ops": ['
  for ((i = 0; i < n; i++)); do
    ((i)) && printf ','
    printf '{"name": "op%d", "op": "MatMul", "inputs": [{"shape": [%d, 128], "dtype": "float16"}, {"shape": [128, %d], "dtype": "float16"}]}' \
      "$i" $((16 * (1 + i % 400))) $((16 * (1 + i / 400)))
  done
  printf ']}\n'
}
