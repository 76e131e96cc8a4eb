package lsp

import (
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkAnalyze is one keystroke's work on a large matmul spec.
func BenchmarkAnalyze(b *testing.B) {
	full, _ := filepath.Abs(filepath.Join("..", "..", "specs", "qmatmul_mlx4_silu_mul.yaml"))
	src, err := os.ReadFile(full)
	if err != nil {
		b.Fatal(err)
	}
	e := env{disk: newDiskSpecs()}
	for i := 0; i < b.N; i++ {
		analyze(full, string(src), e)
	}
}
