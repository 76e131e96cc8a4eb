#!/bin/bash
# Builds the folder run_h200.sh runs from (here: Go, nvcc): the CUDA sources
# (gen/cuda plus the math: fast gelu_tanh of bench/cuda/fast), their fatbins
# named as `kgen cuda` names them (<kernel>-<sha256[:16] of the .cu>), the
# copy kernel, the GPU parity test binary, the launch geometry of the
# benchmark's shapes (bench/cuda/geometry) and the specs the test reads.
#   bash bench/cuda/prepare.sh DIR     (from the repository root)
set -euo pipefail
D=$(realpath -m "$1"); mkdir -p "$D/cu" "$D/fatbins" "$D/repo/e2e/cudagpu"
rm -f "$D"/cu/*.cu "$D"/fatbins/*.fatbin
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cp -r bench/cuda/fast/kgen.yaml bench/cuda/fast/specs "$tmp/"
go run ./cmd/kgen gen --config "$tmp/kgen.yaml" > /dev/null
cp gen/cuda/*.cu "$tmp"/gen/cuda/*.cu "$D/cu/"
ARCHS="-gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90"
for f in "$D"/cu/*.cu; do
  nvcc -std=c++17 -O3 -fatbin $ARCHS -o "$D/fatbins/$(basename "$f" .cu)-$(sha256sum "$f" | cut -c1-16).fatbin" "$f" &
done
nvcc -std=c++17 -O3 -cubin -arch=sm_90 -o "$D/copy.cubin" bench/cuda/copy.cu &
wait
CGO_ENABLED=0 go test -c -o "$D/cudagpu.test" ./e2e/cudagpu
go run ./bench/cuda/geometry -shapes 128x1048576,1024x131072,4096x32768,16384x8192,1024x1024,4096x4096 \
  -n 134217728,1048576,16777216 kgen.yaml "$tmp/kgen.yaml" > "$D/geometry.json"
cp -r kgen.yaml specs "$D/repo/"
cp bench/cuda/bench.py bench/cuda/run_h200.sh "$D/"
