package mslcpu

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Widths are the access widths the counts tell apart, in bytes: a scalar
// of one, two or four bytes, an 8-byte and a 16-byte vector (half4,
// float4). An access of another width (an aggregate copied whole) is not
// counted.
var Widths = [NumWidths]int{1, 2, 4, 8, 16}

// NumWidths is len(Widths).
const NumWidths = 5

// Traffic is the accesses to one kind of memory, by width (Widths).
type Traffic struct {
	Loads  [NumWidths]uint64 `json:"loads"`
	Stores [NumWidths]uint64 `json:"stores"`
}

// ReadBytes is the bytes the loads moved.
func (t Traffic) ReadBytes() uint64 { return weigh(t.Loads) }

// WriteBytes is the bytes the stores moved.
func (t Traffic) WriteBytes() uint64 { return weigh(t.Stores) }

func weigh(n [NumWidths]uint64) uint64 {
	var b uint64
	for i, c := range n {
		b += c * uint64(Widths[i])
	}
	return b
}

func (t *Traffic) add(o Traffic) {
	for i := range NumWidths {
		t.Loads[i] += o.Loads[i]
		t.Stores[i] += o.Stores[i]
	}
}

// SimdKind is a kind of simdgroup operation (shim/metal_cost's CostKind,
// in the same order).
type SimdKind int

const (
	SimdSync    SimdKind = iota // simdgroup_barrier, simd_is_first
	SimdReduce                  // simd_sum, simd_max, ...
	SimdScan                    // simd_prefix_*
	SimdShuffle                 // simd_shuffle*, simd_broadcast*
	MatrixLoad                  // simdgroup_load
	MatrixStore                 // simdgroup_store
	MatrixMMA                   // simdgroup_multiply(_accumulate)
	NumSimdKinds
)

// SimdKindNames are the kinds' names in reports and JSON.
var SimdKindNames = [NumSimdKinds]string{"simd_sync", "simd_reduce", "simd_scan", "simd_shuffle",
	"matrix_load", "matrix_store", "matrix_mma"}

// SimdCount counts one kind of simdgroup operation: each completed call of
// a simdgroup is one op, and IdleLanes adds the simdgroup's lanes (of 32)
// that did not take part (returned, branched away, or past a partial
// group's end) — work the hardware spends on nothing.
type SimdCount struct {
	Ops       uint64 `json:"ops"`
	IdleLanes uint64 `json:"idle_lanes"`
}

// Cost is what a launch did, counted by the harness (RunCost). The memory
// counts are of the loads and stores that the kernel's code performs after
// clang's -O1 (locals in registers, redundant loads within a block
// removed, no vectorisation the source did not write): a model of what
// Metal's compiler issues, not a measurement of it. Device traffic is
// counted per access, with no cache: a value read twice counts twice.
type Cost struct {
	// Device is the traffic to device buffers; Constant to buffers the
	// kernel declares `constant` (the args struct: cached, uniform reads on
	// a GPU, so kept apart); Threadgroup to threadgroup memory (arrays and
	// [[threadgroup(i)]] bindings; simdgroup_load/store from it included).
	Device, Constant, Threadgroup Traffic
	// Barriers counts released threadgroup barriers, summed over groups
	// (a barrier every lane of a group passes once counts once).
	Barriers uint64
	// Groups and Threads are the threadgroups and threads that ran.
	Groups, Threads uint64
	Simd            [NumSimdKinds]SimdCount
	// Arith is the kernel's own arithmetic, by kind (cost_ops.go).
	Arith Arith
	// Buffers[i] is buffer(i)'s accesses (an alias's are the lowest
	// index's bound to the same memory); Device and Constant are their sums.
	Buffers []BufferTraffic
	// Launches is how many launches were added up (Add).
	Launches int
}

// BufferTraffic is one buffer's accesses.
type BufferTraffic struct {
	Traffic
	Constant bool `json:"constant,omitempty"`
}

// Add adds o's counts to c (a kernel run as several launches).
func (c *Cost) Add(o *Cost) {
	c.Device.add(o.Device)
	c.Constant.add(o.Constant)
	c.Threadgroup.add(o.Threadgroup)
	c.Barriers += o.Barriers
	c.Groups += o.Groups
	c.Threads += o.Threads
	for i := range c.Simd {
		c.Simd[i].Ops += o.Simd[i].Ops
		c.Simd[i].IdleLanes += o.Simd[i].IdleLanes
	}
	for i, b := range o.Buffers {
		if i >= len(c.Buffers) {
			c.Buffers = append(c.Buffers, BufferTraffic{Constant: b.Constant})
		}
		c.Buffers[i].add(b.Traffic)
	}
	c.Arith.add(o.Arith, 1)
	c.Launches += o.Launches
}

