package kgenrt

import (
	"fmt"
	"slices"
)

// Sizes holds a launch's size fields by name: those the tensors' shapes give
// (n; rows, cols; <segment>_rows) from Check and Sizes64, and the derived
// ones (rows_per_group) from a launch's rules.
type Sizes map[string]int

// Check validates the tensors of one launch against the kernel's binding
// table before anything touches a GPU: none is nil or a freed CUDA tensor,
// the variant's storage dtype (from the first tensor bound as T) is in the
// dtype-key table, every tensor has its binding's dtype (pinned inputs keep
// their fixed dtype) and fits its binding's Shape (see Binding.Shape), each
// tensor fits the kernels' 32-bit indexing, and no output overlaps another
// tensor except an identical input (in place; CUDA tensors by their device
// addresses). It returns the variant and the size fields the shapes name.
// Launchers and the CPU reference both call it (or CheckSizes, the same
// check without the map), so they accept exactly the same tensors.
func (k *Kernel) Check(tensors ...*Tensor) (*Variant, Sizes, error) {
	var buf [8]sizeEntry
	v, entries, err := k.check(tensors, buf[:0])
	if err != nil {
		return nil, nil, err
	}
	sizes := make(Sizes, len(entries))
	for _, e := range entries {
		sizes[e.name] = e.val
	}
	return v, sizes, nil
}

// CheckSizes is Check for launchers: the same checks, and the size fields
// the shapes name written into sizes, one slot per such field in args
// struct order (rows, cols), instead of a map, so a launch allocates
// nothing here.
func (k *Kernel) CheckSizes(sizes []int, tensors ...*Tensor) (*Variant, error) {
	var buf [8]sizeEntry
	v, entries, err := k.check(tensors, buf[:0])
	if err != nil {
		return nil, err
	}
	j := 0
	for _, b := range k.Bindings {
		if b.Role != Args {
			continue
		}
		for _, f := range b.Fields {
			for _, e := range entries {
				if f.Size && e.name == f.Name {
					if j < len(sizes) {
						sizes[j] = e.val
					}
					j++
				}
			}
		}
	}
	if j != len(sizes) {
		return nil, fmt.Errorf("kgenrt: kernel %s: its shapes name %d size fields, CheckSizes got %d slots", k.Name, j, len(sizes))
	}
	return v, nil
}

// CheckHost is Check for the CPU reference, which reads elements on the
// host: a CUDA tensor is refused (copy it to a host tensor first).
func (k *Kernel) CheckHost(tensors ...*Tensor) (*Variant, Sizes, error) {
	v, sizes, err := k.Check(tensors...)
	if err != nil {
		return nil, nil, err
	}
	i := 0
	for _, b := range k.Bindings {
		if b.Role == Args {
			continue
		}
		if g := tensors[i].gpu; g != nil {
			return nil, nil, k.tensorErr(b, "is in "+g.drv.backend.title()+" device memory; the CPU reference reads host memory (copy it to a host tensor with kgenrt.Copy)")
		}
		i++
	}
	return v, sizes, nil
}

// sizeEntry is one size field a shape gave: its value and the tensor (index
// into the call's tensors) it came from.
type sizeEntry struct {
	name string
	val  int
	from int
}

func lookup(entries []sizeEntry, name string) int {
	for i := range entries {
		if entries[i].name == name {
			return i
		}
	}
	return -1
}

