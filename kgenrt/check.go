package kgenrt

import "fmt"

// Check validates the tensors of one launch against the kernel's binding
// table before anything touches a GPU: none is nil, the variant's storage
// dtype (from the first tensor bound as T) is in the dtype-key table, every
// tensor has its binding's dtype (pinned inputs keep their fixed dtype), all
// shapes are equal, the element count fits the kernels' 32-bit indexing, and
// no output overlaps another tensor except an identical input (in place).
// It returns the variant and the element count n. Launchers and the CPU
// reference both call it, so they accept exactly the same tensors.
func (k *Kernel) Check(tensors ...*Tensor) (*Variant, int, error) {
	bs := k.Tensors()
	if len(tensors) != len(bs) {
		return nil, 0, fmt.Errorf("kgenrt: kernel %s takes %d tensors, got %d", k.Name, len(bs), len(tensors))
	}
	for i, t := range tensors {
		if t == nil {
			return nil, 0, k.tensorErr(bs[i], "is nil")
		}
	}
	v, err := k.variantOf(bs, tensors)
	if err != nil {
		return nil, 0, err
	}
	for i, t := range tensors {
		if err := k.checkOne(bs[i], t, v, tensors[0]); err != nil {
			return nil, 0, err
		}
	}
	n := tensors[0].Len()
	if int64(n) > k.MaxElems() {
		return nil, 0, k.tensorErr(bs[0], fmt.Sprintf("has %d elements; kernel %s takes at most %d (2^32 - %d)", n, k.Name, k.MaxElems(), k.ElemsPerThread))
	}
	if err := k.checkOverlap(bs, tensors); err != nil {
		return nil, 0, err
	}
	return v, n, nil
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

func (k *Kernel) checkOne(b Binding, t *Tensor, v *Variant, first *Tensor) error {
	want := b.DType
	if want == T {
		want = v.DType
	}
	if t.dtype != want {
		return &DTypeError{Kernel: k.Name, Tensor: b.Name, DType: t.dtype, Want: want, Pinned: b.DType != T}
	}
	if !sameShape(t.shape, first.shape) {
		return k.tensorErr(b, fmt.Sprintf("has shape %v, want %v (the shape of %s)", t.shape, first.shape, k.Tensors()[0].Name))
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
			if !inPlace {
				return k.tensorErr(b, fmt.Sprintf("overlaps %s %s; an output may share memory only with an identical input (in place)", bs[j].Role, bs[j].Name))
			}
		}
	}
	return nil
}

// SameLen checks the inputs of a float64 evaluation, which must have equal
// lengths; it returns that length.
func (k *Kernel) SameLen(lens ...int) (int, error) {
	bs := k.Tensors()
	for i, n := range lens {
		if n != lens[0] {
			return 0, k.tensorErr(bs[i], fmt.Sprintf("has %d values, want %d (the length of %s)", n, lens[0], bs[0].Name))
		}
	}
	if len(lens) == 0 {
		return 0, nil
	}
	return lens[0], nil
}

func (k *Kernel) tensorErr(b Binding, reason string) error {
	return &TensorError{Kernel: k.Name, Tensor: b.Name, Role: b.Role, Reason: reason}
}
