package mslcpu

import (
	"crypto/sha256"
	"maps"
	"slices"
	"sync"
)

// parsedPrograms remembers the programs parseProgram read last, by their
// source and function constants: parity runs one kernel source at a dozen
// shapes and three dtypes, a launch each, and reading the source again
// for each (the rewrites are regular expressions over the whole text) was
// two thirds of a parity sweep's own CPU time once the builds were cached.
// A program is not changed after parseProgram returns it, so launches
// share it. Preprocessed sources are not remembered: their text depends on
// included files, which may change between launches.
var parsedPrograms = struct {
	sync.Mutex
	m     map[[sha256.Size]byte]*program
	order [][sha256.Size]byte
}{m: map[[sha256.Size]byte]*program{}}

// maxParsedPrograms bounds parsedPrograms (a program holds its source
// about three times over: a few megabytes in all for kgen's kernels).
const maxParsedPrograms = 32

// parseRemembered is parseProgram, remembered for sources that were not
// preprocessed (lines == nil).
func parseRemembered(src []byte, fc map[string]string, lines *lineMap) (*program, error) {
	if lines != nil {
		return parseProgram(src, fc, lines)
	}
	h := sha256.New()
	h.Write(src)
	for _, k := range slices.Sorted(maps.Keys(fc)) {
		h.Write([]byte{0})
		h.Write([]byte(k))
		h.Write([]byte{0})
		h.Write([]byte(fc[k]))
	}
	var key [sha256.Size]byte
	h.Sum(key[:0])
	c := &parsedPrograms
	c.Lock()
	p := c.m[key]
	c.Unlock()
	if p != nil {
		return p, nil
	}
	p, err := parseProgram(src, fc, nil)
	if err != nil {
		return nil, err
	}
	c.Lock()
	defer c.Unlock()
	if _, ok := c.m[key]; !ok {
		if len(c.order) == maxParsedPrograms {
			delete(c.m, c.order[0])
			c.order = c.order[1:]
		}
		c.m[key] = p
		c.order = append(c.order, key)
	}
	return p, nil
}
