package dispatch

import (
	"go/ast"
	"go/constant"
	"go/token"
	"go/types"
	"regexp"
	"strings"
)

const ownRefusalFix = "Select owns the refusal: return K.Run's (or K.Select's) error, a *kgenrt.PortError naming the kernel, the backend and the fallback; callers test errors.Is(err, kgenrt.ErrNoPort)"

// refusals reports rule own-refusal in a launching declaration.
func (c *checker) refusals(d ast.Decl) {
	inspect(d, func(n ast.Node, stack []ast.Node) bool {
		switch n := n.(type) {
		case *ast.CompositeLit:
			if isRuntimeNamed(c.info.TypeOf(n), "PortError") {
				c.refuse(n, "builds a kgenrt.PortError by hand: "+ownRefusalFix)
			}
		case *ast.Ident:
			if c.isErrNoPort(n) && !testsFor(c, n, stack) {
				c.refuse(n, "uses kgenrt.ErrNoPort as its own error: "+ownRefusalFix)
			}
		case *ast.IfStmt:
			c.guard(n)
		case *ast.CallExpr:
			if text, ok := c.refusalText(n); ok {
				c.refuse(n, "makes its own refusal (%q): "+ownRefusalFix, text)
			}
		}
		return true
	})
}

func (c *checker) refuse(n ast.Node, format string, args ...any) {
	if c.reported[n.Pos()] {
		return
	}
	c.reported[n.Pos()] = true
	c.report(n, OwnRefusal, format, args...)
}

func (c *checker) isErrNoPort(id *ast.Ident) bool {
	v, ok := c.info.Uses[id].(*types.Var)
	return ok && v.Name() == "ErrNoPort" && v.Pkg() != nil && v.Pkg().Path() == RuntimePath && !v.IsField()
}

// testsFor reports whether the ErrNoPort identifier at the top of stack is
// tested for (errors.Is argument, == / != operand, switch case) rather than
// produced.
func testsFor(c *checker, id *ast.Ident, stack []ast.Node) bool {
	var e ast.Expr = id
	i := len(stack) - 1
	if i < 0 {
		return false
	}
	if sel, ok := stack[i].(*ast.SelectorExpr); ok && sel.Sel == id {
		e, i = sel, i-1
	}
	for i >= 0 {
		if p, ok := stack[i].(*ast.ParenExpr); ok {
			e, i = p, i-1
			continue
		}
		break
	}
	if i < 0 {
		return false
	}
	switch p := stack[i].(type) {
	case *ast.CallExpr:
		return isFunc(c.calleeFunc(p), "errors", "Is") && len(p.Args) == 2 && (p.Args[0] == e || p.Args[1] == e)
	case *ast.BinaryExpr:
		return p.Op == token.EQL || p.Op == token.NEQ
	case *ast.CaseClause:
		return true
	}
	return false
}

// guard reports made errors returned on the refusal branch of an if that
// asks a port query.
func (c *checker) guard(ifs *ast.IfStmt) {
	branch := c.refusalBranch(ifs)
	if branch == nil {
		return
	}
	ast.Inspect(branch, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit:
			return false
		case *ast.ReturnStmt:
			for _, r := range n.Results {
				if made := c.madeError(r); made != nil {
					c.refuse(made, "refuses by hand after asking for a port: "+ownRefusalFix)
				}
			}
		}
		return true
	})
}

// refusalBranch returns the branch of ifs that runs when its port query
// says "no port", or nil when the condition asks no port query.
func (c *checker) refusalBranch(ifs *ast.IfStmt) ast.Stmt {
	cond := ast.Unparen(ifs.Cond)
	switch e := cond.(type) {
	case *ast.UnaryExpr:
		if e.Op == token.NOT && c.isPortQuery(ast.Unparen(e.X)) {
			return ifs.Body
		}
	case *ast.CallExpr:
		if c.isPortQuery(e) {
			return ifs.Else
		}
	case *ast.BinaryExpr:
		return c.refusalBranchOf(ifs, e)
	}
	return nil
}

func (c *checker) refusalBranchOf(ifs *ast.IfStmt, e *ast.BinaryExpr) ast.Stmt {
	switch e.Op {
	case token.NEQ, token.EQL:
		if !c.initQueries(ifs.Init) || !(isNil(e.X) || isNil(e.Y)) {
			return nil
		}
		if e.Op == token.NEQ {
			return ifs.Body
		}
		return ifs.Else
	case token.LOR, token.LAND:
		for _, op := range logicOperands(e) {
			u, isUnary := op.(*ast.UnaryExpr)
			switch {
			case e.Op == token.LOR && isUnary && u.Op == token.NOT && c.isPortQuery(ast.Unparen(u.X)):
				return ifs.Body
			case e.Op == token.LAND && c.isPortQuery(op):
				return ifs.Else
			}
		}
	}
	return nil
}

