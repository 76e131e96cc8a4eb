package cost

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/kgen-dev/kgen/verify/mslcpu"
)

// ModelNote labels every roofline figure: it is a model, not a timing.
const ModelNote = "roofline MODEL, not a measurement: max(device bytes / memory bandwidth, threadgroup bytes / " +
	"threadgroup bandwidth, FLOPs / peak) per GPU class; device bytes as issued (no cache), " +
	"FLOPs = float arithmetic + simdgroup-matrix multiplies (special functions not charged), launch overhead and occupancy left out (docs/metal-cost.md)"

// WriteText prints one line per kernel × dtype: per-output-element device
// bytes (and the widest access), threadgroup bytes, barriers, the simd and
// matrix operations, FLOPs and special functions per output, and the
// roofline estimate on each GPU class.
func WriteText(w io.Writer, reports []*Report) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	var gpus []string
	for _, g := range GPUs {
		gpus = append(gpus, g.Name)
	}
	fmt.Fprintf(tw, "VARIANT\tSHAPE\tDEV B/OUT\tWIDEST\tTG B/OUT\tBARRIERS\tSIMD OPS\tMMA\tIDLE LANES\tFLOP/OUT\tSPECIAL/OUT\t%s (µs, bound)\n", strings.Join(gpus, " / "))
	for _, r := range reports {
		c := &r.Cost
		dev := c.Device.ReadBytes() + c.Device.WriteBytes()
		tg := c.Threadgroup.ReadBytes() + c.Threadgroup.WriteBytes()
		var simd, idle uint64
		for i, s := range c.Simd {
			if mslcpu.SimdKind(i) < mslcpu.MatrixLoad {
				simd += s.Ops
			}
			idle += s.IdleLanes
		}
		var est []string
		for _, g := range GPUs {
			e := Roofline(r, g)
			est = append(est, fmt.Sprintf("%.2f %s", e.Seconds*1e6, boundAbbrev[e.Bound]))
		}
		name := r.HostName
		if r.Failed > 0 {
			name += " (PARITY FAILED)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%.2f\t%s\t%.2f\t%d\t%d\t%d\t%d\t%.2f\t%.2f\t%s\n", name, r.Shape, r.PerOutput(dev), widest(c),
			r.PerOutput(tg), c.Barriers, simd, c.Simd[mslcpu.MatrixMMA].Ops, idle,
			r.PerOutput(c.Arith.FLOPs()+c.Simd[mslcpu.MatrixMMA].Ops*mmaFLOPs), r.PerOutput(c.Arith.Special), strings.Join(est, " / "))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "%s\n", ModelNote)
	return err
}

var boundAbbrev = map[string]string{"memory": "mem", "threadgroup": "tg", "compute": "alu"}

// jsonGPU is one GPU class in the JSON view.
type jsonGPU struct {
	Name           string  `json:"name"`
	MemGBs         float64 `json:"memory_gb_s"`
	FP32TFLOPS     float64 `json:"fp32_tflops"`
	FP16TFLOPS     float64 `json:"fp16_tflops"`
	ThreadgroupGBs float64 `json:"threadgroup_gb_s"`
}

// jsonEstimate is one roofline estimate in the JSON view.
type jsonEstimate struct {
	GPU     string  `json:"gpu"`
	Seconds float64 `json:"seconds"`
	Bound   string  `json:"bound"`
}

// jsonReport is one kernel × dtype in the JSON view.
type jsonReport struct {
	Kernel    string                 `json:"kernel"`
	HostName  string                 `json:"host_name"`
	DType     string                 `json:"dtype"`
	Shape     string                 `json:"shape"`
	Outputs   int                    `json:"outputs"`
	ParityOK  bool                   `json:"parity_ok"`
	Counts    map[string]uint64      `json:"counts"`
	PerOutput map[string]float64     `json:"per_output"`
	Buffers   []mslcpu.BufferTraffic `json:"buffers"`
	Roofline  []jsonEstimate         `json:"roofline"`
}

// JSONView is the cost view as JSON: `kgen verify --cost --format json`.
type JSONView struct {
	Model   string       `json:"model"`
	GPUs    []jsonGPU    `json:"gpus"`
	Kernels []jsonReport `json:"kernels"`
}

// View builds the JSON view of reports.
func View(reports []*Report) JSONView {
	v := JSONView{Model: ModelNote, Kernels: []jsonReport{}}
	for _, g := range GPUs {
		v.GPUs = append(v.GPUs, jsonGPU{g.Name, g.MemBandwidth / 1e9, g.FP32 / 1e12, g.FP16 / 1e12, g.TGBandwidth / 1e9})
	}
	for _, r := range reports {
		c := &r.Cost
		j := jsonReport{Kernel: r.Kernel, HostName: r.HostName, DType: r.DType, Shape: r.Shape, Outputs: r.Outputs,
			ParityOK: r.Failed == 0, Counts: metricMap(c), Buffers: c.Buffers,
			PerOutput: map[string]float64{
				"device_bytes":      r.PerOutput(c.Device.ReadBytes() + c.Device.WriteBytes()),
				"threadgroup_bytes": r.PerOutput(c.Threadgroup.ReadBytes() + c.Threadgroup.WriteBytes()),
				"barriers":          r.PerOutput(c.Barriers),
			}}
		for _, g := range GPUs {
			e := Roofline(r, g)
			j.Roofline = append(j.Roofline, jsonEstimate{e.GPU, e.Seconds, e.Bound})
		}
		v.Kernels = append(v.Kernels, j)
	}
	return v
}

// WriteJSON prints the JSON view.
func WriteJSON(w io.Writer, reports []*Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(View(reports))
}