// check is Check's work without allocating: tensor bindings are found by
// walking k.Bindings, and the size fields go into entries (a caller's
// stack buffer).
func (k *Kernel) check(tensors []*Tensor, entries []sizeEntry) (*Variant, []sizeEntry, error) {
	var ibuf [16]int
	bs := k.tensorIndex(ibuf[:0]) // index into k.Bindings of each tensor
	if len(tensors) != len(bs) {
		return nil, nil, fmt.Errorf("kgenrt: kernel %s takes %d tensors, got %d", k.Name, len(bs), len(tensors))
	}
	for i, t := range tensors {
		if t == nil {
			return nil, nil, k.tensorErr(k.Bindings[bs[i]], "is nil")
		}
		if t.gpu != nil && t.gpu.freed {
			return nil, nil, k.tensorErr(k.Bindings[bs[i]], "is a "+t.gpu.drv.backend.title()+" tensor that was freed")
		}
	}
	v, err := k.variantOf(bs, tensors)
	if err != nil {
		return nil, nil, err
	}
	strided := k.Strided()
	var gbuf [8]groupDim
	groups := gbuf[:0]
	if err := k.checkBatchDesc(); err != nil {
		return nil, nil, err
	}
	for i, t := range tensors {
		b := &k.Bindings[bs[i]]
		if err := k.checkDType(b, t, v); err != nil {
			return nil, nil, err
		}
		if strided {
			entries, groups, err = k.bindStrided(i, bs, tensors, entries, groups)
		} else if err = k.checkDense(b, t); err == nil {
			entries, err = k.bind(i, bs, tensors, entries)
		}
		if err != nil {
			return nil, nil, err
		}
		if int64(t.Len()) > k.MaxElems() {
			return nil, nil, k.tensorErr(*b, fmt.Sprintf("has %d elements; kernel %s takes at most %d (2^32 - %d)", t.Len(), k.Name, k.MaxElems(), k.ElemsPerThread))
		}
		if strided && int64(t.reach()) > 1<<32 {
			return nil, nil, k.tensorErr(*b, fmt.Sprintf("reaches element %d from its first (shape %v, strides %v); kernel %s indexes in 32 bits from the bound pointer", t.reach()-1, t.shape, t.Strides(), k.Name))
		}
	}
	if strided {
		if entries, err = k.resolveGroups(bs, tensors, entries, groups); err != nil {
			return nil, nil, err
		}
	}
	if err := k.checkOverlap(bs, tensors); err != nil {
		return nil, nil, err
	}
	if err := k.checkPaired(bs, entries); err != nil {
		return nil, nil, err
	}
	return v, entries, nil
}

// tensorIndex appends the index into k.Bindings of each tensor binding
// (inputs then outputs) to dst.
func (k *Kernel) tensorIndex(dst []int) []int {
	for i := range k.Bindings {
		if k.Bindings[i].Role != Args {
			dst = append(dst, i)
		}
	}
	return dst
}

// bind binds tensor i's shape to size fields. A shape [s0, s1, …] binds the
// tensor's trailing dims to s1, … one each, and its leading dims,
// flattened, to s0: an elementwise [n] takes a tensor of any shape, [rows,
// cols] any [..., cols]. A size some binding names as a trailing dim (cols)
// is a true axis: as the leading size of a shape ([cols], a row vector) it
// takes exactly one dim. Tensors bound to the same Shape must have the same
// shape (rank included), and a size bound twice must agree.
func (k *Kernel) bind(i int, bs []int, tensors []*Tensor, entries []sizeEntry) ([]sizeEntry, error) {
	b, t := &k.Bindings[bs[i]], tensors[i]
	for f := 0; f < i; f++ {
		if prev := &k.Bindings[bs[f]]; slices.Equal(prev.Shape, b.Shape) && prev.Quant == nil && b.Quant == nil {
			if !slices.Equal(t.shape, tensors[f].shape) {
				return nil, k.tensorErr(*b, fmt.Sprintf("has shape %v, want %v (the shape of %s)", t.shape, tensors[f].shape, k.Bindings[bs[f]].Name))
			}
			return entries, nil
		}
	}
	dims := t.shape
	if len(b.Shape) == 0 {
		return entries, nil
	}
	lead := len(dims) - (len(b.Shape) - 1)
	if len(dims) != len(b.Shape) && k.isAxis(b.Shape[0]) || lead < 1 { // isAxis (a scan) only when the ranks differ
		return nil, k.tensorErr(*b, fmt.Sprintf("has shape %v, want %s", t.shape, shapeText(b.Shape)))
	}
	for j, name := range b.Shape {
		val := dims[lead+j-1]
		if j == 0 {
			val = 1
			for _, d := range dims[:lead] {
				val *= d
			}
		}
		if j == len(b.Shape)-1 && b.Quant != nil {
			k0, ok := b.logical(val)
			if !ok || len(dims) != len(b.Shape) {
				return nil, k.tensorErr(*b, fmt.Sprintf("has shape %v; %s is [%s, %s] for a %s that is a multiple of %d",
					t.shape, b.packedWhat(), b.Shape[0], b.widthText(), name, b.Quant.Group))
			}
			val = k0
		}
		var err error
		if entries, err = k.bindSize(i, bs, tensors, name, val, entries); err != nil {
			return nil, err
		}
	}
	return entries, nil
}

