package mslcpu

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"strings"
)

// LaneOrder is the order in which the lanes of a threadgroup run between
// synchronisation points. A kernel whose result depends on it has a race
// (typically a missing threadgroup_barrier); run it in more than one order.
type LaneOrder uint32

const (
	Forward  LaneOrder = iota // lane 0 first
	Reverse                   // last lane first
	Shuffled                  // a fixed pseudo-random permutation per group
)

// MatrixLaneMap is the element<->lane map of simdgroup_matrix fragments.
type MatrixLaneMap uint32

const (
	// AppleLanes is the map Apple GPUs are observed to use (lane l holds
	// row (l/4 & 4) + (l/2)%4, columns (l/4 & 2)*2 + (l%2)*2 and +1), the
	// one code reading thread_elements() usually assumes.
	AppleLanes MatrixLaneMap = iota
	// ScrambledLanes permutes the 64 elements over the 32 lanes' two slots.
	ScrambledLanes
)

// Launch is one dispatchThreads call of one host-named kernel.
type Launch struct {
	Source []byte // the whole .metal file, unmodified
	// SourceOptions: where the file lives, -I, -D, function constants.
	SourceOptions
	HostName    string    // e.g. "gelu_tanh_bf16"
	Buffers     [][]byte  // indexed by [[buffer(i)]]; device buffers and the bytes of `constant S&` structs alike
	Grid        [3]uint32 // total threads per axis (Metal dispatchThreads semantics)
	Threadgroup [3]uint32
	// ThreadgroupMemory[i] is the byte length of the memory bound to
	// [[threadgroup(i)]] parameters (setThreadgroupMemoryLength).
	ThreadgroupMemory []uint32
	// Aliases binds one buffer at several indices, as setBuffer with the
	// same MTLBuffer twice does: Aliases[i] = j makes buffer(i) the memory
	// of buffer(j) (Buffers[i] is then ignored and comes back as j's bytes).
	Aliases map[int]int
	Order   LaneOrder // lane order within each group; Forward if unset
	// MatrixLanes chooses which lane holds which simdgroup_matrix element.
	// Apple does not specify it: correct code gives the same results under
	// every map, so run matrix kernels with ScrambledLanes too.
	MatrixLanes MatrixLaneMap
	Sanitize    Sanitizer // an instrumented build (see Sanitizer); none if unset
	// Flags are extra compiler flags for the kernel and runtime build, after
	// the harness's own: e.g. -ffp-contract=fast -mfma to see what FMA
	// contraction, which Metal may apply, does to a kernel's results.
	Flags []string
}

// RunError reports a kernel that compiled but failed while running: a
// diagnostic from the runtime (barrier divergence, out-of-bounds access,
// unbound buffer) or a crash.
type RunError struct {
	HostName string
	Message  string
	// Report is the binary's whole stderr (a sanitizer's full report);
	// Message keeps its key lines.
	Report string
}

func (e *RunError) Error() string { return "mslcpu: " + e.HostName + ": " + e.Message }

// Run compiles (cached by sha256 of source+shim+flags+driver under
// os.UserCacheDir()/kgen/mslcpu, or $KGEN_MSLCPU_CACHE if set) and runs the
// launch, returning every buffer after the run (outputs filled in). Threads
// whose position is outside Grid are not run (dispatchThreads semantics);
// partial threadgroups are allowed. The input buffers are not modified.
// The launch is checked against Metal's and the harness's limits first
// (Validate); every process runs under the limits in sandbox.go, and an
// expired ctx stops them all.
func Run(ctx context.Context, l Launch) ([][]byte, error) {
	if err := l.Validate(); err != nil {
		return nil, fmt.Errorf("mslcpu: %s: %w", l.HostName, err)
	}
	tc, err := newToolchain()
	if err != nil {
		return nil, err
	}
	p, err := tc.load(ctx, l.Source, l.SourceOptions)
	if err != nil {
		return nil, err
	}
	in, err := p.instance(l.HostName)
	if err != nil {
		return nil, fmt.Errorf("mslcpu: %w", err)
	}
	if err := checkBindings(l, in.kernel); err != nil {
		return nil, fmt.Errorf("mslcpu: %s: %w", l.HostName, err)
	}
	if err := SanitizerAvailable(ctx, l.Sanitize); err != nil {
		return nil, err
	}
	bin, err := tc.binary(ctx, p, l.Sanitize, l.Flags)
	if err != nil {
		return nil, err
	}
	if l.Grid[0] == 0 || l.Grid[1] == 0 || l.Grid[2] == 0 {
		return copyBuffers(l.Buffers), nil // an empty grid runs no thread
	}
	return execute(ctx, tc, bin, l)
}

