package cost

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/verify/mslcpu"
	"github.com/kgen-dev/kgen/verify/parity"
)

// mlxRoot is $KGEN_REAL_MSL/mlx, a checkout of ml-explore/mlx's
// mlx/backend/metal/kernels (docs/metal-cost.md says how to make one).
func mlxRoot(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("KGEN_REAL_MSL")
	if dir == "" {
		t.Skip("KGEN_REAL_MSL is not set: the side-by-side needs MLX's .metal files (docs/metal-cost.md)")
	}
	needCompiler(t)
	return filepath.Join(dir, "mlx")
}

// side is one row of the side-by-side table: per output element.
type side struct {
	op, who, variant, shape string
	dev, tg, barriers       float64
	flops, special          float64
	widest                  string
}

func sideOf(op, who, variant, shape string, outputs int, c *mslcpu.Cost) side {
	r := &Report{Outputs: outputs, Cost: *c}
	return side{op: op, who: who, variant: variant, shape: shape,
		dev:      r.PerOutput(c.Device.ReadBytes() + c.Device.WriteBytes()),
		tg:       r.PerOutput(c.Threadgroup.ReadBytes() + c.Threadgroup.WriteBytes()),
		barriers: r.PerOutput(c.Barriers), widest: widest(c),
		flops: r.PerOutput(c.Arith.FLOPs()), special: r.PerOutput(c.Arith.Special)}
}

func u32(v ...uint32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], x)
	}
	return b
}

// mlxRun counts one launch of an MLX kernel, unmodified.
func mlxRun(t *testing.T, root, file, host string, bufs [][]byte, grid, tg [3]uint32, fc map[string]string) *mslcpu.Cost {
	t.Helper()
	path := filepath.Join(root, "mlx", "backend", "metal", "kernels", file)
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, c, err := mslcpu.RunCost(context.Background(), mslcpu.Launch{Source: src,
		SourceOptions: mslcpu.SourceOptions{Path: path, IncludeDirs: []string{root}, FunctionConstants: fc},
		HostName:      host, Buffers: bufs, Grid: grid, Threadgroup: tg})
	if err != nil {
		t.Fatalf("%s: %v", host, err)
	}
	return c
}

func i64(v int64) []byte { return binary.LittleEndian.AppendUint64(nil, uint64(v)) }

func f32(v float32) []byte { return u32(math.Float32bits(v)) }

var mlxTypes = []struct {
	kgen, mlx string
	size      int
}{{"f32", "float32", 4}, {"f16", "float16", 2}, {"bf16", "bfloat16", 2}}

