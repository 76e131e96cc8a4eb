//go:build unix

package generate_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kgen-dev/kgen/config"
	"github.com/kgen-dev/kgen/expr"
	"github.com/kgen-dev/kgen/generate"
)

// longFormula is a sum of n/2 products (n terms), grouped eight to a parenthesis
// (then eight groups to one, and so on) so that it stays within
// expr.MaxHeight however long it is.
func longFormula(n int) string {
	terms := make([]string, n/2) // two terms each
	for i := range terms {
		terms[i] = fmt.Sprintf("x * %d.5", i%7)
	}
	for len(terms) > 1 {
		var up []string
		for i := 0; i < len(terms); i += 8 {
			up = append(up, "("+strings.Join(terms[i:min(i+8, len(terms))], " + ")+")")
		}
		terms = up
	}
	return terms[0]
}

func longFormulaSpec(n int) string {
	return "kernel: terms\nkind: elementwise\ndtypes: [f32, f16, bf16]\ninputs: [x]\noutputs:\n  - y: " + longFormula(n) + "\n"
}

func longFormulaProject(tb testing.TB, spec string) *config.Config {
	dir := tb.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "specs"), 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "specs", "terms.yaml"), []byte(spec), 0o644); err != nil {
		tb.Fatal(err)
	}
	cfgPath := filepath.Join(dir, config.FileName)
	if err := os.WriteFile(cfgPath, []byte("version: 1\n"), 0o644); err != nil {
		tb.Fatal(err)
	}
	cfg, err := config.Load(cfgPath)
	if err != nil {
		tb.Fatal(err)
	}
	return cfg
}

// BenchmarkLongFormula runs the in-memory pipeline on one formula of 1k,
// 3k and 10k (expr.MaxTerms) terms: the CPU time per term must stay flat
// (a linear pipeline).
func BenchmarkLongFormula(b *testing.B) {
	for _, n := range []int{1000, 3000, 10000} {
		b.Run(fmt.Sprintf("terms=%d", n), func(b *testing.B) {
			cfg := longFormulaProject(b, longFormulaSpec(n))
			b.ResetTimer()
			cpu0 := cpuTime()
			for i := 0; i < b.N; i++ {
				if _, err := generate.Run(cfg); err != nil {
					b.Fatal(err)
				}
			}
			// CPU time (user+system, all threads) per term: flat when
			// linear, and steadier than wall time on a shared machine.
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N*n), "cpu-ns/term")
		})
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestDeepFormulas generates formulas at expr.MaxHeight in every compute
// type, for Metal and CUDA: none may take exponential time (rendering a
// call's arguments twice per level did), and the C-family sources must nest
// brackets less deep than the 256 clang (and so Metal) accepts.
func TestDeepFormulas(t *testing.T) {
	h := expr.MaxHeight
	forms := map[string]string{
		"chain": "x" + strings.Repeat(" + x", h),
		"calls": strings.Repeat("abs(", h) + "x" + strings.Repeat(")", h),
		"neg":   strings.Repeat("-abs(", h/2) + "x" + strings.Repeat(")", h/2),
		"sel":   strings.Repeat("select(x > 0, ", h-1) + "x" + strings.Repeat(", x)", h-1),
		"right": strings.Repeat("x - (", h) + "x" + strings.Repeat(")", h),
		"max":   strings.Repeat("max(", h/2) + "x" + strings.Repeat(" * 0.5, x)", h/2),
		"int":   "f32(" + strings.Repeat("(", h-2) + "i" + strings.Repeat(" + 1)", h-2) + ") + x",
	}
	for _, compute := range []string{"f32", "f16", "bf16"} {
		for name, f := range forms {
			spec := fmt.Sprintf("kernel: deep\ndtypes: [f32]\ncompute: %s\ninputs: [x]\noutputs:\n  - y: %s\nports: {cuda: generated}\n", compute, f)
			cfg := longFormulaProject(t, spec)
			res, err := generate.Run(cfg)
			if err != nil {
				t.Fatalf("%s in %s: %v", name, compute, err)
			}
			for _, file := range res.Files {
				if ext := filepath.Ext(file.Path); ext != ".metal" && ext != ".cu" {
					continue
				}
				if d := bracketDepth(file.Data); d >= 256 {
					t.Errorf("%s in %s: %s nests brackets %d deep", name, compute, file.Path, d)
				}
			}
		}
	}
}

func bracketDepth(src []byte) int {
	depth, most := 0, 0
	for _, c := range src {
		switch c {
		case '(', '[', '{':
			depth++
			most = max(most, depth)
		case ')', ']', '}':
			depth--
		}
	}
	return most
}
