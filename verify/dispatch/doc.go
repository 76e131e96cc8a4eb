// Package dispatch is the port-dispatch half of `kgen verify`: four rules,
// checked with go/types over the Go code of the module that holds kgen.yaml,
// that keep every kernel launch going through the generated port table.
// They are the rules mlxcel's CI script grew one incident at a time
// (../shared/notes/anchors.md); kgen generates the tables, so the only code
// left that can drift is the user's own, and that is what this package reads.
//
// # What is loaded
//
// The module root is the nearest folder at or above kgen.yaml's that holds a
// go.mod; without one the rules are skipped and the report says so. Every
// package of the module (`./...` from the root: the current platform's build
// tags, test files not included, since tests may pick backends on purpose)
// is parsed and type-checked through golang.org/x/tools/go/packages, once.
// A package that does not type-check is a finding of its own (rule "load"):
// rules over code the checker cannot see would pass by accident. Two kinds
// of package are never checked: the generated package (the folder out.go,
// which is the port table) and kgenrt with the packages below it (the
// runtime that implements ports). The generated package's own errors are
// handed back in Result.GenErrors, so that verify reports them without
// loading the module again.
//
// # Terms
//
// kgenrt means the package github.com/kgen-dev/kgen/kgenrt or one below it.
// A generated kernel type is a named type declared in the generated package
// with a method Describe() *kgenrt.Kernel (GeluTanhKernel; its value is
// GeluTanh). Objects are identified by go/types, never by spelling: renamed
// imports, method values and interfaces all resolve to the same objects.
//
// A launcher is a reference — a call, a method value or a method expression
// — to one of:
//
//  1. Run, Encode or Enqueue of a generated kernel type, or of an interface type that
//     some generated kernel type implements (a user's
//     `interface{ Run(kgenrt.Backend, x, y *kgenrt.Tensor) error }`): the
//     right way to launch;
//  2. Run, Encode or Enqueue of kgenrt.Port, or of a kgenrt type implementing it;
//  3. a port constructor: a package-level kgenrt function one of whose
//     results is kgenrt.Port (MetalPort, CUDAPort);
//  4. a method of kgenrt.PortTable, or its Ports field (a literal included).
//
// Kinds 2 to 4 are findings of rule direct-port; all four count as launchers
// in the summary. A launching declaration is a top-level declaration
// (function, method, or package-level var with function literals) that holds
// a launcher anywhere in it, nested function literals included. Rules
// backend-compare and own-refusal apply only inside launching declarations;
// direct-port and backend-gate apply everywhere.
//
// # Rules
//
// direct-port (mlxcel: "no kernel holder reached directly outside the port
// table", found only after a launcher reverted by hand to call Metal
// directly passed the old check): every launcher of kinds 2, 3 and 4. The fix
// is K.Run(b, …), K.Encode(cb, …) or K.Enqueue(stream, …), which choose the
// port through K.Select.
//
// backend-compare (mlxcel: `use_cuda ? cuda_port : metal_port` ran the Metal
// arm on ROCm): in a launching declaration, a binary == or != with one
// operand of type kgenrt.Backend (or a call of its String method) and the
// other a constant (kgenrt.Metal, "metal"); or a switch whose tag has type
// kgenrt.Backend. The fix is to let K.Select choose: call K.Run(b, …) and
// take the fallback when errors.Is(err, kgenrt.ErrNoPort).
//
// own-refusal (mlxcel: hand-written guards cited predicates that did not
// exist and named the wrong entry point): in a launching declaration,
//
//   - a composite literal of type kgenrt.PortError;
//   - a use of kgenrt.ErrNoPort other than as an argument of errors.Is or an
//     operand of == or != (including a switch case): testing for the
//     refusal is right, manufacturing it is not;
//   - a guard: an if statement that asks a port query — Available or Select
//     of a generated kernel type (or of an interface one implements), Ready
//     of kgenrt.Port — in its condition (`!q`, `q`, or q among the operands
//     of a || / && chain) or in its init with the condition comparing an
//     error with nil, and whose refusal branch (the body for `!q` or
//     `err != nil`, the else branch for `q` or `err == nil`) returns a
//     freshly made error: errors.New(…), fmt.Errorf(…) without %w, or a
//     composite literal of an error type;
//   - errors.New or fmt.Errorf without %w whose constant text refuses by
//     itself: "no metal", "no gpu", "no port", "no cuda port", "metal not
//     available", "backend unsupported", "not available on …".
//
// `if errors.Is(err, kgenrt.ErrNoPort) { return K.Reference(x, y) }` is the
// pattern these rules steer to and passes, as does wrapping K.Run's error
// with %w. A refusal made in a helper that launches nothing is out of reach
// (the helper is not a launching declaration).
//
// backend-gate (mlxcel: `metal_available() || cuda_available()`): a chain of
// || and && (through parentheses and !) with availability probes for two or
// more different backends among its operands. A probe is a call of a method
// Available taking a kgenrt.Backend and returning bool, with a kgenrt
// backend constant as argument (the backend is that constant); or a call
// whose function name, without an is/has prefix and underscores, is
// available, ready or supported and whose package or receiver name names a
// backend (metal.Available(), cuda.IsReady()), or whose name is the backend
// itself with such a suffix (metalAvailable(), hasCUDA(), ROCmReady()).
// Backend names are metal, cuda, rocm and hip (= rocm). The fix is to ask
// the kernel for the backend you launch on, K.Available(b), or whether any
// GPU is present: a list of backends is wrong as soon as one is added.
//
// # Exemptions
//
// kgen.yaml's verify.exempt lists {path, rule, reason}. path is relative to
// the kgen.yaml folder, like every path in it, and names a file or a folder
// (everything below it); rule is one of the four rule names, or absent for
// all four; reason is required. A finding under an exemption is not
// reported but counted as exempt in the summary. An exemption that excuses
// no finding, or names an unknown rule, is itself a finding at its line in
// kgen.yaml: a stale exemption would silently excuse the next violation.
package dispatch
