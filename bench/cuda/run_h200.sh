#!/bin/bash
# One device run: build the fatbins with nvcc, GPU parity (Go test binary
# built elsewhere with `CGO_ENABLED=0 go test -c -o .cudabench/cudagpu.test
# ./e2e/cudagpu`), then the benchmark. Results go to $OUT (or ./out).
set -uo pipefail
OUT=$(realpath -m "${OUT:-out}"); mkdir -p "$OUT"
ARCHS="-gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90"
FB=/tmp/kgen-fatbins; EXTRA=/tmp/kgen-extra; mkdir -p $FB $EXTRA
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$OUT/gpu.txt"
nvcc --version | tail -2 | tee -a "$OUT/gpu.txt"
# What `kgen cuda` does, without Go: <kernel>-<sha256[:16] of the .cu>.fatbin
for f in gen/cuda/*.cu .cudabench/*.cu; do
  [ -f "$f" ] || continue
  grep -q "cutlass/cutlass.h" "$f" && continue # CUTLASS matmuls: kgen cuda --cutlass (bench_matmul.py)
  k=$(basename "$f" .cu); h=$(sha256sum "$f" | cut -c1-16)
  d=$FB; case "$f" in .cudabench/*) d=$EXTRA;; esac
  nvcc -std=c++17 -O3 -fatbin $ARCHS -o "$d/$k-$h.fatbin" "$f" &
done
nvcc -std=c++17 -O3 -cubin -arch=sm_90 -o /tmp/copy.cubin bench/cuda/copy.cu &
wait
ls $FB $EXTRA
nvcc -std=c++17 -O3 -cubin -arch=sm_90 -Xptxas -v -o /tmp/gt.cubin gen/cuda/gelu_tanh.cu 2>&1 | grep -E "Function properties|registers|stack|spill" | tee "$OUT/ptxas.txt"
cuobjdump -sass /tmp/gt.cubin | grep -cE "LDG.E.128|STG.E.128" | sed 's/^/128-bit global ld\/st in gelu_tanh.cubin: /' | tee -a "$OUT/ptxas.txt"
(cd e2e/cudagpu && KGEN_PARITY_OUT="$OUT" KGEN_CUDA_FATBIN_DIR=$FB ../../.cudabench/cudagpu.test -test.v -test.count=1 -test.run "${KGEN_PARITY_RUN:-.}") 2>&1 | tee "$OUT/parity.log" | grep -vE "^=== RUN" | tail -60
for k in rms_norm softmax layer_norm; do
  nvcc -std=c++17 -O3 -cubin -arch=sm_90 -Xptxas -v -o /tmp/$k.cubin gen/cuda/$k.cu 2>&1 | grep -E "registers|stack|spill" | sed "s/^/$k: /" | tee -a "$OUT/ptxas.txt"
done
# Rowwise: rms_norm / softmax / layer_norm vs torch at 128, 1K, 4K, 16K columns.
PYTHONUNBUFFERED=1 python3 bench/cuda/bench_rows.py --fatbins $FB --copy /tmp/copy.cubin --out "$OUT/bench_rows.json" 2>&1 | tee "$OUT/bench_rows.log"
# Elementwise (skip with KGEN_BENCH_ELEMENTWISE=0).
[ "${KGEN_BENCH_ELEMENTWISE:-1}" = 1 ] && PYTHONUNBUFFERED=1 python3 bench/cuda/bench.py --fatbins $FB --extra $EXTRA --copy /tmp/copy.cubin --out "$OUT/bench.json" "$@" 2>&1 | tee "$OUT/bench.log"
