package hip

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/kgen-dev/kgen/ir"
)

// The AMDGPU ELF facts a code object must carry (LLVM's AMDGPUUsage):
// machine EM_AMDGPU, OS ABI HSA, and the target in the low byte of
// e_flags (EF_AMDGPU_MACH).
const (
	emAMDGPU       = 224
	osABIAMDGPUHSA = 64
	efMachMask     = 0xff
)

// machs are the EF_AMDGPU_MACH values of Archs.
var machs = map[string]uint32{"gfx942": 0x04c, "gfx1100": 0x041}

// CheckObject checks that co is an AMDGPU HSA code object for arch whose
// symbol table has every entry as a global function with its kernel
// descriptor (<entry>.kd), and that its metadata note names the target.
func CheckObject(co []byte, arch string, entries []string) error {
	f, err := elf.NewFile(bytes.NewReader(co))
	if err != nil {
		return fmt.Errorf("not an ELF file: %w", err)
	}
	defer f.Close()
	mach, ok := machs[arch]
	switch {
	case !ok:
		return fmt.Errorf("no EF_AMDGPU_MACH known for %s", arch)
	case f.Machine != emAMDGPU:
		return fmt.Errorf("machine %v, not EM_AMDGPU", f.Machine)
	case f.OSABI != osABIAMDGPUHSA:
		return fmt.Errorf("OS ABI %v, not AMDGPU HSA", f.OSABI)
	}
	var hdr elf.Header64
	if f.Class != elf.ELFCLASS64 {
		return fmt.Errorf("class %v, not ELFCLASS64", f.Class)
	}
	if err := binary.Read(bytes.NewReader(co), f.ByteOrder, &hdr); err != nil {
		return err
	}
	if flags := hdr.Flags; flags&efMachMask != mach {
		return fmt.Errorf("e_flags 0x%x: target 0x%x, not %s (0x%x)", flags, flags&efMachMask, arch, mach)
	}
	syms, err := f.DynamicSymbols()
	if err != nil {
		if syms, err = f.Symbols(); err != nil {
			return fmt.Errorf("no symbol table: %w", err)
		}
	}
	funcs, kds := map[string]bool{}, map[string]bool{}
	for _, s := range syms {
		if elf.ST_BIND(s.Info) != elf.STB_GLOBAL {
			continue
		}
		switch elf.ST_TYPE(s.Info) {
		case elf.STT_FUNC:
			funcs[s.Name] = s.Size > 0
		case elf.STT_OBJECT:
			kds[s.Name] = s.Size == 64 // a kernel descriptor is 64 bytes
		}
	}
	for _, e := range entries {
		if !funcs[e] || !kds[e+".kd"] {
			return fmt.Errorf("no kernel %s (a global function and its 64-byte descriptor %s.kd) among the symbols", e, e)
		}
	}
	note := false
	for _, s := range f.Sections {
		if s.Type != elf.SHT_NOTE {
			continue
		}
		data, err := s.Data()
		if err == nil && bytes.Contains(data, []byte("amdgcn-amd-amdhsa--"+arch)) {
			note = true
		}
	}
	if !note {
		return fmt.Errorf("no metadata note naming the target amdgcn-amd-amdhsa--%s", arch)
	}
	return nil
}

// Kernels lists the kernels of a code object (the functions with a kernel
// descriptor), sorted.
func Kernels(co []byte) ([]string, error) {
	f, err := elf.NewFile(bytes.NewReader(co))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	syms, err := f.DynamicSymbols()
	if err != nil {
		return nil, err
	}
	kd := map[string]bool{}
	for _, s := range syms {
		kd[s.Name] = true
	}
	var out []string
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC && kd[s.Name+".kd"] {
			out = append(out, s.Name)
		}
	}
	slices.Sort(out)
	return out, nil
}

// Entries are the kernels k's HIP source defines: one per variant, and
// one per variant of each phase it launches (a column reduction's
// combine). A split that only some sizes take (a row-reducing matmul's
// for n above Metal's strip) is Metal's: the HIP source has one launch
// for every size (docs/rocm.md, "The GEMM").
func Entries(k *ir.Kernel) []string {
	var out []string
	for _, v := range k.Variants {
		out = append(out, v.HostName)
	}
	phases := k.Phases()
	if len(phases) > 0 && !k.PhasesWhen().Always() {
		phases = nil
	}
	for _, p := range phases {
		if !p.IsPhaseOwn() {
			for _, v := range p.Variants {
				out = append(out, v.HostName)
			}
		}
	}
	return out
}
