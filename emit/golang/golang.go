// Package golang writes the generated Go package with jennifer: for each
// kernel its embedded MSL source and dtype-key table, and a package doc.
package golang

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/kgen-dev/kgen/ir"
)

// Options configure the Go output.
type Options struct {
	Package string
	// Header returns the generated-code line naming the source of a file.
	Header func(from string) string
	// MSLPath returns the config-relative path of a kernel's .metal file.
	MSLPath func(k *ir.Kernel) string
}

// File is a generated Go file, named relative to the package folder.
type File struct {
	Name string
	Data []byte
}

// Emit returns the package's files: doc.go and one file per kernel.
func Emit(kernels []*ir.Kernel, opts Options) ([]File, error) {
	var files []File
	doc, err := render(docFile(kernels, opts))
	if err != nil {
		return nil, err
	}
	files = append(files, File{Name: "doc.go", Data: doc})
	for _, k := range kernels {
		data, err := render(kernelFile(k, opts))
		if err != nil {
			return nil, fmt.Errorf("go output for kernel %s: %w", k.Name, err)
		}
		files = append(files, File{Name: k.Name + ".go", Data: data})
	}
	return files, nil
}

func render(f *jen.File) ([]byte, error) {
	var buf bytes.Buffer
	if err := f.Render(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func docFile(kernels []*ir.Kernel, opts Options) *jen.File {
	f := jen.NewFile(opts.Package)
	f.HeaderComment(opts.Header("kgen.yaml"))
	var names []string
	for _, k := range kernels {
		names = append(names, k.Name)
	}
	f.PackageComment(fmt.Sprintf("Package %s holds kgen-generated kernels: %s.", opts.Package, strings.Join(names, ", ")))
	return f
}

// GoName turns a snake_case kernel name into an exported Go name.
func GoName(name string) string {
	var b strings.Builder
	for _, part := range strings.Split(name, "_") {
		if part == "" {
			continue
		}
		b.WriteString(strings.ToUpper(part[:1]) + part[1:])
	}
	return b.String()
}

func kernelFile(k *ir.Kernel, opts Options) *jen.File {
	f := jen.NewFile(opts.Package)
	f.HeaderComment(opts.Header(k.SpecPath))
	name := GoName(k.Name)
	f.Commentf("%sVariants maps each storage dtype of kernel %s to its host name and key.", name, k.Name)
	f.Var().Id(name + "Variants").Op("=").Map(jen.String()).Index(jen.Lit(2)).String().Values(variantDict(k))
	return f
}

func variantDict(k *ir.Kernel) jen.Dict {
	d := jen.Dict{}
	for _, v := range k.Variants {
		d[jen.Lit(v.DType.String())] = jen.Values(jen.Lit(v.HostName), jen.Lit(v.Key))
	}
	return d
}
