// Package golang writes the generated Go package with jennifer, reading only
// the IR. Per kernel it writes three files:
//
//   - <kernel>_kernel.go: the kernel's API type, its kgenrt descriptor (the
//     dtype-key table and the binding table), its port table, and the typed
//     launchers Run, Encode and Enqueue, which check tensors and go through Select;
//   - <kernel>_reference.go: the CPU reference, the formulas evaluated per
//     element in the compute type with kgen's rounding rules, and a float64
//     evaluation of the same formulas for tolerances;
//   - <kernel>_msl.go: the MSL source, byte for byte the .metal file whose
//     hash every variant key is.
//
// Plus doc.go (package doc and Kernels) and inventory.md. File names always
// end in a fixed suffix, so no kernel name can turn into a build constraint
// (relu_linux.go) or a test file (x_test.go).
package golang

import (
	"bytes"
	"errors"
	"fmt"
	"go/format"
	"go/scanner"
	"sort"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/kgen-dev/kgen/diag"
	"github.com/kgen-dev/kgen/funcs"
	"github.com/kgen-dev/kgen/internal/par"
	"github.com/kgen-dev/kgen/ir"
)

// RuntimePath is the import path of the runtime every generated package uses.
const RuntimePath = funcs.Runtime

// Request is what the Go emitter renders: the package's name and header,
// and every kernel with its IR and the sources the C-family emitter wrote
// for it. The emitter reads nothing else; it calls back into nobody.
type Request struct {
	Package string
	// Header returns the generated-code line naming the source of a file.
	Header  func(from string) string
	Kernels []Kernel
	// byIR finds a kernel's sources; Emit builds it.
	byIR map[*ir.Kernel]*Kernel
}

// Kernel is one kernel of a Request.
type Kernel struct {
	IR *ir.Kernel
	// Src holds the kernel's source per backend, for each of
	// IR.Sources(); the Metal source is what the variant keys hash.
	Src [ir.NumBackends]Source
}

// Source is one generated kernel source file.
type Source struct {
	Path string // relative to the config folder
	Data []byte
}

// Source returns kernel k's source for backend b.
func (r Request) Source(k *ir.Kernel, b ir.Backend) Source { return r.byIR[k].Src[b] }

// File is a generated file, named relative to the package folder.
type File struct {
	Name string
	Data []byte
}

