package output

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/kgen-dev/kgen/internal/par"
)

// TempPrefix starts the name of every temporary file kgen creates in an out
// folder: staged new contents and the backups of replaced files. A run that
// is killed leaves them behind; the next gen removes them (Cleanup) and
// verify reports them (Temps).
const TempPrefix = ".kgen-tmp-"

// The file operations Apply uses; tests replace them to fail a chosen write
// or rename the way a full disk, a file-size limit or a read-only folder
// does (root ignores permissions, so a chmod test proves nothing there).
var (
	writeFile = os.WriteFile
	rename    = os.Rename
)

// Apply makes the disk match, all or nothing (issue 12, class 6). It
// refuses before touching anything if a change would overwrite a file kgen
// cannot prove it wrote, or if a folder on the way is a symlink. Then it
// stages: every new content goes to a temp file beside its target; if any
// write fails (a full disk, a read-only folder, a size limit) the temps are
// removed and the tree is as it was. Then it commits: each existing target
// is renamed to a backup and the temp renamed into place, extra files are
// renamed to backups; if a rename fails, every step done so far is undone
// from the backups (renames, so the restored files keep their bytes and
// mtimes). Only after the last rename are the backups deleted. It returns
// the paths written and removed.
func Apply(root string, changes []Change) (written, removed []string, err error) {
	var fe ForeignError
	for _, c := range changes {
		switch c.State {
		case Foreign:
			fe.Paths = append(fe.Paths, c.Path)
		case HandEdited:
			fe.Edited = append(fe.Edited, c.Path)
		}
	}
	if len(fe.Paths)+len(fe.Edited) > 0 {
		return nil, nil, &fe
	}
	for _, c := range changes {
		if err := CheckReal(root, path.Dir(c.Path)); err != nil {
			return nil, nil, err
		}
	}
	for _, c := range changes {
		if c.State == Extra {
			continue
		}
		d := path.Dir(c.Path)
		if err := os.MkdirAll(filepath.Join(root, filepath.FromSlash(d)), 0o755); err != nil {
			return nil, nil, fmt.Errorf("%s: cannot create the out folder: %v; check that it is writable", d, pathless(err))
		}
	}
	temps := make([]string, len(changes))
	err = par.Do(len(changes), par.IOWorkers(), func(i int) error {
		c := changes[i]
		if c.State == Extra {
			return nil
		}
		full := filepath.Join(root, filepath.FromSlash(c.Path))
		tmp := tempName(full, "new")
		if err := writeFile(tmp, c.Data, 0o644); err != nil {
			os.Remove(tmp)
			return fmt.Errorf("%s: cannot write: %v; nothing was changed: free disk space or make the folder writable, then run kgen gen again", c.Path, pathless(err))
		}
		temps[i] = tmp
		return nil
	})
	if err != nil {
		removeAll(temps)
		return nil, nil, err
	}
	type step struct{ full, backup string }
	var done []step
	var backups []string
	for i, c := range changes {
		full := filepath.Join(root, filepath.FromSlash(c.Path))
		s := step{full: full}
		if _, e := os.Lstat(full); e == nil {
			s.backup = tempName(full, "old")
			if e := rename(full, s.backup); e != nil {
				err = fmt.Errorf("%s: cannot move the old file aside: %v", c.Path, pathless(e))
				break
			}
			backups = append(backups, s.backup)
		}
		if c.State != Extra {
			if e := rename(temps[i], full); e != nil {
				err = fmt.Errorf("%s: cannot put the new file in place: %v", c.Path, pathless(e))
				if s.backup != "" {
					os.Rename(s.backup, full)
				}
				break
			}
			temps[i] = ""
		}
		done = append(done, s)
	}
	if err != nil {
		for j := len(done) - 1; j >= 0; j-- {
			s := done[j]
			if s.backup != "" {
				os.Rename(s.backup, s.full)
			} else {
				os.Remove(s.full)
			}
		}
		removeAll(temps)
		return nil, nil, fmt.Errorf("%w; every file was restored to what it was before: fix the cause and run kgen gen again", err)
	}
	removeAll(backups)
	for _, c := range changes {
		if c.State == Extra {
			removed = append(removed, c.Path)
		} else {
			written = append(written, c.Path)
		}
	}
	return written, removed, nil
}

// tempName is a fresh hidden name beside full; random, so that nothing a
// user or another tool made can be mistaken for it.
func tempName(full, what string) string {
	var b [6]byte
	rand.Read(b[:])
	return filepath.Join(filepath.Dir(full), TempPrefix+filepath.Base(full)+"-"+hex.EncodeToString(b[:])+"."+what)
}

func removeAll(paths []string) {
	for _, p := range paths {
		if p != "" {
			os.Remove(p)
		}
	}
}

// Temps lists the temp files (TempPrefix) in the out folders, slash paths
// relative to root: left by a gen that was killed mid-way.
func Temps(root string, outDirs []string) ([]string, error) {
	var out []string
	err := eachOutEntry(root, outDirs, func(p string, e os.DirEntry) error {
		if strings.HasPrefix(e.Name(), TempPrefix) && e.Type().IsRegular() {
			out = append(out, p)
		}
		return nil
	})
	var le *ListError
	if errors.As(err, &le) {
		return nil, fmt.Errorf("%s: cannot list: %v", le.Dir, pathless(le.Err))
	}
	return out, err
}

// Cleanup removes the temp files a killed gen left in the out folders
// (after CheckReal, so that it deletes nothing through a symlink) and
// returns their paths. Call it under Lock, or it may remove another gen's
// staged files.
func Cleanup(root string, outDirs []string) ([]string, error) {
	for _, d := range outDirs {
		if err := CheckReal(root, d); err != nil {
			return nil, err
		}
	}
	temps, err := Temps(root, outDirs)
	if err != nil {
		return nil, err
	}
	var errs error
	for _, p := range temps {
		if err := os.Remove(filepath.Join(root, filepath.FromSlash(p))); err != nil && !os.IsNotExist(err) {
			errs = errors.Join(errs, fmt.Errorf("%s: cannot remove a temp file of an earlier kgen gen: %v", p, pathless(err)))
		}
	}
	return temps, errs
}
