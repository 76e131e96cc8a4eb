package dispatch

import (
	"fmt"
	"go/ast"
	"go/constant"
	"go/token"
	"go/types"
	"strings"

	"golang.org/x/tools/go/packages"
)

// checker applies the rules to one package.
type checker struct {
	m         *model
	pkg       *packages.Package
	info      *types.Info
	dir       string
	launchers int
	out       []Finding
	reported  map[token.Pos]bool // one own-refusal finding per position
}

func (c *checker) run() {
	c.reported = map[token.Pos]bool{}
	for _, f := range c.pkg.Syntax {
		launches := false
		for _, d := range f.Decls {
			launches = c.decl(d) || launches
		}
		if launches {
			c.fileGate(f)
		}
	}
	c.skippedGates()
}

// decl checks one top-level declaration: direct-port and backend-gate
// everywhere, backend-compare, own-refusal and platform-gate where it
// launches, which it reports.
func (c *checker) decl(d ast.Decl) bool {
	launches := c.launchSites(d)
	c.gates(d)
	if launches {
		c.compares(d)
		c.refusals(d)
		c.goosUses(d)
	}
	return launches
}

// report records a finding spanning node n.
func (c *checker) report(n ast.Node, rule, format string, args ...any) {
	c.out = append(c.out, Finding{Pos: c.position(n.Pos()), End: c.position(n.End()), Rule: rule, Msg: fmt.Sprintf(format, args...)})
}

// inspect walks n, giving f each node and the stack of its ancestors.
func inspect(n ast.Node, f func(n ast.Node, stack []ast.Node) bool) {
	var stack []ast.Node
	ast.Inspect(n, func(n ast.Node) bool {
		if n == nil {
			stack = stack[:len(stack)-1]
			return false
		}
		if !f(n, stack) {
			return false
		}
		stack = append(stack, n)
		return true
	})
}

// The kinds of launcher (see the package doc).
type launcher int

const (
	notLauncher launcher = iota
	kernelLaunch
	portLaunch
	portCtor
	portTable
)

// launchSites counts d's launchers and reports those of rule direct-port.
func (c *checker) launchSites(d ast.Decl) bool {
	found := false
	inspect(d, func(n ast.Node, stack []ast.Node) bool {
		var kind launcher
		var what string
		switch n := n.(type) {
		case *ast.Ident:
			kind, what = c.classify(n, stack)
		case *ast.CompositeLit:
			if isRuntimeNamed(c.info.TypeOf(n), "PortTable") {
				kind, what = portTable, "builds its own kgenrt.PortTable"
			}
		}
		if kind == notLauncher {
			return true
		}
		found = true
		c.launchers++
		if kind != kernelLaunch {
			c.report(n, DirectPort, "%s, bypassing the generated port table: launch with K.Run(b, …), K.Encode(cb, …) or K.Enqueue(stream, …) of the generated kernel, which choose the port through K.Select", what)
		}
		return true
	})
	return found
}

// classify says whether the identifier refers to a launcher, and which.
func (c *checker) classify(id *ast.Ident, stack []ast.Node) (launcher, string) {
	switch obj := c.info.Uses[id].(type) {
	case *types.Func:
		return c.classifyFunc(obj)
	case *types.Var:
		if obj.IsField() && obj.Name() == "Ports" && inRuntime(obj) && !isLiteralKey(id, stack) {
			return portTable, "reads kgenrt.PortTable's Ports"
		}
	}
	return notLauncher, ""
}

func (c *checker) classifyFunc(f *types.Func) (launcher, string) {
	sig := f.Type().(*types.Signature)
	if sig.Recv() == nil {
		if returnsPort(f) {
			return portCtor, fmt.Sprintf("calls %s.%s", f.Pkg().Name(), f.Name())
		}
		return notLauncher, ""
	}
	recv := sig.Recv().Type()
	if isRuntimeNamed(recv, "PortTable") {
		return portTable, "calls kgenrt.PortTable's " + f.Name()
	}
	if (f.Name() == "RunArgs" || f.Name() == "EncodeArgs" || f.Name() == "EnqueueArgs") && c.m.isKernelType(recv) {
		return kernelLaunch, "" // Run, Encode and Enqueue with named arguments
	}
	if f.Name() != "Run" && f.Name() != "Encode" && f.Name() != "Enqueue" {
		return notLauncher, ""
	}
	switch {
	case c.m.isKernelType(recv):
		return kernelLaunch, ""
	case isPort(recv) || implementsPort(recv, c.m.port):
		return portLaunch, fmt.Sprintf("calls kgenrt.Port's %s directly", f.Name())
	case types.IsInterface(recv) && c.m.implementedByKernel(recv):
		return kernelLaunch, ""
	}
	return notLauncher, ""
}

