package ir_test

import (
	"reflect"
	"testing"

	"github.com/kgen-dev/kgen/ir"
)

// TestStages pins the stage functions of both kinds: their kinds, names
// (kgen_<kernel>_<suffix>, under the reserved prefix), levels, targets and
// value arguments (inputs, params, per-row lets, reductions, in that order).
func TestStages(t *testing.T) {
	type arg struct {
		kind ir.ArgKind
		name string
	}
	type stage struct {
		kind    ir.StageKind
		name    string
		level   int
		targets []string
		args    []arg
	}
	in, par, let, red := ir.ArgInput, ir.ArgParam, ir.ArgRowLet, ir.ArgReduction
	cases := []struct {
		name string
		spec string
		want []stage
	}{
		{"elementwise", elemSpec, []stage{
			{ir.StageElement, "kgen_ew_eval", 0, []string{"y", "s"}, []arg{{in, "x"}, {in, "g"}, {par, "slope"}}},
		}},
		{"softmax", softmaxSpec, []stage{
			{ir.StagePass, "kgen_softmax_pass1", 1, []string{"kgen_t0"}, []arg{{in, "x"}}},
			{ir.StagePass, "kgen_softmax_pass2", 2, []string{"kgen_t1"}, []arg{{in, "x"}, {red, "kgen_r0"}}},
			{ir.StageWrite, "kgen_softmax_write", 3, []string{"y"}, []arg{{in, "x"}, {red, "kgen_r0"}, {red, "kgen_r1"}}},
		}},
		{"layer_norm", layerNormSpec, []stage{
			{ir.StagePass, "kgen_layer_norm_pass1", 1, []string{"kgen_t0"}, []arg{{in, "x"}}},
			{ir.StagePass, "kgen_layer_norm_pass2", 2, []string{"kgen_t1"}, []arg{{in, "x"}, {red, "kgen_r0"}}},
			{ir.StageRowLets, "kgen_layer_norm_row2", 2, []string{"inv"}, []arg{{par, "eps"}, {red, "kgen_r1"}}},
			{ir.StageWrite, "kgen_layer_norm_write", 3, []string{"y"}, []arg{{in, "x"}, {in, "w"}, {in, "b"}, {let, "inv"}, {red, "kgen_r0"}}},
		}},
		{"per-row lets at levels 0 and 1", scaledNormSpec, []stage{
			{ir.StageRowLets, "kgen_scaled_row0", 0, []string{"e2"}, []arg{{par, "eps"}}},
			{ir.StagePass, "kgen_scaled_pass1", 1, []string{"kgen_t0"}, []arg{{in, "x"}}},
			{ir.StageRowLets, "kgen_scaled_row1", 1, []string{"inv"}, []arg{{let, "e2"}, {red, "kgen_r0"}}},
			{ir.StageWrite, "kgen_scaled_write", 2, []string{"y", "u"}, []arg{{in, "x"}, {in, "z"}, {let, "inv"}}},
		}},
		{"segments: formula names without the prefix", centerSpec, []stage{
			{ir.StagePass, "kgen_center_pass1", 1, []string{"kgen_t0"}, []arg{{in, "x"}}},
			{ir.StageWrite, "kgen_center_write", 2, []string{"y"}, []arg{{in, "x"}, {red, "kgen_r0"}}},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			k := mustBuild(t, c.spec)
			var got []stage
			for _, st := range k.Stages() {
				if st.Name != "kgen_"+k.Name+"_"+st.Suffix {
					t.Errorf("stage %s has suffix %q", st.Name, st.Suffix)
				}
				s := stage{kind: st.Kind, name: st.Name, level: st.Level}
				for _, tg := range st.Targets {
					s.targets = append(s.targets, tg.Name)
				}
				for _, a := range st.Args {
					s.args = append(s.args, arg{a.Kind, a.Name})
				}
				got = append(got, s)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("stages:\n got %+v\nwant %+v", got, c.want)
			}
		})
	}
}
