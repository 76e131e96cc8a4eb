#!/bin/bash
# Builds, here (Go; nvcc and CUTLASS's headers: KGEN_NVCC, KGEN_CUTLASS, as
# scripts/cuda-tools provides them), what bench/cuda/quant_h200.sh runs on
# the GPU, into DIR (default .devbin, carried to the device):
#   fatbins/   the quantized built-ins' binaries as `kgen cuda` builds and
#              names them: <kernel>-<hash>.so for those with a dense form
#              (a library: host functions, CUTLASS), .fatbin otherwise
#   cudagpu.test, copy.cubin, geometry.json (the launches bench_quant.py makes)
# The planted bugs of the forms are judged on the CPU (e2e/cudacpu
# TestMMACatchesMutations, TestDequantCatchesMutations): a library is built
# in parts from the generated .cu, so a hand-edited mutant is not carried.
# The libraries' CUTLASS parts take ~90 s of nvcc each (16 of them); the
# 2026-12-02 run built them on the device instead (59-67 s on its 16 cores):
# carry DIR with `CGO_ENABLED=0 go build -o DIR/kgen ./cmd/kgen`, CUTLASS's
# include/ as a tarball and the worktree (git archive), and there run
# `kgen cuda --out DIR/fatbins` in a folder holding only kgen.yaml and
# specs/qmatmul_*.yaml (the same .cu, so the same hashes), then
# quant_h200.sh DIR --ms 64,128,4096 --ggml-ms ''.
#   bash bench/cuda/quant_prepare.sh [DIR]    (from the repository root)
set -euo pipefail
D=$(realpath -m "${1:-.devbin}"); rm -rf "$D"; mkdir -p "$D/fatbins" "$D/all"
NVCC=${KGEN_NVCC:-nvcc}
go run ./cmd/kgen gen > /dev/null
go run ./cmd/kgen cuda --out "$D/all"
for k in qmatmul_mlx4 qmatmul_mlx4_bias qmatmul_mlx4_silu_mul qmatmul_q4_0 qmatmul_q8_0; do
  cp "$D/all/$k"-*.* "$D/fatbins/"
done
rm -rf "$D/all"
$NVCC -std=c++17 -O3 -cubin -arch=sm_90 -o "$D/copy.cubin" bench/cuda/copy.cu
CGO_ENABLED=0 go test -c -o "$D/cudagpu.test" ./e2e/cudagpu
go run ./bench/cuda/geometry -mnk "$(python3 -c '
ms=[1,4,16,128,4096]; ws=[(4096,4096),(4096,14336),(14336,4096)]
print(",".join(f"{m}x{n}x{k}" for n,k in ws for m in ms))')" kgen.yaml > "$D/geometry.json"
ls -la "$D" "$D/fatbins"
