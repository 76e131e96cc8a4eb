package cost

import "github.com/kgen-dev/kgen/verify/mslcpu"

// GPU is one Apple GPU class's figures for the roofline model. Sources are
// in docs/metal-cost.md; TGBandwidth is measured for the M1 only and
// scaled to the others by GPU cores × clock (an assumption, not a
// measurement).
type GPU struct {
	Name string
	// MemBandwidth is the unified memory bandwidth, bytes/s (Apple's
	// figures; sustained rates are lower).
	MemBandwidth float64
	// FP32 and FP16 are peak FMA throughput in FLOP/s (cores × 128 ALUs ×
	// 2 × clock); FP16 runs at the FP32 rate on these GPUs.
	FP32, FP16 float64
	// TGBandwidth is the threadgroup (on-core) memory bandwidth, bytes/s.
	TGBandwidth float64
}

// tgBytesPerCoreClock is the M1's measured threadgroup bandwidth (671 GB/s,
// 8 cores at 1278 MHz) per core and clock: the scale for the others.
const tgBytesPerCoreClock = 671e9 / (8 * 1.278e9)

func gpu(name string, memGBs float64, cores int, mhz float64) GPU {
	peak := float64(cores) * 128 * 2 * mhz * 1e6
	return GPU{Name: name, MemBandwidth: memGBs * 1e9, FP32: peak, FP16: peak,
		TGBandwidth: tgBytesPerCoreClock * float64(cores) * mhz * 1e6}
}

// GPUs are the base chip of each M-series generation with its largest
// GPU: the classes the roofline is given for.
var GPUs = []GPU{
	gpu("M1", 68.25, 8, 1278),
	gpu("M2", 100, 10, 1398),
	gpu("M3", 100, 10, 1398),
	gpu("M4", 120, 10, 1470),
}

// Estimate is the roofline model's time for one launch on one GPU: the
// largest of the device-memory, threadgroup-memory and arithmetic times,
// as if each ran at its peak and the others hid behind it. It is a model,
// a lower bound under its assumptions, never a measurement: device bytes
// are as issued (cache hits are not modelled), FLOPs are the
// simdgroup-matrix multiplies' and the kernel's float arithmetic (special
// functions and integer work are not charged), and launch overhead,
// occupancy and latency are left out.
type Estimate struct {
	GPU                  string
	Seconds              float64
	Bound                string // "memory", "threadgroup" or "compute"
	Mem, TG, ALU         float64
	FLOPs                uint64
	DeviceBytes, TGBytes uint64
}

// mmaFLOPs is one 8×8×8 simdgroup multiply-accumulate: 512 FMAs.
const mmaFLOPs = 2 * 8 * 8 * 8

// Roofline estimates r on g.
func Roofline(r *Report, g GPU) Estimate {
	c := &r.Cost
	e := Estimate{GPU: g.Name, FLOPs: c.Simd[mslcpu.MatrixMMA].Ops*mmaFLOPs + c.Arith.FLOPs(),
		DeviceBytes: c.Device.ReadBytes() + c.Device.WriteBytes(),
		TGBytes:     c.Threadgroup.ReadBytes() + c.Threadgroup.WriteBytes()}
	peak := g.FP32
	if r.DType == "f16" || r.DType == "bf16" {
		peak = g.FP16
	}
	e.Mem = float64(e.DeviceBytes) / g.MemBandwidth
	e.TG = float64(e.TGBytes) / g.TGBandwidth
	e.ALU = float64(e.FLOPs) / peak
	e.Seconds, e.Bound = e.Mem, "memory"
	if e.TG > e.Seconds {
		e.Seconds, e.Bound = e.TG, "threadgroup"
	}
	if e.ALU > e.Seconds {
		e.Seconds, e.Bound = e.ALU, "compute"
	}
	return e
}