// costFlags make the runtime and the kernel a cost build (shim/runtime_cost.inc).
var costFlags = []string{"-DKGEN_COST=1"}

// costKernelFlags instrument the kernel's loads and stores. -O1 keeps
// locals in registers (a GPU has no stack traffic to count) without the
// vectoriser merging scalar accesses the source wrote into wider ones;
// -fno-builtin keeps a copy loop (MLX's norms read a row into a thread
// array) from becoming a memcpy call, whose accesses no callback sees; the
// inline-8bit-counters mode only switches the coverage pass on. An
// aggregate copied whole that the optimiser keeps as memcpy is still not
// counted (docs/metal-cost.md).
var costKernelFlags = []string{"-O1", "-fno-vectorize", "-fno-slp-vectorize", "-fno-builtin",
	"-fsanitize-coverage=inline-8bit-counters,trace-loads,trace-stores"}

// costRecordValues is the number of fixed uint64 values in the runtime's
// record (CostCounts in shim/runtime_cost.inc).
const costRecordValues = 2*NumWidths + 3 + 2*int(NumSimdKinds)

// RunCost runs a launch like Run, in a cost build (cached apart from the
// plain one, so that Run pays nothing for counting), and returns the
// buffers and the launch's counts. The counts do not depend on
// Launch.Order: lanes run one at a time and every count is a sum. Sanitizers
// are refused: their instrumentation would be counted.
func RunCost(ctx context.Context, l Launch) ([][]byte, *Cost, error) {
	if l.Sanitize != NoSanitizer {
		return nil, nil, fmt.Errorf("mslcpu: %s: cost counting runs without a sanitizer", l.HostName)
	}
	if err := l.Validate(); err != nil {
		return nil, nil, fmt.Errorf("mslcpu: %s: %w", l.HostName, err)
	}
	tc, err := newToolchain()
	if err != nil {
		return nil, nil, err
	}
	p, err := tc.load(ctx, l.Source, l.SourceOptions)
	if err != nil {
		return nil, nil, err
	}
	in, err := p.instance(l.HostName)
	if err != nil {
		return nil, nil, fmt.Errorf("mslcpu: %w", err)
	}
	if err := checkBindings(l, in.kernel); err != nil {
		return nil, nil, fmt.Errorf("mslcpu: %s: %w", l.HostName, err)
	}
	bin, table, err := tc.costBinary(ctx, p, l.Flags)
	if err != nil {
		return nil, nil, err
	}
	constant := constantBuffers(in.kernel)
	if l.Grid[0] == 0 || l.Grid[1] == 0 || l.Grid[2] == 0 {
		c := &Cost{Launches: 1, Buffers: make([]BufferTraffic, len(l.Buffers))}
		for i := range c.Buffers {
			c.Buffers[i].Constant = constant[i]
		}
		return copyBuffers(l.Buffers), c, nil
	}
	extra := 16 + 8*(costRecordValues+2+2*NumWidths*len(l.Buffers)+len(table))
	out, err := executeRaw(ctx, tc, bin, l, extra)
	if err != nil {
		return nil, nil, err
	}
	bufs, err := decodeResponse(out, len(l.Buffers))
	if err != nil {
		return nil, nil, err
	}
	c, err := decodeCost(out[responseSize(l):], constant, table)
	if err != nil {
		return nil, nil, err
	}
	return bufs, c, nil
}

// constantBuffers reports which buffer indices the kernel declares in the
// constant address space.
func constantBuffers(k *kernelSig) map[int]bool {
	out := map[int]bool{}
	for _, prm := range k.params {
		if prm.kind == paramBuffer && prm.space == "constant" {
			out[prm.index] = true
		}
	}
	return out
}

// costIRVersion is part of a cost build's cache key: the block table is
// made by instrumentIR at build time, so a change to how it counts must
// bump it, or cached builds keep the old table.
const costIRVersion = "ir-1"

