#!/bin/bash
# The quantized matmul's device run (issue 24 item 3), from the repository
# root with DIR (default .devbin) built by bench/cuda/quant_prepare.sh: GPU
# parity of the five quantized built-ins (e2e/cudagpu TestQuant*), each
# planted bug against the same judge (TestQuantPlanted must pass: the bug
# is caught), then bench_quant.py. Logs and tables go to $OUT (default
# DIR/out); the benchmark's table ends stdout.
set -uo pipefail
D=$(realpath -m "${1:-.devbin}"); R=$(pwd); shift || true
OUT=$(realpath -m "${OUT:-$D/out}"); mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.limit --format=csv | tee "$OUT/gpu.txt"
cd "$R/e2e/cudagpu"
KGEN_PARITY_OUT="$OUT" KGEN_CUDA_FATBIN_DIR="$D/fatbins" timeout "${PARITY_TIMEOUT:-200}" "$D/cudagpu.test" -test.v -test.count=1 \
  -test.run "${PARITY_RUN:-TestQuant}" > "$OUT/parity.log" 2>&1
echo "parity exit $?"; grep -E "^(--- |ok|PASS|FAIL)|^\s+--- |\| qmatmul" "$OUT/parity.log" | head -40
for m in $([ -n "${SKIP_PLANTED:-}" ] || echo "$D"/mut*/); do
  [ -f "$m/plant" ] || continue # none carried (quant_prepare.sh)
  { read -r k; read -r shapes; read -r what; } < "$m/plant"
  echo "== planted $(basename "$m") ($k: $what)" >> "$OUT/planted.log"
  KGEN_QUANT_PLANTED=$k KGEN_QUANT_SHAPES=$shapes KGEN_CUDA_FATBIN_DIR=$m timeout 120 "$D/cudagpu.test" -test.v -test.count=1 \
    -test.run 'TestQuantPlanted' > "$OUT/planted1.log" 2>&1
  rc=$?; cat "$OUT/planted1.log" >> "$OUT/planted.log"; rm -f "$OUT/planted1.log"
  echo "planted $(basename "$m") ($k: $what): exit $rc (0 = the bug fails parity)"
  grep -E "outside tolerance|passes parity|stops the run" "$OUT/planted.log" | tail -n 8
done
cd "$R"
[ -n "${SKIP_BENCH:-}" ] && exit 0
PYTHONUNBUFFERED=1 timeout "${BENCH_TIMEOUT:-280}" python3 bench/cuda/bench_quant.py --fatbins "$D/fatbins" --geometry "$D/geometry.json" \
  --copy "$D/copy.cubin" --out "$OUT/bench_quant.json" "$@" > "$OUT/bench.log" 2>&1
echo "bench exit $?"; grep -E "^FAILED|tinygemm .*:" "$OUT/bench.log" | head
sed -n '/^GPU after/,$p' "$OUT/bench.log"
