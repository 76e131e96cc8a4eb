package verify

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/kgen-dev/kgen/diag"
	"github.com/kgen-dev/kgen/internal/output"
	"github.com/kgen-dev/kgen/internal/par"
	"github.com/kgen-dev/kgen/verify/dispatch"
)

// diskKernel is what the generated Go package on disk says about one
// kernel, read with go/ast from the files as they are (never regenerated):
// its descriptor (dtype-key table, math mode, embedded source), its port
// table and its launchers.
type diskKernel struct {
	Name     string
	Desc     string // the descriptor variable, "geluTanhKernel"
	DescPos  diag.Pos
	Math     string
	Source   string // the name of the constant holding the MSL
	Variants []diskVariant
	Ports    *diskPorts
	Type     string                   // the kernel type, receiver of Describe
	Launch   map[string]*diskLauncher // "Run", "Encode", "Enqueue"
}

type diskVariant struct {
	DType    string // "f32", from kgenrt.F32
	HostName string
	Key      string
	Pos      diag.Pos
}

type diskPorts struct {
	Var   string
	Pos   diag.Pos
	Slots []diskSlot
}

type diskSlot struct {
	Nil  bool
	Text string // the slot's expression, "kgenrt.MetalPort(&geluTanhKernel)"
	Pos  diag.Pos
}

type diskLauncher struct {
	Pos     diag.Pos
	Selects bool   // calls the port table's Select
	Direct  string // a port reached another way, or ""
}

type diskConst struct {
	Value string
	Pos   diag.Pos
}

// diskPackage is the generated package on disk.
type diskPackage struct {
	Kernels map[string]*diskKernel // by kernel name
	Phases  map[string]*diskKernel // a split kernel's launches, by entry name
	Consts  map[string]diskConst
}

// goFile is one parsed file of the generated package.
type goFile struct {
	rel  string
	file *ast.File
	rt   string // the name kgenrt is imported as
}

// readGoPackage parses the kgen-generated .go files of the folder outGo
// (relative to root).
func readGoPackage(root, outGo string) (*diskPackage, error) {
	files, err := parseGenerated(root, outGo)
	if err != nil {
		return nil, err
	}
	r := &tableReader{fset: files.fset, pkg: &diskPackage{Kernels: map[string]*diskKernel{}, Phases: map[string]*diskKernel{}, Consts: map[string]diskConst{}},
		byDesc: map[string]*diskKernel{}, methods: map[string][]*ast.FuncDecl{}}
	for _, f := range files.list {
		r.file(f)
	}
	r.link()
	return r.pkg, nil
}

type parsedFiles struct {
	fset *token.FileSet
	list []goFile
}

func parseGenerated(root, outGo string) (*parsedFiles, error) {
	dir := filepath.Join(root, filepath.FromSlash(outGo))
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return &parsedFiles{fset: token.NewFileSet()}, nil
	}
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if e.Type().IsRegular() && strings.HasSuffix(e.Name(), ".go") && !strings.HasSuffix(e.Name(), "_test.go") {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	pf := &parsedFiles{fset: token.NewFileSet(), list: make([]goFile, len(names))}
	err = par.Do(len(names), par.IOWorkers(), func(i int) error {
		full := filepath.Join(dir, names[i])
		data, err := os.ReadFile(full)
		if err != nil || !output.IsGenerated(data) || !declaresTables(data) {
			return err
		}
		rel := path.Join(outGo, names[i])
		f, err := parser.ParseFile(pf.fset, rel, data, parser.SkipObjectResolution)
		if err != nil {
			return nil // a file that does not parse is drift's business
		}
		pf.list[i] = goFile{rel: rel, file: f, rt: runtimeName(f)}
		return nil
	})
	return pf, err
}

// tableMarks are the texts of every declaration readGoPackage reads: a
// file with none of them (a CPU reference) is not parsed.
var tableMarks = [][]byte{[]byte("Kernel{"), []byte("PortTable{"), []byte("const "), []byte(") Describe("), []byte(") Run("), []byte(") Encode(")}

func declaresTables(data []byte) bool {
	for _, m := range tableMarks {
		if bytes.Contains(data, m) {
			return true
		}
	}
	return false
}

// runtimeName is the name a file imports kgenrt as, or "".
func runtimeName(f *ast.File) string {
	for _, imp := range f.Imports {
		if p, _ := strconv.Unquote(imp.Path.Value); p == dispatch.RuntimePath {
			if imp.Name != nil {
				return imp.Name.Name
			}
			return "kgenrt"
		}
	}
	return ""
}

