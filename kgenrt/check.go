package kgenrt

import "fmt"

// Sizes holds a launch's size fields by name: those the tensors' shapes give
// (n; rows, cols; <segment>_rows) from Check and Sizes64, and the derived
// ones (rows_per_group) from a launch's rules.
type Sizes map[string]int

// Check validates the tensors of one launch against the kernel's binding
// table before anything touches a GPU: none is nil, the variant's storage
// dtype (from the first tensor bound as T) is in the dtype-key table, every
// tensor has its binding's dtype (pinned inputs keep their fixed dtype) and
// fits its binding's Shape (see Binding.Shape), each tensor fits the
// kernels' 32-bit indexing, and no output overlaps another tensor except an
// identical input (in place). It returns the variant and the size fields
// the shapes name. Launchers and the CPU reference both call it, so they
// accept exactly the same tensors.
func (k *Kernel) Check(tensors ...*Tensor) (*Variant, Sizes, error) {
	bs := k.Tensors()
	if len(tensors) != len(bs) {
		return nil, nil, fmt.Errorf("kgenrt: kernel %s takes %d tensors, got %d", k.Name, len(bs), len(tensors))
	}
	for i, t := range tensors {
		if t == nil {
			return nil, nil, k.tensorErr(bs[i], "is nil")
		}
	}
	v, err := k.variantOf(bs, tensors)
	if err != nil {
		return nil, nil, err
	}
	sh := shaper{k: k, sizes: Sizes{}, from: map[string]int{}, first: map[string]int{}}
	for i, t := range tensors {
		if err := k.checkDType(bs[i], t, v); err != nil {
			return nil, nil, err
		}
		if err := sh.bind(i, bs[i], t, tensors); err != nil {
			return nil, nil, err
		}
		if int64(t.Len()) > k.MaxElems() {
			return nil, nil, k.tensorErr(bs[i], fmt.Sprintf("has %d elements; kernel %s takes at most %d (2^32 - %d)", t.Len(), k.Name, k.MaxElems(), k.ElemsPerThread))
		}
	}
	if err := k.checkOverlap(bs, tensors); err != nil {
		return nil, nil, err
	}
	if err := k.checkPaired(bs, sh.sizes); err != nil {
		return nil, nil, err
	}
	return v, sh.sizes, nil
}

// shaper binds tensor shapes to size fields. A shape [s0, s1, …] binds the
// tensor's trailing dims to s1, … one each, and its leading dims, flattened,
// to s0: an elementwise [n] takes a tensor of any shape, [rows, cols] any
// [..., cols]. A size some binding names as a trailing dim (cols) is a true
// axis: as the leading size of a shape ([cols], a row vector) it takes
// exactly one dim. Tensors bound to the same Shape must have the same shape
// (rank included), and a size bound twice must agree.
type shaper struct {
	k     *Kernel
	sizes Sizes
	from  map[string]int // size → the tensor that gave it
	first map[string]int // shape → its first tensor
}

func (sh *shaper) bind(i int, b Binding, t *Tensor, tensors []*Tensor) error {
	k, bs := sh.k, sh.k.Tensors()
	key := fmt.Sprint(b.Shape)
	if f, ok := sh.first[key]; ok {
		if !sameShape(t.shape, tensors[f].shape) {
			return k.tensorErr(b, fmt.Sprintf("has shape %v, want %v (the shape of %s)", t.shape, tensors[f].shape, bs[f].Name))
		}
		return nil
	}
	sh.first[key] = i
	dims := t.shape
	if len(b.Shape) == 0 {
		return nil
	}
	lead := len(dims) - (len(b.Shape) - 1)
	if k.isAxis(b.Shape[0]) && len(dims) != len(b.Shape) || lead < 1 {
		return k.tensorErr(b, fmt.Sprintf("has shape %v, want %s", t.shape, shapeText(b.Shape)))
	}
	vals := []int{1}
	for _, d := range dims[:lead] {
		vals[0] *= d
	}
	vals = append(vals, dims[lead:]...)
	for j, name := range b.Shape {
		if prev, ok := sh.sizes[name]; ok && prev != vals[j] {
			return k.tensorErr(b, fmt.Sprintf("has %s = %d (shape %v), want %d (the %s of %s)", name, vals[j], t.shape, prev, name, bs[sh.from[name]].Name))
		}
		if _, ok := sh.sizes[name]; !ok {
			sh.sizes[name], sh.from[name] = vals[j], i
		}
	}
	return nil
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
		for _, s := range b.Shape {
			if v, ok := sizes[s]; ok {
				known *= v
			} else {
				unknown = s
			}
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
func (k *Kernel) variantOf(bs []Binding, tensors []*Tensor) (*Variant, error) {
	for i, b := range bs {
		if b.DType == T {
			v, err := k.Variant(tensors[i].dtype)
			if err != nil {
				err.(*DTypeError).Tensor = b.Name
			}
			return v, err
		}
	}
	return nil, fmt.Errorf("kgenrt: kernel %s has no tensor of the variant's dtype", k.Name)
}

func (k *Kernel) checkDType(b Binding, t *Tensor, v *Variant) error {
	want := b.DType
	if want == T {
		want = v.DType
	}
	if t.dtype != want {
		return &DTypeError{Kernel: k.Name, Tensor: b.Name, DType: t.dtype, Want: want, Pinned: b.DType != T}
	}
	return nil
}

// checkOverlap rejects outputs that share memory with any other tensor,
// except an input with the same bytes and dtype: every kgen kernel reads all
// inputs of an element before it writes that element's outputs, and each
// thread owns its elements, so y = x in place is safe; any other overlap
// would let one thread overwrite what another still has to read.
func (k *Kernel) checkOverlap(bs []Binding, tensors []*Tensor) error {
	for i, b := range bs {
		if b.Role != Output {
			continue
		}
		lo, hi := tensors[i].span()
		for j, t := range tensors {
			if j == i {
				continue
			}
			tlo, thi := t.span()
			if lo >= thi || tlo >= hi {
				continue
			}
			inPlace := bs[j].Role == Input && lo == tlo && hi == thi && t.dtype == tensors[i].dtype
			if inPlace && bs[j].Paired {
				return k.tensorErr(b, fmt.Sprintf("shares memory with %s, which the kernel reads at paired elements (another thread reads each element's partner): write it out of place", bs[j].Name))
			}
			if !inPlace {
				return k.tensorErr(b, fmt.Sprintf("overlaps %s %s; an output may share memory only with an identical input (in place)", bs[j].Role, bs[j].Name))
			}
		}
	}
	return nil
}

// checkPaired refuses an odd row length for a kernel that reads paired
// elements (rotary embeddings pair every element with another).
func (k *Kernel) checkPaired(bs []Binding, sizes Sizes) error {
	for _, b := range bs {
		if !b.Paired || len(b.Shape) == 0 {
			continue
		}
		if last := b.Shape[len(b.Shape)-1]; sizes[last]%2 != 0 {
			return k.tensorErr(b, fmt.Sprintf("has %s = %d; kernel %s pairs the elements of each row, so %s must be even", last, sizes[last], k.Name, last))
		}
	}
	return nil
}

func (k *Kernel) tensorErr(b Binding, reason string) error {
	return &TensorError{Kernel: k.Name, Tensor: b.Name, Role: b.Role, Reason: reason}
}
