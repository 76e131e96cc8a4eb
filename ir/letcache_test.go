package ir_test

import (
	"reflect"
	"testing"

	"github.com/kgen-dev/kgen/ir"
)

// TestLetCache pins which per-element lets the schedule caches across
// passes (ir.Rows.LetCache), the CUDA vectors per lane that leaves, and the
// let-cached stages: the exporting pass returns the let too, the later pass
// takes it as an argument and no longer needs what only the let used.
func TestLetCache(t *testing.T) {
	causal := `
kernel: causal
kind: rowwise
dtypes: [f32, bf16]
compute: f32
inputs: [x]
params:
  - {name: scale, type: f32}
let:
  - s: select(col > row, -inf, x * scale)
  - e: exp(s - row_max(s))
outputs:
  - y: e / row_sum(e)
`
	twoCached := `
kernel: two
kind: rowwise
dtypes: [f32]
inputs: [x, z]
let:
  - e: exp(x - row_max(x + z))
outputs:
  - y: z * e / row_sum(e)
`
	type arg struct {
		kind ir.ArgKind
		name string
	}
	type stage struct {
		name    string
		targets []string
		args    []arg
	}
	in, par, cl, red, ix := ir.ArgInput, ir.ArgParam, ir.ArgCachedLet, ir.ArgReduction, ir.ArgIndex
	cases := []struct {
		name    string
		spec    string
		cache   []ir.CachedLet
		vectors int
		stages  []stage
	}{
		{"softmax: e from pass 2 for the write pass", softmaxSpec, []ir.CachedLet{{Step: 0, Pass: 2, Users: []int{3}}}, 4, []stage{
			{"kgen_softmax_pass2_cached", []string{"kgen_t1", "kgen_l_e"}, []arg{{in, "x"}, {red, "kgen_r0"}}},
			{"kgen_softmax_write_cached", []string{"y"}, []arg{{cl, "e"}, {red, "kgen_r1"}}},
		}},
		{"causal: e cached, not the cheap select s", causal, []ir.CachedLet{{Step: 1, Pass: 2, Users: []int{3}}}, 4, []stage{
			{"kgen_causal_pass2_cached", []string{"kgen_t1", "kgen_l_e"}, []arg{{in, "x"}, {par, "scale"}, {ix, "row"}, {ix, "col"}, {red, "kgen_r0"}}},
			{"kgen_causal_write_cached", []string{"y"}, []arg{{cl, "e"}, {red, "kgen_r1"}}},
		}},
		{"two cached inputs and a let: 2 vectors", twoCached, []ir.CachedLet{{Step: 0, Pass: 2, Users: []int{3}}}, 2, []stage{
			{"kgen_two_pass2_cached", []string{"kgen_t1", "kgen_l_e"}, []arg{{in, "x"}, {red, "kgen_r0"}}},
			{"kgen_two_write_cached", []string{"y"}, []arg{{in, "z"}, {cl, "e"}, {red, "kgen_r1"}}},
		}},
		{"layer_norm: d is cheap arithmetic, recomputed", layerNormSpec, nil, 4, nil},
		{"one pass reads each input: nothing cached", onceSpec, nil, 4, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			k := mustBuild(t, c.spec)
			r := k.Rows()
			if !reflect.DeepEqual(r.LetCache, c.cache) {
				t.Errorf("LetCache = %+v, want %+v", r.LetCache, c.cache)
			}
			if r.CUDAVectors != c.vectors {
				t.Errorf("CUDAVectors = %d, want %d", r.CUDAVectors, c.vectors)
			}
			var got []stage
			for _, st := range r.CachedStages(k) {
				s := stage{name: st.Name}
				for _, tg := range st.Targets {
					s.targets = append(s.targets, tg.Name)
				}
				for _, a := range st.Args {
					s.args = append(s.args, arg{a.Kind, a.Name})
				}
				got = append(got, s)
			}
			if !reflect.DeepEqual(got, c.stages) {
				t.Errorf("cached stages:\n got %+v\nwant %+v", got, c.stages)
			}
		})
	}
}
