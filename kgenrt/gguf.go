package kgenrt

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"os"
	"slices"
)

// GGUF is an open GGUF file (versions 2 and 3, little-endian): llama.cpp's
// container of metadata and tensors. Its tensors are read as they lie in
// the file, with no host repacking: F32, F16 and BF16 as plain tensors,
// Q4_0 and Q8_0 as U8 tensors of their blocks, the packed form the
// qmatmul_q4_0 and qmatmul_q8_0 kernels read (Quant, GGMLQuant).
//
// Every count and length in the file is checked against the file's size
// before anything is allocated for it, so a truncated or hostile file is an
// error, never a panic or an allocation larger than the file.
type GGUF struct {
	Version   uint32               // 2 or 3
	Alignment int                  // general.alignment, else 32
	Metadata  map[string]GGUFValue // every key/value, arrays by element type and length
	DataStart int64                // the data section's offset in the file

	tensors []GGUFTensor
	byName  map[string]int
	r       io.ReaderAt
	size    int64
	closer  io.Closer
}

// GGUFTensor is one tensor's entry in a GGUF file.
type GGUFTensor struct {
	Name   string
	Dims   []int    // ne0, ne1, …: GGUF's order, innermost (contiguous) first
	Type   GGMLType // how its elements are stored
	Offset int64    // from the data section's start
	Size   int64    // bytes
}

// GGUFValue is a metadata value: Value is a uint8, int8, uint16, int16,
// uint32, int32, float32, bool, string, uint64, int64 or float64 as Type
// says, or a GGUFArray.
type GGUFValue struct {
	Type  GGUFValueType
	Value any
}

// GGUFArray is a metadata array: its element type and length; the elements
// themselves are skipped (tokenizer vocabularies and the like).
type GGUFArray struct {
	Elem GGUFValueType
	Len  int
}

// GGUFValueType is a metadata value's type as GGUF numbers it.
type GGUFValueType uint32

// The metadata value types.
const (
	GGUFUint8 GGUFValueType = iota
	GGUFInt8
	GGUFUint16
	GGUFInt16
	GGUFUint32
	GGUFInt32
	GGUFFloat32
	GGUFBool
	GGUFString
	GGUFArrayType
	GGUFUint64
	GGUFInt64
	GGUFFloat64
)

var ggufValueNames = [...]string{"uint8", "int8", "uint16", "int16", "uint32", "int32", "float32", "bool", "string", "array", "uint64", "int64", "float64"}

// ggufScalarSize is each fixed-size value type's bytes (0: string, array).
var ggufScalarSize = [...]int64{1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8}

func (t GGUFValueType) String() string {
	if int(t) < len(ggufValueNames) {
		return ggufValueNames[t]
	}
	return fmt.Sprintf("value type %d", uint32(t))
}

// GGMLType is a tensor's ggml type as GGUF numbers it.
type GGMLType uint32

// The ggml types kgenrt reads; GGMLType.String names the others.
const (
	GGMLF32  GGMLType = 0
	GGMLF16  GGMLType = 1
	GGMLQ4_0 GGMLType = 2
	GGMLQ8_0 GGMLType = 8
	GGMLBF16 GGMLType = 30
)

// ggmlTypes are ggml's types (ggml.h; gguf-py's GGML_QUANT_SIZES): name,
// values per block and bytes per block. Numbers ggml has retired are absent.
var ggmlTypes = map[GGMLType]struct {
	name          string
	values, bytes int64
}{
	0: {"F32", 1, 4}, 1: {"F16", 1, 2}, 2: {"Q4_0", 32, 18}, 3: {"Q4_1", 32, 20},
	6: {"Q5_0", 32, 22}, 7: {"Q5_1", 32, 24}, 8: {"Q8_0", 32, 34}, 9: {"Q8_1", 32, 40},
	10: {"Q2_K", 256, 84}, 11: {"Q3_K", 256, 110}, 12: {"Q4_K", 256, 144}, 13: {"Q5_K", 256, 176},
	14: {"Q6_K", 256, 210}, 15: {"Q8_K", 256, 292}, 16: {"IQ2_XXS", 256, 66}, 17: {"IQ2_XS", 256, 74},
	18: {"IQ3_XXS", 256, 98}, 19: {"IQ1_S", 256, 50}, 20: {"IQ4_NL", 32, 18}, 21: {"IQ3_S", 256, 110},
	22: {"IQ2_S", 256, 82}, 23: {"IQ4_XS", 256, 136}, 24: {"I8", 1, 1}, 25: {"I16", 1, 2},
	26: {"I32", 1, 4}, 27: {"I64", 1, 8}, 28: {"F64", 1, 8}, 29: {"IQ1_M", 256, 56},
	30: {"BF16", 1, 2}, 34: {"TQ1_0", 256, 54}, 35: {"TQ2_0", 256, 66}, 39: {"MXFP4", 32, 17},
	40: {"NVFP4", 64, 36}, 41: {"Q1_0", 128, 18},
}