// TestMLXSideBySide counts MLX's rms_norm, layer_norm and softmax next to
// kgen's kernels on the same shapes, and kgen's matmul at the shapes
// docs/metal-cost.md compares with MLX's steel GEMM (which the harness
// cannot compile yet: steel/utils/type_traits.h specialises per address
// space, which the shim erases), and logs the table of docs/metal-cost.md. Opt-in: KGEN_REAL_MSL=DIR with MLX's sources in
// DIR/mlx.
func TestMLXSideBySide(t *testing.T) {
	root := mlxRoot(t)
	kernels, src := builtins(t)
	byName := map[string]*ir.Kernel{}
	for _, k := range kernels {
		byName[k.Name] = k
	}
	var rows []side
	kgenRows := func(op, name, shape string, at func(*parity.Options)) {
		reps, err := MeasureAt(context.Background(), byName[name], src[name], at, shape)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range reps {
			rows = append(rows, sideOf(op, "kgen", r.HostName, shape, r.Outputs, &r.Cost))
		}
	}
	nrows, cols := uint32(RowShape[0]), uint32(RowShape[1])
	n := int(nrows * cols)
	shape := fmt.Sprintf("rows=%d cols=%d", nrows, cols)
	kgenRows("rms_norm", "rms_norm", shape, nil)
	kgenRows("layer_norm", "layer_norm", shape, nil)
	kgenRows("softmax", "softmax", shape, nil)
	for _, ty := range mlxTypes {
		e := uint32(ty.size)
		x := make([]byte, n*ty.size)
		// rms_norm: N_READS = 4, one simdgroup per 128 columns (normalization.cpp).
		c := mlxRun(t, root, "rms_norm.metal", "rms"+ty.mlx, [][]byte{x, make([]byte, cols*e), make([]byte, len(x)),
			u32(0x3727c5ac), u32(cols), u32(1)}, [3]uint32{nrows * cols / 4, 1, 1}, [3]uint32{cols / 4, 1, 1}, nil)
		rows = append(rows, sideOf("rms_norm", "MLX", "rms"+ty.mlx, shape, n, c))
		// layer_norm: 8 reads per lane.
		c = mlxRun(t, root, "layer_norm.metal", "layer_norm"+ty.mlx, [][]byte{x, make([]byte, cols*e), make([]byte, cols*e),
			make([]byte, len(x)), u32(0x3727c5ac), u32(cols), u32(1), u32(1)}, [3]uint32{nrows * cols / 8, 1, 1}, [3]uint32{cols / 8, 1, 1}, nil)
		rows = append(rows, sideOf("layer_norm", "MLX", "layer_norm"+ty.mlx, shape, n, c))
		// softmax: 4 reads per lane (block_softmax_precise_ for 16-bit types accumulates in float).
		host := "block_softmax_" + ty.mlx
		if ty.size == 2 {
			host = "block_softmax_precise_" + ty.mlx
		}
		c = mlxRun(t, root, "softmax.metal", host, [][]byte{x, make([]byte, len(x)), u32(cols)},
			[3]uint32{nrows * cols / 4, 1, 1}, [3]uint32{cols / 4, 1, 1}, nil)
		rows = append(rows, sideOf("softmax", "MLX", host, shape, n, c))
	}
	// rope: rows of one head (cols = head_dim), split halves, kgen's rope
	// against MLX's batched rope kernel (forward, not traditional; one
	// head, rows positions of a sequence; each thread rotates one pair).
	kgenRows("rope", "rope", shape, nil)
	for _, ty := range mlxTypes {
		x := make([]byte, n*ty.size)
		strides := append(append(i64(int64(n)), i64(int64(cols))...), i64(1)...)
		c := mlxRun(t, root, "rope.metal", "rope_"+ty.mlx, [][]byte{x, make([]byte, len(x)), make([]byte, 4),
			f32(1), strides, strides, i64(0), u32(1), nil, nil, f32(float32(math.Log2(10000)))},
			[3]uint32{cols / 2, nrows, 1}, [3]uint32{32, 1, 1}, map[string]string{"forward": "true", "traditional": "false", "hs_transpose": "false"})
		rows = append(rows, sideOf("rope", "MLX", "rope_"+ty.mlx, shape, n, c))
	}
	// decode attention: one query row per head against a 256-key cache,
	// head_dim 64, 2 sequences × 4 query heads over 2 KV heads (group 2,
	// parity's batch sizes), kgen's attention_decode (split into parts and
	// a combine by its launcher) against the single-pass sdpa_vector that
	// MLX dispatches for a short cache: one 1024-thread threadgroup per
	// query head, 32 simdgroups each taking every 32nd key.
	const keys, hd, qheads = 256, 64, 8
	dshape := fmt.Sprintf("m=1 n=%d k=%d p=%d heads=%d group=2", keys, hd, hd, qheads)
	kgenRows("attention decode", "attention_decode", dshape, func(o *parity.Options) {
		o.Chain = []parity.ChainShape{{M: 1, N: keys, K: hd, P: hd}}
	})
	for _, ty := range mlxTypes {
		e := ty.size
		// sdpa's instantiations name the Metal type (float16_t, not float16).
		host := fmt.Sprintf("sdpa_vector_%s_%d_%d", map[string]string{"f32": "float", "f16": "float16_t", "bf16": "bfloat16_t"}[ty.kgen], hd, hd)
		kv := make([]byte, qheads/2*keys*hd*e)
		c := mlxRun(t, root, "scaled_dot_product_attention.metal", host, [][]byte{
			make([]byte, qheads*hd*e), kv, kv, make([]byte, qheads*hd*e),
			u32(2), u32(keys), i64(keys * hd), i64(hd), i64(keys * hd), i64(hd), f32(0.125),
			nil, nil, u32(0), u32(0), u32(0), nil, u32(0)}, // masks and sinks: their function constants are false
			[3]uint32{1024 * qheads, 1, 1}, [3]uint32{1024, 1, 1}, map[string]string{
				"has_mask": "false", "query_transposed": "false", "do_causal": "false", "bool_mask": "false",
				"float_mask": "false", "has_sinks": "false", "blocks": "1"})
		rows = append(rows, sideOf("attention decode", "MLX", host, dshape, qheads*hd, c))
	}
	for _, m := range []int{1, 16, 128} {
		const nn, kk = 128, 128
		mshape := fmt.Sprintf("m=%d n=%d k=%d", m, nn, kk)
		kgenRows("matmul", "matmul", mshape, func(o *parity.Options) {
			o.Matmul = []parity.MatmulShape{{M: m, N: nn, K: kk}}
		})

	}
	var b strings.Builder
	b.WriteString("\n| op | shape | who | variant | device B/out | widest | threadgroup B/out | barriers/out | float ops/out | special/out |\n|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %.2f | %s | %.2f | %.4f | %.2f | %.2f |\n", r.op, r.shape, r.who, r.variant, r.dev, r.widest, r.tg, r.barriers, r.flops, r.special)
	}
	t.Log(b.String())
}
