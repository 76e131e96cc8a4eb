package kgenrt

import (
	"encoding/binary"
	"errors"
	"math/rand"
	"slices"
	"strings"
	"testing"
)

// attnKernel is a batched descriptor shaped like attention over heads with
// GQA: kv [b, h/group, n, d] (bound first, before q gives h), q [b, h, m,
// d] → o [b, h, m, d], args {b, h, group, n, m, d, q_stride_h}.
func attnKernel() *Kernel {
	k := &Kernel{
		Name: "attn", Kind: "matmul", Math: "precise", Source: "// source\n",
		Batch: []string{"b", "h"},
		Bindings: []Binding{
			{Index: 0, Name: "kv", Role: Input, DType: T, Batch: []string{"b", "h/group"}, Shape: []string{"n", "d"}},
			{Index: 1, Name: "q", Role: Input, DType: T, Batch: []string{"b", "h"}, Shape: []string{"m", "d"}},
			{Index: 2, Name: "o", Role: Output, DType: T, Batch: []string{"b", "h"}, Shape: []string{"m", "d"}},
			{Index: 3, Name: "args", Role: Args, Fields: []Field{
				{Name: "b", Type: U32, Offset: 0, Size: true}, {Name: "h", Type: U32, Offset: 4, Size: true},
				{Name: "group", Type: U32, Offset: 8, Size: true}, {Name: "n", Type: U32, Offset: 12, Size: true},
				{Name: "m", Type: U32, Offset: 16, Size: true}, {Name: "d", Type: U32, Offset: 20, Size: true},
				{Name: "q_stride_h", Type: U32, Offset: 24, StrideOf: "q", StrideDim: 1},
				{Name: "kv_stride_n", Type: U32, Offset: 28, StrideOf: "kv", StrideDim: 2}}},
		},
		ElemsPerThread: 1,
	}
	k.Variants = []Variant{{DType: F32, HostName: "attn_f32"}}
	return k
}

func TestBatchedCheckDerivesGroups(t *testing.T) {
	k := attnKernel()
	kv, q, o := mk(t, F32, 2, 2, 5, 8), mk(t, F32, 2, 4, 3, 8), mk(t, F32, 2, 4, 3, 8)
	_, sizes, err := k.Check(kv, q, o)
	if err != nil {
		t.Fatal(err)
	}
	want := Sizes{"b": 2, "h": 4, "group": 2, "n": 5, "m": 3, "d": 8}
	if len(sizes) != len(want) {
		t.Errorf("sizes = %v, want %v", sizes, want)
	}
	for name, v := range want {
		if sizes[name] != v {
			t.Errorf("sizes[%s] = %d, want %d", name, sizes[name], v)
		}
	}
	slots := make([]int, 6)
	if _, err := k.CheckSizes(slots, kv, q, o); err != nil || !slices.Equal(slots, []int{2, 4, 2, 5, 3, 8}) {
		t.Errorf("CheckSizes = %v, %v; want the fields' order b h group n m d", slots, err)
	}
	// MQA: one kv head for all of them
	if _, sizes, err := k.Check(mk(t, F32, 2, 1, 5, 8), q, o); err != nil || sizes["group"] != 4 {
		t.Errorf("MQA: group %d, %v", sizes["group"], err)
	}
	// strided views are taken: q and o as heads 0..3 of [b, m, 8, d] activations
	act := mk(t, F32, 2, 3, 8, 8)
	qv, _ := act.View(0, []int{2, 4, 3, 8}, []int{3 * 64, 8, 64, 1})
	ov, _ := act.View(32, []int{2, 4, 3, 8}, []int{3 * 64, 8, 64, 1})
	if _, _, err := k.Check(kv, qv, ov); err != nil {
		t.Errorf("heads 0..3 in, heads 4..7 out: %v", err)
	}
}

