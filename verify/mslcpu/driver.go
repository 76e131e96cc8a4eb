package mslcpu

import (
	"fmt"
	"strings"
)

// kernelFile is the name diagnostics give the kernel source (#line).
const kernelFile = "kernel.metal"

// translationUnit is the C++ file the harness compiles for Run: the
// rewritten kernel source, with its own line numbers, followed by a driver
// that exposes each host-named entry point to the runtime (shim/runtime.cc).
func translationUnit(p *program) string {
	var b strings.Builder
	// Preprocessed text has lost its #include <metal_stdlib>.
	b.WriteString("#include <metal_stdlib>\n")
	fmt.Fprintf(&b, "#line 1 %q\n", kernelFile)
	b.Write(p.text)
	if len(p.text) > 0 && p.text[len(p.text)-1] != '\n' {
		b.WriteByte('\n')
	}
	b.WriteString(driver(p))
	return b.String()
}

// driver generates one lane function per entry point. Argument types come
// from the instantiation's function pointer type (kgen_rt::arg_t), so the Go
// side never has to substitute template parameters into C++ types.
func driver(p *program) string {
	var b strings.Builder
	b.WriteString("#line 1 \"kgen-driver.cc\"\nnamespace {\n")
	for i, in := range p.instances {
		writeLane(&b, i, in)
	}
	b.WriteString("} // namespace\n")
	b.WriteString("extern const kgen_rt::Entry kgen_entries[] = {\n")
	for i, in := range p.instances {
		reqs, n := "nullptr", countBuffers(in.kernel)
		if n > 0 {
			reqs = fmt.Sprintf("kgen_reqs_%d", i)
		}
		fmt.Fprintf(&b, "    {%q, kgen_lane_%d, %s, %d},\n", in.host, i, reqs, n)
	}
	if len(p.instances) == 0 {
		b.WriteString("    {\"\", nullptr, nullptr, 0},\n")
	}
	b.WriteString("};\n")
	fmt.Fprintf(&b, "extern const int kgen_nentries = %d;\n", len(p.instances))
	fmt.Fprintf(&b, "extern const int kgen_sync = %d;\n", boolInt(p.sync))
	return b.String()
}

func writeLane(b *strings.Builder, i int, in instance) {
	fnType := fmt.Sprintf("decltype(%s)", in.ident)
	var args, reqs []string
	for j, prm := range in.kernel.params {
		argT := fmt.Sprintf("kgen_rt::arg_t<%s, %d>", fnType, j)
		switch prm.kind {
		case paramBuffer:
			args = append(args, fmt.Sprintf("kgen_rt::buf_arg<%s>(b[%d])", argT, prm.index))
			reqs = append(reqs, fmt.Sprintf("{%d, kgen_rt::min_bytes<%s>()}", prm.index, argT))
		case paramThreadgroup:
			args = append(args, fmt.Sprintf("static_cast<%s>(kgen_rt::tg_mem(%d))", argT, prm.index))
		case paramPosition:
			args = append(args, fmt.Sprintf("kgen_rt::pos_arg<%s>(%s)", argT, positionAttrs[prm.attr]))
		}
	}
	fmt.Fprintf(b, "// %s: %s (line %d)\n", in.host, in.expr, in.line)
	if !in.declared {
		fmt.Fprintf(b, "constexpr auto %s = &%s;\n", in.ident, in.expr)
	}
	fmt.Fprintf(b, "void kgen_lane_%d(void* const* b, const kgen_rt::Lane& l) {\n", i)
	b.WriteString("    (void)b;\n    (void)l;\n")
	fmt.Fprintf(b, "    %s(\n        %s);\n}\n", in.ident, strings.Join(args, ",\n        "))
	if len(reqs) > 0 {
		fmt.Fprintf(b, "const kgen_rt::BufReq kgen_reqs_%d[] = {%s};\n", i, strings.Join(reqs, ", "))
	}
}

func countBuffers(k *kernelSig) int {
	n := 0
	for _, prm := range k.params {
		if prm.kind == paramBuffer {
			n++
		}
	}
	return n
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
