package cli

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/google/renameio/v2"
)

// The CUDA binaries folder's manifest: the proof that `kgen cuda` wrote a
// binary. Generated text files carry kgen's header and a digest line, and
// gen overwrites or removes only files whose digest still matches; a
// fatbin or a shared library has no room for either, so the folder keeps a
// list of every binary kgen cuda wrote there with the sha256 of its bytes.
// kgen cuda removes an older binary of a kernel only when the manifest
// lists it and its bytes still match: anything else in the folder — written
// by hand, copied in, built by another tool or by a kgen without the
// manifest, or changed since — is kept, and kgen cuda says so. The name
// starts with a dot, so `//go:embed cudabin` leaves it out of the binary.
// `kgen rocm` keeps the same kind of list of its code objects in hipbin/.
const (
	cudaManifestName = ".kgen-cuda.sum"
	rocmManifestName = ".kgen-rocm.sum"
)

// cudaManifestLine is one entry: the sha256 in hex, two spaces and a file
// name without a separator (the layout of sha256sum, so `sha256sum -c`
// checks it).
var cudaManifestLine = regexp.MustCompile(`^([0-9a-f]{64})  ([^/\\]+)$`)

// cudaManifest is the manifest of one folder: file name → sha256.
type cudaManifest struct {
	file  string // the manifest's name in dir (cudaManifestName, rocmManifestName)
	dir   string
	shown string // dir as the user knows it, for messages
	sums  map[string]string
}

// readCUDAManifest reads dir's manifest; a folder without one has an
// empty manifest. A line that is not an entry is an error at that line:
// a manifest kgen cannot read proves nothing, and guessing could delete a
// user's file.
func readCUDAManifest(dir, shown string) (*cudaManifest, error) {
	return readManifest(dir, shown, cudaManifestName)
}

// readManifest reads dir's manifest named file (readCUDAManifest).
func readManifest(dir, shown, file string) (*cudaManifest, error) {
	m := &cudaManifest{file: file, dir: dir, shown: shown, sums: map[string]string{}}
	path := filepath.Join(dir, file)
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return m, nil
	}
	if err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSuffix(sc.Text(), "\r")
		if text == "" {
			continue
		}
		e := cudaManifestLine.FindStringSubmatch(text)
		if e == nil {
			return nil, fmt.Errorf("%s:%d:1: not a manifest entry (`<sha256>  <file>`); kgen cuda writes this file to prove which binaries it built: delete it and rebuild",
				filepath.Join(m.shown, m.file), line)
		}
		m.sums[e[2]] = e[1]
	}
	return m, sc.Err()
}

// fileSum is the sha256 of the file at p in hex.
func fileSum(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// record notes that kgen cuda just wrote the binary name.
func (m *cudaManifest) record(name string) error {
	sum, err := fileSum(filepath.Join(m.dir, name))
	if err != nil {
		return err
	}
	m.sums[name] = sum
	return nil
}

// owned reports whether the manifest proves that kgen cuda wrote name and
// nobody changed it since: listed, a regular file, the same bytes.
func (m *cudaManifest) owned(name string) bool {
	want, ok := m.sums[name]
	if !ok {
		return false
	}
	p := filepath.Join(m.dir, name)
	if st, err := os.Lstat(p); err != nil || !st.Mode().IsRegular() {
		return false
	}
	sum, err := fileSum(p)
	return err == nil && sum == want
}

// removeOlder removes the binaries of kernel with keep's extension other
// than keep (one name, or a kernel's code objects for every target) that
// the manifest proves are kgen's, and returns the names of the others it
// left in place (sorted). A kernel's binaries are named <kernel>-<hash><ext>
// (<ext> may hold a target: .gfx942.co); a name with a further "-" belongs
// to another kernel whose name extends this one.
func (m *cudaManifest) removeOlder(kernel string, keep ...string) ([]string, error) {
	old, _ := filepath.Glob(filepath.Join(m.dir, kernel+"-*"+filepath.Ext(keep[0])))
	var kept []string
	for _, p := range old {
		name := filepath.Base(p)
		if slices.Contains(keep, name) || strings.Contains(strings.TrimPrefix(name, kernel+"-"), "-") {
			continue
		}
		if !m.owned(name) {
			kept = append(kept, name)
			continue
		}
		if err := os.Remove(p); err != nil {
			return kept, err
		}
		delete(m.sums, name)
	}
	sort.Strings(kept)
	return kept, nil
}

// write saves the manifest atomically, without the entries of files that
// are gone.
func (m *cudaManifest) write() error {
	var names []string
	for name := range m.sums {
		if _, err := os.Lstat(filepath.Join(m.dir, name)); err == nil {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	var b strings.Builder
	for _, name := range names {
		fmt.Fprintf(&b, "%s  %s\n", m.sums[name], name)
	}
	return renameio.WriteFile(filepath.Join(m.dir, m.file), []byte(b.String()), 0o644)
}

// update records the binaries just written, runs remove (nil: nothing to
// remove), and saves the manifest, whatever remove did: a binary kgen cuda
// wrote is listed even when a later step fails, so that a later run can
// prove it is kgen's.
func (m *cudaManifest) update(written []string, remove func() error) error {
	var errs []error
	for _, name := range written {
		errs = append(errs, m.record(name))
	}
	if remove != nil {
		errs = append(errs, remove())
	}
	errs = append(errs, m.write())
	return errors.Join(errs...)
}

// settle records the binaries just written, removes each kernel's older
// binaries that the manifest proves are kgen's (current: kernel → the
// binaries it has now, visited in kernels' order) and saves the manifest
// (update), returning the older names it left in place. kgen cuda and kgen
// rocm finish with it.
func (m *cudaManifest) settle(written, kernels []string, current map[string][]string) ([]string, error) {
	var kept []string
	err := m.update(written, func() error {
		for _, k := range kernels {
			bins, ok := current[k]
			if !ok {
				continue
			}
			left, err := m.removeOlder(k, bins...)
			kept = append(kept, left...)
			if err != nil {
				return err
			}
		}
		return nil
	})
	return kept, err
}

// reportKept says, per older binary settle left in place, that it stays
// and why: tool is "kgen cuda" or "kgen rocm", what names its binaries.
func (m *cudaManifest) reportKept(w io.Writer, tool, what, shown string, kept []string) {
	for _, name := range kept {
		fmt.Fprintf(w, "%s: kept %s: an older %s's name, but not provably written by %s (not in %s, or changed since); delete it yourself if it is stale\n",
			tool, filepath.Join(shown, name), what, tool, m.file)
	}
}