func (t GGMLType) String() string {
	if info, ok := ggmlTypes[t]; ok {
		return info.name
	}
	return fmt.Sprintf("ggml type %d", uint32(t))
}

// Quant is the packed format of a Q4_0 or Q8_0 tensor (false for any other
// type).
func (t GGMLType) Quant() (Quant, bool) {
	switch t {
	case GGMLQ4_0:
		return GGMLQuant(Q4_0), true
	case GGMLQ8_0:
		return GGMLQuant(Q8_0), true
	}
	return Quant{}, false
}

// ErrGGUF is wrapped by every error about a GGUF file's contents.
var ErrGGUF = errors.New("kgenrt: bad GGUF file")

// ggufMaxDims is ggml's GGML_MAX_DIMS; ggufMaxNesting bounds arrays of
// arrays (the format allows them; no writer nests deeper than one).
const (
	ggufMaxDims      = 4
	ggufMaxNesting   = 8
	ggufMaxAlignment = 1 << 30
)

// OpenGGUF opens and reads the GGUF file at path (ReadGGUF); Close it when
// done with its tensors.
func OpenGGUF(path string) (*GGUF, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("kgenrt: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("kgenrt: %w", err)
	}
	g, err := ReadGGUF(f, st.Size())
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	g.closer = f
	return g, nil
}

// ReadGGUF reads the header, metadata and tensor entries of the GGUF file
// of size bytes that r reads; tensors are read later, on demand (Tensor,
// ReadInto), from r, which must stay readable until then.
func ReadGGUF(r io.ReaderAt, size int64) (*GGUF, error) {
	if size < 0 || size > 1<<56 { // 8·size (readTensorInfo's cap on elements) must not overflow
		return nil, fmt.Errorf("%w: size %d", ErrGGUF, size)
	}
	c := &ggufCursor{br: bufio.NewReaderSize(io.NewSectionReader(r, 0, size), 1<<16), size: size}
	g := &GGUF{Alignment: 32, Metadata: map[string]GGUFValue{}, byName: map[string]int{}, r: r, size: size}
	magic, err := c.u32()
	if err != nil {
		return nil, err
	}
	if magic != 0x46554747 { // "GGUF" little-endian
		return nil, fmt.Errorf("%w: magic %q, not \"GGUF\"", ErrGGUF, binary.LittleEndian.AppendUint32(nil, magic))
	}
	if g.Version, err = c.u32(); err != nil {
		return nil, err
	}
	switch {
	case g.Version == 2 || g.Version == 3:
	case g.Version == 1:
		return nil, fmt.Errorf("%w: GGUF version 1 (32-bit counts) is not supported; versions 2 and 3 are", ErrGGUF)
	case bits.ReverseBytes32(g.Version) == 2 || bits.ReverseBytes32(g.Version) == 3:
		return nil, fmt.Errorf("%w: a big-endian GGUF file; only little-endian files are read", ErrGGUF)
	default:
		return nil, fmt.Errorf("%w: GGUF version %d; versions 2 and 3 are read", ErrGGUF, g.Version)
	}
	nTensors, err := c.count("tensor", 8+4+8+4+8) // the smallest entry: name length, 1 dim, type, offset
	if err != nil {
		return nil, err
	}
	nKV, err := c.count("metadata key", 8+4+1) // key length, type, one byte of value
	if err != nil {
		return nil, err
	}
	for range nKV {
		if err := g.readKV(c); err != nil {
			return nil, err
		}
	}
	g.tensors = make([]GGUFTensor, 0, nTensors)
	for range nTensors {
		if err := g.readTensorInfo(c); err != nil {
			return nil, err
		}
	}
	pad := (int64(g.Alignment) - c.pos%int64(g.Alignment)) % int64(g.Alignment)
	g.DataStart = c.pos + pad
	for _, t := range g.tensors {
		// Offsets are aligned (checked) and at most the file size, so none of this overflows.
		if g.DataStart > size || t.Offset > size-g.DataStart || t.Size > size-g.DataStart-t.Offset {
			return nil, fmt.Errorf("%w: tensor %q (%s, %d bytes at data offset %d) runs past the end of the file (%d bytes, data from %d)",
				ErrGGUF, t.Name, t.Type, t.Size, t.Offset, size, g.DataStart)
		}
	}
	return g, nil
}

