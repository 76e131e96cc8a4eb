package dispatch

import (
	"go/types"
	"path/filepath"
	"strings"

	"golang.org/x/tools/go/packages"
)

// RuntimePath is kgenrt's import path.
const RuntimePath = "github.com/kgen-dev/kgen/kgenrt"

// model is what the rules know about the loaded module: which package is
// generated and which of its types are kernels.
type model struct {
	genDir  string
	genPath string          // import path of the generated package, "" if not loaded
	kernels []*types.Named  // the generated kernel types
	byKey   map[string]bool // "path.Name" of each generated kernel type
	port    *types.Interface
	impl    map[types.Type]bool // implementedByKernel's answers
}

func newModel(pkgs []*packages.Package, genDir string) *model {
	m := &model{genDir: filepath.Clean(genDir), byKey: map[string]bool{}, impl: map[types.Type]bool{}}
	m.port = findPort(pkgs)
	for _, p := range pkgs {
		if p.Types == nil || filepath.Clean(pkgDir(p)) != m.genDir {
			continue
		}
		m.genPath = p.PkgPath
		scope := p.Types.Scope()
		for _, name := range scope.Names() {
			tn, ok := scope.Lookup(name).(*types.TypeName)
			if !ok {
				continue
			}
			if n, ok := tn.Type().(*types.Named); ok && describes(n) {
				m.kernels = append(m.kernels, n)
				m.byKey[p.PkgPath+"."+name] = true
			}
		}
	}
	return m
}

// findPort returns kgenrt.Port's interface if any loaded package reaches
// kgenrt, else nil.
func findPort(pkgs []*packages.Package) *types.Interface {
	seen := map[*types.Package]bool{}
	var visit func(p *types.Package) *types.Interface
	visit = func(p *types.Package) *types.Interface {
		if p == nil || seen[p] {
			return nil
		}
		seen[p] = true
		if p.Path() == RuntimePath {
			if tn, ok := p.Scope().Lookup("Port").(*types.TypeName); ok {
				iface, _ := tn.Type().Underlying().(*types.Interface)
				return iface
			}
		}
		for _, q := range p.Imports() {
			if i := visit(q); i != nil {
				return i
			}
		}
		return nil
	}
	for _, p := range pkgs {
		if i := visit(p.Types); i != nil {
			return i
		}
	}
	return nil
}

// skip reports whether p is exempt from the rules by its nature: the
// generated package is the port table, kgenrt implements it.
func (m *model) skip(p *packages.Package) bool {
	return p.PkgPath == m.genPath && m.genPath != "" || isRuntimePath(p.PkgPath)
}

// describes reports whether n has a method Describe() *kgenrt.Kernel.
func describes(n *types.Named) bool {
	obj, _, _ := types.LookupFieldOrMethod(n, false, n.Obj().Pkg(), "Describe")
	f, ok := obj.(*types.Func)
	if !ok {
		return false
	}
	sig := f.Type().(*types.Signature)
	if sig.Params().Len() != 0 || sig.Results().Len() != 1 {
		return false
	}
	p, ok := sig.Results().At(0).Type().(*types.Pointer)
	return ok && isRuntimeNamed(p.Elem(), "Kernel")
}

// isKernelType reports whether t (or *t) is a generated kernel type.
func (m *model) isKernelType(t types.Type) bool {
	n := named(t)
	return n != nil && n.Obj().Pkg() != nil && m.byKey[n.Obj().Pkg().Path()+"."+n.Obj().Name()]
}

// implementedByKernel reports whether some generated kernel type implements
// the interface type t.
func (m *model) implementedByKernel(t types.Type) bool {
	if v, ok := m.impl[t]; ok {
		return v
	}
	iface, ok := t.Underlying().(*types.Interface)
	found := false
	for _, k := range m.kernels {
		if ok && iface.NumMethods() > 0 && (types.Implements(k, iface) || types.Implements(types.NewPointer(k), iface)) {
			found = true
			break
		}
	}
	m.impl[t] = found
	return found
}

func isRuntimePath(p string) bool {
	return p == RuntimePath || strings.HasPrefix(p, RuntimePath+"/")
}

func inRuntime(obj types.Object) bool {
	return obj != nil && obj.Pkg() != nil && isRuntimePath(obj.Pkg().Path())
}

// named returns t or *t as a named type, or nil.
func named(t types.Type) *types.Named {
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	n, _ := types.Unalias(t).(*types.Named)
	return n
}

// isRuntimeNamed reports whether t (or *t) is kgenrt's type name.
func isRuntimeNamed(t types.Type, name string) bool {
	n := named(t)
	return n != nil && n.Obj().Name() == name && n.Obj().Pkg() != nil && n.Obj().Pkg().Path() == RuntimePath
}

// isPort reports whether t is kgenrt.Port.
func isPort(t types.Type) bool { return isRuntimeNamed(t, "Port") }

// implementsPort reports whether t is a kgenrt type that implements
// kgenrt.Port (a concrete port).
func implementsPort(t types.Type, port *types.Interface) bool {
	n := named(t)
	if n == nil || port == nil || !inRuntime(n.Obj()) {
		return false
	}
	return types.Implements(n, port) || types.Implements(types.NewPointer(n), port)
}

// returnsPort reports whether f is a package-level kgenrt function one of
// whose results is kgenrt.Port: a port constructor.
func returnsPort(f *types.Func) bool {
	sig := f.Type().(*types.Signature)
	if sig.Recv() != nil || !inRuntime(f) {
		return false
	}
	for i := 0; i < sig.Results().Len(); i++ {
		if isPort(sig.Results().At(i).Type()) {
			return true
		}
	}
	return false
}