// Emit returns the package's files: doc.go, inventory.md and three files per
// kernel. Kernels of a kind the Go emitter does not know, ports it cannot
// generate, and Go names that collide are errors, never silent omissions.
func Emit(opts Request) ([]File, error) {
	kernels := make([]*ir.Kernel, len(opts.Kernels))
	opts.byIR = map[*ir.Kernel]*Kernel{}
	for i := range opts.Kernels {
		kernels[i] = opts.Kernels[i].IR
		opts.byIR[kernels[i]] = &opts.Kernels[i]
	}
	if err := checkNames(kernels); err != nil {
		return nil, err
	}
	doc, err := render(docFile(kernels, opts))
	if err != nil {
		return nil, fmt.Errorf("go output doc.go: %w", err)
	}
	files := []File{{Name: "doc.go", Data: doc}, {Name: "inventory.md", Data: inventoryDoc(kernels, opts)}}
	perKernel := make([][]File, len(kernels))
	err = par.Do(len(kernels), 0, func(i int) error {
		k := kernels[i]
		kf, err := kernelFiles(k, opts)
		if err != nil {
			var diags diag.List
			diags.Addf(k.NamePos, "the Go output of kernel %s: %v", k.Name, err)
			return diags.Err()
		}
		perKernel[i] = kf
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, kf := range perKernel {
		files = append(files, kf...)
	}
	for b, p := range ports {
		if p != nil && p.pkg != nil && hasSource(kernels, ir.Backend(b)) {
			pf, err := p.pkg(opts)
			if err != nil {
				return nil, err
			}
			files = append(files, pf...)
		}
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Name < files[j].Name })
	return files, nil
}

// kernelFiles renders the three files of one kernel.
func kernelFiles(k *ir.Kernel, opts Request) ([]File, error) {
	if _, ok := kinds[k.Kind]; !ok {
		return nil, fmt.Errorf("the Go emitter has no handler for %s kernels", k.Kind)
	}
	n := newNames(k)
	api, err := apiFile(k, n, opts)
	if err != nil {
		return nil, err
	}
	ref, err := referenceFile(k, n, opts)
	if err != nil {
		return nil, err
	}
	var out []File
	type kernelFile struct {
		suffix string
		file   *jen.File
	}
	list := []kernelFile{{"_kernel.go", api}, {"_reference.go", ref}}
	for _, b := range k.Sources() {
		p := ports[b]
		if p == nil {
			return nil, fmt.Errorf("the Go emitter has no port writer for %s", b)
		}
		list = append(list, kernelFile{p.suffix, p.file(k, n, opts.Source(k, b), opts)})
	}
	for _, f := range list {
		data, err := render(f.file)
		if err != nil {
			return nil, err
		}
		out = append(out, File{Name: k.Name + f.suffix, Data: data})
	}
	return out, nil
}

// GenerateConstraint keeps generated Go files out of `go generate`'s file
// lists (go generate sets the build tag "generate"): it lists every package's
// files before running any directive, and reading a file that kgen gen has
// since removed (a deleted or renamed spec) would stop it.
const GenerateConstraint = "//go:build !generate"

// newFile starts a generated Go file whose first line is the header.
func newFile(opts Request, from string) *jen.File {
	f := jen.NewFile(opts.Package)
	f.HeaderComment(opts.Header(from))
	f.HeaderComment(GenerateConstraint)
	f.ImportName(RuntimePath, "kgenrt")
	f.ImportName(LaunchPath, "launch")
	return f
}

// It formats the file itself: jennifer's own formatting error carries the
// whole unformatted file, which no message should dump. A file that does
// not format is a kgen bug (user text is checked or escaped before it gets
// here); the error names the first problem and its line, shortened.
func render(f *jen.File) ([]byte, error) {
	var buf bytes.Buffer
	f.NoFormat = true
	if err := f.Render(&buf); err != nil {
		return nil, err
	}
	out, err := format.Source(buf.Bytes())
	if err == nil {
		return out, nil
	}
	var list scanner.ErrorList
	if errors.As(err, &list) && len(list) > 0 {
		line := ""
		if lines := strings.Split(buf.String(), "\n"); list[0].Pos.Line >= 1 && list[0].Pos.Line <= len(lines) {
			line = strings.TrimSpace(lines[list[0].Pos.Line-1])
			if r := []rune(line); len(r) > 60 {
				line = string(r[:60]) + "…"
			}
		}
		return nil, fmt.Errorf("kgen bug: the generated Go does not format (%s, in %q); please report it", list[0].Msg, line)
	}
	return nil, fmt.Errorf("kgen bug: the generated Go does not format (%v); please report it", err)
}

// rt is a qualified identifier of the runtime package.
func rt(name string) *jen.Statement { return jen.Qual(RuntimePath, name) }

// comment renders lines as one // comment block (jennifer would use /* */
// for a multi-line string).
func comment(lines ...string) *jen.Statement {
	var b strings.Builder
	for i, l := range lines {
		if i > 0 {
			b.WriteString("\n")
		}
		if l == "" {
			b.WriteString("//")
			continue
		}
		b.WriteString("// " + l)
	}
	return jen.Comment(b.String())
}

func docFile(kernels []*ir.Kernel, opts Request) *jen.File {
	f := newFile(opts, "kgen.yaml")
	var names []string
	for _, k := range kernels {
		names = append(names, GoName(k.Name))
	}
	f.PackageComment(strings.Join(packageDoc(opts.Package, names), "\n"))
	f.Add(comment("Kernels returns the descriptor of every kernel in this package, in spec order:",
		"what `kgen list` prints, as the runtime sees it."))
	var elems []jen.Code
	for _, k := range kernels {
		elems = append(elems, jen.Op("&").Id(newNames(k).desc))
	}
	f.Func().Id("Kernels").Params().Index().Op("*").Add(rt("Kernel")).Block(
		jen.Return(jen.Index().Op("*").Add(rt("Kernel")).Values(elems...)),
	)
	return f
}

func packageDoc(pkg string, names []string) []string {
	list := "none"
	if len(names) > 0 {
		list = strings.Join(names, ", ")
	}
	return []string{
		"// Package " + pkg + " holds kgen-generated kernels: " + list + ".",
		"//",
		"// Each kernel K is a value with the same methods:",
		"//",
		"//   - K.Run(backend, inputs..., outputs..., params...) checks the tensors and",
		"//     launches through K.Select, the one place that chooses a port;",
		"//   - K.Encode(cb, …) adds the launch to a Metal command buffer you commit;",
		"//   - K.Enqueue(stream, …) launches on your CUDA stream with CUDA tensors (or",
		"//     your HIP stream with ROCm tensors, where K has a ROCm port);",
		"//   - K.Reference(…) computes the kernel on the CPU (the fallback path when",
		"//     Select refuses, and the oracle of parity tests); K.Reference64 evaluates",
		"//     the same formulas in float64 without rounding;",
		"//   - K.Select and K.Available read the kernel's port table; K.Variant reads",
		"//     its dtype-key table; K.Describe returns its kgenrt descriptor.",
		"//",
		"// inventory.md lists every kernel's host names, keys, bindings and ports.",
	}
}
