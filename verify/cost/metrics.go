package cost

import (
	"fmt"

	"github.com/kgen-dev/kgen/verify/mslcpu"
)

// Metric is one named count of a launch: the unit of the JSON view and of
// the gate's record.
type Metric struct {
	Name  string
	Value uint64
}

// Metrics flattens a cost into named counts, in a fixed order. It is the
// one place that names them: the text and JSON views and the gate all read
// these names.
func Metrics(c *mslcpu.Cost) []Metric {
	m := []Metric{
		{"device_read_bytes", c.Device.ReadBytes()},
		{"device_write_bytes", c.Device.WriteBytes()},
	}
	for i, w := range mslcpu.Widths {
		m = append(m, Metric{fmt.Sprintf("device_loads_%dB", w), c.Device.Loads[i]})
	}
	for i, w := range mslcpu.Widths {
		m = append(m, Metric{fmt.Sprintf("device_stores_%dB", w), c.Device.Stores[i]})
	}
	m = append(m,
		Metric{"constant_read_bytes", c.Constant.ReadBytes()},
		Metric{"threadgroup_read_bytes", c.Threadgroup.ReadBytes()},
		Metric{"threadgroup_write_bytes", c.Threadgroup.WriteBytes()},
		Metric{"barriers", c.Barriers},
	)
	var idle uint64
	for i, s := range c.Simd {
		m = append(m, Metric{mslcpu.SimdKindNames[i], s.Ops})
		idle += s.IdleLanes
	}
	a := c.Arith
	return append(m, Metric{"idle_simd_lanes", idle},
		Metric{"arith_f32", a.F32}, Metric{"arith_f16", a.F16}, Metric{"arith_bf16", a.BF16},
		Metric{"arith_compare", a.Compare}, Metric{"arith_convert", a.Convert}, Metric{"arith_special", a.Special},
		Metric{"arith_int", a.Int},
		Metric{"threadgroups", c.Groups}, Metric{"threads", c.Threads})
}

// metricMap is Metrics as a map.
func metricMap(c *mslcpu.Cost) map[string]uint64 {
	out := map[string]uint64{}
	for _, m := range Metrics(c) {
		out[m.Name] = m.Value
	}
	return out
}

// widest names the widest device access width a cost used ("16B"), or "-".
func widest(c *mslcpu.Cost) string {
	for i := mslcpu.NumWidths - 1; i >= 0; i-- {
		if c.Device.Loads[i]+c.Device.Stores[i] > 0 {
			return fmt.Sprintf("%dB", mslcpu.Widths[i])
		}
	}
	return "-"
}
