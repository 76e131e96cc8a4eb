package output

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// CheckReal makes sure that writing into the folder rel (slash-separated,
// relative to root) writes there and nowhere else: every part of rel that
// exists must be a real folder, not a symlink and not a file. kgen checks
// this for every out folder (cudabin/ included) when it compares, and again
// for the folder of every file just before it writes or deletes, because a
// symlink inside an out folder would otherwise send gen's writes — and its
// removal of "extra" files — to wherever the link points (issue 12, class
// 3). config refuses configured folders that lead outside the project;
// this refuses every link on the way, inside the project too, since a link
// from gen/ into specs/ would let gen delete a spec-folder file it wrote.
// Parts that do not exist yet are fine: gen creates them as real folders.
func CheckReal(root, rel string) error {
	if rel == "." || rel == "" {
		return nil
	}
	q := root
	for i, part := range strings.Split(rel, "/") {
		q = filepath.Join(q, part)
		st, err := os.Lstat(q)
		if os.IsNotExist(err) {
			return nil
		}
		at := path.Join(strings.Split(rel, "/")[:i+1]...)
		if err != nil {
			return fmt.Errorf("%s: %v; check the folder's permissions", at, pathless(err))
		}
		if st.Mode()&os.ModeSymlink != 0 {
			to, _ := os.Readlink(q)
			return fmt.Errorf("%s: is a symlink (to %s); kgen writes only into real folders of the project so that nothing outside its out folders is written or deleted: replace the link with a folder", at, to)
		}
		if !st.IsDir() {
			return fmt.Errorf("%s: is a file, but kgen needs a folder here for its output; move the file away", at)
		}
	}
	return nil
}

// pathless drops the absolute path an *os.PathError carries, so that
// messages name the project-relative path the caller prints instead.
func pathless(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return fmt.Errorf("%s: %w", pe.Op, pe.Err)
	}
	if le, ok := err.(*os.LinkError); ok {
		return fmt.Errorf("%s: %w", le.Op, le.Err)
	}
	return err
}