// logicOperands flattens a chain of one operator (not through !).
func logicOperands(e *ast.BinaryExpr) []ast.Expr {
	var out []ast.Expr
	for _, x := range []ast.Expr{e.X, e.Y} {
		x = ast.Unparen(x)
		if b, ok := x.(*ast.BinaryExpr); ok && b.Op == e.Op {
			out = append(out, logicOperands(b)...)
			continue
		}
		out = append(out, x)
	}
	return out
}

func isNil(e ast.Expr) bool {
	id, ok := ast.Unparen(e).(*ast.Ident)
	return ok && id.Name == "nil"
}

// initQueries reports whether an if's init statement asks a port query.
func (c *checker) initQueries(init ast.Stmt) bool {
	found := false
	if init != nil {
		ast.Inspect(init, func(n ast.Node) bool {
			if e, ok := n.(ast.Expr); ok && c.isPortQuery(e) {
				found = true
			}
			return !found
		})
	}
	return found
}

// isPortQuery reports whether e calls Available or Select of a generated
// kernel type (or an interface one implements), Ready of a kgenrt port, or
// a method of kgenrt.PortTable.
func (c *checker) isPortQuery(e ast.Expr) bool {
	call, ok := e.(*ast.CallExpr)
	if !ok {
		return false
	}
	fn := c.calleeFunc(call)
	if fn == nil || fn.Type().(*types.Signature).Recv() == nil {
		return false
	}
	recv := fn.Type().(*types.Signature).Recv().Type()
	switch fn.Name() {
	case "Available", "Select":
		return c.m.isKernelType(recv) || isRuntimeNamed(recv, "PortTable") ||
			types.IsInterface(recv) && c.m.implementedByKernel(recv)
	case "Ready":
		return isPort(recv) || implementsPort(recv, c.m.port)
	}
	return false
}

// madeError returns the expression in e that makes a new error on the
// spot — errors.New(…), fmt.Errorf(…) without %w, or a literal of an error
// type (behind & or not) — or nil.
func (c *checker) madeError(e ast.Expr) ast.Expr {
	e = ast.Unparen(e)
	if u, ok := e.(*ast.UnaryExpr); ok && u.Op == token.AND {
		e = ast.Unparen(u.X)
	}
	switch x := e.(type) {
	case *ast.CallExpr:
		fn := c.calleeFunc(x)
		if isFunc(fn, "errors", "New") || isFunc(fn, "fmt", "Errorf") && !c.wraps(x) {
			return x
		}
	case *ast.CompositeLit:
		t := c.info.TypeOf(x)
		if t != nil && (types.Implements(t, errorType) || types.Implements(types.NewPointer(t), errorType)) {
			return x
		}
	}
	return nil
}

var errorType = types.Universe.Lookup("error").Type().Underlying().(*types.Interface)

// wraps reports whether a fmt.Errorf call's format has a %w verb (an
// unknown format counts as wrapping: no guess).
func (c *checker) wraps(call *ast.CallExpr) bool {
	if len(call.Args) == 0 {
		return false
	}
	v := c.constant(call.Args[0])
	if v == nil || v.Kind() != constant.String {
		return true
	}
	return strings.Contains(constant.StringVal(v), "%w")
}

// refusalRE matches error texts that refuse by themselves.
var refusalRE = regexp.MustCompile(`(?i)` + strings.Join([]string{
	`\b(no|without)\s+(an?\s+)?(metal|cuda|rocm|hip|gpu)\b`,
	`\bno\s+(\w+\s+)?port\b`,
	`\b(metal|cuda|rocm|hip|gpu|backend|port)\b[^.;:]{0,40}?\b(not available|unavailable|not supported|unsupported|not ready)\b`,
	`\b(not available|unavailable)\s+(on|for)\b`,
}, "|"))

// refusalText returns the text of an errors.New / fmt.Errorf (without %w)
// call whose constant text refuses by itself.
func (c *checker) refusalText(call *ast.CallExpr) (string, bool) {
	fn := c.calleeFunc(call)
	if !isFunc(fn, "errors", "New") && !isFunc(fn, "fmt", "Errorf") || len(call.Args) == 0 {
		return "", false
	}
	v := c.constant(call.Args[0])
	if v == nil || v.Kind() != constant.String {
		return "", false
	}
	text := constant.StringVal(v)
	if strings.Contains(text, "%w") || !refusalRE.MatchString(text) {
		return "", false
	}
	return text, true
}
