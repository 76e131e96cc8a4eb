// Command kgen generates Metal kernels and their Go dispatch code from
// declarative kernel specs. See the README for the spec format.
package main

import (
	"os"

	"github.com/kgen-dev/kgen/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr))
}
