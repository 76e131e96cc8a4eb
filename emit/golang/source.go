package golang

import (
	"fmt"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/kgen-dev/kgen/ir"
)

// sourceFile embeds the kernel's MSL, byte for byte the .metal file, as a
// raw string constant: the runtime compiles exactly what the keys hash.
func sourceFile(k *ir.Kernel, n *names, src Source, opts Request) *jen.File {
	f := newFile(opts, k.SpecPath)
	f.Add(comment(
		fmt.Sprintf("%s is the Metal source of kernel %s, byte for byte %s;", n.source, k.Name, src.Path),
		fmt.Sprintf("every key in %s's dtype-key table hashes it, and kgenrt checks that", n.desc),
		"before it compiles it.",
	))
	f.Const().Id(n.source).Op("=").Add(stringLit(string(src.Data)))
	return f
}

// stringLit writes s as a raw string where it can be one (readable, and
// gofmt leaves it alone), splitting around backquotes; with a carriage
// return, which raw strings drop, it falls back to a quoted literal.
func stringLit(s string) jen.Code {
	if strings.Contains(s, "\r") {
		return jen.Lit(s)
	}
	parts := strings.Split(s, "`")
	code := jen.Id("`" + parts[0] + "`")
	for _, p := range parts[1:] {
		code.Op("+").Lit("`").Op("+").Id("`" + p + "`")
	}
	return code
}