// readKV reads one metadata key/value.
func (g *GGUF) readKV(c *ggufCursor) error {
	key, err := c.str("metadata key")
	if err != nil {
		return err
	}
	if _, dup := g.Metadata[key]; dup {
		return fmt.Errorf("%w: metadata key %q appears twice", ErrGGUF, key)
	}
	typ, err := c.u32()
	if err != nil {
		return err
	}
	v, err := c.value(GGUFValueType(typ), key, 0)
	if err != nil {
		return err
	}
	g.Metadata[key] = GGUFValue{Type: GGUFValueType(typ), Value: v}
	if key == "general.alignment" {
		a, ok := ggufUint(v)
		if !ok || a == 0 || a > ggufMaxAlignment || a&(a-1) != 0 {
			return fmt.Errorf("%w: general.alignment is %v (%s); want a power of two up to 2^30", ErrGGUF, v, GGUFValueType(typ))
		}
		g.Alignment = int(a)
	}
	return nil
}

// ggufUint is an integer metadata value as a uint64 (false: not one, or
// negative).
func ggufUint(v any) (uint64, bool) {
	switch x := v.(type) {
	case uint8:
		return uint64(x), true
	case uint16:
		return uint64(x), true
	case uint32:
		return uint64(x), true
	case uint64:
		return x, true
	case int8:
		return uint64(x), x >= 0
	case int16:
		return uint64(x), x >= 0
	case int32:
		return uint64(x), x >= 0
	case int64:
		return uint64(x), x >= 0
	}
	return 0, false
}

// readTensorInfo reads one tensor entry and checks it on its own: dims,
// type, the size it implies and its offset's alignment.
func (g *GGUF) readTensorInfo(c *ggufCursor) error {
	name, err := c.str("tensor name")
	if err != nil {
		return err
	}
	if _, dup := g.byName[name]; dup {
		return fmt.Errorf("%w: tensor %q appears twice", ErrGGUF, name)
	}
	nd, err := c.u32()
	if err != nil {
		return err
	}
	if nd == 0 || nd > ggufMaxDims {
		return fmt.Errorf("%w: tensor %q has %d dims; ggml tensors have 1 to %d", ErrGGUF, name, nd, ggufMaxDims)
	}
	t := GGUFTensor{Name: name, Dims: make([]int, nd)}
	elems := int64(1)
	for i := range t.Dims {
		d, err := c.u64()
		if err != nil {
			return err
		}
		// Every element takes at least one bit, so no tensor of a file this
		// size has more than 8·size of them; checking each dim and the
		// running product against that keeps the product from overflowing.
		if d > uint64(8*c.size) || (d != 0 && elems > 8*c.size/int64(d)) {
			return fmt.Errorf("%w: tensor %q has dims %v…%d, more elements than a %d-byte file holds", ErrGGUF, name, t.Dims[:i], d, c.size)
		}
		t.Dims[i], elems = int(d), elems*int64(d)
	}
	typ, err := c.u32()
	if err != nil {
		return err
	}
	t.Type = GGMLType(typ)
	info, ok := ggmlTypes[t.Type]
	if !ok {
		return fmt.Errorf("%w: tensor %q has unknown %s", ErrGGUF, name, t.Type)
	}
	if int64(t.Dims[0])%info.values != 0 {
		return fmt.Errorf("%w: tensor %q is %s, whose blocks hold %d values, but its rows hold %d", ErrGGUF, name, t.Type, info.values, t.Dims[0])
	}
	t.Size = elems / info.values * info.bytes // at most 8·size/1·8 blocks' bytes: no overflow for any real int64 size
	off, err := c.u64()
	if err != nil {
		return err
	}
	if off > uint64(c.size) || off%uint64(g.Alignment) != 0 {
		return fmt.Errorf("%w: tensor %q at data offset %d: beyond the %d-byte file or not a multiple of the alignment %d", ErrGGUF, name, off, c.size, g.Alignment)
	}
	t.Offset = int64(off)
	g.byName[name] = len(g.tensors)
	g.tensors = append(g.tensors, t)
	return nil
}

// Close closes the file OpenGGUF opened (nothing for ReadGGUF's).
func (g *GGUF) Close() error {
	if g.closer == nil {
		return nil
	}
	return g.closer.Close()
}

