#!/usr/bin/env bash
# The problem-class sweep of the CUDA matmul (docs/cuda.md): matmul_bias_gelu
# in bf16 with kgen's classes (sw0) and six cuda_tiles sets (sw1-sw4:
# stream-K and small tiles for small m; sw5, sw6: pingpong for the large
# class), each measured against cuBLAS and the torch arms by bench_matmul.py at the issue's
# shapes. On the GPU machine, from the repository root, with a kgen binary
# (KGEN) and CUTLASS 4.2 headers (CUTLASS: the folder holding include/):
#   KGEN=./kgen CUTLASS=/tmp/cutlass bash bench/cuda/sweep/run.sh
set -euo pipefail
root=$(pwd)
out=${OUT:-/tmp/sweep-libs}
(cd bench/cuda/sweep && "$root/${KGEN:-kgen}" gen && "$root/${KGEN:-kgen}" cuda --cutlass "$CUTLASS" --out "$out")
alias=sw0=matmul_bias_gelu,sw1=matmul_bias_gelu,sw2=matmul_bias_gelu,sw3=matmul_bias_gelu,sw4=matmul_bias_gelu,sw5=matmul_bias_gelu,sw6=matmul_bias_gelu
python3 bench/cuda/bench_matmul.py --libs "$out" --kernels sw0,sw1,sw2,sw3,sw4,sw5,sw6 --alias "$alias" \
  --compile 0 --total 900 --out "${JSON:-/tmp/sweep.json}"
