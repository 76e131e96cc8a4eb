package kgenrt

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// testKV and testTensor are the parts of a GGUF file written by ggufFile,
// a writer for these tests that can also write what no writer should.
type testKV struct {
	key string
	typ GGUFValueType
	val []byte // the encoded value
}

type testTensor struct {
	name   string
	dims   []uint64
	typ    GGMLType
	data   []byte
	nd     int    // written as n_dims when non-zero (else len(dims))
	offset uint64 // written when non-zero (else the laid-out offset)
}

type ggufFile struct {
	version  uint32 // 0: 3
	align    int    // the layout's alignment (0: 32); general.alignment is a kv of its own
	nTensors uint64 // written when non-zero
	nKV      uint64
	kvs      []testKV
	tensors  []testTensor
}

func le32(x uint32) []byte            { return binary.LittleEndian.AppendUint32(nil, x) }
func le64(x uint64) []byte            { return binary.LittleEndian.AppendUint64(nil, x) }
func gstr(s string) []byte            { return append(le64(uint64(len(s))), s...) }
func u32kv(k string, x uint32) testKV { return testKV{k, GGUFUint32, le32(x)} }

// garr is an array value: element type, count, then the elements' bytes.
func garr(elem GGUFValueType, n int, elems ...[]byte) []byte {
	b := append(le32(uint32(elem)), le64(uint64(n))...)
	for _, e := range elems {
		b = append(b, e...)
	}
	return b
}

func (f ggufFile) encode() []byte {
	align := max(f.align, 32)
	b := []byte("GGUF")
	b = append(b, le32(cmp0(f.version, 3))...)
	b = append(b, le64(cmp0(f.nTensors, uint64(len(f.tensors))))...)
	b = append(b, le64(cmp0(f.nKV, uint64(len(f.kvs))))...)
	for _, kv := range f.kvs {
		b = append(b, gstr(kv.key)...)
		b = append(b, le32(uint32(kv.typ))...)
		b = append(b, kv.val...)
	}
	var data []byte
	for _, t := range f.tensors {
		b = append(b, gstr(t.name)...)
		b = append(b, le32(uint32(cmp0(t.nd, len(t.dims))))...)
		for _, d := range t.dims {
			b = append(b, le64(d)...)
		}
		b = append(b, le32(uint32(t.typ))...)
		for len(data)%align != 0 {
			data = append(data, 0)
		}
		b = append(b, le64(cmp0(t.offset, uint64(len(data))))...)
		data = append(data, t.data...)
	}
	for len(b)%align != 0 {
		b = append(b, 0)
	}
	return append(b, data...)
}

func cmp0[T comparable](x, orElse T) T {
	var zero T
	if x == zero {
		return orElse
	}
	return x
}

// sampleGGUF is a file with a value of every metadata type (arrays of
// numbers, strings and arrays too), alignment 64, and a tensor of each type
// kgenrt reads plus a Q4_K one it lists but refuses.
func sampleGGUF(t testing.TB, version uint32) (ggufFile, map[string][]byte) {
	w := make([]float32, 3*64)
	for i := range w {
		w[i] = float32(math.Sin(float64(i)*0.37)) * 2
	}
	q4, _, _, err := Quantize(GGMLQuant(Q4_0), w, 3, 64, F32)
	if err != nil {
		t.Fatal(err)
	}
	q8, _, _, _ := Quantize(GGMLQuant(Q8_0), w[:64], 1, 64, F32)
	f32, _ := FromFloat32(F32, w[:5])
	f16, _ := FromFloat32(F16, w[:8])
	bf16, _ := FromFloat32(BF16, w[:6])
	data := map[string][]byte{"blk.0.q4": q4.Bytes(), "blk.0.q8": q8.Bytes(), "norm": f32.Bytes(), "emb": f16.Bytes(), "bias": bf16.Bytes(), "k": make([]byte, 144)}
	f := ggufFile{version: version, align: 64, kvs: []testKV{
		{"general.architecture", GGUFString, gstr("llama")},
		u32kv("general.alignment", 64),
		{"u8", GGUFUint8, []byte{200}}, {"i8", GGUFInt8, []byte{0xfe}},
		{"u16", GGUFUint16, []byte{1, 2}}, {"i16", GGUFInt16, []byte{0xff, 0xff}},
		{"i32", GGUFInt32, le32(math.MaxUint32 - 6)}, {"f32", GGUFFloat32, le32(math.Float32bits(1.5))},
		{"bool", GGUFBool, []byte{1}}, {"u64", GGUFUint64, le64(1 << 40)},
		{"i64", GGUFInt64, le64(math.MaxUint64)}, {"f64", GGUFFloat64, le64(math.Float64bits(-0.25))},
		{"tokens", GGUFArrayType, garr(GGUFString, 3, gstr("a"), gstr(""), gstr("ccc"))},
		{"ids", GGUFArrayType, garr(GGUFInt32, 2, le32(7), le32(8))},
		{"nested", GGUFArrayType, garr(GGUFArrayType, 2, garr(GGUFUint8, 2, []byte{1, 2}), garr(GGUFString, 1, gstr("x")))},
		{"empty", GGUFArrayType, garr(GGUFFloat64, 0)},
	}, tensors: []testTensor{
		{name: "blk.0.q4", dims: []uint64{64, 3}, typ: GGMLQ4_0, data: data["blk.0.q4"]},
		{name: "norm", dims: []uint64{5}, typ: GGMLF32, data: data["norm"]},
		{name: "blk.0.q8", dims: []uint64{64, 1}, typ: GGMLQ8_0, data: data["blk.0.q8"]},
		{name: "emb", dims: []uint64{4, 2}, typ: GGMLF16, data: data["emb"]},
		{name: "k", dims: []uint64{256, 1}, typ: 12, data: data["k"]},
		{name: "bias", dims: []uint64{3, 1, 2}, typ: GGMLBF16, data: data["bias"]},
	}}
	return f, data
}

