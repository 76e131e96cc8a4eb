package kgenrt

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"unsafe"
)

// iota32 is a dense f32 tensor holding 0, 1, 2, … laid out as shape.
func iota32(t *testing.T, shape ...int) *Tensor {
	t.Helper()
	x := mk(t, F32, shape...)
	for i := range x.Len() {
		x.SetFloat32(i, float32(i))
	}
	return x
}

func TestViewBoundsErrors(t *testing.T) {
	x := iota32(t, 4, 6)
	for _, c := range []struct {
		off            int
		shape, strides []int
		want           string
	}{
		{1, []int{4, 6}, []int{6, 1}, "dim 1 (size 6, stride 1) reaches element 19 + 5·1"}, // one past the end
		{6, []int{4, 6}, []int{6, 1}, "dim 0"},
		{18, []int{1, 7}, []int{6, 1}, "dim 1"}, // a row too long
		{0, []int{2, 2}, []int{6, -1}, "dim 1 has stride -1"},
		{0, []int{2, 2}, []int{6}, "1 strides"},
		{-1, []int{1}, []int{1}, "offset -1"},
		{24, []int{1}, []int{1}, "offset 24"},
	} {
		_, err := x.View(c.off, c.shape, c.strides)
		if !errors.Is(err, ErrShape) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("View(%d, %v, %v) = %v, want ErrShape saying %q", c.off, c.shape, c.strides, err, c.want)
		}
	}
	if v, err := x.View(23, []int{1}, []int{1}); err != nil || v.Float32At(0) != 23 {
		t.Errorf("the last element: %v", err)
	}
	if v, err := x.View(24, []int{0, 6}, []int{6, 1}); err != nil || v.Len() != 0 {
		t.Errorf("an empty view at the end: %v", err)
	}
	if v, err := x.View(0, []int{3, 6}, []int{0, 1}); err != nil || v.Float32At(13) != 1 {
		t.Errorf("a broadcast view: %v", err) // row 2, col 1 is element 1
	}
}

func TestViewComposesAndSlices(t *testing.T) {
	x := iota32(t, 4, 6)
	if !x.Contiguous() || !slices.Equal(x.Strides(), []int{6, 1}) || x.Offset() != 0 {
		t.Fatalf("dense: strides %v", x.Strides())
	}
	rows, err := x.Slice(0, 1, 3) // x[1:3, :]
	if err != nil || !rows.Contiguous() || rows.Offset() != 6 || rows.Len() != 12 {
		t.Fatalf("rows: %v, offset %d", err, rows.Offset())
	}
	// the host bytes are exactly the view's elements, over x's memory
	if len(rows.Bytes()) != 12*4 || unsafe.SliceData(rows.Bytes()) != &x.data[6*4] {
		t.Errorf("rows.Bytes() is not x's bytes 24..72")
	}
	cols, err := rows.Slice(1, 2, 5) // x[1:3, 2:5]
	if err != nil || cols.Contiguous() || cols.Offset() != 8 || !slices.Equal(cols.Strides(), []int{6, 1}) {
		t.Fatalf("cols: %v, offset %d strides %v", err, cols.Offset(), cols.Strides())
	}
	if got := cols.Float32s(); !slices.Equal(got, []float32{8, 9, 10, 14, 15, 16}) {
		t.Errorf("x[1:3, 2:5] = %v", got)
	}
	if len(cols.Bytes()) != (16-8+1)*4 { // its span: elements 8..16
		t.Errorf("span of x[1:3, 2:5]: %d bytes", len(cols.Bytes()))
	}
	col, err := cols.View(1, []int{2}, []int{6}) // the middle column of that
	if err != nil || col.Offset() != 9 || !slices.Equal(col.Float32s(), []float32{9, 15}) {
		t.Errorf("composed view: %v, %v", err, col.Float32s())
	}
	if _, err := cols.View(0, []int{3}, []int{6}); !errors.Is(err, ErrShape) {
		t.Errorf("a composed view past its parent's span: %v", err)
	}
	if _, err := x.Slice(1, 4, 7); !errors.Is(err, ErrShape) {
		t.Errorf("Slice past the dim: %v", err)
	}
	if one, _ := x.Slice(0, 2, 3); !one.Contiguous() {
		t.Errorf("a single row is contiguous")
	}
}