// costBinary builds (or finds) the cost build of p: the runtime with
// KGEN_COST, the kernel compiled to LLVM IR with its loads and stores
// instrumented, rewritten to count basic blocks (instrumentIR), then
// compiled and linked. It returns the binary and each counted block's
// arithmetic. The runtime itself is not instrumented: it defines the
// callbacks.
func (tc *toolchain) costBinary(ctx context.Context, p *program, extra []string) (string, opTable, error) {
	rtFlags := append(append([]string{}, costFlags...), extra...)
	rt, err := tc.runtimeObject(ctx, NoSanitizer, rtFlags)
	if err != nil {
		return "", nil, err
	}
	flags := buildFlags(NoSanitizer, append(append(append([]string{}, costFlags...), costKernelFlags...), extra...)...)
	tu := translationUnit(p)
	base := filepath.Join(tc.cache, "c-"+tc.key("kernel-cost-"+costIRVersion, flags, tu))
	bin, err := cached(base, func(tmp string) error {
		if err := writeAtomic(base+".cc", []byte(tu), 0o644); err != nil {
			return err
		}
		ll := tmp + ".ll"
		defer os.Remove(ll)
		args := append(append([]string{}, flags...), "-gline-tables-only", "-S", "-emit-llvm", "-I", tc.shim, "-x", "c++", base+".cc", "-o", ll)
		if err := tc.compile(ctx, args, nil); err != nil {
			return err
		}
		text, err := os.ReadFile(ll)
		if err != nil {
			return err
		}
		counted, table := instrumentIR(string(text), harnessFile(tc.shim))
		js, err := json.Marshal(table)
		if err != nil {
			return err
		}
		if err := writeAtomic(base+".ops", js, 0o644); err != nil {
			return err
		}
		if err := os.WriteFile(ll, []byte(counted), 0o644); err != nil {
			return err
		}
		return tc.compile(ctx, []string{"-O1", "-Wno-override-module", "-x", "ir", ll, "-x", "none", rt, "-o", tmp, "-lm", "-lpthread"}, nil)
	})
	if err != nil {
		return "", nil, err
	}
	js, err := os.ReadFile(base + ".ops")
	if err != nil {
		return "", nil, err
	}
	var table opTable
	if err := json.Unmarshal(js, &table); err != nil {
		return "", nil, fmt.Errorf("mslcpu: %s.ops: %v", base, err)
	}
	return bin, table, nil
}

// decodeCost reads the record cost_write appends after the buffers.
func decodeCost(out []byte, constant map[int]bool, table opTable) (*Cost, error) {
	le := binary.LittleEndian
	bad := errors.New("mslcpu: malformed cost record from the kernel binary")
	if len(out) < 16 || string(out[:8]) != "KGENCST1" {
		return nil, bad
	}
	n := le.Uint64(out[8:])
	out = out[16:]
	if n < uint64(costRecordValues+2) || uint64(len(out)) != 8*n {
		return nil, bad
	}
	v := make([]uint64, n)
	for i := range v {
		v[i] = le.Uint64(out[8*i:])
	}
	c := &Cost{Launches: 1}
	next := func(dst []uint64) { v = v[copy(dst, v):] }
	next(c.Threadgroup.Loads[:])
	next(c.Threadgroup.Stores[:])
	var three [3]uint64
	next(three[:])
	c.Barriers, c.Groups, c.Threads = three[0], three[1], three[2]
	var ops, idle [NumSimdKinds]uint64
	next(ops[:])
	next(idle[:])
	for i := range c.Simd {
		c.Simd[i] = SimdCount{Ops: ops[i], IdleLanes: idle[i]}
	}
	nbuf := v[0]
	v = v[1:]
	if uint64(len(v)) < 2*NumWidths*nbuf+1 {
		return nil, bad
	}
	c.Buffers = make([]BufferTraffic, nbuf)
	for i := range c.Buffers {
		b := &c.Buffers[i]
		next(b.Loads[:])
		next(b.Stores[:])
		b.Constant = constant[i]
		if b.Constant {
			c.Constant.add(b.Traffic)
		} else {
			c.Device.add(b.Traffic)
		}
	}
	nblocks := v[0]
	v = v[1:]
	if nblocks != uint64(len(table)) || uint64(len(v)) != nblocks {
		return nil, bad
	}
	for i, times := range v {
		c.Arith.add(table[i], times)
	}
	return c, nil
}
