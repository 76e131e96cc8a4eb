package golang_test

import (
	"go/ast"
	"go/types"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/emit/golang"
)

// The rules mlxcel's check_kernel_port_dispatch learned from incidents, held
// against the generated package (with no exemptions):
//  1. no code names a backend (no port chosen by comparing backend kinds,
//     no gate that enumerates backends);
//  2. ports are made only inside port tables;
//  3. a port table is read only through Select, Available and Enqueue
//     (PortTable.Enqueue is Select and the port's Enqueue);
//  4. every launch (Run, Encode, Enqueue on a kgenrt.Port) is on the port Select
//     returned in the same function, or is a port table's Enqueue.
func TestGeneratedCodeRoutesEveryLaunchThroughSelect(t *testing.T) {
	_, files := generated(t, "../../kgen.yaml")
	problems, launchers := dispatchProblems(t, files)
	for _, p := range problems {
		t.Error(p)
	}
	if launchers == 0 {
		t.Fatal("no launcher found: the check checked nothing")
	}
	t.Logf("%d launcher(s) route through Select, 0 exempt", launchers)
}

// Each rule fires on a hand-edit that breaks it.
func TestDispatchRulesCatchHandEdits(t *testing.T) {
	_, files := generated(t, "../../kgen.yaml")
	orig := string(files["gelu_tanh_kernel.go"])
	for name, edit := range map[string][2]string{
		"table read directly":  {"port, err := geluTanhPorts.Select(b)", "port, err := geluTanhPorts.Ports[b], error(nil)"},
		"backend named":        {"port, err := geluTanhPorts.Select(b)", "port, err := geluTanhPorts.Select(kgenrt.Metal)"},
		"port outside a table": {"port, err := geluTanhPorts.Select(b)", "port, err := kgenrt.MetalPort(&geluTanhKernel), error(nil)"},
		"Enqueue past Select":  {"return geluTanhPorts.Enqueue(stream, &call)", "return geluTanhPorts.Ports[1].Enqueue(stream, &call)"},
	} {
		if !strings.Contains(orig, edit[0]) {
			t.Fatalf("%s: the generated code changed; update this test", name)
		}
		files["gelu_tanh_kernel.go"] = []byte(strings.Replace(orig, edit[0], edit[1], 1))
		if problems, _ := dispatchProblems(t, files); len(problems) == 0 {
			t.Errorf("%s: no rule fired", name)
		}
	}
}

// dispatchProblems applies the rules to a generated package and counts the
// functions that launch.
func dispatchProblems(t *testing.T, files map[string][]byte) (problems []string, launchers int) {
	_, info, asts := typeCheckInfo(t, files)
	for _, f := range asts {
		problems = append(problems, checkNoBackendNames(f, info)...)
		problems = append(problems, checkPortConstruction(f)...)
		problems = append(problems, checkTableUse(f, info)...)
		p, n := checkLaunches(f, info)
		problems = append(problems, p...)
		launchers += n
	}
	return problems, launchers
}

func isRuntime(obj types.Object) bool {
	return obj != nil && obj.Pkg() != nil && obj.Pkg().Path() == golang.RuntimePath
}

func checkNoBackendNames(f *ast.File, info *types.Info) (problems []string) {
	ast.Inspect(f, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok {
			c, isConst := info.Uses[id].(*types.Const)
			if isConst && isRuntime(c) && isNamed(c.Type(), "Backend") {
				problems = append(problems, "generated code names backend "+c.Name()+": choosing ports is Select's job")
			}
		}
		return true
	})
	return problems
}

// checkPortConstruction finds kgenrt.MetalPort calls outside the Ports
// field of a PortTable literal.
func checkPortConstruction(f *ast.File) (problems []string) {
	allowed := map[ast.Node]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		if kv, ok := n.(*ast.KeyValueExpr); ok {
			if k, ok := kv.Key.(*ast.Ident); ok && k.Name == "Ports" {
				ast.Inspect(kv.Value, func(m ast.Node) bool { allowed[m] = true; return true })
			}
		}
		return true
	})
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		if sel, ok := call.Fun.(*ast.SelectorExpr); ok && strings.HasSuffix(sel.Sel.Name, "Port") && !allowed[call] {
			problems = append(problems, "a port is made outside a port table: "+sel.Sel.Name)
		}
		return true
	})
	return problems
}

// checkTableUse finds uses of a PortTable variable other than X.Select(…),
// X.Available(…) and X.Enqueue(…).
func checkTableUse(f *ast.File, info *types.Info) (problems []string) {
	ok := map[*ast.Ident]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		if sel, isSel := n.(*ast.SelectorExpr); isSel && (sel.Sel.Name == "Select" || sel.Sel.Name == "Available" || sel.Sel.Name == "Enqueue") {
			if id, isID := sel.X.(*ast.Ident); isID {
				ok[id] = true
			}
		}
		return true
	})
	for id, obj := range info.Uses {
		if v, isVar := obj.(*types.Var); isVar && isPortTable(v.Type()) && !ok[id] && fileOf(f, id) {
			problems = append(problems, "port table "+id.Name+" is used directly, not through Select or Available")
		}
	}
	return problems
}

func fileOf(f *ast.File, n ast.Node) bool { return f.Pos() <= n.Pos() && n.Pos() <= f.End() }

// isNamed reports whether typ is the kgenrt type of that name.
func isNamed(typ types.Type, name string) bool {
	named, ok := typ.(*types.Named)
	return ok && isRuntime(named.Obj()) && named.Obj().Name() == name
}

func isPortTable(typ types.Type) bool { return isNamed(typ, "PortTable") }

func isPort(typ types.Type) bool { return isNamed(typ, "Port") }

// checkLaunches returns how many functions launch, after checking each
// launch is on a variable assigned from a port table's Select.
func checkLaunches(f *ast.File, info *types.Info) (problems []string, n int) {
	for _, decl := range f.Decls {
		fn, ok := decl.(*ast.FuncDecl)
		if !ok || fn.Body == nil {
			continue
		}
		selected := map[types.Object]bool{}
		launches := 0
		ast.Inspect(fn.Body, func(node ast.Node) bool {
			switch v := node.(type) {
			case *ast.AssignStmt:
				if call, ok := v.Rhs[0].(*ast.CallExpr); ok && len(v.Rhs) == 1 {
					if sel, ok := call.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Select" && isPortTable(info.Types[sel.X].Type) {
						if id, ok := v.Lhs[0].(*ast.Ident); ok {
							selected[info.Defs[id]] = true
						}
					}
				}
			case *ast.CallExpr:
				sel, ok := v.Fun.(*ast.SelectorExpr)
				if ok && sel.Sel.Name == "Enqueue" && isPortTable(info.Types[sel.X].Type) {
					launches++ // PortTable.Enqueue selects the port itself
					return true
				}
				if !ok || (sel.Sel.Name != "Run" && sel.Sel.Name != "Encode" && sel.Sel.Name != "Enqueue") || !isPort(info.Types[sel.X].Type) {
					return true
				}
				launches++
				id, ok := sel.X.(*ast.Ident)
				if !ok || !selected[info.Uses[id]] {
					problems = append(problems, fn.Name.Name+" launches on a port that Select did not return")
				}
			}
			return true
		})
		if launches > 0 {
			n++
		}
	}
	return problems, n
}
