package mslcpu

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// Arith counts the arithmetic a launch executed, by kind, in lanes (a
// float4 add is four): what the kernel's own code computes after -O1,
// excluding the harness's emulation of simd and matrix operations (which
// Arith leaves to Cost.Simd). Read from the kernel's LLVM IR: every basic
// block's operations are tallied once, and the runtime counts how often
// each block ran (instrumentIR).
type Arith struct {
	F32  uint64 `json:"f32"`  // float add, sub, mul, div, rem, neg; fma counts 2
	F16  uint64 `json:"f16"`  // the same in half
	BF16 uint64 `json:"bf16"` // the same in bfloat
	// Compare counts floating-point comparisons (min, max, select tests).
	Compare uint64 `json:"compare"`
	// Convert counts conversions between float types and to or from
	// integers (half↔float on every 16-bit load is one).
	Convert uint64 `json:"convert"`
	// Special counts calls of math functions (exp, log, sqrt, tanh, pow,
	// sin, …): a GPU's special-function unit, slower than an FMA.
	Special uint64 `json:"special"`
	// Int counts integer arithmetic and logic, mostly index computation.
	Int uint64 `json:"int"`
}

// FLOPs is the floating-point arithmetic the roofline's compute term
// charges: F32 + F16 + BF16 (special functions are not FLOPs).
func (a Arith) FLOPs() uint64 { return a.F32 + a.F16 + a.BF16 }

func (a *Arith) add(o Arith, times uint64) {
	a.F32 += o.F32 * times
	a.F16 += o.F16 * times
	a.BF16 += o.BF16 * times
	a.Compare += o.Compare * times
	a.Convert += o.Convert * times
	a.Special += o.Special * times
	a.Int += o.Int * times
}

var (
	irDefineRe = regexp.MustCompile(`^define\b`)
	irLabelRe  = regexp.MustCompile(`^([A-Za-z$._0-9-]+|"[^"]*"):`)
	irFloatRe  = regexp.MustCompile(`= (fadd|fsub|fmul|fdiv|frem|fneg) (?:(?:fast|nnan|ninf|nsz|arcp|contract|afn|reassoc) )*(?:<(\d+) x )?(half|bfloat|float|double)\b`)
	irCmpRe    = regexp.MustCompile(`= fcmp (?:(?:fast|nnan|ninf|nsz|arcp|contract|afn|reassoc) )*\w+ (?:<(\d+) x )?`)
	irCvtRe    = regexp.MustCompile(`= (?:fpext|fptrunc|sitofp|uitofp|fptosi|fptoui) (?:<(\d+) x )?`)
	irIntRe    = regexp.MustCompile(`= (?:add|sub|mul|udiv|sdiv|urem|srem|shl|lshr|ashr|and|or|xor) (?:(?:nuw|nsw|exact|disjoint) )*(?:<(\d+) x )?i\d+ `)
	irCallRe   = regexp.MustCompile(`\bcall [^@]*@([\w.$]+)\(`)
	irDbgRe    = regexp.MustCompile(`!dbg !(\d+)`)
	irMetaRe   = regexp.MustCompile(`^!(\d+) = (?:distinct )?!(DILocation|DISubprogram|DILexicalBlock|DILexicalBlockFile|DIFile)\((.*)\)\s*$`)
	irFieldRe  = regexp.MustCompile(`\b(scope|file|filename): (?:!(\d+)|"([^"]*)")`)
	irFmaRe    = regexp.MustCompile(`^(?:llvm\.fma|llvm\.fmuladd)\.|^fmaf?$`)
	// irSpecial are the math functions (libm names and LLVM intrinsics)
	// counted as special: the rest of a call is not arithmetic.
	irSpecialRe = regexp.MustCompile(`^(?:llvm\.)?(?:exp|exp2|exp10|expm1|log|log2|log10|log1p|sqrt|rsqrt|cbrt|pow|powr|tanh|sinh|cosh|sin|cos|tan|asin|acos|atan|atan2|erf|erfc)(?:f|\..*)?$`)
)

// opTable is the arithmetic of each counted block, by block id.
type opTable []Arith