// Tensors are the file's tensor entries, in the file's order.
func (g *GGUF) Tensors() []GGUFTensor {
	out := slices.Clone(g.tensors)
	for i := range out {
		out[i].Dims = slices.Clone(out[i].Dims)
	}
	return out
}

// Lookup is the entry of the tensor named name.
func (g *GGUF) Lookup(name string) (GGUFTensor, bool) {
	i, ok := g.byName[name]
	if !ok {
		return GGUFTensor{}, false
	}
	t := g.tensors[i]
	t.Dims = slices.Clone(t.Dims)
	return t, true
}

// Layout is the kgenrt tensor a GGUF tensor is read as: the dims outermost
// first (GGUF's reversed), in dtype F32, F16 or BF16, or for Q4_0 and Q8_0
// U8 with the innermost dim its blocks' bytes: a weight matrix with ne0 = k
// and ne1 = n is U8 [n, k/32·18] (Q4_0) or [n, k/32·34] (Q8_0), as the
// qmatmul kernels bind it. Other types are an error naming the type.
func (t GGUFTensor) Layout() (DType, []int, error) {
	shape := make([]int, len(t.Dims))
	for i, d := range t.Dims {
		shape[len(shape)-1-i] = d
	}
	switch t.Type {
	case GGMLF32:
		return F32, shape, nil
	case GGMLF16:
		return F16, shape, nil
	case GGMLBF16:
		return BF16, shape, nil
	}
	if q, ok := t.Type.Quant(); ok {
		shape[len(shape)-1] = q.Width(t.Dims[0])
		return U8, shape, nil
	}
	return 0, nil, fmt.Errorf("kgenrt: GGUF tensor %q is %s; kgenrt reads F32, F16, BF16, Q4_0 and Q8_0 tensors", t.Name, t.Type)
}

// Tensor reads the tensor named name into a new host tensor laid out as
// GGUFTensor.Layout says: the file's bytes, unchanged.
func (g *GGUF) Tensor(name string) (*Tensor, error) {
	info, ok := g.Lookup(name)
	if !ok {
		return nil, fmt.Errorf("kgenrt: no tensor %q in the GGUF file", name)
	}
	dt, shape, err := info.Layout()
	if err != nil {
		return nil, err
	}
	t, err := New(dt, shape...)
	if err != nil {
		return nil, err
	}
	return t, g.ReadInto(name, t)
}

// ReadInto reads the tensor named name into dst, which must have its
// Layout's dtype and shape and be dense in host or Metal memory (NewMetal,
// whose contents the CPU shares): the file's bytes go straight into dst's.
func (g *GGUF) ReadInto(name string, dst *Tensor) error {
	info, ok := g.Lookup(name)
	if !ok {
		return fmt.Errorf("kgenrt: no tensor %q in the GGUF file", name)
	}
	dt, shape, err := info.Layout()
	if err != nil {
		return err
	}
	if dst == nil || dst.DType() != dt || !slices.Equal(dst.Shape(), shape) {
		return fmt.Errorf("kgenrt: GGUF tensor %q (%s) is read as %s %v, not into %v", name, info.Type, dt, shape, describe(dst))
	}
	buf := dst.Bytes()
	if !dst.Contiguous() || int64(len(buf)) != info.Size {
		return fmt.Errorf("kgenrt: GGUF tensor %q is read into a dense host or Metal tensor, not a view or a CUDA tensor", name)
	}
	n, err := g.r.ReadAt(buf, g.DataStart+info.Offset)
	if n == len(buf) {
		return nil
	}
	if err == nil || err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("kgenrt: reading GGUF tensor %q: %w", name, err)
}

// describe is a tensor's dtype and shape for messages.
func describe(t *Tensor) string {
	if t == nil {
		return "nil"
	}
	return fmt.Sprintf("%s %v", t.DType(), t.Shape())
}

// ggufCursor reads a GGUF file's header sequentially, knowing how many
// bytes are left.
type ggufCursor struct {
	br        *bufio.Reader
	pos, size int64
}

// read fills p, or says the file ends first.
func (c *ggufCursor) read(p []byte) error {
	if int64(len(p)) > c.size-c.pos {
		return fmt.Errorf("%w: truncated at byte %d of %d (%d more wanted)", ErrGGUF, c.pos, c.size, len(p))
	}
	n, err := io.ReadFull(c.br, p)
	c.pos += int64(n)
	if err != nil {
		return fmt.Errorf("%w: reading byte %d: %v", ErrGGUF, c.pos, err)
	}
	return nil
}