type tableReader struct {
	fset    *token.FileSet
	pkg     *diskPackage
	byDesc  map[string]*diskKernel
	ports   []*diskPorts
	portFor []string // descriptor of each ports entry
	methods map[string][]*ast.FuncDecl
}

func (r *tableReader) pos(p token.Pos) diag.Pos {
	tp := r.fset.Position(p)
	return diag.Pos{Path: tp.Filename, Line: tp.Line, Col: tp.Column}
}

func (r *tableReader) file(f goFile) {
	if f.file == nil {
		return
	}
	for _, d := range f.file.Decls {
		switch d := d.(type) {
		case *ast.GenDecl:
			r.genDecl(f, d)
		case *ast.FuncDecl:
			if d.Recv != nil && len(d.Recv.List) == 1 {
				if id, ok := d.Recv.List[0].Type.(*ast.Ident); ok {
					r.methods[id.Name] = append(r.methods[id.Name], d)
				}
			}
		}
	}
}

func (r *tableReader) genDecl(f goFile, d *ast.GenDecl) {
	for _, s := range d.Specs {
		vs, ok := s.(*ast.ValueSpec)
		if !ok || len(vs.Names) != 1 || len(vs.Values) != 1 {
			continue
		}
		name := vs.Names[0].Name
		if v, ok := stringConst(vs.Values[0]); ok && d.Tok == token.CONST {
			r.pkg.Consts[name] = diskConst{Value: v, Pos: r.pos(vs.Values[0].Pos())}
			continue
		}
		lit, ok := vs.Values[0].(*ast.CompositeLit)
		if !ok || f.rt == "" {
			continue
		}
		switch {
		case isSel(lit.Type, f.rt, "Kernel"):
			r.kernel(name, vs.Names[0].Pos(), lit)
		case isArrayOf(lit.Type, f.rt, "Kernel"):
			r.phases(lit)
		case isSel(lit.Type, f.rt, "PortTable"):
			r.portTable(name, vs.Names[0].Pos(), lit)
		}
	}
}

// isSel reports whether e is the selector x.sel.
func isSel(e ast.Expr, x, sel string) bool {
	s, ok := e.(*ast.SelectorExpr)
	if !ok || s.Sel.Name != sel {
		return false
	}
	id, ok := s.X.(*ast.Ident)
	return ok && id.Name == x
}

// isArrayOf reports whether e is an array or slice type of x.sel.
func isArrayOf(e ast.Expr, x, sel string) bool {
	a, ok := e.(*ast.ArrayType)
	return ok && isSel(a.Elt, x, sel)
}

// fields returns a keyed composite literal's elements by key.
func fields(lit *ast.CompositeLit) map[string]ast.Expr {
	out := map[string]ast.Expr{}
	for _, e := range lit.Elts {
		if kv, ok := e.(*ast.KeyValueExpr); ok {
			if id, ok := kv.Key.(*ast.Ident); ok {
				out[id.Name] = kv.Value
			}
		}
	}
	return out
}

func stringLit(e ast.Expr) string {
	if lit, ok := e.(*ast.BasicLit); ok && lit.Kind == token.STRING {
		s, _ := strconv.Unquote(lit.Value)
		return s
	}
	return ""
}

