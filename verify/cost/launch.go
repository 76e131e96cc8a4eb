package cost

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/kgen-dev/kgen/verify/mslcpu"
)

// LaunchView is one launch of any kernel (`kgen emu --cost`): its counts
// and the roofline estimate, with no notion of output elements.
type LaunchView struct {
	HostName    string                 `json:"host_name"`
	Grid        [3]uint32              `json:"grid"`
	Threadgroup [3]uint32              `json:"threadgroup"`
	Counts      map[string]uint64      `json:"counts"`
	Buffers     []mslcpu.BufferTraffic `json:"buffers"`
	Roofline    []jsonEstimate         `json:"roofline"`
	Model       string                 `json:"model"`
}

// NewLaunchView builds the view of one launch (f32 peaks in the roofline).
func NewLaunchView(l mslcpu.Launch, c *mslcpu.Cost) LaunchView {
	v := LaunchView{HostName: l.HostName, Grid: l.Grid, Threadgroup: l.Threadgroup, Counts: metricMap(c),
		Buffers: c.Buffers, Model: ModelNote}
	r := &Report{HostName: l.HostName, Cost: *c}
	for _, g := range GPUs {
		e := Roofline(r, g)
		v.Roofline = append(v.Roofline, jsonEstimate{e.GPU, e.Seconds, e.Bound})
	}
	return v
}

// WriteLaunchJSON prints the view as one JSON object.
func WriteLaunchJSON(w io.Writer, l mslcpu.Launch, c *mslcpu.Cost) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(NewLaunchView(l, c))
}

// WriteLaunchText prints the counts a line per kind of memory or operation,
// then each buffer's traffic and the roofline estimate.
func WriteLaunchText(w io.Writer, l mslcpu.Launch, c *mslcpu.Cost) error {
	p := func(format string, args ...any) { fmt.Fprintf(w, "cost: "+format+"\n", args...) }
	p("%s: %d threads in %d threadgroups", l.HostName, c.Threads, c.Groups)
	p("device memory: %d B read, %d B written (loads %s; stores %s)", c.Device.ReadBytes(), c.Device.WriteBytes(),
		byWidth(c.Device.Loads), byWidth(c.Device.Stores))
	p("constant memory: %d B read (loads %s)", c.Constant.ReadBytes(), byWidth(c.Constant.Loads))
	p("threadgroup memory: %d B read, %d B written (loads %s; stores %s)", c.Threadgroup.ReadBytes(),
		c.Threadgroup.WriteBytes(), byWidth(c.Threadgroup.Loads), byWidth(c.Threadgroup.Stores))
	p("threadgroup barriers: %d (%.2f per threadgroup)", c.Barriers, ratio(c.Barriers, c.Groups))
	var ops []string
	for i, s := range c.Simd {
		if s.Ops > 0 {
			ops = append(ops, fmt.Sprintf("%s %d (idle lanes %d)", mslcpu.SimdKindNames[i], s.Ops, s.IdleLanes))
		}
	}
	if len(ops) == 0 {
		ops = []string{"none"}
	}
	p("simdgroup operations: %s", strings.Join(ops, ", "))
	a := c.Arith
	p("arithmetic (lanes): f32 %d, f16 %d, bf16 %d, compares %d, conversions %d, special functions %d, integer %d",
		a.F32, a.F16, a.BF16, a.Compare, a.Convert, a.Special, a.Int)
	for i, b := range c.Buffers {
		space := "device"
		if b.Constant {
			space = "constant"
		}
		p("buffer(%d) %s: %d B read, %d B written", i, space, b.ReadBytes(), b.WriteBytes())
	}
	var est []string
	for _, e := range NewLaunchView(l, c).Roofline {
		est = append(est, fmt.Sprintf("%s %.3g µs (%s)", e.GPU, e.Seconds*1e6, e.Bound))
	}
	p("roofline: %s", strings.Join(est, ", "))
	_, err := fmt.Fprintf(w, "cost: %s\n", ModelNote)
	return err
}

// byWidth lists the non-zero access counts by width: "100×16B, 3×4B".
func byWidth(n [mslcpu.NumWidths]uint64) string {
	var parts []string
	for i := mslcpu.NumWidths - 1; i >= 0; i-- {
		if n[i] > 0 {
			parts = append(parts, fmt.Sprintf("%d×%dB", n[i], mslcpu.Widths[i]))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

func ratio(a, b uint64) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}
