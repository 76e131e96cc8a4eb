package cli

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kgen-dev/kgen/dtype"
	"github.com/kgen-dev/kgen/verify/mslcpu"
)

// emuFlags are the flags of `kgen emu`.
type emuFlags struct {
	file, kernel, grid, tg, order, sanitize, lanes string
	format                                         string // --format, of the --cost report (emu_cost.go)
	buffers, zeros, values, outs, prints           []string
	includes, defines, constants, tgmem, aliases   []string
	strict, cost                                   bool
	timeout                                        time.Duration
}

func emuCmd(o *options) *cobra.Command {
	f := &emuFlags{}
	cmd := &cobra.Command{
		Use:   "emu --file K.metal --kernel HOST_NAME --grid X[,Y,Z] --threadgroup X[,Y,Z] [buffers]",
		Short: "Run a Metal compute kernel on the CPU (any .metal file, not only kgen's)",
		Long: `emu runs one compute kernel of a .metal file on the CPU with Metal's semantics,
so that a kernel can be run and debugged on Linux: the unmodified source is
compiled as C++ (clang++ >= 17) against kgen's stand-in <metal_stdlib>, and the
grid runs threadgroup by threadgroup as dispatchThreads would (the last group
of each axis may be partial). Threadgroup memory is filled with NaN bytes
before each group, barriers and simd functions are checked for divergence,
and buffers and threadgroup arrays end at guard zones. See docs/fidelity.md
for what is emulated and what is not.

The file is compiled and run as host code, with your user's rights: run
only files you would build and run yourself. emu bounds what a run may
cost, not what it may do: --timeout (default 2m) ends the compile and the
run, killing every process they started; the compiler and the kernel run
with address-space and CPU-time limits and without your environment
variables; inputs must be regular files (a source at most 8 MiB, buffers
1 GiB together; clang -E output at most 32 MiB); launches Metal refuses
(over 1024 threads per group, over 32 KiB of threadgroup memory) and grids
over 2^32 threads are refused before anything compiles. docs/emu.md says
what the sandbox does and does not promise.

Buffers are indexed by [[buffer(i)]], hold raw little-endian bytes, and are
given with any of:
  --buffer I=FILE        the bytes of FILE
  --zeros I=N            N zero bytes (an output)
  --bytes I=LIST         comma-separated typed values, packed without padding:
                         u8: i8: u16: i16: u32: i32: u64: i64: f16: bf16: f32:
                         (f16 and bf16 round to nearest even), or hex:0a0b...
                         e.g. --bytes 2=u32:1000,f32:0.5 for a constant struct
After the run:
  --out I=FILE           writes buffer I to FILE
  --print I=TYPE         prints buffer I as TYPE values (f32, f16, bf16, i32,
                         u32, u8 …), one line
Real projects' sources (docs/emu.md):
  -I DIR                 searched by #include (after the file's own folder)
  -D NAME[=VALUE]        a macro, as the project's build defines it
  --constant NAME=VALUE  a function constant's value, by name or index
                         (e.g. --constant has_w=true --constant 20=1)
  --threadgroup-memory I=N  N bytes for the [[threadgroup(I)]] parameter
  --alias I=J            buffer(I) is the same memory as buffer(J)
--matrix-lanes apple|scrambled|both picks which lane holds which
simdgroup_matrix element ("both" runs both and fails if any buffer differs:
code that assumes Apple's unspecified map).
--order forward|reverse|shuffled|all picks the order in which the lanes of a
group run between barriers; "all" runs all three and fails if any buffer
differs (a race between lanes). --sanitize address|thread builds with ASan
(out-of-bounds accesses, to the byte) or TSan (one thread per lane: data
races inside a group). --strict first checks the source in kgen's strict
mode (address spaces, no double, no libc names MSL lacks), then refuses
host-only code: inline assembly, extern "C", constructor/section-style
attributes, static initializers, and calls to functions that are neither
defined in the file nor part of Metal's library (system, printf, malloc).

Exit codes: 0 ran; 1 the kernel failed to compile or run, ran past
--timeout, or the lane orders disagree; 2 usage errors (limits included).`,
		Example: `  kgen emu --file saxpy.metal --kernel saxpy --grid 1000 --threadgroup 256 \
    --buffer 0=x.bin --buffer 1=y.bin --bytes 2=u32:1000,f32:2.5 --out 1=y_out.bin`,
		Args: noArgs,
		RunE: func(*cobra.Command, []string) error { return runEmu(o, f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.file, "file", "", "the .metal source (required)")
	fl.StringVar(&f.kernel, "kernel", "", "host name of the kernel to run: a kernel's name, or a [[host_name]] (required)")
	fl.StringVar(&f.grid, "grid", "", "total threads per axis, X[,Y[,Z]] (dispatchThreads; required)")
	fl.StringVar(&f.tg, "threadgroup", "", "threads per threadgroup, X[,Y[,Z]] (at most 1024 in all; required)")
	fl.StringArrayVar(&f.buffers, "buffer", nil, "I=FILE: buffer I holds the bytes of FILE (repeatable)")
	fl.StringArrayVar(&f.zeros, "zeros", nil, "I=N: buffer I is N zero bytes (repeatable)")
	fl.StringArrayVar(&f.values, "bytes", nil, "I=LIST: buffer I holds typed values, e.g. u32:1000,f32:0.5 (repeatable)")
	fl.StringArrayVar(&f.outs, "out", nil, "I=FILE: write buffer I to FILE after the run (repeatable)")
	fl.StringArrayVar(&f.prints, "print", nil, "I=TYPE: print buffer I as TYPE values after the run (repeatable)")
	fl.StringVar(&f.order, "order", "forward", "lane order within each threadgroup: forward, reverse, shuffled, or all (all three must agree)")
	fl.StringVar(&f.sanitize, "sanitize", "", "instrumented build: address (ASan) or thread (TSan, one thread per lane)")
	fl.BoolVar(&f.strict, "strict", false, "check the source in kgen's strict MSL mode before running it")
	fl.StringArrayVarP(&f.includes, "include", "I", nil, "DIR: #include search path (repeatable)")
	fl.StringArrayVarP(&f.defines, "define", "D", nil, "NAME[=VALUE]: a preprocessor macro (repeatable)")
	fl.StringArrayVar(&f.constants, "constant", nil, "NAME=VALUE or INDEX=VALUE: a function constant (repeatable)")
	fl.StringArrayVar(&f.tgmem, "threadgroup-memory", nil, "I=N: N bytes of threadgroup memory for [[threadgroup(I)]] (repeatable)")
	fl.StringArrayVar(&f.aliases, "alias", nil, "I=J: bind buffer J's memory at index I too (repeatable)")
	fl.StringVar(&f.lanes, "matrix-lanes", "apple", "simdgroup_matrix element<->lane map: apple, scrambled, or both (both must agree)")
	fl.BoolVar(&f.cost, "cost", false, "after the run, count what the launch does (device bytes by access width, threadgroup bytes, barriers, simd and simdgroup-matrix operations, idle lanes) and print it with a roofline estimate (docs/metal-cost.md)")
	fl.StringVar(&f.format, "format", "text", "format of the --cost report: text, or json (then the only output)")
	fl.DurationVar(&f.timeout, "timeout", defaultEmuTimeout, "wall-clock limit on the whole run, compiles included; every process emu started is killed when it passes")
	return cmd
}

func runEmu(o *options, f *emuFlags) error {
	l, orders, err := f.launch()
	if err == nil {
		err = f.checkCost()
	}
	if err != nil {
		return usageError{err}
	}
	ctx, cancel := context.WithTimeout(context.Background(), f.timeout)
	defer cancel()
	if err := emulate(ctx, o, f, l, orders); err != nil {
		return f.timedOut(err)
	}
	return nil
}

// emulate checks (--strict), runs and reports one launch.
func emulate(ctx context.Context, o *options, f *emuFlags, l mslcpu.Launch, orders []mslcpu.LaneOrder) error {
	if f.strict {
		if err := mslcpu.CheckSyntax(ctx, l.Source); err != nil {
			return err
		}
		if err := mslcpu.CheckHost(ctx, l); err != nil {
			return err
		}
	}
	got, err := runOrders(ctx, l, orders)
	if err != nil {
		return err
	}
	if f.lanes == "both" {
		l.MatrixLanes = mslcpu.ScrambledLanes
		scrambled, err := mslcpu.Run(ctx, l)
		if err != nil {
			return err
		}
		if msg := firstDifference(got, scrambled); msg != "" {
			return fmt.Errorf("kgen emu: %s: %s between Apple's and a scrambled simdgroup_matrix lane map: the kernel depends on which lane holds which element, which Apple does not specify",
				l.HostName, msg)
		}
	}
	if f.cost && f.format == "json" {
		return writeCost(ctx, o, f, l)
	}
	if err := f.report(o, l, got); err != nil {
		return err
	}
	if f.cost {
		return writeCost(ctx, o, f, l)
	}
	return nil
}

// report prints (--print) and writes (--out) the buffers and says what ran.
func (f *emuFlags) report(o *options, l mslcpu.Launch, got [][]byte) error {
	for _, p := range f.prints {
		idx, typ, err := indexed(p, len(got))
		if err != nil {
			return usageError{fmt.Errorf("--print %s: %v", p, err)}
		}
		line, err := formatBuffer(got[idx], typ)
		if err != nil {
			return usageError{fmt.Errorf("--print %s: %v", p, err)}
		}
		fmt.Fprintf(o.stdout, "buffer(%d) %s: %s\n", idx, typ, line)
	}
	for _, p := range f.outs {
		idx, path, err := indexed(p, len(got))
		if err != nil {
			return usageError{fmt.Errorf("--out %s: %v", p, err)}
		}
		if err := os.WriteFile(path, got[idx], 0o644); err != nil {
			return err
		}
	}
	groups := 1
	for a := range 3 {
		if l.Grid[a] == 0 {
			groups = 0
			break
		}
		groups *= int((uint64(l.Grid[a]) + uint64(l.Threadgroup[a]) - 1) / uint64(l.Threadgroup[a]))
	}
	fmt.Fprintf(o.stdout, "kgen emu: %s ran on grid (%d,%d,%d) in %d threadgroup(s) of (%d,%d,%d); lane order %s\n",
		l.HostName, l.Grid[0], l.Grid[1], l.Grid[2], groups, l.Threadgroup[0], l.Threadgroup[1], l.Threadgroup[2], f.order)
	return nil
}

// runOrders runs the launch in each lane order and fails when two differ.
func runOrders(ctx context.Context, l mslcpu.Launch, orders []mslcpu.LaneOrder) ([][]byte, error) {
	var got [][]byte
	for i, order := range orders {
		l.Order = order
		bufs, err := mslcpu.Run(ctx, l)
		if err != nil {
			return nil, err
		}
		if i == 0 {
			got = bufs
			continue
		}
		if msg := firstDifference(got, bufs); msg != "" {
			return nil, fmt.Errorf("kgen emu: %s: %s between %s and %s lane order: the lanes of a threadgroup race (a missing barrier?)",
				l.HostName, msg, orderNames[orders[0]], orderNames[order])
		}
	}
	return got, nil
}

var orderNames = map[mslcpu.LaneOrder]string{mslcpu.Forward: "forward", mslcpu.Reverse: "reverse", mslcpu.Shuffled: "shuffled"}

// sourceOptions fills in what real projects' sources need: include paths,
// macros, function constants, threadgroup memory, aliases and the lane map.
func (f *emuFlags) sourceOptions(l *mslcpu.Launch) error {
	l.Path, l.IncludeDirs, l.Defines = f.file, f.includes, f.defines
	for _, c := range f.constants {
		name, value, ok := strings.Cut(c, "=")
		if !ok || name == "" || value == "" {
			return fmt.Errorf("--constant %s: want NAME=VALUE", c)
		}
		if l.FunctionConstants == nil {
			l.FunctionConstants = map[string]string{}
		}
		l.FunctionConstants[name] = value
	}
	for _, t := range f.tgmem {
		idx, n, err := indexed(t, mslcpu.MaxBindings)
		if err != nil {
			return fmt.Errorf("--threadgroup-memory %s: %v", t, err)
		}
		size, err := strconv.ParseUint(n, 10, 32)
		if err != nil {
			return fmt.Errorf("--threadgroup-memory %s: %v", t, err)
		}
		for len(l.ThreadgroupMemory) <= idx {
			l.ThreadgroupMemory = append(l.ThreadgroupMemory, 0)
		}
		l.ThreadgroupMemory[idx] = uint32(size)
	}
	for _, a := range f.aliases {
		idx, j, err := indexed(a, mslcpu.MaxBindings)
		if err != nil {
			return fmt.Errorf("--alias %s: %v", a, err)
		}
		target, err := strconv.Atoi(j)
		if err != nil {
			return fmt.Errorf("--alias %s: %v", a, err)
		}
		if l.Aliases == nil {
			l.Aliases = map[int]int{}
		}
		l.Aliases[idx] = target
	}
	switch f.lanes {
	case "apple", "both":
	case "scrambled":
		l.MatrixLanes = mslcpu.ScrambledLanes
	default:
		return fmt.Errorf("--matrix-lanes must be apple, scrambled or both, not %q", f.lanes)
	}
	return nil
}

// launch turns the flags into a Launch and the lane orders to run,
// refusing what Metal or emu's limits refuse before anything compiles.
func (f *emuFlags) launch() (mslcpu.Launch, []mslcpu.LaneOrder, error) {
	var l mslcpu.Launch
	for _, req := range []struct{ name, v string }{{"--file", f.file}, {"--kernel", f.kernel}, {"--grid", f.grid}, {"--threadgroup", f.tg}} {
		if req.v == "" {
			return l, nil, fmt.Errorf("%s is required (see kgen emu --help)", req.name)
		}
	}
	if f.timeout <= 0 {
		return l, nil, fmt.Errorf("--timeout %s: want a positive duration (e.g. 30s, 5m)", f.timeout)
	}
	src, err := readInput(f.file, mslcpu.MaxSourceBytes, "a source")
	if err != nil {
		return l, nil, fmt.Errorf("--file %s: %v", f.file, err)
	}
	l.Source, l.HostName = src, f.kernel
	if err := f.sourceOptions(&l); err != nil {
		return l, nil, err
	}
	if l.Grid, err = dims(f.grid, 0); err != nil {
		return l, nil, fmt.Errorf("--grid %s: %v", f.grid, err)
	}
	if l.Threadgroup, err = dims(f.tg, 1); err != nil {
		return l, nil, fmt.Errorf("--threadgroup %s: %v", f.tg, err)
	}
	if l.Sanitize, err = mslcpu.ParseSanitizer(f.sanitize); err != nil {
		return l, nil, fmt.Errorf("--sanitize: %v", err)
	}
	orders := map[string][]mslcpu.LaneOrder{"forward": {mslcpu.Forward}, "reverse": {mslcpu.Reverse},
		"shuffled": {mslcpu.Shuffled}, "all": {mslcpu.Forward, mslcpu.Reverse, mslcpu.Shuffled}}[f.order]
	if orders == nil {
		return l, nil, fmt.Errorf("--order must be forward, reverse, shuffled or all, not %q", f.order)
	}
	if l.Buffers, err = f.readBuffers(l.Aliases); err != nil {
		return l, nil, err
	}
	return l, orders, f.validate(l)
}

// dims reads X[,Y[,Z]]; missing axes are 1.
func dims(s string, min uint64) ([3]uint32, error) {
	out := [3]uint32{1, 1, 1}
	parts := strings.Split(s, ",")
	if len(parts) > 3 {
		return out, fmt.Errorf("want at most 3 numbers")
	}
	for i, p := range parts {
		v, err := strconv.ParseUint(strings.TrimSpace(p), 10, 32)
		if err != nil || v < min {
			return out, fmt.Errorf("%q is not a whole number >= %d", p, min)
		}
		out[i] = uint32(v)
	}
	return out, nil
}

// indexed splits "I=REST" with 0 <= I < limit.
func indexed(s string, limit int) (int, string, error) {
	k, rest, ok := strings.Cut(s, "=")
	idx, err := strconv.Atoi(k)
	if !ok || err != nil || rest == "" {
		return 0, "", fmt.Errorf("want INDEX=VALUE")
	}
	if idx < 0 || idx >= limit {
		return 0, "", fmt.Errorf("buffer index %d is outside 0..%d", idx, limit-1)
	}
	return idx, rest, nil
}

// packValues packs comma-separated TYPE:VALUE items little-endian.
func packValues(list string) ([]byte, error) {
	var b []byte
	le := binary.LittleEndian
	for _, item := range strings.Split(list, ",") {
		typ, v, ok := strings.Cut(strings.TrimSpace(item), ":")
		if !ok {
			return nil, fmt.Errorf("%q: want TYPE:VALUE (u32:1000, f32:0.5, hex:0a0b…)", item)
		}
		var err error
		switch typ {
		case "hex":
			var h []byte
			h, err = hex.DecodeString(v)
			b = append(b, h...)
		case "f32", "f16", "bf16":
			var x float64
			x, err = strconv.ParseFloat(v, 64)
			switch typ {
			case "f32":
				b = le.AppendUint32(b, math.Float32bits(float32(x)))
			case "f16":
				b = le.AppendUint16(b, dtype.F16Bits(float32(x)))
			default:
				b = le.AppendUint16(b, dtype.BF16Bits(float32(x)))
			}
		default:
			size, signed := intType(typ)
			if size == 0 {
				return nil, fmt.Errorf("%q: unknown type %q (want u8 i8 u16 i16 u32 i32 u64 i64 f16 bf16 f32 hex)", item, typ)
			}
			var u uint64
			if signed {
				var x int64
				x, err = strconv.ParseInt(v, 0, size*8)
				u = uint64(x)
			} else {
				u, err = strconv.ParseUint(v, 0, size*8)
			}
			n := len(b)
			b = le.AppendUint64(b, u)[:n+size]
		}
		if err != nil {
			return nil, fmt.Errorf("%q: %v", item, err)
		}
	}
	return b, nil
}

func intType(t string) (size int, signed bool) {
	sizes := map[string]int{"u8": 1, "i8": 1, "u16": 2, "i16": 2, "u32": 4, "i32": 4, "u64": 8, "i64": 8}
	return sizes[t], strings.HasPrefix(t, "i")
}

// formatBuffer prints a buffer as values of one type.
func formatBuffer(buf []byte, typ string) (string, error) {
	size := map[string]int{"f32": 4, "f16": 2, "bf16": 2}[typ]
	signed := false
	if size == 0 {
		size, signed = intType(typ)
	}
	if size == 0 {
		return "", fmt.Errorf("unknown type %q (want f32 f16 bf16 u8 i8 u16 i16 u32 i32 u64 i64)", typ)
	}
	if len(buf)%size != 0 {
		return "", fmt.Errorf("%d bytes are not a whole number of %s values", len(buf), typ)
	}
	le := binary.LittleEndian
	var parts []string
	for i := 0; i < len(buf); i += size {
		var u uint64
		for k := size - 1; k >= 0; k-- {
			u = u<<8 | uint64(buf[i+k])
		}
		switch {
		case typ == "f32":
			parts = append(parts, strconv.FormatFloat(float64(math.Float32frombits(le.Uint32(buf[i:]))), 'g', -1, 32))
		case typ == "f16":
			parts = append(parts, strconv.FormatFloat(float64(dtype.F16Value(le.Uint16(buf[i:]))), 'g', -1, 32))
		case typ == "bf16":
			parts = append(parts, strconv.FormatFloat(float64(dtype.BF16Value(le.Uint16(buf[i:]))), 'g', -1, 32))
		case signed:
			parts = append(parts, strconv.FormatInt(int64(u<<(64-8*size))>>(64-8*size), 10))
		default:
			parts = append(parts, strconv.FormatUint(u, 10))
		}
	}
	return strings.Join(parts, " "), nil
}

// firstDifference describes the first byte at which two runs' buffers
// differ, or returns "".
func firstDifference(a, b [][]byte) string {
	for i := range a {
		if bytes.Equal(a[i], b[i]) {
			continue
		}
		for k := range a[i] {
			if a[i][k] != b[i][k] {
				return fmt.Sprintf("buffer(%d) differs at byte %d", i, k)
			}
		}
	}
	return ""
}