func identName(e ast.Expr) string {
	if id, ok := e.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

func (r *tableReader) kernel(desc string, at token.Pos, lit *ast.CompositeLit) {
	k := r.descriptor(desc, at, lit)
	if k.Name != "" {
		r.pkg.Kernels[k.Name] = k
		r.byDesc[desc] = k
	}
}

// phases reads the array of a split kernel's launch descriptors
// ([...]kgenrt.Kernel{…}), each with its own dtype-key table.
func (r *tableReader) phases(lit *ast.CompositeLit) {
	for _, e := range lit.Elts {
		if el, ok := e.(*ast.CompositeLit); ok {
			if k := r.descriptor("", el.Pos(), el); k.Name != "" {
				r.pkg.Phases[k.Name] = k
			}
		}
	}
}

// descriptor reads one kgenrt.Kernel literal: name, math mode, source
// constant and dtype-key table.
func (r *tableReader) descriptor(desc string, at token.Pos, lit *ast.CompositeLit) *diskKernel {
	fs := fields(lit)
	k := &diskKernel{Name: stringLit(fs["Name"]), Desc: desc, DescPos: r.pos(at), Math: stringLit(fs["Math"]),
		Source: identName(fs["Source"]), Launch: map[string]*diskLauncher{}}
	if vl, ok := fs["Variants"].(*ast.CompositeLit); ok {
		for _, e := range vl.Elts {
			if el, ok := e.(*ast.CompositeLit); ok {
				k.Variants = append(k.Variants, r.variant(el))
			}
		}
	}
	return k
}

func (r *tableReader) variant(el *ast.CompositeLit) diskVariant {
	fs := fields(el)
	v := diskVariant{HostName: stringLit(fs["HostName"]), Key: stringLit(fs["Key"]), Pos: r.pos(el.Pos())}
	if s, ok := fs["DType"].(*ast.SelectorExpr); ok {
		v.DType = strings.ToLower(s.Sel.Name)
	}
	return v
}

func (r *tableReader) portTable(name string, at token.Pos, lit *ast.CompositeLit) {
	fs := fields(lit)
	desc := ""
	if u, ok := fs["Kernel"].(*ast.UnaryExpr); ok && u.Op == token.AND {
		desc = identName(u.X)
	}
	p := &diskPorts{Var: name, Pos: r.pos(at)}
	if sl, ok := fs["Ports"].(*ast.CompositeLit); ok {
		for _, e := range sl.Elts {
			p.Slots = append(p.Slots, diskSlot{Nil: identName(e) == "nil", Text: types.ExprString(e), Pos: r.pos(e.Pos())})
		}
	}
	r.ports = append(r.ports, p)
	r.portFor = append(r.portFor, desc)
}

// link attaches port tables and methods to their kernels.
func (r *tableReader) link() {
	for i, p := range r.ports {
		if k := r.byDesc[r.portFor[i]]; k != nil {
			k.Ports = p
		}
	}
	for typ, ms := range r.methods {
		k := r.describedBy(ms)
		if k == nil {
			continue
		}
		k.Type = typ
		for _, m := range ms {
			if m.Name.Name == "Run" || m.Name.Name == "Encode" || m.Name.Name == "Enqueue" {
				k.Launch[m.Name.Name] = r.launcher(k, m)
			}
		}
	}
}

// describedBy returns the kernel whose descriptor a type's Describe
// method returns.
func (r *tableReader) describedBy(ms []*ast.FuncDecl) *diskKernel {
	for _, m := range ms {
		if m.Name.Name != "Describe" || m.Body == nil || len(m.Body.List) != 1 {
			continue
		}
		ret, ok := m.Body.List[0].(*ast.ReturnStmt)
		if !ok || len(ret.Results) != 1 {
			continue
		}
		if u, ok := ret.Results[0].(*ast.UnaryExpr); ok && u.Op == token.AND {
			return r.byDesc[identName(u.X)]
		}
	}
	return nil
}

// launcher reads how a generated Run, Encode or Enqueue reaches its port
// (Enqueue through the table's Enqueue, which is Select and the port's).
func (r *tableReader) launcher(k *diskKernel, m *ast.FuncDecl) *diskLauncher {
	l := &diskLauncher{Pos: r.pos(m.Name.Pos())}
	if m.Body == nil {
		return l
	}
	ast.Inspect(m.Body, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		switch {
		case k.Ports != nil && (sel.Sel.Name == "Select" || sel.Sel.Name == "Enqueue") && identName(sel.X) == k.Ports.Var:
			l.Selects = true
		case l.Direct == "" && (sel.Sel.Name == "Ports" || strings.HasSuffix(sel.Sel.Name, "Port") && identName(sel.X) != ""):
			l.Direct = types.ExprString(sel)
		}
		return true
	})
	return l
}

// stringConst is the value of a string constant expression: a literal, or
// literals joined with + (the emitter splits a raw string around each
// backquote of user text, as in a doc that quotes code).
func stringConst(e ast.Expr) (string, bool) {
	switch v := e.(type) {
	case *ast.BasicLit:
		if v.Kind != token.STRING {
			return "", false
		}
		s, err := strconv.Unquote(v.Value)
		return s, err == nil
	case *ast.BinaryExpr:
		if v.Op != token.ADD {
			return "", false
		}
		x, okx := stringConst(v.X)
		y, oky := stringConst(v.Y)
		return x + y, okx && oky
	case *ast.ParenExpr:
		return stringConst(v.X)
	}
	return "", false
}