// checkBindings rejects launches that do not bind what the kernel uses.
func checkBindings(l Launch, k *kernelSig) error {
	if hi := k.maxBuffer(); hi >= len(l.Buffers) {
		return fmt.Errorf("kernel %s binds buffer(%d) but the launch has %d buffers", k.name, hi, len(l.Buffers))
	}
	return nil
}

// execute runs the built binary: the launch goes in on stdin, the buffers
// come back on stdout (see read_request / write_response in runtime.cc).
func execute(ctx context.Context, tc *toolchain, bin string, l Launch) ([][]byte, error) {
	out, err := executeRaw(ctx, tc, bin, l, 0)
	if err != nil {
		return nil, err
	}
	return decodeResponse(out, len(l.Buffers))
}

// executeRaw runs the binary and returns its whole stdout, which may be
// extra bytes longer than the buffers (a cost build's record).
func executeRaw(ctx context.Context, tc *toolchain, bin string, l Launch, extra int) ([]byte, error) {
	c := child{what: "running " + l.HostName, path: bin, stdin: encodeRequest(l), memory: KernelMemory,
		stdoutN: responseSize(l) + extra, outErr: l.HostName + ": the kernel binary wrote more than its buffers to stdout"}
	if l.Sanitize != NoSanitizer {
		c.env, c.memory = sanitizerEnv(tc.cxx), 0 // sanitizers bound resident memory instead
	}
	res, err := c.run(ctx)
	if err != nil {
		return nil, err
	}
	if res.err != nil {
		stderr := string(res.stderr)
		msg := summarize(stderr)
		if detail := exitDetail(res.err); detail != "" {
			msg = strings.TrimSpace(detail + "\n" + msg)
		}
		if msg == "" {
			msg = res.err.Error()
		}
		return nil, &RunError{HostName: l.HostName, Message: msg, Report: stderr}
	}
	return res.stdout, nil
}

// responseSize is the size of the binary's answer to l (write_response).
func responseSize(l Launch) int {
	n := 12
	for i, b := range l.Buffers {
		if j, ok := l.Aliases[i]; ok && j >= 0 && j < len(l.Buffers) {
			b = l.Buffers[j]
		}
		n += 8 + len(b)
	}
	return n
}

func encodeRequest(l Launch) []byte {
	var b bytes.Buffer
	le := binary.LittleEndian
	b.WriteString("KGENRUN2")
	b.Write(le.AppendUint32(nil, uint32(len(l.HostName))))
	b.WriteString(l.HostName)
	for _, v := range l.Grid {
		b.Write(le.AppendUint32(nil, v))
	}
	for _, v := range l.Threadgroup {
		b.Write(le.AppendUint32(nil, v))
	}
	b.Write(le.AppendUint32(nil, uint32(l.Order)))
	b.Write(le.AppendUint32(nil, uint32(l.MatrixLanes)))
	b.Write(le.AppendUint32(nil, uint32(len(l.Buffers))))
	for _, buf := range l.Buffers {
		b.Write(le.AppendUint64(nil, uint64(len(buf))))
		b.Write(buf)
	}
	b.Write(le.AppendUint32(nil, uint32(len(l.Aliases))))
	for _, i := range sortedKeys(l.Aliases) {
		b.Write(le.AppendUint32(nil, uint32(i)))
		b.Write(le.AppendUint32(nil, uint32(l.Aliases[i])))
	}
	b.Write(le.AppendUint32(nil, uint32(len(l.ThreadgroupMemory))))
	for _, n := range l.ThreadgroupMemory {
		b.Write(le.AppendUint32(nil, n))
	}
	return b.Bytes()
}

func decodeResponse(out []byte, want int) ([][]byte, error) {
	le := binary.LittleEndian
	bad := errors.New("mslcpu: malformed response from the kernel binary")
	if len(out) < 12 || string(out[:8]) != "KGENOUT1" || int(le.Uint32(out[8:])) != want {
		return nil, bad
	}
	out = out[12:]
	bufs := make([][]byte, want)
	for i := range bufs {
		if len(out) < 8 {
			return nil, bad
		}
		n := le.Uint64(out)
		out = out[8:]
		if uint64(len(out)) < n {
			return nil, bad
		}
		bufs[i] = append([]byte{}, out[:n]...)
		out = out[n:]
	}
	return bufs, nil
}

func copyBuffers(in [][]byte) [][]byte {
	out := make([][]byte, len(in))
	for i, b := range in {
		out[i] = append([]byte{}, b...)
	}
	return out
}

// Synchronises reports whether a source calls threadgroup_barrier,
// simdgroup_barrier or simd_* functions: kernels whose lanes hand data to
// each other, where a race can hide behind one lane order.
func Synchronises(source []byte) bool { return syncRe.Match(maskComments(source)) }

func sortedKeys(m map[int]int) []int {
	keys := make([]int, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	return keys
}