func TestGGUFReadsEveryValueAndTensor(t *testing.T) {
	for _, version := range []uint32{2, 3} {
		f, data := sampleGGUF(t, version)
		raw := f.encode()
		g, err := ReadGGUF(bytes.NewReader(raw), int64(len(raw)))
		if err != nil {
			t.Fatalf("v%d: %v", version, err)
		}
		if g.Version != version || g.Alignment != 64 || g.DataStart%64 != 0 {
			t.Errorf("v%d: version %d, alignment %d, data from %d", version, g.Version, g.Alignment, g.DataStart)
		}
		want := map[string]any{"general.architecture": "llama", "general.alignment": uint32(64), "u8": uint8(200), "i8": int8(-2),
			"u16": uint16(0x201), "i16": int16(-1), "i32": int32(-7), "f32": float32(1.5), "bool": true, "u64": uint64(1 << 40),
			"i64": int64(-1), "f64": -0.25, "tokens": GGUFArray{GGUFString, 3}, "ids": GGUFArray{GGUFInt32, 2},
			"nested": GGUFArray{GGUFArrayType, 2}, "empty": GGUFArray{GGUFFloat64, 0}}
		for k, v := range want {
			if got := g.Metadata[k]; got.Value != v {
				t.Errorf("v%d: %s = %#v (%s), want %#v", version, k, got.Value, got.Type, v)
			}
		}
		if len(g.Metadata) != len(want) {
			t.Errorf("v%d: %d keys, want %d", version, len(g.Metadata), len(want))
		}
		shapes := map[string]struct {
			dt    DType
			shape []int
		}{"blk.0.q4": {U8, []int{3, 36}}, "blk.0.q8": {U8, []int{1, 68}}, "norm": {F32, []int{5}}, "emb": {F16, []int{2, 4}}, "bias": {BF16, []int{2, 1, 3}}}
		var names []string
		for _, ti := range g.Tensors() {
			names = append(names, ti.Name)
			if ti.Offset%64 != 0 || ti.Size != int64(len(data[ti.Name])) {
				t.Errorf("v%d: %s at %d, %d bytes", version, ti.Name, ti.Offset, ti.Size)
			}
			tn, err := g.Tensor(ti.Name)
			if ti.Name == "k" {
				if err == nil || !strings.Contains(err.Error(), "Q4_K") {
					t.Errorf("v%d: a Q4_K tensor read as %v (err %v), want an error naming Q4_K", version, tn, err)
				}
				continue
			}
			if err != nil {
				t.Fatalf("v%d: %s: %v", version, ti.Name, err)
			}
			s := shapes[ti.Name]
			if tn.DType() != s.dt || !slices.Equal(tn.Shape(), s.shape) || !bytes.Equal(tn.Bytes(), data[ti.Name]) {
				t.Errorf("v%d: %s read as %s %v (bytes equal: %v), want %s %v", version, ti.Name, tn.DType(), tn.Shape(), bytes.Equal(tn.Bytes(), data[ti.Name]), s.dt, s.shape)
			}
		}
		if !slices.Equal(names, []string{"blk.0.q4", "norm", "blk.0.q8", "emb", "k", "bias"}) {
			t.Errorf("v%d: tensors %v", version, names)
		}
		if q, ok := GGMLType(GGMLQ8_0).Quant(); !ok || q != GGMLQuant(Q8_0) {
			t.Errorf("Q8_0's Quant: %v %v", q, ok)
		}
		wrong, _ := New(U8, 3, 35)
		if err := g.ReadInto("blk.0.q4", wrong); err == nil {
			t.Errorf("v%d: ReadInto took a [3, 35] tensor for a [3, 36] one", version)
		}
		if _, err := g.Tensor("nope"); err == nil {
			t.Errorf("v%d: a missing tensor read", version)
		}
	}
}