// skip passes n bytes.
func (c *ggufCursor) skip(n int64) error {
	if n < 0 || n > c.size-c.pos {
		return fmt.Errorf("%w: truncated at byte %d of %d (%d more wanted)", ErrGGUF, c.pos, c.size, n)
	}
	for n > 0 {
		step := int(min(n, 1<<30))
		d, err := c.br.Discard(step)
		c.pos, n = c.pos+int64(d), n-int64(d)
		if err != nil {
			return fmt.Errorf("%w: reading byte %d: %v", ErrGGUF, c.pos, err)
		}
	}
	return nil
}

func (c *ggufCursor) u32() (uint32, error) {
	var b [4]byte
	err := c.read(b[:])
	return binary.LittleEndian.Uint32(b[:]), err
}

func (c *ggufCursor) u64() (uint64, error) {
	var b [8]byte
	err := c.read(b[:])
	return binary.LittleEndian.Uint64(b[:]), err
}

// count reads a uint64 count of things each at least unit bytes long,
// refusing one the rest of the file cannot hold.
func (c *ggufCursor) count(what string, unit int64) (int, error) {
	n, err := c.u64()
	if err != nil {
		return 0, err
	}
	if n > uint64((c.size-c.pos)/unit) {
		return 0, fmt.Errorf("%w: %d %ss, but only %d bytes follow (at least %d each)", ErrGGUF, n, what, c.size-c.pos, unit)
	}
	return int(n), nil
}

// str reads a string: a uint64 length, then that many bytes.
func (c *ggufCursor) str(what string) (string, error) {
	n, err := c.count(what+" byte", 1)
	if err != nil {
		return "", err
	}
	b := make([]byte, n)
	if err := c.read(b); err != nil {
		return "", err
	}
	return string(b), nil
}

// value reads one value of type t (key names it in messages); arrays are
// skipped, nested at most ggufMaxNesting deep.
func (c *ggufCursor) value(t GGUFValueType, key string, depth int) (any, error) {
	if int(t) >= len(ggufValueNames) {
		return nil, fmt.Errorf("%w: metadata %q has unknown %s", ErrGGUF, key, t)
	}
	switch t {
	case GGUFString:
		return c.str("string")
	case GGUFArrayType:
		if depth >= ggufMaxNesting {
			return nil, fmt.Errorf("%w: metadata %q nests arrays over %d deep", ErrGGUF, key, ggufMaxNesting)
		}
		et, err := c.u32()
		if err != nil {
			return nil, err
		}
		elem := GGUFValueType(et)
		if int(elem) >= len(ggufValueNames) {
			return nil, fmt.Errorf("%w: metadata %q is an array of unknown %s", ErrGGUF, key, elem)
		}
		unit := ggufScalarSize[elem]
		switch elem {
		case GGUFString:
			unit = 8 // its length
		case GGUFArrayType:
			unit = 4 + 8 // element type and count
		}
		n, err := c.count(elem.String()+" element", unit)
		if err != nil {
			return nil, err
		}
		if elem != GGUFString && elem != GGUFArrayType {
			return GGUFArray{Elem: elem, Len: n}, c.skip(int64(n) * unit)
		}
		for range n {
			if elem == GGUFString {
				l, err := c.count("string byte", 1)
				if err != nil {
					return nil, err
				}
				if err := c.skip(int64(l)); err != nil {
					return nil, err
				}
				continue
			}
			if _, err := c.value(GGUFArrayType, key, depth+1); err != nil {
				return nil, err
			}
		}
		return GGUFArray{Elem: elem, Len: n}, nil
	}
	var b [8]byte
	if err := c.read(b[:ggufScalarSize[t]]); err != nil {
		return nil, err
	}
	le := binary.LittleEndian
	switch t {
	case GGUFUint8:
		return b[0], nil
	case GGUFInt8:
		return int8(b[0]), nil
	case GGUFUint16:
		return le.Uint16(b[:]), nil
	case GGUFInt16:
		return int16(le.Uint16(b[:])), nil
	case GGUFUint32:
		return le.Uint32(b[:]), nil
	case GGUFInt32:
		return int32(le.Uint32(b[:])), nil
	case GGUFFloat32:
		return math.Float32frombits(le.Uint32(b[:])), nil
	case GGUFBool:
		return b[0] != 0, nil
	case GGUFUint64:
		return le.Uint64(b[:]), nil
	case GGUFInt64:
		return int64(le.Uint64(b[:])), nil
	}
	return math.Float64frombits(le.Uint64(b[:])), nil
}
