package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/kgen-dev/kgen/verify/mslcpu"
)

// defaultEmuTimeout ends any hang of kgen emu: compiles and runs together.
const defaultEmuTimeout = 2 * time.Minute

// readBuffers reads --buffer, --zeros and --bytes into buffers indexed by
// [[buffer(i)]], holding them together to mslcpu.MaxBufferBytes.
func (f *emuFlags) readBuffers(aliases map[int]int) ([][]byte, error) {
	bufs := map[int][]byte{}
	var total int64
	add := func(flag, spec string, read func(arg string, room int64) ([]byte, error)) error {
		idx, arg, err := indexed(spec, mslcpu.MaxBindings)
		if err != nil {
			return fmt.Errorf("%s %s: %v", flag, spec, err)
		}
		if _, dup := bufs[idx]; dup {
			return fmt.Errorf("%s %s: buffer %d is given twice", flag, spec, idx)
		}
		data, err := read(arg, mslcpu.MaxBufferBytes-total)
		if err != nil {
			return fmt.Errorf("%s %s: %v", flag, spec, err)
		}
		bufs[idx], total = data, total+int64(len(data))
		return nil
	}
	for _, g := range []struct {
		flag  string
		specs []string
		read  func(string, int64) ([]byte, error)
	}{{"--buffer", f.buffers, readBufferFile}, {"--zeros", f.zeros, zeroBytes}, {"--bytes", f.values, packWithin}} {
		for _, s := range g.specs {
			if err := add(g.flag, s, g.read); err != nil {
				return nil, err
			}
		}
	}
	hi := -1
	for idx := range bufs {
		hi = max(hi, idx)
	}
	for idx := range aliases {
		hi = max(hi, idx) // an alias needs no bytes of its own
	}
	out := make([][]byte, hi+1) // indices nobody gave are empty buffers
	for idx, data := range bufs {
		out[idx] = data
	}
	return out, nil
}

func readBufferFile(path string, room int64) ([]byte, error) {
	return readInput(path, room, "what is left of the buffers' "+mslcpu.Bytes(mslcpu.MaxBufferBytes))
}

func zeroBytes(s string, room int64) ([]byte, error) {
	n, err := strconv.ParseUint(s, 10, 63)
	if err != nil {
		return nil, fmt.Errorf("%q is not a byte count", s)
	}
	if n > uint64(room) {
		return nil, fmt.Errorf("%d bytes are over what is left of the buffers' %s (emu's limit on all buffers together)", n, mslcpu.Bytes(mslcpu.MaxBufferBytes))
	}
	return make([]byte, n), nil
}

func packWithin(list string, room int64) ([]byte, error) {
	b, err := packValues(list)
	if err == nil && int64(len(b)) > room {
		err = fmt.Errorf("%d bytes are over what is left of the buffers' %s", len(b), mslcpu.Bytes(mslcpu.MaxBufferBytes))
	}
	return b, err
}

// readInput reads a regular file of at most limit bytes. It opens without
// blocking and checks what it opened, so that a FIFO, a device such as
// /dev/zero or /dev/stdin, a socket or a folder is refused instead of
// blocking or reading forever, and a file over the limit is refused before
// it is read.
func readInput(path string, limit int64, what string) ([]byte, error) {
	file, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, pathErr(err)
	}
	defer file.Close()
	info, err := file.Stat()
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("is %s, not a regular file; emu reads only regular files", fileKind(info.Mode()))
	}
	if info.Size() > limit {
		return nil, fmt.Errorf("%d bytes are over %s (emu's limit)", info.Size(), limitText(limit, what))
	}
	data, err := io.ReadAll(io.LimitReader(file, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit { // it grew while we read it
		return nil, fmt.Errorf("is over %s (emu's limit)", limitText(limit, what))
	}
	return data, nil
}

func limitText(limit int64, what string) string {
	if what == "a source" {
		return mslcpu.Bytes(limit) + " for a source"
	}
	return what
}

func fileKind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a folder"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "not a plain file (" + m.String() + ")"
}

// validate refuses, as usage errors naming the flag, what Metal or emu's
// limits refuse (mslcpu.Launch.Validate).
func (f *emuFlags) validate(l mslcpu.Launch) error {
	err := l.Validate()
	var le *mslcpu.LaunchError
	if !errors.As(err, &le) {
		return err
	}
	flag := map[string]string{"Grid": "--grid " + f.grid, "Threadgroup": "--threadgroup " + f.tg,
		"ThreadgroupMemory": "--threadgroup-memory", "Aliases": "--alias", "Source": "--file " + f.file,
		"Buffers": "the buffers"}[le.Field]
	if flag == "" {
		return err
	}
	return fmt.Errorf("%s: %s", flag, le.Message)
}

// timedOut turns an expired --timeout into a message that says so, and
// what was running.
func (f *emuFlags) timedOut(err error) error {
	if !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	stage := "compiling or running"
	var se *mslcpu.StoppedError
	if errors.As(err, &se) {
		stage = se.What
	}
	return fmt.Errorf("kgen emu: %s: --timeout %s ran out while %s; every process emu started was killed (a kernel that never returns, such as a spin on an atomic or a barrier some lanes never reach, ends here; raise --timeout if the compile or the run needs longer)",
		f.kernel, f.timeout, stage)
}