func TestBatchedCheckRefusals(t *testing.T) {
	k := attnKernel()
	q := mk(t, F32, 2, 4, 3, 8)
	for _, c := range []struct {
		kv, q *Tensor
		want  string
	}{
		{mk(t, F32, 2, 3, 5, 8), q, "query heads h must be a multiple of the tensor's dim (GQA/MQA group"},
		{mk(t, F32, 2, 0, 5, 8), q, "query heads h must be a multiple"},
		{mk(t, F32, 2, 2, 5, 8), mk(t, F32, 8, 3, 8), "rank 3"},
		{mk(t, F32, 2, 2, 5, 8, 1), q, "rank 5"},
		{mk(t, F32, 3, 2, 5, 8), q, "has b = 2"},
	} {
		_, _, err := k.Check(c.kv, c.q, mk(t, F32, c.q.Shape()...))
		if !errors.Is(err, ErrTensor) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("kv %v, q %v: %v; want %q", c.kv.Shape(), c.q.Shape(), err, c.want)
		}
	}
	// a baked group: kv [b, h/4, …]
	k.Bindings[0].Batch = []string{"b", "h/4"}
	if _, sizes, err := k.Check(mk(t, F32, 2, 2, 5, 8), mk(t, F32, 2, 8, 3, 8), mk(t, F32, 2, 8, 3, 8)); err != nil || sizes["h"] != 8 {
		t.Errorf("h/4 with h = 8: %v", err)
	}
	if _, _, err := k.Check(mk(t, F32, 2, 3, 5, 8), mk(t, F32, 2, 8, 3, 8), mk(t, F32, 2, 8, 3, 8)); err == nil || !strings.Contains(err.Error(), "want h/4 = 8/4 = 2") {
		t.Errorf("h/4 = 3 with h = 8: %v", err)
	}
	if _, _, err := k.Check(mk(t, F32, 2, 1, 5, 8), mk(t, F32, 2, 6, 3, 8), mk(t, F32, 2, 6, 3, 8)); err == nil || !strings.Contains(err.Error(), "h = 6 is not a multiple of 4") {
		t.Errorf("h = 6 with h/4: %v", err)
	}
	// descriptions: h only grouped; batch dims out of order
	bad := attnKernel()
	bad.Bindings[1].Batch = []string{"b", "h/group"}
	bad.Bindings[2].Batch = []string{"b", "h/group"}
	if _, _, err := bad.Check(mk(t, F32, 2, 2, 5, 8), q, q); err == nil || !strings.Contains(err.Error(), "batch size h appears in no binding plainly") {
		t.Errorf("h only grouped: %v", err)
	}
	bad = attnKernel()
	bad.Bindings[1].Batch = []string{"h", "b"}
	if _, _, err := bad.Check(mk(t, F32, 2, 2, 5, 8), q, q); err == nil || !strings.Contains(err.Error(), "not a subsequence") {
		t.Errorf("batch dims out of order: %v", err)
	}
}

// TestDenseKernelsTakeContiguousViews: a kernel without batch dims takes a
// contiguous view at an aligned offset and refuses a strided one, or one
// its vector loads cannot start on.
func TestDenseKernelsTakeContiguousViews(t *testing.T) {
	k := testKernel() // x f16, gain f32 → y f16, [n]
	x := mk(t, F16, 4, 8)
	rows, _ := x.Slice(0, 1, 3) // offset 8 elements = 16 bytes
	if _, sizes, err := k.Check(rows, mk(t, F32, 2, 8), mk(t, F16, 2, 8)); err != nil || sizes["n"] != 16 {
		t.Errorf("a contiguous view: %v", err)
	}
	cols, _ := x.Slice(1, 0, 4)
	_, _, err := k.Check(cols, mk(t, F32, 4, 4), mk(t, F16, 4, 4))
	if !errors.Is(err, ErrTensor) || !strings.Contains(err.Error(), "is a strided view") || !strings.Contains(err.Error(), "kernel scale_gain reads dense tensors: copy it with kgenrt.Copy") {
		t.Errorf("a strided view: %v", err)
	}
	odd, _ := x.View(1, []int{8}, []int{1})
	if _, _, err := k.Check(odd, mk(t, F32, 8), mk(t, F16, 8)); err == nil || !strings.Contains(err.Error(), "byte offset 2") {
		t.Errorf("a view at byte 2: %v", err)
	}
}

