package cli

import "github.com/kgen-dev/kgen/verify"

// parityJSON is one kernel × dtype's lane-level parity report in
// `kgen verify --format json`.
type parityJSON struct {
	HostName string   `json:"host_name"`
	DType    string   `json:"dtype"`
	Sizes    []int    `json:"sizes"`
	Lanes    int      `json:"lanes"`
	Differ   int      `json:"differ"`
	MaxAbs   float64  `json:"max_abs"`
	MaxRel   *float64 `json:"max_rel"` // null where no lane had a reference of at least the smallest normal
	Worst    string   `json:"worst,omitempty"`
	Line     string   `json:"line"`
}

func parityOf(p *verify.ParityReport) parityJSON {
	j := parityJSON{HostName: p.HostName, DType: p.DType.String(), Sizes: p.Sizes, Lanes: p.Lanes, Differ: p.Differ,
		MaxAbs: p.MaxAbs, Line: p.String()}
	if p.MaxRel >= 0 {
		rel := p.MaxRel
		j.MaxRel = &rel
	}
	if p.Worst != nil {
		j.Worst = p.Worst.String()
	}
	return j
}
