package golang

import (
	"fmt"
	"strings"
	"testing"
)

func TestGridExpr(t *testing.T) {
	sizes := map[string]bool{"n": true, "rows": true, "cols": true}
	for src, want := range map[string]string{
		"ceildiv(n, 4)":                   "kgenrt.CeilDiv(n, 4)",
		"1":                               "1",
		"rows * ceildiv(cols + 1, 2) - 3": "rows*kgenrt.CeilDiv(cols+1, 2) - 3",
		"(n - 1) * 2":                     "(n - 1) * 2",
	} {
		code, err := gridExpr(src, sizes)
		if err != nil {
			t.Errorf("%s: %v", src, err)
			continue
		}
		if got := fmt.Sprintf("%#v", code); got != want {
			t.Errorf("%s → %s, want %s", src, got, want)
		}
	}
	for src, want := range map[string]string{
		"m":                    `unexpected "m"`,
		"ceildiv(n 4)":         `want ","`,
		"n +":                  `unexpected ""`,
		"n n":                  `unexpected "n"`,
		"99999999999999999999": "integer",
	} {
		if _, err := gridExpr(src, sizes); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want %q", src, err, want)
		}
	}
}