// overlapKernel: x [h, s, d] → y [h, t, d] on batch dim h.
func overlapKernel() *Kernel {
	return &Kernel{
		Name: "ov", Batch: []string{"h"}, ElemsPerThread: 1,
		Variants: []Variant{{DType: F32, HostName: "ov_f32"}},
		Bindings: []Binding{
			{Index: 0, Name: "x", Role: Input, DType: T, Batch: []string{"h"}, Shape: []string{"s", "d"}},
			{Index: 1, Name: "y", Role: Output, DType: T, Batch: []string{"h"}, Shape: []string{"t", "d"}},
			{Index: 2, Name: "args", Role: Args},
		},
	}
}

func TestOverlapOfViews(t *testing.T) {
	k := overlapKernel()
	act := mk(t, F32, 3, 4, 8) // [s, heads, d]
	heads := func(h0, n int) *Tensor {
		v, err := act.View(h0*8, []int{n, 3, 8}, []int{8, 32, 1})
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if _, _, err := k.Check(heads(0, 2), heads(2, 2)); err != nil {
		t.Errorf("heads 0..1 in, 2..3 out: %v", err)
	}
	if _, _, err := k.Check(heads(0, 2), heads(1, 2)); !errors.Is(err, ErrTensor) || !strings.Contains(err.Error(), "overlaps input x") {
		t.Errorf("heads 0..1 in, 1..2 out: %v", err)
	}
	if _, _, err := k.Check(heads(1, 2), heads(1, 2)); err != nil {
		t.Errorf("in place over heads 1..2: %v", err)
	}
	tr, _ := heads(1, 2).Transpose(1, 2) // same elements, another order: not in place
	if _, _, err := k.Check(heads(1, 2), tr); err == nil {
		t.Errorf("a transposed output over its input accepted")
	}
	// a cache [1, S, d]: read rows [0, 4), write row 5; then row 3
	cache := mk(t, F32, 1, 8, 8)
	read, _ := cache.Slice(1, 0, 4)
	row5, _ := cache.Slice(1, 5, 6)
	row3, _ := cache.Slice(1, 3, 4)
	if _, _, err := k.Check(read, row5); err != nil {
		t.Errorf("rows [0,4) in, row 5 out: %v", err)
	}
	if _, _, err := k.Check(read, row3); err == nil {
		t.Errorf("rows [0,4) in, row 3 out accepted")
	}
	// interleaved rows of two heads: spans intersect, elements do not
	kv := mk(t, F32, 6, 2, 8) // [S, 2 heads, d]
	h0, _ := kv.View(0, []int{1, 4, 8}, []int{8, 16, 1})
	h1row, _ := kv.View(8+16*2, []int{1, 1, 8}, []int{8, 16, 1})
	if _, _, err := k.Check(h0, h1row); err != nil {
		t.Errorf("head 0 rows [0,4) in, head 1 row 2 out: %v", err)
	}
	bc, _ := mk(t, F32, 3, 8).View(0, []int{2, 3, 8}, []int{0, 8, 1})
	if _, _, err := k.Check(mk(t, F32, 2, 3, 8), bc); err == nil || !strings.Contains(err.Error(), "stride 0 over dim 0 (size 2)") {
		t.Errorf("a broadcast output: %v", err)
	}
}

// TestMayAliasIsExact compares mayAlias with the element sets of random
// small views of one buffer.
func TestMayAliasIsExact(t *testing.T) {
	buf := mk(t, F32, 64)
	r := rand.New(rand.NewSource(1))
	random := func() *Tensor {
		for {
			rank := 1 + r.Intn(3)
			shape, strides := make([]int, rank), make([]int, rank)
			for d := range shape {
				shape[d], strides[d] = 1+r.Intn(4), r.Intn(12)
			}
			if v, err := buf.View(r.Intn(40), shape, strides); err == nil {
				return v
			}
		}
	}
	elems := func(v *Tensor) map[int]bool {
		m := map[int]bool{}
		for i := range v.Len() {
			m[v.Offset()+v.at(i)] = true
		}
		return m
	}
	for range 3000 {
		a, b := random(), random()
		ea, eb := elems(a), elems(b)
		meet := false
		for e := range ea {
			meet = meet || eb[e]
		}
		if got := mayAlias(a, b); got != meet {
			t.Fatalf("mayAlias(%v@%d %v, %v@%d %v) = %v, element sets meet: %v", a.shape, a.offset, a.Strides(), b.shape, b.offset, b.Strides(), got, meet)
		}
	}
}

func TestPutStrides(t *testing.T) {
	k := attnKernel()
	kv := mk(t, F32, 2, 2, 5, 8)
	act := mk(t, F32, 2, 3, 8, 8) // q as 4 of 8 heads of [b, m, heads, d]
	q, _ := act.View(0, []int{2, 4, 3, 8}, []int{3 * 64, 8, 64, 1})
	args := make([]byte, k.ArgsSize())
	if err := k.PutStrides(args, []*Tensor{kv, q, mk(t, F32, 2, 4, 3, 8)}); err != nil {
		t.Fatal(err)
	}
	if s := binary.LittleEndian.Uint32(args[24:]); s != 8 {
		t.Errorf("q_stride_h = %d, want 8", s)
	}
	if s := binary.LittleEndian.Uint32(args[28:]); s != 8 {
		t.Errorf("kv_stride_n = %d, want 8 (dense)", s)
	}
	if binary.LittleEndian.Uint32(args[0:]) != 0 {
		t.Errorf("PutStrides wrote a size field")
	}
	huge := func(shape, strides []int) *Tensor { // never read: no storage needed
		return &Tensor{dtype: F32, shape: shape, strides: strides}
	}
	for _, c := range []struct {
		q    *Tensor
		want string
	}{
		{huge([]int{2, 4, 1, 8}, []int{8, 1 << 32, 1, 1}), "has stride 4294967296 in dim 1"},
		{huge([]int{2, 4, 1, 8}, []int{1<<32 - 10, 1, 1, 1}), "reaches element 4294967296"},
	} {
		if err := k.PutStrides(args, []*Tensor{kv, c.q, mk(t, F32, 2, 4, 3, 8)}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("PutStrides: %v, want %q", err, c.want)
		}
	}
	// the largest offset 2^32 - 1 still fits
	if err := k.PutStrides(args, []*Tensor{kv, huge([]int{2, 4, 1, 8}, []int{1<<32 - 11, 1, 1, 1}), mk(t, F32, 2, 4, 3, 8)}); err != nil {
		t.Errorf("largest offset 2^32-1: %v", err)
	}
}

func TestEachBatch(t *testing.T) {
	k := &Kernel{
		Name: "eb", Batch: []string{"b", "h"},
		Bindings: []Binding{
			{Index: 0, Name: "q", Role: Input, Batch: []string{"b", "h"}, Shape: []string{"d"}},
			{Index: 1, Name: "kv", Role: Input, Batch: []string{"b", "h/group"}, Shape: []string{"d"}},
			{Index: 2, Name: "bias", Role: Input, Batch: []string{"h"}, Shape: []string{"d"}},
			{Index: 3, Name: "quad", Role: Input, Batch: []string{"b", "h/4"}, Shape: []string{"d"}},
			{Index: 4, Name: "o", Role: Output, Batch: []string{"b", "h"}, Shape: []string{"d"}},
		},
	}
	const B, H, G, D = 2, 8, 2, 3
	ts := []*Tensor{iota32(t, B, H, D), iota32(t, B, H/G, D), iota32(t, H, D), iota32(t, B, H/4, D), iota32(t, B, H, D)}
	var zs []int
	err := k.EachBatch(Sizes{"b": B, "h": H, "group": G, "d": D}, ts, func(z int, v []*Tensor) error {
		zs = append(zs, z)
		b, h := z/H, z%H
		want := [][]float32{
			{float32((b*H + h) * D)},
			{float32((b*H/G + h/G) * D)},
			{float32(h * D)},
			{float32((b*H/4 + h/4) * D)},
			{float32((b*H + h) * D)},
		}
		for i := range v {
			if !slices.Equal(v[i].Shape(), []int{D}) {
				t.Fatalf("z %d: view %d has shape %v", z, i, v[i].Shape())
			}
			for j := range D {
				if got, w := v[i].Float32At(j), want[i][0]+float32(j); got != w {
					t.Errorf("z %d (b %d, h %d): %s[%d] = %v, want %v", z, b, h, k.Bindings[i].Name, j, got, w)
				}
			}
		}
		return nil
	})
	if err != nil || len(zs) != B*H || zs[5] != 5 {
		t.Errorf("EachBatch: %v, z = %v", err, zs)
	}
	// a transposed [h, b, d] layout of q is read through its strides
	qt, _ := iota32(t, H, B, D).Transpose(0, 1)
	ts[0] = qt
	_ = k.EachBatch(Sizes{"b": B, "h": H, "group": G}, ts, func(z int, v []*Tensor) error {
		if b, h := z/H, z%H; v[0].Float32At(1) != float32((h*B+b)*D+1) {
			t.Errorf("z %d: transposed q[%d, %d, 1] = %v", z, b, h, v[0].Float32At(1))
		}
		return nil
	})
	// no batch dims: the tensors themselves, once
	calls := 0
	x := mk(t, F16, 4)
	dense := testKernel()
	if err := dense.EachBatch(nil, []*Tensor{x}, func(z int, v []*Tensor) error {
		calls++
		if z != 0 || v[0] != x {
			t.Errorf("z %d, %v", z, v)
		}
		return nil
	}); err != nil || calls != 1 {
		t.Errorf("no batch dims: %d calls, %v", calls, err)
	}
}

// TestPutAligned: the aligned flag (Field.Aligned) is 1 exactly when every
// named view has unit column stride and 16-byte-aligned rows: a dense
// tensor, a head range, a transposed [b, s, h, d] view with d a whole
// number of vectors; 0 for a column stride of 2, rows of 7 floats, or a
// view at an odd element offset. A [rows] tensor not named does not count.
func TestPutAligned(t *testing.T) {
	k := &Kernel{Name: "rows", Kind: "rowwise", Batch: []string{"b", "h"},
		Bindings: []Binding{
			{Index: 0, Name: "x", Role: Input, DType: T, Batch: []string{"b", "h"}, Shape: []string{"rows", "cols"}},
			{Index: 1, Name: "pos", Role: Input, DType: I32, Batch: []string{"b"}, Shape: []string{"rows"}},
			{Index: 2, Name: "y", Role: Output, DType: T, Batch: []string{"b", "h"}, Shape: []string{"rows", "cols"}},
			{Index: 3, Name: "args", Role: Args, Fields: []Field{{Name: "kgen_aligned", Type: U32, Offset: 0, Aligned: []string{"x", "y"}}}},
		}}
	act := mk(t, F32, 2, 3, 4, 8) // [b, s, h, d]
	pos := mk(t, I32, 2, 3)
	tr, _ := act.Transpose(1, 2) // [b, h, s, d]: strides (96, 8, 32, 1)
	cstr, _ := mk(t, F32, 2, 4, 3, 16).View(0, []int{2, 4, 3, 8}, []int{192, 48, 16, 2})
	odd := mk(t, F32, 2, 4, 3, 7) // rows 28 bytes apart
	shifted, _ := mk(t, F32, 200).View(1, []int{2, 4, 3, 8}, []int{96, 24, 8, 1})
	for _, c := range []struct {
		what string
		x    *Tensor
		want uint32
	}{
		{"dense", mk(t, F32, 2, 4, 3, 8), 1},
		{"transposed [b, s, h, d]", tr, 1},
		{"column stride 2", cstr, 0},
		{"rows of 7 floats", odd, 0},
		{"one element in", shifted, 0},
	} {
		args := make([]byte, 4)
		if err := k.PutStrides(args, []*Tensor{c.x, pos, mk(t, F32, c.x.Shape()...)}); err != nil {
			t.Fatalf("%s: %v", c.what, err)
		}
		if got := binary.LittleEndian.Uint32(args); got != c.want {
			t.Errorf("%s: kgen_aligned = %d, want %d", c.what, got, c.want)
		}
	}
}
