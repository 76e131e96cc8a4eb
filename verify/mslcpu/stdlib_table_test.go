package mslcpu

import (
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

var updateShim = flag.Bool("update", false, "rewrite shim/metal_overloads from stdlib_table.go")

// TestOverloadHeader keeps shim/metal_overloads what the table generates.
func TestOverloadHeader(t *testing.T) {
	want := overloadHeader()
	if *updateShim {
		if err := os.WriteFile("shim/metal_overloads", []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile("shim/metal_overloads")
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Fatal("shim/metal_overloads is stale: go test ./verify/mslcpu -run TestOverloadHeader -update")
	}
}

// tableCheck is one value the table kernel writes and what it must be.
type tableCheck struct {
	what string
	want float64
	kind storage // the result's type: its ulp is the unit of tol
	tol  float64 // ulps; 0: exactly
}

// point is argument a's k-th test value in [lo, hi).
func point(lo, hi float64, a, k int) float64 {
	fr := []float64{0.13, 0.37, 0.61, 0.89, 0.05}
	return lo + (hi-lo)*fr[(k+2*a)%len(fr)]
}

// roundTo rounds v to the storage type, as the kernel's conversion does.
func roundTo(s storage, v float64) float64 {
	switch s {
	case stF16:
		return float64(F16ToF32(F32ToF16(float32(v))))
	case stBF16:
		return float64(BF16ToF32(F32ToBF16(float32(v))))
	}
	return float64(float32(v))
}

func cFloat(v float64) string { return strconv.FormatFloat(float64(float32(v)), 'x', -1, 32) + "f" }

// realTableSource writes, for every real row, calls in float, half and
// bfloat: scalars at four points, a 4-vector, and the scalar-vector mixes.
func realTableSource(b *strings.Builder, checks *[]tableCheck) {
	types := []struct {
		name string
		s    storage
	}{{"float", stF32}, {"half", stF16}, {"bfloat", stBF16}}
	for _, r := range realMathRows {
		for _, ty := range types {
			arg := func(a, k int) (string, float64) {
				v := roundTo(ty.s, point(r.lo, r.hi, a, k))
				return fmt.Sprintf("%s(%s)", ty.name, cFloat(v)), v
			}
			// A bfloat scalar takes the float function (float result).
			res := ty.s
			if ty.s == stBF16 {
				res = stF32
			}
			check := func(what string, in []float64, res storage) {
				want := r.ref(in...)
				tol := r.ulps
				if res != stF32 {
					want = roundTo(res, want)
					tol = 1
				}
				if r.exact {
					tol = 0
				}
				*checks = append(*checks, tableCheck{what, want, res, tol})
			}
			for k := 0; k < 4; k++ {
				var as []string
				var in []float64
				for a := 0; a < r.args; a++ {
					s, v := arg(a, k)
					as, in = append(as, s), append(in, v)
				}
				fmt.Fprintf(b, "  out[i++] = float(%s(%s));\n", r.name, strings.Join(as, ", "))
				check(fmt.Sprintf("%s(%s)", r.name, strings.Join(as, ", ")), in, res)
			}
			// Vectors: component k at point k; mixes: scalar arguments at
			// point 0 (first argument vector, then first argument scalar).
			shapes := [][]bool{make([]bool, r.args)}
			if r.args > 1 {
				first, rest := make([]bool, r.args), make([]bool, r.args)
				for a := 1; a < r.args; a++ {
					first[a] = true
				}
				rest[0] = true
				shapes = append(shapes, first, rest)
			}
			for _, scalar := range shapes {
				var as []string
				for a := 0; a < r.args; a++ {
					if scalar[a] {
						s, _ := arg(a, 0)
						as = append(as, s)
						continue
					}
					var c []string
					for k := 0; k < 4; k++ {
						s, _ := arg(a, k)
						c = append(c, s)
					}
					as = append(as, fmt.Sprintf("%s4(%s)", ty.name, strings.Join(c, ", ")))
				}
				call := fmt.Sprintf("%s(%s)", r.name, strings.Join(as, ", "))
				fmt.Fprintf(b, "  { auto v = %s; for (int c = 0; c < 4; ++c) out[i++] = float(v[c]); }\n", call)
				for k := 0; k < 4; k++ {
					var in []float64
					for a := 0; a < r.args; a++ {
						kk := k
						if scalar[a] {
							kk = 0
						}
						_, v := arg(a, kk)
						in = append(in, v)
					}
					check(fmt.Sprintf("%s[%d]", call, k), in, ty.s)
				}
			}
		}
	}
}

// intTableSource writes every integer row for every integer type: scalars
// at four points, a 4-vector, and the vector-scalar mix.
func intTableSource(b *strings.Builder, checks *[]int64, whats *[]string) {
	vals := []uint64{0, 1, 0xffffffffffffffff, 5, 100, 0xffffffffffffff9c, 0x7fffffffffffffff, 0x8000000000000000,
		0x5a5a5a5a5a5a5a5a, 37, 0x7f, 0x80, 0xffff, 0x7fffffff, 3, 0xfffffffffffffff9}
	for _, r := range intRows {
		for _, t := range intTypes {
			cpp := t.name // C++'s char for MSL's char; char4's elements are schar
			vec := t.name + "4"
			arg := func(a, k int) (string, int64) {
				v := wrap(t.bits, t.signed, int64(vals[(3*k+5*a+len(r.name))%len(vals)]))
				return fmt.Sprintf("%s(0x%xull)", cpp, uint64(v)&mask(t.bits)), v
			}
			for k := 0; k < 4; k++ {
				var as []string
				var in []int64
				for a := 0; a < r.args; a++ {
					s, v := arg(a, k)
					as, in = append(as, s), append(in, v)
				}
				fmt.Fprintf(b, "  iout[j++] = long(%s(%s));\n", r.name, strings.Join(as, ", "))
				*checks = append(*checks, wrap(t.bits, t.signed, r.ref(t.bits, t.signed, in...)))
				*whats = append(*whats, fmt.Sprintf("%s(%s)", r.name, strings.Join(as, ", ")))
			}
			for _, mixed := range []bool{false, true} {
				if mixed && r.args == 1 {
					continue
				}
				var as []string
				for a := 0; a < r.args; a++ {
					if mixed && a > 0 {
						s, _ := arg(a, 0)
						as = append(as, s)
						continue
					}
					var c []string
					for k := 0; k < 4; k++ {
						s, _ := arg(a, k)
						c = append(c, strings.Replace(s, cpp+"(", vecElem(t.name)+"(", 1))
					}
					as = append(as, fmt.Sprintf("%s(%s)", vec, strings.Join(c, ", ")))
				}
				call := fmt.Sprintf("%s(%s)", r.name, strings.Join(as, ", "))
				fmt.Fprintf(b, "  { auto v = %s; for (int c = 0; c < 4; ++c) iout[j++] = long(v[c]); }\n", call)
				for k := 0; k < 4; k++ {
					var in []int64
					for a := 0; a < r.args; a++ {
						kk := k
						if mixed && a > 0 {
							kk = 0
						}
						_, v := arg(a, kk)
						in = append(in, v)
					}
					*checks = append(*checks, wrap(t.bits, t.signed, r.ref(t.bits, t.signed, in...)))
					*whats = append(*whats, fmt.Sprintf("%s[%d]", call, k))
				}
			}
		}
	}
}

// vecElem is the element type of an MSL integer vector (char4: signed char).
func vecElem(scalar string) string {
	if scalar == "char" {
		return "schar"
	}
	return scalar
}

// TestOverloadTable walks the overload table: every real row in float,
// half and bfloat (scalars, 4-vectors, scalar-vector mixes) and every
// integer row in the eight integer types, against the rows' Go references,
// in one kernel.
func TestOverloadTable(t *testing.T) {
	needCompiler(t)
	var b strings.Builder
	var checks []tableCheck
	var ichecks []int64
	var iwhats []string
	b.WriteString("#include <metal_stdlib>\nusing namespace metal;\n")
	b.WriteString("kernel void table(device float* out [[buffer(0)]], device long* iout [[buffer(1)]], uint tid [[thread_position_in_grid]]) {\n")
	b.WriteString("  if (tid != 0) return;\n  int i = 0, j = 0;\n")
	realTableSource(&b, &checks)
	intTableSource(&b, &ichecks, &iwhats)
	b.WriteString("}\n")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	out, err := Run(ctx, Launch{Source: []byte(b.String()), HostName: "table",
		Buffers: [][]byte{make([]byte, 4*len(checks)), make([]byte, 8*len(ichecks))}, Grid: [3]uint32{1, 1, 1}, Threadgroup: [3]uint32{1, 1, 1}})
	if err != nil {
		t.Fatal(err)
	}
	got := bytesF32(out[0])
	fails := 0
	for i, c := range checks {
		g := float64(got[i])
		var bad bool
		switch {
		case math.IsNaN(c.want) || math.IsNaN(g):
			bad = math.IsNaN(c.want) != math.IsNaN(g)
		case c.tol == 0:
			bad = g != roundTo(c.kind, c.want)
		default:
			bad = math.Abs(g-c.want) > c.tol*ulpOf(c.kind, c.want)
		}
		if bad {
			fails++
			if fails <= 20 {
				t.Errorf("%s = %g, want %g (within %g ulp)", c.what, g, c.want, c.tol)
			}
		}
	}
	for i, want := range ichecks {
		if g := int64(binary.LittleEndian.Uint64(out[1][8*i:])); g != want {
			fails++
			if fails <= 40 {
				t.Errorf("%s = %d (%#x), want %d (%#x)", iwhats[i], g, uint64(g), want, uint64(want))
			}
		}
	}
	t.Logf("%d real and %d integer values checked, %d wrong", len(checks), len(ichecks), fails)
}

// ulpOf is the unit in the last place of v in the storage type.
func ulpOf(s storage, v float64) float64 {
	mant := map[storage]int{stF32: 23, stF16: 10, stBF16: 7}[s]
	minExp := map[storage]int{stF32: -126, stF16: -14, stBF16: -126}[s]
	_, e := math.Frexp(math.Abs(v))
	e = max(e-1, minExp)
	return math.Ldexp(1, e-mant)
}

// TestGeometricRelational checks the geometric functions on float and half
// vectors and the relational ones (vector results are boolN, -1 for true
// here) against values worked out by hand.
func TestGeometricRelational(t *testing.T) {
	needCompiler(t)
	src := `#include <metal_stdlib>
using namespace metal;
template <typename T> void geo(device float* o, int b) {
  typedef vec<T, 3> V;
  V a = V{T(1), T(2), T(2)}, c = V{T(0), T(1), T(0)};
  o[b + 0] = float(dot(a, c));                 // 2
  o[b + 1] = float(length(a));                 // 3
  o[b + 2] = float(length_squared(a));         // 9
  o[b + 3] = float(distance(a, c));            // sqrt(1+1+4)
  o[b + 4] = float(distance_squared(a, c));    // 6
  o[b + 5] = float(normalize(a).z);            // 2/3
  o[b + 6] = float(cross(a, c).x);             // 2*0 - 2*1 = -2
  o[b + 7] = float(cross(a, c).z);             // 1*1 - 2*0 = 1
  o[b + 8] = float(reflect(a, c).y);           // 2 - 2*2*1 = -2
  o[b + 9] = float(faceforward(c, a, c).y);    // dot(c, a) = 2 > 0: -c.y = -1
  o[b + 10] = float(refract(V{T(0), T(-1), T(0)}, c, T(1)).y);  // straight through: -1
}
kernel void gr(device float* o [[buffer(0)]], uint tid [[thread_position_in_grid]]) {
  if (tid != 0) return;
  geo<float>(o, 0);
  geo<half>(o, 11);
  float4 v = float4(NAN, INFINITY, -0.0f, 1.0f);
  int4 n = isnan(v), f = isfinite(v), s = signbit(v), in = isinf(v);
  o[22] = float(n.x + 2 * n.y + 4 * n.z + 8 * n.w);    // -1
  o[23] = float(f.x + 2 * f.y + 4 * f.z + 8 * f.w);    // -12
  o[24] = float(s.x + 2 * s.y + 4 * s.z + 8 * s.w);    // -4
  o[25] = float(in.x + 2 * in.y + 4 * in.z + 8 * in.w); // -2
  o[26] = isnormal(1.0f) + 2 * isnormal(0x1p-130f) + 4 * isordered(1.0f, NAN) + 8 * isunordered(1.0f, NAN); // 9
  o[27] = float(all(v == v)) + 2 * float(any(v == v)); // 2
  o[28] = select(1.0f, 5.0f, true) + select(float4(1), float4(2), int4(0, -1, 0, -1)).y; // 7
}
`
	out, err := Run(testContext(t), Launch{Source: []byte(src), HostName: "gr", Buffers: [][]byte{make([]byte, 4*29)},
		Grid: [3]uint32{1, 1, 1}, Threadgroup: [3]uint32{1, 1, 1}})
	if err != nil {
		t.Fatal(err)
	}
	geo := []float64{2, 3, 9, math.Sqrt(6), 6, 2.0 / 3, -2, 1, -2, -1, -1}
	want := append(append(append([]float64{}, geo...), geo...), -1, -12, -4, -2, 9, 2, 7)
	for i, g := range bytesF32(out[0]) {
		tol := 1e-6
		if i >= 11 && i < 22 {
			tol = 2e-3 // half
		}
		if math.Abs(float64(g)-want[i]) > tol*math.Max(1, math.Abs(want[i])) {
			t.Errorf("o[%d] = %v, want %v", i, g, want[i])
		}
	}
}