// bindSize binds size name to val, given by tensor i, or checks it against
// the value an earlier tensor gave.
func (k *Kernel) bindSize(i int, bs []int, tensors []*Tensor, name string, val int, entries []sizeEntry) ([]sizeEntry, error) {
	if n, ok := fixedDim(name); ok { // a baked dimension (a top-k output's k)
		if val != n {
			return nil, k.tensorErr(k.Bindings[bs[i]], fmt.Sprintf("has %d in its last dimension (shape %v), want %d", val, tensors[i].shape, n))
		}
		return entries, nil
	}
	e := lookup(entries, name)
	if e < 0 {
		return append(entries, sizeEntry{name: name, val: val, from: i}), nil
	}
	if prev := entries[e]; prev.val != val {
		return nil, k.tensorErr(k.Bindings[bs[i]], fmt.Sprintf("has %s = %d (shape %v), want %d (the %s of %s)", name, val, tensors[i].shape, prev.val, name, k.Bindings[bs[prev.from]].Name))
	}
	return entries, nil
}

// isAxis reports whether some binding names size as a trailing dim.
func (k *Kernel) isAxis(size string) bool {
	for _, b := range k.Bindings {
		for j, s := range b.Shape {
			if j > 0 && s == size {
				return true
			}
		}
	}
	return false
}

func shapeText(shape []string) string { return fmt.Sprint(shape) }

// Sizes64 checks the input lengths of a float64 evaluation (flat slices, in
// input binding order) and returns the size fields: given holds the sizes a
// length cannot tell (a rowwise kernel's cols), each input's length must be
// the product of its Shape's sizes, and the one size not yet known is the
// length divided by the others.
func (k *Kernel) Sizes64(given Sizes, lens ...int) (Sizes, error) {
	ins := k.Inputs()
	if len(lens) != len(ins) {
		return nil, fmt.Errorf("kgenrt: kernel %s takes %d inputs, got %d", k.Name, len(ins), len(lens))
	}
	sizes := Sizes{}
	for name, v := range given {
		if v < 0 {
			return nil, fmt.Errorf("kgenrt: kernel %s: negative %s %d", k.Name, name, v)
		}
		sizes[name] = v
	}
	from := map[string]string{}
	for i, b := range ins {
		known, unknown := 1, ""
		for j, s := range b.Shape {
			if v, ok := sizes[s]; ok {
				known *= b.stored(j, v)
			} else {
				unknown = s
			}
		}
		if unknown != "" && b.Quant != nil && unknown == b.Shape[len(b.Shape)-1] {
			return nil, k.tensorErr(b, "is quantized: give the size of its last dimension")
		}
		n := lens[i]
		switch {
		case unknown == "" && n != known:
			return nil, k.tensorErr(b, fmt.Sprintf("has %d values, want %d%s", n, known, fromText(b.Shape, from)))
		case unknown == "":
		case known == 0:
			sizes[unknown], from[unknown] = 0, b.Name
		case n%known != 0:
			return nil, k.tensorErr(b, fmt.Sprintf("has %d values, not a whole number of %d", n, known))
		default:
			sizes[unknown], from[unknown] = n/known, b.Name
		}
	}
	return sizes, nil
}

// fromText names the inputs the sizes of shape came from, for messages.
func fromText(shape []string, from map[string]string) string {
	for _, s := range shape {
		if f, ok := from[s]; ok {
			return " (the length of " + f + ")"
		}
	}
	return ""
}

