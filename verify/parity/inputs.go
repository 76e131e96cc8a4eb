package parity

import (
	"math"
	"math/rand/v2"

	"github.com/kgen-dev/kgen/dtype"
)

// DefaultRange is the largest finite magnitude of generated inputs: past
// the activations a vision projection produces (seed 000), so that a
// tolerance is never fitted to the easy case.
const DefaultRange = 170

// Limits are the edges of a storage type: its smallest subnormal, largest
// subnormal, smallest normal and largest finite value.
type Limits struct {
	MinSub, MaxSub, MinNormal, MaxFinite float64
}

// LimitsOf returns the limits of f32, f16 or bf16.
func LimitsOf(t dtype.DType) Limits {
	switch t {
	case dtype.F16:
		return Limits{0x1p-24, 0x1p-14 - 0x1p-24, 0x1p-14, 65504}
	case dtype.BF16:
		return Limits{0x1p-133, 0x1p-126 - 0x1p-133, 0x1p-126, 0x1.fcp127}
	}
	return Limits{0x1p-149, 0x1p-126 - 0x1p-149, 0x1p-126, math.MaxFloat32}
}

// Specials are the adversarial values of storage type t, each exact in t:
// ±0, the smallest and largest ±subnormals, the smallest ±normal, ±1,
// ±rng (the range's edge), ±Inf and NaN. The largest finite values are
// left out on purpose: results next to the overflow threshold are decided
// by a function's last ulp (is erf(2.4e38) exactly 1?), which the error
// analysis cannot settle, so those lanes would check nothing.
func Specials(t dtype.DType, rng float64) []float64 {
	l := LimitsOf(t)
	r := dtype.Round(rng, t)
	return []float64{0, math.Copysign(0, -1), l.MinSub, -l.MinSub, l.MaxSub, -l.MaxSub,
		l.MinNormal, -l.MinNormal, 1, -1, r, -r, math.Inf(1), math.Inf(-1), math.NaN()}
}

// specialRate is the share of elements replaced by a special value (1 in
// specialRate), on top of every special once at seeded positions.
const specialRate = 16

// Inputs returns n seeded values of storage type t (each exactly
// representable in t), for one input tensor. Without adversarial values
// they are uniform in [-rng, rng]. With them, most values are drawn from a
// mixture of bands — the [-8, 8] band where activations curve, uniform in
// [-rng, rng], a far-negative tail down to -rng (where 1 + tanh(x) and
// sigmoid cancel), magnitudes spread log-uniformly from 2^-24 to rng, and
// tiny magnitudes down to t's smallest subnormal — and 1 in 16 is a
// special value (Specials). When n is at least twice the number of
// specials, each special also sits at least once at a seeded position, so
// every large run meets every one of them.
func Inputs(r *rand.Rand, n int, t dtype.DType, rng float64, adversarial bool) []float64 {
	out := make([]float64, n)
	if !adversarial {
		for j := range out {
			out[j] = dtype.Round((r.Float64()*2-1)*rng, t)
		}
		return out
	}
	lim := LimitsOf(t)
	sp := Specials(t, rng)
	for j := range out {
		if r.IntN(specialRate) == 0 {
			out[j] = sp[r.IntN(len(sp))]
			continue
		}
		var v float64
		switch u := r.IntN(8); {
		case u < 3:
			v = uniform(r, -8, 8)
		case u < 5:
			v = uniform(r, -rng, rng)
		case u < 6:
			v = -logUniform(r, 4, rng)
		case u < 7:
			v = signed(r, logUniform(r, 0x1p-24, rng))
		default:
			v = signed(r, logUniform(r, lim.MinSub, 0x1p-10))
		}
		out[j] = dtype.Round(v, t)
	}
	if n >= 2*len(sp) {
		for i, p := range r.Perm(n)[:len(sp)] {
			out[p] = sp[i]
		}
	}
	return out
}

func uniform(r *rand.Rand, lo, hi float64) float64 { return lo + (hi-lo)*r.Float64() }

func logUniform(r *rand.Rand, lo, hi float64) float64 {
	return math.Exp(uniform(r, math.Log(lo), math.Log(hi)))
}

func signed(r *rand.Rand, v float64) float64 {
	if r.IntN(2) == 0 {
		return -v
	}
	return v
}

// IntInputs returns n seeded values of integer type t: the type's edges
// (i8: -128, -127, 127; u8: 0, 255; i32: ±2^31 edges; u32: 0 and 2^32-1),
// 0 and ±1 once each at the start when n allows, the rest uniform over the
// type for i8 and u8 and mostly small (|v| < 1000) for i32 and u32, where
// a conversion to float must stay exact for the comparison to mean much.
func IntInputs(r *rand.Rand, n int, t dtype.DType) []float64 {
	var edges []float64
	lo, hi := -128.0, 127.0
	switch t {
	case dtype.I8:
		edges = []float64{-128, -127, 127, 0, -1, 1}
	case dtype.U8:
		edges, lo, hi = []float64{0, 255, 1, 128}, 0, 255
	case dtype.I32:
		edges, lo, hi = []float64{-1 << 31, 1<<31 - 1, 0, -1, 1}, -999, 999
	case dtype.U32:
		edges, lo, hi = []float64{0, 1<<32 - 1, 1, 1 << 31}, 0, 999
	}
	out := make([]float64, n)
	for i := range out {
		if i < len(edges) && n >= 2*len(edges) {
			out[i] = edges[i]
			continue
		}
		out[i] = lo + float64(r.IntN(int(hi-lo)+1))
	}
	r.Shuffle(n, func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}
