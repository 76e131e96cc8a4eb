#!/bin/bash
# One device run of the CUDA matmuls, from the repository root on the GPU
# machine (nvcc, torch; no Go): builds the libraries with the kgen binary
# (KGEN) and CUTLASS 4.2 headers (CUTLASS_TAR: a tar.xz of the wheel's
# cutlass_library/source/include; docs/cuda.md), runs the GPU parity of the
# matmuls (the e2e/cudagpu test binary, TEST), then bench_matmul.py with
# BENCH_ARGS. Results in $OUT: build.log, parity.log, parity_matmul.md,
# bench<i>.log, gpu.txt; the built libraries as libs.tar.xz when
# KEEP_LIBS=1 (a later run carries them back as .devbin/libs.tar.xz: kgen cuda
# keeps a library whose source is unchanged).
set -uo pipefail
root=$(pwd); OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
KGEN=$(realpath "${KGEN:-.devbin/kgen}"); TEST=$(realpath "${TEST:-.devbin/cudagpu.test}")
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit,temperature.gpu --format=csv > "$OUT/gpu.txt" 2>&1
mkdir -p /tmp/cutlass && tar -xJf "${CUTLASS_TAR:-.devbin/cutlass.tar.xz}" -C /tmp/cutlass
CUTLASS=$(dirname "$(find /tmp/cutlass -type d -name cute -path '*include/cute' | head -1)"); CUTLASS=$(dirname "$CUTLASS")
export KGEN_CUDA_CACHE=/tmp/kcache
mkdir -p /tmp/libs; [ -f .devbin/libs.tar.xz ] && tar -xJf .devbin/libs.tar.xz -C /tmp
t0=$(date +%s)
"$KGEN" cuda --cutlass "$CUTLASS" --out /tmp/libs > "$OUT/build.log" 2>&1; echo "build exit $? in $(( $(date +%s) - t0 )) s"; tail -3 "$OUT/build.log"
if [ -n "${SWEEP:-}" ]; then  # the problem-class sweep's libraries, beside the parity run
  (cd bench/cuda/sweep && "$KGEN" gen && "$KGEN" cuda --cutlass "$CUTLASS" --out /tmp/libs) > "$OUT/sweep-build.log" 2>&1 &
fi
if [ -n "${PARITY_RUN:-}" ]; then
  (cd e2e/cudagpu && KGEN_PARITY_OUT="$OUT" KGEN_CUDA_FATBIN_DIR=/tmp/libs timeout "${PARITY_TIMEOUT:-240}" "$TEST" -test.v -test.count=1 \
    -test.run "$PARITY_RUN") > "$OUT/parity.log" 2>&1
  echo "parity exit $? at $(( $(date +%s) - t0 )) s"; grep -E "^(--- |ok|PASS|FAIL)|^\s+\S+_test.go:[0-9]+: .*(outside|FAIL|fail)" "$OUT/parity.log" | head -40
fi
wait; [ -n "${SWEEP:-}" ] && { echo "sweep build at $(( $(date +%s) - t0 )) s"; tail -2 "$OUT/sweep-build.log"; }
[ "${KEEP_LIBS:-}" = 1 ] && XZ_OPT=-T0 tar -cJf "$OUT/libs.tar.xz" -C /tmp libs && ls -la "$OUT/libs.tar.xz"
# BENCH_ARGS: bench_matmul.py's arguments; several runs separated by ';'
# (bench1.log, bench2.log, … each ending with its table).
IFS=';' read -ra runs <<< "${BENCH_ARGS:-}"
i=0
for args in "${runs[@]}"; do
  i=$((i + 1))
  PYTHONUNBUFFERED=1 timeout "${BENCH_TIMEOUT:-300}" python3 bench/cuda/bench_matmul.py --libs /tmp/libs --out "/tmp/bench$i.json" $args > "$OUT/bench$i.log" 2>&1
  echo "bench $i exit $? at $(( $(date +%s) - t0 )) s"; grep -E "^(FAILED|skipped)" "$OUT/bench$i.log" | head; sed -n '/^| kernel/,$p' "$OUT/bench$i.log"
done
