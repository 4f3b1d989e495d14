// Package atomicfile writes files whole or not at all: the content goes
// to a temporary file in the destination's folder, which is synced,
// renamed over the destination and followed by a sync of the folder. A
// reader sees the old file or the new one, never a part of either, and a
// failed write leaves the old file (or none) and no temporary file.
//
// It imports nothing of the module, so that every layer (data, models,
// stages, cmd) may use it.
package atomicfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Perm is the permission of files Write creates.
const Perm os.FileMode = 0o644

// Write writes path with what write writes to the given writer, creating
// the parent folders as needed; the file gets permission Perm. The
// destination is replaced only when write and every step after it
// succeed. The error names path.
func Write(path string, write func(io.Writer) error) error {
	return writeFile(path, Perm, write)
}

// WriteFile writes data to path as Write does, with permission perm.
func WriteFile(path string, data []byte, perm os.FileMode) error {
	return writeFile(path, perm, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

func writeFile(path string, perm os.FileMode, write func(io.Writer) error) (err error) {
	if write == nil {
		return fmt.Errorf("writing %s: nil write function", path)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	f, err := os.CreateTemp(dir, "."+strings.TrimPrefix(filepath.Base(path), ".")+".tmp-")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close() // a second Close after a failed sync or close only reports it again
			os.Remove(tmp)
			err = fmt.Errorf("writing %s: %w", path, err)
		}
	}()
	if err = write(f); err != nil {
		return err
	}
	if err = f.Chmod(perm); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp, path); err != nil {
		return err
	}
	return syncDir(dir)
}

// syncDir makes a rename in dir durable. File systems that cannot sync a
// folder (EINVAL, as some network and FUSE mounts answer) are no error:
// the rename itself is atomic there too.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("syncing folder %s: %w", dir, err)
	}
	serr := d.Sync()
	cerr := d.Close()
	if serr != nil && !errors.Is(serr, syscall.EINVAL) {
		return fmt.Errorf("syncing folder %s: %w", dir, serr)
	}
	if cerr != nil {
		return fmt.Errorf("syncing folder %s: %w", dir, cerr)
	}
	return nil
}