// isLiteralKey reports whether id is the key of a composite literal element
// (reported with the literal itself).
func isLiteralKey(id *ast.Ident, stack []ast.Node) bool {
	if len(stack) == 0 {
		return false
	}
	kv, ok := stack[len(stack)-1].(*ast.KeyValueExpr)
	return ok && kv.Key == id
}

// compares reports rule backend-compare in a launching declaration.
func (c *checker) compares(d ast.Decl) {
	ast.Inspect(d, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.BinaryExpr:
			if n.Op != token.EQL && n.Op != token.NEQ {
				return true
			}
			if k, ok := c.backendVsConst(n.X, n.Y); ok {
				c.report(n, BackendCompare, "compares the backend with %s in code that launches kernels: let K.Select choose the port — call K.Run(b, …) and take the fallback when errors.Is(err, kgenrt.ErrNoPort)", k)
			}
		case *ast.SwitchStmt:
			if n.Tag != nil && isRuntimeNamed(c.info.TypeOf(n.Tag), "Backend") {
				c.report(n, BackendCompare, "switches on the backend in code that launches kernels: let K.Select choose the port — call K.Run(b, …) and take the fallback when errors.Is(err, kgenrt.ErrNoPort)")
			}
		}
		return true
	})
}

// backendVsConst reports whether one of x, y is a backend value (or its
// String()) and the other a constant; it returns the constant's text.
func (c *checker) backendVsConst(x, y ast.Expr) (string, bool) {
	for _, p := range [2][2]ast.Expr{{x, y}, {y, x}} {
		if c.isBackendValue(p[0]) && c.constant(p[1]) != nil && c.constant(p[0]) == nil {
			return types.ExprString(p[1]), true
		}
	}
	return "", false
}

func (c *checker) isBackendValue(e ast.Expr) bool {
	if isRuntimeNamed(c.info.TypeOf(e), "Backend") {
		return true
	}
	call, ok := ast.Unparen(e).(*ast.CallExpr)
	if !ok {
		return false
	}
	sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr)
	return ok && sel.Sel.Name == "String" && isRuntimeNamed(c.info.TypeOf(sel.X), "Backend")
}

func (c *checker) constant(e ast.Expr) constant.Value {
	return c.info.Types[e].Value
}

// calleeFunc returns the function or method a call calls, if static.
func (c *checker) calleeFunc(call *ast.CallExpr) *types.Func {
	switch f := ast.Unparen(call.Fun).(type) {
	case *ast.Ident:
		fn, _ := c.info.Uses[f].(*types.Func)
		return fn
	case *ast.SelectorExpr:
		fn, _ := c.info.Uses[f.Sel].(*types.Func)
		return fn
	}
	return nil
}

// isFunc reports whether fn is the package-level function pkg.name.
func isFunc(fn *types.Func, pkg, name string) bool {
	return fn != nil && fn.Name() == name && fn.Pkg() != nil && fn.Pkg().Path() == pkg &&
		fn.Type().(*types.Signature).Recv() == nil
}

// gates reports rule backend-gate: || / && chains probing two backends.
func (c *checker) gates(d ast.Decl) {
	inspect(d, func(n ast.Node, stack []ast.Node) bool {
		b, ok := n.(*ast.BinaryExpr)
		if !ok || !isLogic(b) || insideChain(stack) {
			return true
		}
		var names []string
		for _, leaf := range chainLeaves(b) {
			if name := c.probe(leaf); name != "" && !contains(names, name) {
				names = append(names, name)
			}
		}
		if len(names) >= 2 {
			c.report(b, BackendGate, "gate enumerates backends (%s): ask the kernel for the backend you launch on, K.Available(b), or whether any GPU is present; a list of backends is wrong as soon as one is added", strings.Join(names, ", "))
		}
		return true
	})
}

func isLogic(b *ast.BinaryExpr) bool { return b.Op == token.LOR || b.Op == token.LAND }

// insideChain reports whether the node under stack is an operand of a
// larger || / && chain (through parentheses and !).
func insideChain(stack []ast.Node) bool {
	for i := len(stack) - 1; i >= 0; i-- {
		switch p := stack[i].(type) {
		case *ast.ParenExpr:
		case *ast.UnaryExpr:
			if p.Op != token.NOT {
				return false
			}
		case *ast.BinaryExpr:
			return isLogic(p)
		default:
			return false
		}
	}
	return false
}

// chainLeaves flattens a || / && chain through parentheses and !.
func chainLeaves(e ast.Expr) []ast.Expr {
	switch e := e.(type) {
	case *ast.ParenExpr:
		return chainLeaves(e.X)
	case *ast.UnaryExpr:
		if e.Op == token.NOT {
			return chainLeaves(e.X)
		}
	case *ast.BinaryExpr:
		if isLogic(e) {
			return append(chainLeaves(e.X), chainLeaves(e.Y)...)
		}
	}
	return []ast.Expr{e}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
