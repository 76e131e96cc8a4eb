package parity

import (
	"bytes"
	"context"
	"encoding/gob"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"text/template"

	"github.com/kgen-dev/kgen/ir"
)

// GoReference runs the generated Go package's CPU references on samples.
//
// Why a compiled program: the Go reference users fall back to is Go source
// kgen writes. Evaluating the IR in process (ir's evaluators, or kgenrt's
// helpers called from kgen) would test kgen's model of that source, not the
// source: the -0 that Go's constant arithmetic turns into +0 lives only in
// the generated text. So Run builds one small main package that imports
// the generated package and calls each kernel's RunCPU, with the go command
// of the user's module: the same kgenrt, toolchain and build tags as the
// user's build. The package's files come from memory through -overlay
// (files gen would write replace those on disk, every other file there and
// in the driver's folder is hidden), so what is tested is exactly what gen writes; the main package
// lives only in the overlay, inside the generated package's folder (so an
// internal/ import path stays importable). One build per run, cached by
// the go build cache, and one process for every sample.
type GoReference struct {
	ModuleDir  string            // the module root (where go.mod is)
	PkgDir     string            // the generated package's folder, absolute
	ImportPath string            // the generated package's import path
	Files      map[string][]byte // the generated package's files by base name
	GoNames    map[string]string // each kernel's exported Go name, by kernel name
}

// goJob and goTensor are the driver's input, one per sample (gob).
type goJob struct {
	Kernel  int
	Tensors []goTensor
	Params  []float64
}

type goTensor struct {
	DType string
	Shape []int
	Data  []byte // inputs' bytes; empty for outputs
}

// goResult is the driver's answer for one job.
type goResult struct {
	Err     string
	Tensors [][]byte
}

// Run returns, per sample, every binding's bytes after the Go reference
// (outputs filled in, by binding index).
func (g GoReference) Run(ctx context.Context, kernels []*ir.Kernel, samples []*Sample) ([][][]byte, error) {
	tmp, err := os.MkdirTemp("", "kgen-goref-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	bin, err := g.build(ctx, tmp, kernels)
	if err != nil {
		return nil, err
	}
	index := map[*ir.Kernel]int{}
	for i, k := range kernels {
		index[k] = i
	}
	jobs := make([]goJob, len(samples))
	for i, s := range samples {
		jobs[i] = jobOf(s, index[s.Kernel])
	}
	var in, out, stderr bytes.Buffer
	if err := gob.NewEncoder(&in).Encode(jobs); err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, bin)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = &in, &out, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("the Go reference driver failed: %v\n%s", err, stderr.String())
	}
	var res []goResult
	if err := gob.NewDecoder(&out).Decode(&res); err != nil || len(res) != len(samples) {
		return nil, fmt.Errorf("the Go reference driver's answer is unreadable (%v)", err)
	}
	got := make([][][]byte, len(res))
	for i, r := range res {
		if r.Err != "" {
			return nil, fmt.Errorf("%s: the Go reference refused the launch parity ran: %s", samples[i].Variant.HostName, r.Err)
		}
		got[i] = make([][]byte, len(samples[i].Kernel.Bindings))
		j := 0
		for _, b := range samples[i].Kernel.Bindings {
			if b.Role != ir.Args && j < len(r.Tensors) {
				got[i][b.Index] = r.Tensors[j]
				j++
			}
		}
	}
	return got, nil
}

func jobOf(s *Sample, kernel int) goJob {
	j := goJob{Kernel: kernel, Params: s.Params}
	for _, b := range s.Kernel.Bindings {
		if b.Role == ir.Args {
			continue
		}
		t := goTensor{DType: elemType(b, s.Variant).String(), Shape: s.Shape(b)}
		if b.Role == ir.Input {
			t.Data = s.In[b.Index]
		}
		if b.IsScatter() { // written in place: it starts as the kernel's does (buffers)
			t.Data = nanFilled(t.Shape, elemType(b, s.Variant))
		}
		j.Tensors = append(j.Tensors, t)
	}
	return j
}