// Every prefix of a valid file, and files whose fields are each broken in
// turn, are errors (wrapping ErrGGUF), never panics or huge allocations.
func TestGGUFRefusesBadFiles(t *testing.T) {
	f, _ := sampleGGUF(t, 3)
	raw := f.encode()
	for n := range len(raw) {
		if _, err := ReadGGUF(bytes.NewReader(raw[:n]), int64(n)); !errors.Is(err, ErrGGUF) {
			t.Fatalf("the first %d of %d bytes: %v, want ErrGGUF", n, len(raw), err)
		}
	}
	plain := func() ggufFile { // one Q4_0 tensor, default alignment
		f, _ := sampleGGUF(t, 3)
		f.kvs, f.align, f.tensors = nil, 0, f.tensors[:1]
		return f
	}
	huge := uint64(1) << 62
	cases := []struct {
		name, want string
		edit       func(f *ggufFile)
		raw        func(b []byte) []byte
	}{
		{name: "magic", want: "magic", raw: func(b []byte) []byte { b[0] = 'g'; return b }},
		{name: "v1", want: "version 1", edit: func(f *ggufFile) { f.version = 1 }},
		{name: "v4", want: "version 4", edit: func(f *ggufFile) { f.version = 4 }},
		{name: "big-endian", want: "big-endian", edit: func(f *ggufFile) { f.version = 3 << 24 }},
		{name: "tensor count", want: "tensors", edit: func(f *ggufFile) { f.nTensors = huge }},
		{name: "kv count", want: "metadata keys", edit: func(f *ggufFile) { f.nKV = huge }},
		{name: "key length", want: "metadata key bytes", edit: func(f *ggufFile) { f.kvs = []testKV{{key: "k"}}; f.nKV = 1 },
			raw: func(b []byte) []byte { binary.LittleEndian.PutUint64(b[24:], huge); return b }},
		{name: "value type", want: "unknown value type 13", edit: func(f *ggufFile) { f.kvs = []testKV{{"k", 13, le64(0)}} }},
		{name: "string length", want: "string bytes", edit: func(f *ggufFile) { f.kvs = []testKV{{"k", GGUFString, le64(huge)}} }},
		{name: "array length", want: "uint64 elements", edit: func(f *ggufFile) { f.kvs = []testKV{{"k", GGUFArrayType, garr(GGUFUint64, int(huge))}} }},
		{name: "array of strings", want: "string elements", edit: func(f *ggufFile) { f.kvs = []testKV{{"k", GGUFArrayType, garr(GGUFString, int(huge/4))}} }},
		{name: "array element type", want: "unknown value type 99", edit: func(f *ggufFile) { f.kvs = []testKV{{"k", GGUFArrayType, garr(99, 1)}} }},
		{name: "nesting", want: "nests arrays", edit: func(f *ggufFile) {
			v := garr(GGUFUint8, 0)
			for range ggufMaxNesting {
				v = garr(GGUFArrayType, 1, v)
			}
			f.kvs = []testKV{{"k", GGUFArrayType, v}}
		}},
		{name: "alignment 0", want: "general.alignment", edit: func(f *ggufFile) { f.kvs = []testKV{u32kv("general.alignment", 0)} }},
		{name: "alignment 48", want: "general.alignment", edit: func(f *ggufFile) { f.kvs = []testKV{u32kv("general.alignment", 48)} }},
		{name: "alignment string", want: "general.alignment", edit: func(f *ggufFile) { f.kvs = []testKV{{"general.alignment", GGUFString, gstr("32")}} }},
		{name: "duplicate key", want: "twice", edit: func(f *ggufFile) { f.kvs = []testKV{u32kv("a", 1), u32kv("a", 2)} }},
		{name: "duplicate tensor", want: "twice", edit: func(f *ggufFile) { f.tensors = append(f.tensors, f.tensors[0]) }},
		{name: "no dims", want: "0 dims", edit: func(f *ggufFile) { f.tensors[0].nd = -1 }},
		{name: "5 dims", want: "5 dims", edit: func(f *ggufFile) { f.tensors[0].dims = []uint64{32, 1, 1, 1, 1} }},
		{name: "huge dims", want: "more elements", edit: func(f *ggufFile) { f.tensors[0].dims = []uint64{1 << 32, 1 << 32} }},
		{name: "huge dim", want: "more elements", edit: func(f *ggufFile) { f.tensors[0].dims = []uint64{math.MaxUint64} }},
		{name: "unknown type", want: "ggml type 31", edit: func(f *ggufFile) { f.tensors[0].typ = 31 }},
		{name: "partial block", want: "blocks hold 32", edit: func(f *ggufFile) { f.tensors[0].dims = []uint64{48, 3} }},
		{name: "misaligned", want: "alignment 32", edit: func(f *ggufFile) { f.tensors[0].offset = 16 }},
		{name: "offset", want: "beyond", edit: func(f *ggufFile) { f.tensors[0].offset = huge }},
		{name: "past the end", want: "past the end", edit: func(f *ggufFile) { f.tensors[0].offset = 64 }},
		{name: "bigger than the data", want: "past the end", edit: func(f *ggufFile) { f.tensors[0].dims = []uint64{64, 4} }},
	}
	for _, c := range cases {
		f := plain()
		if c.edit != nil {
			c.edit(&f)
		}
		for i := range f.tensors {
			if f.tensors[i].nd == -1 {
				f.tensors[i].nd, f.tensors[i].dims = 0, nil
			}
		}
		b := f.encode()
		if c.raw != nil {
			b = c.raw(b)
		}
		_, err := ReadGGUF(bytes.NewReader(b), int64(len(b)))
		if !errors.Is(err, ErrGGUF) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want ErrGGUF saying %q", c.name, err, c.want)
		}
	}
	if _, err := ReadGGUF(bytes.NewReader(nil), -1); !errors.Is(err, ErrGGUF) {
		t.Errorf("size -1: %v", err)
	}
}

