#!/bin/bash
# One device run from a prepared folder D (bench/cuda/prepare.sh builds it on
# a machine with Go and nvcc): GPU parity (the e2e/cudagpu test binary over
# D's fatbins), then bench.py. Results go to $OUT (or D/out): gpu.txt,
# parity.log, parity.md, rows-parity files, bench.log, bench.json; the table
# for docs/cuda.md ends stdout.
set -uo pipefail
D=$(cd "$(dirname "$0")" && pwd)
OUT=$(realpath -m "${OUT:-$D/out}"); mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,clocks.max.mem,power.limit,temperature.gpu --format=csv > "$OUT/gpu.txt" 2>&1
nvidia-smi -q -d CLOCK,PERFORMANCE >> "$OUT/gpu.txt" 2>&1
head -2 "$OUT/gpu.txt"
(cd "$D/repo/e2e/cudagpu" && KGEN_PARITY_OUT="$OUT" KGEN_CUDA_FATBIN_DIR="$D/fatbins" timeout "${PARITY_TIMEOUT:-200}" "$D/cudagpu.test" -test.v -test.count=1 \
  -test.run "${KGEN_PARITY_RUN:-TestRefusal|TestParity|TestTypedLauncher|TestRowParity|TestRowTypedLauncher}") > "$OUT/parity.log" 2>&1
echo "parity exit $?"; grep -E "^(--- |ok|PASS|FAIL)|variants pass|failed" "$OUT/parity.log" | head -20
cd "$D" && PYTHONUNBUFFERED=1 timeout "${BENCH_TIMEOUT:-330}" python3 bench.py --fatbins fatbins --geometry geometry.json --copy copy.cubin \
  --out "$OUT/bench.json" "$@" > "$OUT/bench.log" 2>&1
echo "bench exit $?"; grep -E "^FAILED" "$OUT/bench.log" | head
sed -n '/^GPU after/,$p' "$OUT/bench.log"
