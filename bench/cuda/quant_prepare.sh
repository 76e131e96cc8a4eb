#!/bin/bash
# Builds, here (Go, nvcc: KGEN_NVCC or PATH), what bench/cuda/quant_h200.sh
# runs on the GPU, into DIR (default .devbin, carried to the device):
#   fatbins/   the quantized built-ins' fatbins, named as `kgen cuda` names
#              them (<kernel>-<sha256[:16] of the .cu>.fatbin, its flags)
#   mut<i>/    one planted bug each: the .cu with one line changed, compiled
#              under the unchanged source's name (kgen cuda regenerates the .cu
#              from the spec, so the mutant is compiled by hand), and
#              mut<i>/plant: the kernel, the shapes of the form it breaks, the bug
#   cudagpu.test, copy.cubin, geometry.json (the launches bench_quant.py makes)
#   bash bench/cuda/quant_prepare.sh [DIR]    (from the repository root)
set -euo pipefail
D=$(realpath -m "${1:-.devbin}"); rm -rf "$D"; mkdir -p "$D/fatbins"
NVCC=${KGEN_NVCC:-nvcc}
FLAGS="-std=c++17 -O3 -fatbin -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90"
go run ./cmd/kgen gen > /dev/null
name() { echo "$1-$(sha256sum "gen/cuda/$1.cu" | cut -c1-16).fatbin"; }
for k in qmatmul_mlx4 qmatmul_mlx4_bias qmatmul_mlx4_silu_mul qmatmul_q4_0 qmatmul_q8_0; do
  $NVCC $FLAGS -o "$D/fatbins/$(name $k)" "gen/cuda/$k.cu" &
done
# Planted bugs: kernel ~ shapes of the form it breaks ~ from ~ to ~ what.
i=0
while IFS='~' read -r k shapes from to what; do
  i=$((i + 1)); mkdir -p "$D/mut$i"
  grep -qF -- "$from" "gen/cuda/$k.cu" || { echo "mutation $i: '$from' not in $k.cu" >&2; exit 1; }
  python3 -c 'import sys; s=open(sys.argv[1]).read(); open(sys.argv[2],"w").write(s.replace(sys.argv[3], sys.argv[4]))' \
    "gen/cuda/$k.cu" "$D/mut$i/$k.cu" "$from" "$to"
  printf '%s\n%s\n%s\n' "$k" "$shapes" "$what" > "$D/mut$i/plant"
  $NVCC $FLAGS -o "$D/mut$i/$(name $k)" "$D/mut$i/$k.cu" &
done <<'MUT'
qmatmul_mlx4~1x40x320,9x33x128,16x130x192~kgen_p[4 * kgen_j + 1] = __byte_perm(kgen_x[4 * kgen_j], kgen_x[4 * kgen_j + 2], 0x7632);~kgen_p[4 * kgen_j + 1] = __byte_perm(kgen_x[4 * kgen_j], kgen_x[4 * kgen_j + 2], 0x5410);~skinny kernel: x's pairs out of the weights' order
qmatmul_mlx4~17x40x192,33x130x320,300x260x320~kgen_ks * 16 + (kgen_lane / 8) % 2 * 8)~kgen_ks * 16 + (1 - (kgen_lane / 8) % 2) * 8)~tiled kernel: the B fragments' two k halves swapped
qmatmul_q4_0~1x40x160,33x130x160~0x4B000000u | (kgen_x & 15u)~0x4B000000u | ((kgen_x >> 4) & 15u)~Q4_0 reader: low and high nibbles swapped
MUT
# A variant to measure beside the generated kernel: the skinny kernel with 16 warps splitting k.
mkdir -p "$D/variants"
sed -e 's/WARPS = 8, NB/WARPS = 16, NB/' -e 's/__launch_bounds__(256) qmatmul_mlx4_gemv_/__launch_bounds__(512) qmatmul_mlx4_gemv_/' gen/cuda/qmatmul_mlx4.cu > "$D/variants/skinny16.cu"
grep -q 'WARPS = 16, NB' "$D/variants/skinny16.cu" || { echo "skinny16: the rewrite does not apply" >&2; exit 1; }
$NVCC $FLAGS -o "$D/variants/skinny16.fatbin" "$D/variants/skinny16.cu" &
# And with fewer registers (3 or 4 blocks of 256 threads per SM; ptxas spills a little).
for b in 3 4; do
  sed "s/__launch_bounds__(256) qmatmul_mlx4_gemv_/__launch_bounds__(256, $b) qmatmul_mlx4_gemv_/" gen/cuda/qmatmul_mlx4.cu > "$D/variants/skinny_mb$b.cu"
  $NVCC $FLAGS -o "$D/variants/skinny_mb$b.fatbin" "$D/variants/skinny_mb$b.cu" &
done
$NVCC -std=c++17 -O3 -cubin -arch=sm_90 -o "$D/copy.cubin" bench/cuda/copy.cu &
wait
CGO_ENABLED=0 go test -c -o "$D/cudagpu.test" ./e2e/cudagpu
go run ./bench/cuda/geometry -mnk "$(python3 -c '
ms=[1,4,16,128,4096]; ws=[(4096,4096),(4096,14336),(14336,4096)]
print(",".join(f"{m}x{n}x{k}" for n,k in ws for m in ms))')" kgen.yaml > "$D/geometry.json"
ls -la "$D" "$D/fatbins"
