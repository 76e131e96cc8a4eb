package golang

import (
	"strings"
	"testing"

	"github.com/dave/jennifer/jen"
)

// TestRenderErrorIsShort: Go that does not format (a kgen bug) is reported
// in one line naming the problem and its line, never with the whole file
// (jennifer's own error dumps it).
func TestRenderErrorIsShort(t *testing.T) {
	f := jen.NewFile("p")
	for i := 0; i < 100; i++ {
		f.Func().Id("f" + strings.Repeat("x", i)).Params().Block(jen.Return())
	}
	f.Func().Id("bad").Params().Block(jen.Id("x").Op(":=").Op("+"))
	_, err := render(f)
	if err == nil {
		t.Fatal("no error")
	}
	msg := err.Error()
	if strings.Contains(msg, "\n") || len(msg) > 200 || !strings.Contains(msg, "expected operand") || strings.Contains(msg, "fxx") {
		t.Fatalf("error is not one short line naming the bad line:\n%s", msg)
	}
	if _, err := render(jen.NewFile("p")); err != nil {
		t.Fatal(err)
	}
}