// instrumentIR inserts a call of kgen_cost_block(id) at the top of every
// basic block of ll that has counted operations, and returns the rewritten
// module and each block's arithmetic. Operations whose debug location is
// in the harness (the shim's headers, the generated driver) are not the
// kernel's and are not counted, except calls of math functions, which the
// shim's metal:: functions make on the kernel's behalf; isHarness names
// those files.
func instrumentIR(ll string, isHarness func(file string) bool) (string, opTable) {
	lines := strings.Split(ll, "\n")
	harness := harnessLocations(lines, isHarness)
	var out []string
	var table opTable
	inFunc := false
	var block []string
	flush := func() {
		if len(block) == 0 {
			return
		}
		var a Arith
		for _, l := range block {
			if m := irDbgRe.FindStringSubmatch(l); m != nil && harness[m[1]] {
				// The shim's own work (simd and matrix emulation) is not
				// the kernel's, but a math function it calls for the
				// kernel (metal::exp is expf) is.
				var own Arith
				countLine(l, &own)
				a.Special += own.Special
				continue
			}
			countLine(l, &a)
		}
		if a != (Arith{}) {
			at := headerEnd(block)
			call := fmt.Sprintf("  call void @kgen_cost_block(i32 %d)", len(table))
			block = append(block[:at], append([]string{call}, block[at:]...)...)
			table = append(table, a)
		}
		out = append(out, block...)
		block = nil
	}
	for _, l := range lines {
		switch {
		case irDefineRe.MatchString(l):
			out = append(out, l)
			inFunc = true
		case inFunc && l == "}":
			flush()
			out = append(out, l)
			inFunc = false
		case inFunc && irLabelRe.MatchString(l):
			flush()
			block = append(block, l)
		case inFunc:
			block = append(block, l)
		default:
			out = append(out, l)
		}
	}
	out = append(out, "declare void @kgen_cost_block(i32)",
		fmt.Sprintf("@kgen_cost_nblocks = dso_local constant i32 %d", len(table)))
	return strings.Join(out, "\n"), table
}

// headerEnd is where a block's first ordinary instruction starts: after
// its label, phi nodes, a landingpad and their continuation lines (a
// landingpad's clauses are indented further), blank lines and comments.
func headerEnd(block []string) int {
	at := 0
	for at < len(block) {
		l := block[at]
		t := strings.TrimSpace(l)
		header := irLabelRe.MatchString(l) || strings.Contains(l, "= phi ") || strings.Contains(l, "= landingpad ") ||
			t == "" || strings.HasPrefix(t, ";") || (at > 0 && strings.HasPrefix(l, "    "))
		if !header {
			break
		}
		at++
	}
	return at
}

// countLine adds one instruction's arithmetic to a.
func countLine(l string, a *Arith) {
	lanes := func(s string) uint64 {
		if s == "" {
			return 1
		}
		n, _ := strconv.ParseUint(s, 10, 32)
		return n
	}
	if m := irFloatRe.FindStringSubmatch(l); m != nil {
		n := lanes(m[2])
		switch m[3] {
		case "half":
			a.F16 += n
		case "bfloat":
			a.BF16 += n
		default:
			a.F32 += n
		}
		return
	}
	if m := irCmpRe.FindStringSubmatch(l); m != nil {
		a.Compare += lanes(m[1])
		return
	}
	if m := irCvtRe.FindStringSubmatch(l); m != nil {
		a.Convert += lanes(m[1])
		return
	}
	if m := irIntRe.FindStringSubmatch(l); m != nil {
		a.Int += lanes(m[1])
		return
	}
	if m := irCallRe.FindStringSubmatch(l); m != nil {
		switch name := m[1]; {
		case irFmaRe.MatchString(name):
			switch {
			case strings.HasSuffix(name, ".f16"):
				a.F16 += 2
			case strings.HasSuffix(name, ".bf16"):
				a.BF16 += 2
			default:
				a.F32 += 2
			}
		case irSpecialRe.MatchString(name):
			a.Special++
		}
	}
}

// harnessLocations returns the debug locations (by metadata number) whose
// scope lies in a file isHarness names.
func harnessLocations(lines []string, isHarness func(string) bool) map[string]bool {
	type node struct{ kind, scope, file, filename string }
	nodes := map[string]node{}
	for _, l := range lines {
		m := irMetaRe.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		n := node{kind: m[2]}
		for _, f := range irFieldRe.FindAllStringSubmatch(m[3], -1) {
			switch f[1] {
			case "scope":
				n.scope = f[2]
			case "file":
				n.file = f[2]
			case "filename":
				n.filename = f[3]
			}
		}
		nodes[m[1]] = n
	}
	out := map[string]bool{}
	for id, n := range nodes {
		if n.kind != "DILocation" {
			continue
		}
		s := nodes[n.scope]
		if f, ok := nodes[s.file]; ok && isHarness(f.filename) {
			out[id] = true
		}
	}
	return out
}

// harnessFile reports whether a debug-info file name is the harness's own:
// a shim header (by its unpacked path or its name) or the generated driver.
func harnessFile(shimDir string) func(string) bool {
	return func(name string) bool {
		if name == "kgen-driver.cc" || strings.HasPrefix(name, shimDir) {
			return true
		}
		for _, f := range shimFiles {
			if filepath.Base(name) == f {
				return true
			}
		}
		return false
	}
}
