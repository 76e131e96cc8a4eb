package e2e

import (
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/config"
	"github.com/kgen-dev/kgen/emit/inventory"
	"github.com/kgen-dev/kgen/gen/kernels"
	"github.com/kgen-dev/kgen/generate"
	"github.com/kgen-dev/kgen/kgenrt"
)

// binding is one buffer as any of the three sources describes it.
type binding struct {
	Index int
	Name  string
	Role  string
	DType string // "T", "f32", …; "" for args
}

var (
	kernelRE   = regexp.MustCompile(`(?s)kernel void (\w+)\((.*?)\)\s*\{`)
	deviceRE   = regexp.MustCompile(`^device (const )?(\w+)\* (\w+) \[\[buffer\((\d+)\)\]\]$`)
	constantRE = regexp.MustCompile(`^constant (\w+)_args& (\w+) \[\[buffer\((\d+)\)\]\]$`)
	structRE   = regexp.MustCompile(`(?s)struct (\w+)_args \{(.*?)\};`)
	// positionRE matches the thread-position parameters of rowwise kernels.
	positionRE = regexp.MustCompile(`^uint3? kgen_\w+ \[\[(thread_index_in_threadgroup|threadgroup_position_in_grid|thread_index_in_simdgroup|simdgroup_index_in_threadgroup)\]\]$`)
	hostRE     = regexp.MustCompile(`template \[\[host_name\("(\w+)"\)\]\] \[\[kernel\]\] decltype\((\w+)<(\w+)>\)`)
)

var mslTypes = map[string]string{"T": "T", "float": "f32", "half": "f16", "bfloat": "bf16", "uint": "u32", "int": "i32", "char": "i8", "uchar": "u8"}

// signature is one kernel function of a .metal file: its parameters, its
// args struct's fields and its host-name instantiations.
type signature struct {
	bs     []binding
	fields []string
	hosts  map[string]string
}

// mslSignatures parses every kernel function of a .metal file (a split
// kernel has its phases' too), by name, in order.
func mslSignatures(t *testing.T, src string) (names []string, sigs map[string]*signature) {
	t.Helper()
	var fields []string
	s := structRE.FindStringSubmatch(src)
	for _, line := range strings.Split(s[2], ";") {
		if f := strings.Fields(line); len(f) == 2 {
			fields = append(fields, f[1]+":"+mslTypes[f[0]])
		}
	}
	sigs = map[string]*signature{}
	for _, m := range kernelRE.FindAllStringSubmatch(src, -1) {
		sig := &signature{fields: fields, hosts: map[string]string{}}
		for _, p := range strings.Split(m[2], ",") {
			p = strings.TrimSpace(p)
			if d := deviceRE.FindStringSubmatch(p); d != nil {
				role := "output"
				if d[1] != "" {
					role = "input"
				}
				sig.bs = append(sig.bs, binding{atoi(t, d[4]), d[3], role, mslTypes[d[2]]})
			} else if c := constantRE.FindStringSubmatch(p); c != nil {
				sig.bs = append(sig.bs, binding{atoi(t, c[3]), c[2], "args", ""})
			} else if !strings.HasSuffix(p, "[[thread_position_in_grid]]") && !positionRE.MatchString(p) {
				t.Fatalf("kernel %s: unparsed parameter %q", m[1], p)
			}
		}
		names = append(names, m[1])
		sigs[m[1]] = sig
	}
	if len(names) == 0 {
		t.Fatal("no kernel signature")
	}
	for _, h := range hostRE.FindAllStringSubmatch(src, -1) {
		if sig := sigs[h[2]]; sig != nil {
			sig.hosts[h[1]] = mslTypes[h[3]]
		}
	}
	return names, sigs
}