// build writes the overlay and the driver and compiles them into tmp.
func (g GoReference) build(ctx context.Context, tmp string, kernels []*ir.Kernel) (string, error) {
	drvDir := filepath.Join(g.PkgDir, "kgen_goref_driver")
	replace := map[string]string{}
	// Every file on disk in the package's folder and in the driver's is
	// hidden unless gen writes it, not only .go files: go build also
	// compiles .s and links .syso files there, and compiles any .go file
	// in the driver's folder into the driver, whose init functions run;
	// verify runs only what kgen generated.
	for _, dir := range []string{g.PkgDir, drvDir} {
		onDisk, _ := filepath.Glob(filepath.Join(dir, "*"))
		for _, p := range onDisk {
			if st, err := os.Stat(p); err == nil && !st.IsDir() {
				replace[p] = ""
			}
		}
	}
	for name, data := range g.Files {
		if !strings.HasSuffix(name, ".go") {
			continue
		}
		p := filepath.Join(tmp, "pkg_"+name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			return "", err
		}
		replace[filepath.Join(g.PkgDir, name)] = p
	}
	drv, err := g.driver(kernels)
	if err != nil {
		return "", err
	}
	drvPath := filepath.Join(tmp, "driver.go")
	if err := os.WriteFile(drvPath, drv, 0o600); err != nil {
		return "", err
	}
	replace[filepath.Join(drvDir, "main.go")] = drvPath
	ov, err := overlayJSON(replace)
	if err != nil {
		return "", err
	}
	ovPath := filepath.Join(tmp, "overlay.json")
	if err := os.WriteFile(ovPath, ov, 0o600); err != nil {
		return "", err
	}
	bin := filepath.Join(tmp, "goref")
	cmd := exec.CommandContext(ctx, "go", "build", "-overlay", ovPath, "-o", bin, drvDir)
	cmd.Dir = g.ModuleDir
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the generated Go reference: %v\n%s", err, out)
	}
	return bin, nil
}

func overlayJSON(replace map[string]string) ([]byte, error) {
	var b strings.Builder
	b.WriteString(`{"Replace":{`)
	first := true
	for from, to := range replace {
		if !first {
			b.WriteString(",")
		}
		first = false
		b.WriteString(strconv.Quote(from) + ":" + strconv.Quote(to))
	}
	b.WriteString("}}")
	return []byte(b.String()), nil
}

// driver is the main package's source. The only outside text in it is the
// import path (a quoted Go string) and the kernels' Go names (identifiers
// kgen derived from checked kernel names).
func (g GoReference) driver(kernels []*ir.Kernel) ([]byte, error) {
	var names []string
	for _, k := range kernels {
		n, ok := g.GoNames[k.Name]
		if !ok {
			return nil, fmt.Errorf("no Go name for kernel %s", k.Name)
		}
		names = append(names, n)
	}
	var b bytes.Buffer
	err := driverTmpl.Execute(&b, map[string]any{"Import": strconv.Quote(g.ImportPath), "Names": names})
	return b.Bytes(), err
}

var driverTmpl = template.Must(template.New("driver").Parse(`// Code generated by kgen verify for its differential check. DO NOT EDIT.

package main

import (
	"encoding/gob"
	"os"

	"github.com/kgen-dev/kgen/kgenrt"
	pkg {{.Import}}
)

var kernels = []*kgenrt.Kernel{ {{- range .Names}}
	pkg.{{.}}.Describe(),{{end}}
}

type goJob struct {
	Kernel  int
	Tensors []goTensor
	Params  []float64
}

type goTensor struct {
	DType string
	Shape []int
	Data  []byte
}

type goResult struct {
	Err     string
	Tensors [][]byte
}

func tensor(t goTensor) (*kgenrt.Tensor, error) {
	dt := kgenrt.ParseDType(t.DType)
	if t.Data == nil {
		return kgenrt.New(dt, t.Shape...)
	}
	return kgenrt.FromBytes(dt, t.Data, t.Shape...)
}

func run(j goJob) goResult {
	ts := make([]*kgenrt.Tensor, len(j.Tensors))
	for i, t := range j.Tensors {
		var err error
		if ts[i], err = tensor(t); err != nil {
			return goResult{Err: err.Error()}
		}
	}
	if err := kernels[j.Kernel].RunCPU(ts, j.Params...); err != nil {
		return goResult{Err: err.Error()}
	}
	var r goResult
	for _, t := range ts {
		r.Tensors = append(r.Tensors, t.Bytes())
	}
	return r
}

func main() {
	var jobs []goJob
	if err := gob.NewDecoder(os.Stdin).Decode(&jobs); err != nil {
		panic(err)
	}
	res := make([]goResult, len(jobs))
	for i, j := range jobs {
		res[i] = run(j)
	}
	if err := gob.NewEncoder(os.Stdout).Encode(res); err != nil {
		panic(err)
	}
}
`))