// The file a reader sees can shrink after ReadGGUF checked it: the tensor
// read says so instead of returning short data.
func TestGGUFTensorReadFailsOnShortReader(t *testing.T) {
	f, _ := sampleGGUF(t, 3)
	raw := f.encode()
	g, err := ReadGGUF(bytes.NewReader(raw), int64(len(raw)))
	if err != nil {
		t.Fatal(err)
	}
	g.r = bytes.NewReader(raw[:len(raw)-1])
	if _, err := g.Tensor("bias"); err == nil || !strings.Contains(err.Error(), "EOF") {
		t.Errorf("reading past a shrunken file: %v", err)
	}
}

// pythonGGUF is a GGUF file written by gguf-py's GGUFWriter (llama.cpp's
// own writer), with the bytes it wrote for each tensor beside it, or nil
// where python3 cannot import gguf.
func pythonGGUF(t testing.TB) (file []byte, tensors map[string][]byte) {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		return nil, nil
	}
	dir := t.TempDir()
	script := `
import sys, numpy as np, gguf
from gguf import quants, GGMLQuantizationType as Q
d = sys.argv[1]
rng = np.random.default_rng(7)
w = gguf.GGUFWriter(d + "/m.gguf", "llama")
w.add_uint32("llama.block_count", 1)
w.add_float32("llama.rope.freq_base", 10000.0)
w.add_bool("flag", True)
w.add_string("general.name", "tiny")
w.add_array("tokenizer.ggml.tokens", ["<s>", "a", "bc"])
w.add_array("tokenizer.ggml.scores", [0.0, -1.5, 2.25])
ts = {
    "blk.0.attn_q.weight": (quants.quantize(rng.standard_normal((3, 64), dtype=np.float32), Q.Q4_0), Q.Q4_0),
    "blk.0.ffn_up.weight": (quants.quantize(rng.standard_normal((2, 96), dtype=np.float32), Q.Q8_0), Q.Q8_0),
    "output_norm.weight": (rng.standard_normal(7, dtype=np.float32), None),
    "token_embd.weight": (rng.standard_normal((2, 5)).astype(np.float16), None),
}
for name, (a, qt) in ts.items():
    w.add_tensor(name, a, raw_dtype=qt)
    a.tofile(d + "/" + name)
w.write_header_to_file()
w.write_kv_data_to_file()
w.write_tensors_to_file()
w.close()
`
	if out, err := exec.Command("python3", "-c", script, dir).CombinedOutput(); err != nil {
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		t.Logf("no GGUF file from gguf-py (%v): %s", err, lines[len(lines)-1])
		return nil, nil
	}
	file, err := os.ReadFile(filepath.Join(dir, "m.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	tensors = map[string][]byte{}
	for _, name := range []string{"blk.0.attn_q.weight", "blk.0.ffn_up.weight", "output_norm.weight", "token_embd.weight"} {
		if tensors[name], err = os.ReadFile(filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	return file, tensors
}

// gguf-py's writer's file reads back as it wrote it: metadata, names,
// kgenrt shapes and bytes. (e2e/gguf_quant_test.go runs such tensors
// through the qmatmul kernels.)
func TestGGUFReadsPythonWriter(t *testing.T) {
	file, want := pythonGGUF(t)
	if file == nil {
		t.Skip("python3 cannot import gguf (pip install gguf; scripts/test-deps tries)")
	}
	path := filepath.Join(t.TempDir(), "m.gguf")
	if err := os.WriteFile(path, file, 0o644); err != nil {
		t.Fatal(err)
	}
	g, err := OpenGGUF(path)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	for k, v := range map[string]any{"general.architecture": "llama", "llama.block_count": uint32(1), "llama.rope.freq_base": float32(10000),
		"flag": true, "general.name": "tiny", "tokenizer.ggml.tokens": GGUFArray{GGUFString, 3}, "tokenizer.ggml.scores": GGUFArray{GGUFFloat32, 3}} {
		if got := g.Metadata[k].Value; got != v {
			t.Errorf("%s = %#v, want %#v", k, got, v)
		}
	}
	shapes := map[string][]int{"blk.0.attn_q.weight": {3, 36}, "blk.0.ffn_up.weight": {2, 102}, "output_norm.weight": {7}, "token_embd.weight": {2, 5}}
	if len(g.Tensors()) != len(shapes) {
		t.Errorf("%d tensors, want %d", len(g.Tensors()), len(shapes))
	}
	for name, shape := range shapes {
		tn, err := g.Tensor(name)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(tn.Shape(), shape) || !bytes.Equal(tn.Bytes(), want[name]) {
			t.Errorf("%s: %s %v, want %v and gguf-py's bytes (equal: %v)", name, tn.DType(), tn.Shape(), shape, bytes.Equal(tn.Bytes(), want[name]))
		}
	}
}

// FuzzGGUF feeds ReadGGUF arbitrary files: it must return an error or a
// file whose every readable tensor is exactly its bytes in the data
// section. Under go test it runs the seeds only: the Go-written files of
// both versions and, where gguf-py is importable, its writer's file.
func FuzzGGUF(f *testing.F) {
	for _, v := range []uint32{2, 3} {
		s, _ := sampleGGUF(f, v)
		f.Add(s.encode())
	}
	minimal := ggufFile{tensors: []testTensor{{name: "w", dims: []uint64{32, 1}, typ: GGMLQ8_0, data: make([]byte, 34)}}}
	f.Add(minimal.encode())
	if file, _ := pythonGGUF(f); file != nil {
		f.Add(file)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		g, err := ReadGGUF(bytes.NewReader(raw), int64(len(raw)))
		if err != nil {
			if !errors.Is(err, ErrGGUF) {
				t.Fatalf("an error not wrapping ErrGGUF: %v", err)
			}
			return
		}
		for _, ti := range g.Tensors() {
			tn, err := g.Tensor(ti.Name)
			if err != nil {
				continue // a type kgenrt does not read
			}
			at := g.DataStart + ti.Offset
			if !bytes.Equal(tn.Bytes(), raw[at:at+ti.Size]) {
				t.Fatalf("%s: %d bytes read differ from the file's at %d", ti.Name, len(tn.Bytes()), at)
			}
		}
	})
}