func TestTransposeIndexesLogically(t *testing.T) {
	x := iota32(t, 2, 3)
	tr, err := x.Transpose(0, 1)
	if err != nil || tr.Contiguous() || !slices.Equal(tr.Shape(), []int{3, 2}) || !slices.Equal(tr.Strides(), []int{1, 3}) {
		t.Fatalf("transpose: %v %v %v", err, tr.Shape(), tr.Strides())
	}
	if got := tr.Float32s(); !slices.Equal(got, []float32{0, 3, 1, 4, 2, 5}) {
		t.Errorf("x^T = %v", got)
	}
	tr.SetFloat32(1, 42) // x^T[0, 1] is x[1, 0], element 3
	if x.Float32At(3) != 42 || tr.Float32At(1) != 42 {
		t.Errorf("SetFloat32 through the transpose: x = %v", x.Float32s())
	}
	h, _ := FromF16Bits([]uint16{1, 2, 3, 4, 5, 6}, 2, 3)
	ht, _ := h.Transpose(0, 1)
	if got := ht.Bits16(); !slices.Equal(got, []uint16{1, 4, 2, 5, 3, 6}) {
		t.Errorf("f16 transpose bits = %v", got)
	}
	q, _ := FromBytes(I8, []byte{1, 2, 3, 4, 5, 6}, 2, 3)
	qt, _ := q.Transpose(0, 1)
	qt.SetInt32(5, -1) // qt[2, 1] is q[1, 2], element 5
	if qt.Int32At(2) != 2 || q.Int32At(5) != -1 {
		t.Errorf("i8 transpose: %d, %v", qt.Int32At(2), q.Bytes())
	}
}

func TestCopyViews(t *testing.T) {
	x := iota32(t, 2, 3)
	tr, _ := x.Transpose(0, 1)
	d := mk(t, F32, 3, 2)
	if err := Copy(d, tr); err != nil || !slices.Equal(d.Float32s(), []float32{0, 3, 1, 4, 2, 5}) {
		t.Fatalf("Copy(dense, x^T) = %v, %v", d.Float32s(), err)
	}
	// into a strided view: only its elements change
	big := iota32(t, 3, 4)
	win, _ := big.Slice(1, 1, 3) // big[:, 1:3], 6 elements
	src, _ := FromFloat32(F32, []float32{-1, -2, -3, -4, -5, -6}, 3, 2)
	if err := Copy(win, src); err != nil {
		t.Fatal(err)
	}
	want := []float32{0, -1, -2, 3, 4, -3, -4, 7, 8, -5, -6, 11}
	if got := big.Float32s(); !slices.Equal(got, want) {
		t.Errorf("Copy into big[:, 1:3]: %v, want %v", got, want)
	}
	bc, _ := mk(t, F32, 4).View(0, []int{2, 2}, []int{0, 1})
	if err := Copy(bc, mk(t, F32, 4)); err == nil || !strings.Contains(err.Error(), "more than once") {
		t.Errorf("Copy into a broadcast view: %v", err)
	}
	if err := Copy(tr, x); err == nil {
		t.Errorf("Copy between views of the same memory accepted")
	}
	even, _ := big.View(0, []int{6}, []int{2})
	odd, _ := big.View(1, []int{6}, []int{2})
	if err := Copy(even, odd); err != nil || big.Float32At(0) != -1 || big.Float32At(2) != 3 {
		t.Errorf("Copy(big[0::2], big[1::2]): %v, %v", err, big.Float32s())
	}
}
