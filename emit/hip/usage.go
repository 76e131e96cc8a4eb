package hip

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
)

// remarks asks clang for each kernel's resources, the AMDGPU counterpart
// of ptxas -v: registers, scratch (spills and private arrays), LDS and
// occupancy.
const remarks = "-Rpass-analysis=kernel-resource-usage"

// Usage is what the compiler reports for one kernel of a code object.
type Usage struct {
	Kernel       string
	VGPRs, AGPRs int
	SGPRs        int
	Scratch      int // private memory per lane, in bytes: 0 when nothing spills
	LDS          int // shared memory per block, in bytes
	Occupancy    int // waves per SIMD
}

// usageRE matches the remark lines Resources reads.
var usageRE = regexp.MustCompile(`remark:\s+(Function Name|VGPRs|AGPRs|SGPRs|ScratchSize \[bytes/lane\]|Occupancy \[waves/SIMD\]|LDS Size \[bytes/block\]): (\S+)`)

// Resources compiles one HIP source for arch (or reads the cached build)
// and returns each kernel's resources, in the order the compiler reports
// them.
func Resources(ctx context.Context, clang, name string, src []byte, arch string) ([]Usage, error) {
	_, report, err := build(ctx, clang, name, src, arch)
	if err != nil {
		return nil, err
	}
	var out []Usage
	for _, m := range usageRE.FindAllStringSubmatch(report, -1) {
		if m[1] == "Function Name" {
			out = append(out, Usage{Kernel: m[2]})
			continue
		}
		if len(out) == 0 {
			return nil, fmt.Errorf("%s: resource figures before any kernel:\n%s", name, report)
		}
		v, err := strconv.Atoi(m[2])
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %q is not a count", name, m[1], m[2])
		}
		u := &out[len(out)-1]
		switch m[1] {
		case "VGPRs":
			u.VGPRs = v
		case "AGPRs":
			u.AGPRs = v
		case "SGPRs":
			u.SGPRs = v
		case "Occupancy [waves/SIMD]":
			u.Occupancy = v
		case "LDS Size [bytes/block]":
			u.LDS = v
		default:
			u.Scratch = v
		}
	}
	return out, nil
}
