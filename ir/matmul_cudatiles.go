package ir

import (
	"fmt"
	"slices"

	"github.com/kgen-dev/kgen/diag"
	"github.com/kgen-dev/kgen/spec"
)

// The tiles a spec may give a CUDA matmul's problem classes: the shapes
// CUTLASS's SM90 builders instantiate for 16-bit operands. A cooperative
// CTA splits its tile's M over two consumer warpgroups of 64 rows; a
// pingpong CTA gives each warpgroup a whole tile. K steps are 64–256
// bytes of a row (the TMA swizzles). The shared-memory rule keeps three
// pipeline stages of A and B within the H200's 227 KB beside the epilogue.
var (
	cudaTileM      = map[string][]int{"cooperative": {128, 256}, "pingpong": {64, 128}}
	cudaTileN      = []int{16, 32, 64, 128, 256}
	cudaTileK      = []int{32, 64, 128}
	cudaClusterDim = []int{1, 2, 4}
)

// cudaStageElems bounds (tile M + tile N) × tile K, the elements of A and
// B in one pipeline stage (64 KB of 16-bit values).
const cudaStageElems = 32768

// cudaClasses checks a spec's `cuda_tiles:` and turns it into problem
// classes, or reports every problem at its field and returns nil.
func cudaClasses(classes []spec.CUDAClass, diags *diag.List) []GemmConfig {
	before := diags.Len()
	var out []GemmConfig
	for i, c := range classes {
		g := GemmConfig{Name: "any", MaxM: c.MaxM, Swap: c.Swap, Schedule: c.Schedule, StreamK: c.StreamK, Cluster: [2]int{1, 1}}
		if g.Schedule == "" {
			g.Schedule = "cooperative"
		}
		if g.MaxM > 0 {
			g.Name = fmt.Sprintf("m%d", g.MaxM)
		}
		switch last := i == len(classes)-1; {
		case last && g.MaxM > 0:
			diags.Addf(c.Pos, "the last cuda_tiles class serves every m left: drop its max_m %d", g.MaxM)
		case !last && g.MaxM == 0:
			diags.Addf(c.Pos, "only the last cuda_tiles class may leave out max_m (the classes after it could never run)")
		case i > 0 && g.MaxM > 0 && g.MaxM <= out[i-1].MaxM:
			diags.Addf(c.Pos, "cuda_tiles max_m must grow from class to class: %d after %d", g.MaxM, out[i-1].MaxM)
		}
		if len(c.Tile) == 3 {
			copy(g.Tile[:], c.Tile)
			checkCUDATile(g, c.TilePos, diags)
		}
		if len(c.Cluster) == 2 {
			copy(g.Cluster[:], c.Cluster)
			if !slices.Contains(cudaClusterDim, g.Cluster[0]) || !slices.Contains(cudaClusterDim, g.Cluster[1]) || g.Cluster[0]*g.Cluster[1] > 4 {
				diags.Addf(c.ClusterPos, "cluster %d×%d: each side must be 1, 2 or 4 and the cluster at most 4 CTAs", g.Cluster[0], g.Cluster[1])
			}
		}
		if g.StreamK && g.Schedule != "cooperative" {
			diags.Addf(c.StreamKPos, "stream_k needs the cooperative schedule (CUTLASS's pingpong kernel has no stream-K scheduler)")
		}
		out = append(out, g)
	}
	if diags.Len() > before {
		return nil
	}
	return out
}

func checkCUDATile(g GemmConfig, pos diag.Pos, diags *diag.List) {
	t := g.Tile
	switch {
	case !slices.Contains(cudaTileM[g.Schedule], t[0]):
		diags.Addf(pos, "tile m %d: the %s schedule takes %v", t[0], g.Schedule, cudaTileM[g.Schedule])
	case !slices.Contains(cudaTileN, t[1]):
		diags.Addf(pos, "tile n %d: want one of %v", t[1], cudaTileN)
	case !slices.Contains(cudaTileK, t[2]):
		diags.Addf(pos, "tile k %d: want one of %v", t[2], cudaTileK)
	case (t[0]+t[1])*t[2] > cudaStageElems:
		diags.Addf(pos, "tile %d×%d×%d: (m + n) × k = %d elements per pipeline stage, over %d (three stages must fit shared memory)", t[0], t[1], t[2], (t[0]+t[1])*t[2], cudaStageElems)
	}
}
