// Command geometry prints, as JSON, the CUDA launch of every elementwise and
// rowwise kernel of the given kgen.yaml files at the benchmark's shapes, by
// evaluating the IR's launch description (ir.Kernel.Launch(ir.CUDA)), the
// one kgenrt's CUDA port evaluates. bench/cuda/bench.py launches the fatbins
// with it, so the benchmark measures the geometry the Go port launches.
// With -mnk, the matmuls whose CUDA port is a fatbin with forms by size
// (ir.Kernel.CUDAForms: the quantized ones) too, each launch naming the
// entry point the port picks (bench/cuda/bench_quant.py).
//
//	go run ./bench/cuda/geometry -shapes 128x1048576,1024x131072 -n 1048576 kgen.yaml bench/cuda/fast/kgen.yaml
//	go run ./bench/cuda/geometry -mnk 1x4096x4096,4096x4096x4096 kgen.yaml
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/kgen-dev/kgen/config"
	"github.com/kgen-dev/kgen/generate"
	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/launch"
)

// Launch is one kernel × dtype × shape: blocks of Threads threads and the
// derived size fields (rows_per_group) the args struct carries.
type Launch struct {
	Kernel  string         `json:"kernel"`
	Kind    string         `json:"kind"`
	DType   string         `json:"dtype"`
	Sizes   map[string]int `json:"sizes"`
	Blocks  int            `json:"blocks"`
	Threads int            `json:"threads"`
	Entry   string         `json:"entry,omitempty"` // the entry point's host name (matmuls with CUDA forms)
}

func main() {
	shapes := flag.String("shapes", "", "rowwise cols x rows, comma-separated")
	ns := flag.String("n", "", "elementwise sizes, comma-separated")
	mnk := flag.String("mnk", "", "matmul M x N x K, comma-separated (the matmuls with CUDA forms)")
	flag.Parse()
	var out []Launch
	for _, path := range flag.Args() {
		cfg, err := config.Load(path)
		if err != nil {
			fail(err)
		}
		ks, err := generate.Load(cfg)
		if err != nil {
			fail(err)
		}
		for _, k := range ks {
			if k.Ports[ir.CUDA] && len(k.CUDAForms()) > 0 {
				out = append(out, formLaunches(k, *mnk)...)
				continue
			}
			if !k.Ports[ir.CUDA] || (k.Kind != ir.Elementwise && k.Kind != ir.Rowwise) {
				continue
			}
			for _, v := range k.Variants {
				for _, given := range sizesOf(k, *shapes, *ns) {
					out = append(out, eval(k, v.DType.String(), v.DType.Size(), given))
				}
			}
		}
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", " ")
	if err := enc.Encode(out); err != nil {
		fail(err)
	}
}

// sizesOf lists the size fields of each benchmark shape of k (rowwise: one
// segment's rows, the others 0; a batched kernel's batch sizes 1).
func sizesOf(k *ir.Kernel, shapes, ns string) []map[string]int {
	var out []map[string]int
	if k.Kind == ir.Elementwise {
		for _, n := range split(ns) {
			out = append(out, map[string]int{"n": atoi(n)})
		}
		return out
	}
	for _, s := range split(shapes) {
		cols, rows, _ := strings.Cut(s, "x")
		given := map[string]int{"cols": atoi(cols)}
		for _, f := range k.ArgsBinding().Fields {
			if f.Size && f.Name != "cols" && f.Derived == "" {
				given[f.Name] = 0
			}
		}
		for _, b := range k.Batch() { // a batched kernel: one batch element
			given[b] = 1
		}
		first := "rows"
		if len(k.Segments) > 0 {
			first = k.Segments[0] + "_rows"
		}
		given[first] = atoi(rows)
		out = append(out, given)
	}
	return out
}

func eval(k *ir.Kernel, dt string, elemBytes int, given map[string]int) Launch {
	l := k.Launch(ir.CUDA)
	in := map[string]int{launch.ElemBytes: elemBytes}
	for f, v := range given {
		in[f] = v
	}
	sizes, err := l.Sizes(in)
	if err != nil {
		fail(err)
	}
	grid, err := l.GridSize(sizes)
	if err != nil {
		fail(err)
	}
	delete(sizes, launch.ElemBytes)
	tg := l.Threadgroup[0]
	return Launch{Kernel: k.Name, Kind: k.Kind.String(), DType: dt, Sizes: sizes, Blocks: (grid[0] + tg - 1) / tg, Threads: tg}
}

// formLaunches are a matmul's launches at each shape of mnk, in the form
// its CUDA port picks (the first of ir.Kernel.CUDAForms whose size field is
// at most its bound, else the kernel's own), as kgenrt's cudaPort.form.
func formLaunches(k *ir.Kernel, mnk string) []Launch {
	var out []Launch
	for _, s := range split(mnk) {
		d := strings.Split(s, "x")
		sizes := map[string]int{"m": atoi(d[0]), "n": atoi(d[1]), "k": atoi(d[2])}
		for _, v := range k.Variants {
			l, entry := k.Launch(ir.CUDA), v.HostName
			for _, f := range k.CUDAForms() {
				if sizes[f.Field] <= f.AtMost {
					p := k.DescriptorPhases()[f.Phase]
					l = p.LaunchOn(ir.CUDA)
					for _, pv := range p.Variants {
						if pv.DType == v.DType {
							entry = pv.HostName
						}
					}
					break
				}
			}
			grid, err := l.GridSize(sizes)
			if err != nil {
				fail(err)
			}
			tg := l.Threadgroup[0]
			out = append(out, Launch{Kernel: k.Name, Kind: k.Kind.String(), DType: v.DType.String(), Sizes: sizes, Blocks: (grid[0] + tg - 1) / tg, Threads: tg, Entry: entry})
		}
	}
	return out
}

func split(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

func atoi(s string) int {
	v, err := strconv.Atoi(s)
	if err != nil {
		fail(err)
	}
	return v
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "geometry:", err)
	os.Exit(1)
}
