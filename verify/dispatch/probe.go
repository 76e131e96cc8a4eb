package dispatch

import (
	"go/ast"
	"go/types"
	"strings"
)

// backendWords are the backend spellings a probe's name may carry, with the
// backend each means.
var backendWords = []struct{ word, backend string }{
	{"metal", "metal"}, {"cuda", "cuda"}, {"rocm", "rocm"}, {"hip", "rocm"},
}

var probeVerbs = map[string]bool{"available": true, "ready": true, "supported": true}

// probe returns the backend an availability probe asks about, or "" when e
// is not a probe (see the package doc for the definition).
func (c *checker) probe(e ast.Expr) string {
	call, ok := ast.Unparen(e).(*ast.CallExpr)
	if !ok {
		return ""
	}
	if b, asked := c.availableConst(call); asked {
		return b
	}
	return nameProbe(c.callNames(call))
}

// nameProbe is the backend a probe spelled name (called on base: a package
// or receiver name) asks about, or "".
func nameProbe(name, base string) string {
	n := strings.ToLower(strings.ReplaceAll(name, "_", ""))
	if strings.HasPrefix(n, "is") {
		n = n[2:]
	} else if strings.HasPrefix(n, "has") {
		n = n[3:]
	}
	if probeVerbs[n] {
		return backendIn(base)
	}
	for _, w := range backendWords {
		rest, ok := strings.CutPrefix(n, w.word)
		rest = strings.TrimPrefix(rest, "is")
		if ok && (rest == "" || probeVerbs[rest]) {
			return w.backend
		}
	}
	return ""
}

// availableConst handles K.Available(b): a method Available taking a
// kgenrt.Backend and returning bool. asked is true for such a call (its
// receiver's name never counts); b is the backend when the argument is a
// constant, "" when the call asks about a variable backend.
func (c *checker) availableConst(call *ast.CallExpr) (b string, asked bool) {
	fn := c.calleeFunc(call)
	if fn == nil || fn.Name() != "Available" {
		return "", false
	}
	sig := fn.Type().(*types.Signature)
	if sig.Recv() == nil || sig.Results().Len() != 1 || !types.Identical(sig.Results().At(0).Type(), types.Typ[types.Bool]) {
		return "", false
	}
	for i, arg := range call.Args {
		if i >= sig.Params().Len() || !isRuntimeNamed(sig.Params().At(i).Type(), "Backend") {
			continue
		}
		asked = true
		if c.constant(arg) == nil {
			continue
		}
		if obj := c.constObj(arg); obj != nil {
			return strings.ToLower(obj.Name()), true
		}
		return "backend " + c.constant(arg).String(), true
	}
	return "", asked
}

// constObj returns the named constant an expression refers to, if any.
func (c *checker) constObj(e ast.Expr) *types.Const {
	switch e := ast.Unparen(e).(type) {
	case *ast.Ident:
		k, _ := c.info.Uses[e].(*types.Const)
		return k
	case *ast.SelectorExpr:
		k, _ := c.info.Uses[e.Sel].(*types.Const)
		return k
	}
	return nil
}

// callNames returns the called function's name and its base: the package
// name for pkg.F, the last name in the receiver expression for x.M.
func (c *checker) callNames(call *ast.CallExpr) (name, base string) {
	switch f := ast.Unparen(call.Fun).(type) {
	case *ast.Ident:
		return f.Name, ""
	case *ast.SelectorExpr:
		return f.Sel.Name, c.baseName(f.X)
	}
	return "", ""
}

func (c *checker) baseName(e ast.Expr) string {
	switch e := ast.Unparen(e).(type) {
	case *ast.Ident:
		if pn, ok := c.info.Uses[e].(*types.PkgName); ok {
			return pn.Imported().Name()
		}
		return e.Name
	case *ast.SelectorExpr:
		return e.Sel.Name
	case *ast.CallExpr:
		name, _ := c.callNames(e)
		return name
	}
	return ""
}

// backendIn returns the backend a package or receiver name names: the
// name is the backend word, starts with it or (except hip) ends with it.
func backendIn(name string) string {
	n := strings.ToLower(strings.ReplaceAll(name, "_", ""))
	for _, w := range backendWords {
		if n == w.word || strings.HasPrefix(n, w.word) || w.word != "hip" && strings.HasSuffix(n, w.word) {
			return w.backend
		}
	}
	return ""
}