func atoi(t *testing.T, s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// Every generated .metal signature agrees, binding for binding, with the Go
// descriptor the launchers use, with the launcher's own argument order and
// args offsets, and with the inventory; the embedded source is the file.
func TestMSLSignaturesMatchGoAndInventory(t *testing.T) {
	cfg, err := config.Load("../kgen.yaml")
	if err != nil {
		t.Fatal(err)
	}
	res, err := generate.Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	inv := map[string]inventory.Kernel{}
	for _, k := range inventory.Build(res.Kernels, res.MSL).Kernels {
		inv[k.Name] = k
	}
	metal, _ := filepath.Glob("../gen/msl/*.metal")
	if len(metal) != len(kernels.Kernels()) || len(metal) != len(inv) || len(metal) == 0 {
		t.Fatalf("%d .metal files, %d Go kernels, %d inventory kernels", len(metal), len(kernels.Kernels()), len(inv))
	}
	for _, k := range kernels.Kernels() {
		t.Run(k.Name, func(t *testing.T) {
			src, err := os.ReadFile(filepath.Join("..", inv[k.Name].MSL))
			if err != nil {
				t.Fatal(err)
			}
			if string(src) != k.Source {
				t.Fatal("the embedded source differs from the .metal file; run kgen gen")
			}
			if err := k.Validate(); err != nil {
				t.Fatal(err)
			}
			names, sigs := mslSignatures(t, string(src))
			ik := inv[k.Name]
			// A kernel with PortPhases (column reductions) has no one-launch
			// form: its first phase is its own entry point.
			own := 1
			if k.PortPhases {
				own = 0
			}
			phases := metalPhases(k)
			if names[0] != k.Name || len(names) != own+len(phases) {
				t.Fatalf("MSL kernels %v for %s with %d Metal phases", names, k.Name, len(phases))
			}
			if own == 1 {
				checkSignature(t, k, sigs[k.Name], ik.Bindings, ik.Variants, ik.Dispatch)
			}
			if len(phases) > 0 && (ik.Split == nil || len(ik.Split.Phases) != len(phases)) {
				t.Fatalf("%d phases, inventory split %+v", len(phases), ik.Split)
			}
			for i, p := range phases {
				ip := ik.Split.Phases[i]
				if names[own+i] != p.Name || ip.Entry != p.Name || sigs[p.Name] == nil {
					t.Fatalf("phase %d: MSL %s, Go %s, inventory %s", i, names[own+i], p.Name, ip.Entry)
				}
				checkSignature(t, p, sigs[p.Name], ip.Bindings, ip.Variants, ip.Dispatch)
			}
			checkLauncher(t, k)
		})
	}
}

// metalPhases are k's phases the .metal and the Metal launcher hold: a
// CUDA-only one (a quantized matmul's mid tile, listed last) has no Metal
// launch.
func metalPhases(k *kgenrt.Kernel) []*kgenrt.Kernel {
	phases := k.Phases
	for len(phases) > 0 && phases[len(phases)-1].Launch[kgenrt.Metal].Threadgroup[0] == 0 {
		phases = phases[:len(phases)-1]
	}
	return phases
}

func checkSignature(t *testing.T, k *kgenrt.Kernel, sig *signature, ikBindings []inventory.Binding, ikVariants []inventory.Variant, ikDispatch inventory.Dispatch) {
	msl, fields, hosts := sig.bs, sig.fields, sig.hosts
	if len(msl) != len(k.Bindings) || len(msl) != len(ikBindings) {
		t.Fatalf("kernel %s: %d MSL, %d Go, %d inventory bindings", k.Name, len(msl), len(k.Bindings), len(ikBindings))
	}
	var goFields, invFields []string
	for i, b := range k.Bindings {
		g := binding{b.Index, b.Name, b.Role.String(), b.DType.String()}
		in := binding{ikBindings[i].Index, ikBindings[i].Name, ikBindings[i].Role, ikBindings[i].DType}
		if b.Role == kgenrt.Args {
			g.DType = ""
			for _, f := range b.Fields {
				goFields = append(goFields, f.Name+":"+f.Type.String())
				if f.Offset != 4*len(goFields)-4 {
					t.Errorf("Go field %s at offset %d", f.Name, f.Offset)
				}
			}
			for j, f := range ikBindings[i].Fields {
				invFields = append(invFields, f.Name+":"+f.Type)
				if f.Offset != b.Fields[j].Offset {
					t.Errorf("inventory field %s at offset %d, Go at %d", f.Name, f.Offset, b.Fields[j].Offset)
				}
			}
		}
		if msl[i] != g || g != in {
			t.Errorf("buffer %d: MSL %+v, Go %+v, inventory %+v", i, msl[i], g, in)
		}
	}
	if strings.Join(fields, " ") != strings.Join(goFields, " ") || strings.Join(fields, " ") != strings.Join(invFields, " ") {
		t.Errorf("args struct: MSL %v, Go %v, inventory %v", fields, goFields, invFields)
	}
	if len(hosts) != len(k.Variants) || len(ikVariants) != len(k.Variants) {
		t.Fatalf("%d MSL instantiations, %d Go variants, %d inventory variants", len(hosts), len(k.Variants), len(ikVariants))
	}
	for i, v := range k.Variants {
		iv := ikVariants[i]
		if hosts[v.HostName] != v.DType.String() || iv.HostName != v.HostName || iv.DType != v.DType.String() || iv.Key != v.Key {
			t.Errorf("variant %s: MSL instantiates %q; inventory %+v; Go %+v", v.HostName, hosts[v.HostName], iv, v)
		}
	}
	if l := k.Launch[kgenrt.Metal]; ikDispatch.Grid != l.GridStrings() || ikDispatch.Threadgroup != l.Threadgroup {
		t.Errorf("dispatch: inventory %v, Go %v %v", ikDispatch, l.GridStrings(), l.Threadgroup)
	}
}

// checkLauncher reads the kernel's launchers and call builder: the tensor
// lists Run, Encode and Enqueue pass it (ts) must be the tensor bindings in
// order, each call's tensors (ts itself, or ts[i] and workspaces for a
// split's phases) must be its kernel's bindings, and its args writes must
// be at the fields' offsets.
func checkLauncher(t *testing.T, k *kgenrt.Kernel) {
	f, err := parser.ParseFile(token.NewFileSet(), "../gen/kernels/"+k.Name+"_kernel.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, b := range k.Tensors() {
		want = append(want, b.Name)
	}
	idents := func(es []ast.Expr) []string {
		var out []string
		for _, e := range es {
			if id, ok := e.(*ast.Ident); ok {
				out = append(out, strings.TrimSuffix(id.Name, "_"))
			}
		}
		return out
	}
	var ts []string // the order the launchers pass the tensors in
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Recv == nil || (fn.Name.Name != "Run" && fn.Name.Name != "Encode" && fn.Name.Name != "Enqueue") {
			continue
		}
		found := false
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			if cl, ok := n.(*ast.CompositeLit); ok {
				if at, ok := cl.Type.(*ast.ArrayType); ok && types.ExprString(at.Elt) == "*kgenrt.Tensor" {
					found, ts = true, idents(cl.Elts)
					if strings.Join(ts, ",") != strings.Join(want, ",") {
						t.Errorf("%s passes %v, bindings are %v", fn.Name.Name, ts, want)
					}
				}
			}
			return true
		})
		if !found {
			t.Errorf("%s passes no tensor list", fn.Name.Name)
		}
	}
	var lists [][]string // each call's tensors: a split's phases first, then the kernel's own
	var offsets []int
	ws := regexp.MustCompile(`^kgenWs(\d+)$`)
	ast.Inspect(f, func(n ast.Node) bool {
		switch v := n.(type) {
		case *ast.KeyValueExpr:
			if id, ok := v.Key.(*ast.Ident); ok && id.Name == "Tensors" {
				if x, ok := v.Value.(*ast.Ident); ok && x.Name == "ts" {
					lists = append(lists, ts)
					break
				}
				var tensors []string
				for _, e := range v.Value.(*ast.CompositeLit).Elts {
					name := "?"
					switch e := e.(type) {
					case *ast.IndexExpr: // ts[i]
						if i := atoi(t, e.Index.(*ast.BasicLit).Value); i < len(ts) {
							name = ts[i]
						}
					case *ast.Ident:
						name = e.Name
						if m := ws.FindStringSubmatch(name); m != nil {
							name = "kgen_ws" + m[1]
						}
					}
					tensors = append(tensors, name)
				}
				lists = append(lists, tensors)
			}
		case *ast.CallExpr:
			if sel, ok := v.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "PutUint32" {
				lo := v.Args[0].(*ast.SliceExpr).Low.(*ast.BasicLit)
				offsets = append(offsets, atoi(t, lo.Value))
			}
		}
		return true
	})
	phases := metalPhases(k)
	if len(lists) != 1+len(phases) {
		t.Fatalf("launcher builds %d calls, want %d", len(lists), 1+len(phases))
	}
	for i, of := range append(append([]*kgenrt.Kernel(nil), phases...), k) {
		var want []string
		for _, b := range of.Tensors() {
			want = append(want, b.Name)
		}
		if strings.Join(lists[i], ",") != strings.Join(want, ",") {
			t.Errorf("the call builder passes %v to %s, bindings are %v", lists[i], of.Name, want)
		}
	}
	args := k.ArgsBinding()
	var written []kgenrt.Field // the stride and aligned fields are PutStrides's
	for _, f := range args.Fields {
		if f.StrideOf == "" && len(f.Aligned) == 0 {
			written = append(written, f)
		}
	}
	if len(offsets) != len(written) {
		t.Fatalf("launcher writes %d args fields, the struct has %d besides strides", len(offsets), len(written))
	}
	for i, f := range written {
		if offsets[i] != f.Offset {
			t.Errorf("launcher writes field %s at %d, want %d", f.Name, offsets[i], f.Offset)
		}
	}
}