// variantOf looks up the storage dtype of the first T-typed tensor.
func (k *Kernel) variantOf(bs []int, tensors []*Tensor) (*Variant, error) {
	for i, bi := range bs {
		if b := &k.Bindings[bi]; b.DType == T {
			v, err := k.Variant(tensors[i].dtype)
			if err != nil {
				err.(*DTypeError).Tensor = b.Name
			}
			return v, err
		}
	}
	if len(k.Variants) == 1 { // every tensor pinned: the one variant (kgen refuses more)
		return &k.Variants[0], nil
	}
	return nil, fmt.Errorf("kgenrt: kernel %s has no tensor of the variant's dtype", k.Name)
}

func (k *Kernel) checkDType(b *Binding, t *Tensor, v *Variant) error {
	want := b.DType
	if want == T {
		want = v.DType
	}
	if t.dtype != want {
		return &DTypeError{Kernel: k.Name, Tensor: b.Name, DType: t.dtype, Want: want, Pinned: b.DType != T}
	}
	return nil
}

// checkOverlap rejects outputs that may share memory with any other
// tensor, except an identical input (the same first element, dtype and
// layout: the same bytes for contiguous tensors, the same shape and strides
// for strided views): every kgen kernel reads all inputs of an element
// before it writes that element's outputs, and each thread owns its
// elements, so y = x in place is safe; any other overlap would let one
// thread overwrite what another still has to read. Views whose reachable
// spans intersect share memory unless their elements provably do not
// (mayAlias: two heads of one activation, rows [0, len) and row pos of one
// cache). An output view that puts two of its elements in one place (a 0
// stride over a dim of size > 1) is refused.
func (k *Kernel) checkOverlap(bs []int, tensors []*Tensor) error {
	for i, bi := range bs {
		b := &k.Bindings[bi]
		if b.Role != Output {
			continue
		}
		if out := tensors[i]; !out.injective() {
			for d, n := range out.shape {
				if n > 1 && out.strides[d] == 0 {
					return k.tensorErr(*b, fmt.Sprintf("is a view with stride 0 over dim %d (size %d): its %d elements would be written to one place", d, n, n))
				}
			}
			return k.tensorErr(*b, fmt.Sprintf("is a view whose strides %v put several of its elements (shape %v) in one place", out.strides, out.shape))
		}
		for j, t := range tensors {
			if j == i || !mayAlias(tensors[i], t) {
				continue
			}
			o := &k.Bindings[bs[j]]
			inPlace := o.Role == Input && sameElems(tensors[i], t)
			if b.Indexed || o.Indexed {
				return k.tensorErr(*b, fmt.Sprintf("shares memory with %s %s; a tensor read or written at computed coordinates (docs/indexing.md) shares memory with no other, not even in place", o.Role, o.Name))
			}
			if inPlace && o.Paired {
				return k.tensorErr(*b, fmt.Sprintf("shares memory with %s, which the kernel reads at paired elements (another thread reads each element's partner): write it out of place", o.Name))
			}
			if !inPlace {
				return k.tensorErr(*b, fmt.Sprintf("overlaps %s %s; an output may share memory only with an identical input (in place)", o.Role, o.Name))
			}
		}
	}
	return nil
}

// checkPaired refuses an odd row length for a kernel that reads paired
// elements (rotary embeddings pair every element with another).
func (k *Kernel) checkPaired(bs []int, entries []sizeEntry) error {
	for _, bi := range bs {
		b := &k.Bindings[bi]
		if !b.Paired || len(b.Shape) == 0 {
			continue
		}
		last := b.Shape[len(b.Shape)-1]
		if e := lookup(entries, last); e >= 0 && entries[e].val%2 != 0 {
			return k.tensorErr(*b, fmt.Sprintf("has %s = %d; kernel %s pairs the elements of each row, so %s must be even", last, entries[e].val, k.Name, last))
		}
	}
	return nil
}

func (k *Kernel) tensorErr(b Binding, reason string) error {
	return &TensorError{Kernel: k.Name, Tensor: b.Name, Role: b.Role, Reason: reason}
}
