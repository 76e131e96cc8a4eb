package diag

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
)

// OSReason says why a file operation failed and what to do, without the
// path (the caller's message names it, relative to the config folder; an
// *os.PathError's path is absolute and would repeat it).
func OSReason(err error) string {
	var pe *fs.PathError
	var le *os.LinkError
	switch {
	case errors.As(err, &pe):
		err = pe.Err
	case errors.As(err, &le):
		err = le.Err
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "it does not exist (or is a symlink to nothing); create it or fix the path"
	case errors.Is(err, fs.ErrPermission):
		return "permission denied; make it readable (and its folder searchable) for this user"
	case errors.Is(err, syscall.EROFS):
		return "the file system is read-only; use a writable folder"
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		return "no space left on the device; free some and run again"
	case errors.Is(err, syscall.EISDIR):
		return "it is a folder; name a file"
	case errors.Is(err, syscall.ENOTDIR):
		return "a part of the path is a file, not a folder; fix the path"
	case errors.Is(err, syscall.EFBIG):
		return "the file is too large for a file-size limit (ulimit -f)"
	}
	return err.Error()
}
