// Package outdir manages a results directory, where spn writes a spec's
// tables and figures: the record of the spec that writes there (so that
// two specs do not mix their tables), the check that it can be written
// before any stage runs, and the removal of the files spn wrote there
// that a write no longer writes.
package outdir

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"

	"github.com/spn-project/spn/internal/atomicfile"
	"github.com/spn-project/spn/stages"
)

// RecordFile, in a results directory, names the spec whose tables it
// holds: its path and the SHA-256 of its source.
const RecordFile = "spec-source.json"

// Record is the content of RecordFile.
type Record struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
	// Files are the names of the tables' and figures' files spn wrote
	// into the directory for this spec: the next write of the directory
	// removes those its spec no longer writes, and nothing else (a file
	// spn did not write stays).
	Files []string `json:"files,omitempty"`
}

// Source returns the path (absolute, symlinks resolved) and SHA-256
// that identify the spec read from file (the built-in quickstart when file
// is empty: quickstart gives it).
func Source(file string, quickstart func() (name string, src []byte, ok bool)) (Record, error) {
	var src []byte
	var p string
	if file == "" {
		name, b, ok := quickstart()
		if !ok {
			return Record{}, errors.New("no built-in quickstart spec")
		}
		p, src = "built-in:"+name, b
	} else {
		b, err := os.ReadFile(file)
		if err != nil {
			return Record{}, err
		}
		abs, err := filepath.Abs(file)
		if err != nil {
			return Record{}, err
		}
		// A spec reached through a symlink is its target's spec.
		if res, err := filepath.EvalSymlinks(abs); err == nil {
			abs = res
		}
		p, src = abs, b
	}
	sum := sha256.Sum256(src)
	return Record{Path: p, SHA256: hex.EncodeToString(sum[:])}, nil
}

// TakeOverFlag is the flag of spn run and spn table that lets a spec
// write into a results directory that holds another spec's tables.
const TakeOverFlag = "take-over"

// ConflictError says that a results directory holds another spec's
// tables.
type ConflictError struct{ msg string }

func (e *ConflictError) Error() string { return e.msg }

// Prepare runs before any stage: it checks that the tables' directory out
// can be written, without creating it, and returns it with rec, the record
// of the spec (named specName) that will write there (written with the
// tables, see Dir.Record). A directory that records another spec file
// with other content is refused with a *ConflictError naming both (two
// specs would mix their tables there; outGiven: out was given by --out),
// unless takeOver: then the other spec's files that spn wrote are removed
// with the tables' write.
func Prepare(out string, rec Record, specName string, outGiven, takeOver bool) (Dir, error) {
	if b, err := os.ReadFile(filepath.Join(out, RecordFile)); err == nil && !takeOver {
		var old Record
		if json.Unmarshal(b, &old) == nil && !sameSpecFile(old.Path, rec.Path) && old.SHA256 != rec.SHA256 {
			other, how := fmt.Sprintf("another spec named %q", specName), "give this one another directory with --out, rename one of the specs, or pass --"+TakeOverFlag+" to replace its tables"
			if outGiven {
				other, how = "another spec", "give this one another --out, or pass --"+TakeOverFlag+" to replace its tables"
			}
			return Dir{}, &ConflictError{fmt.Sprintf("%s holds the tables of %s: %s (sha256 %.12s), this is %s (sha256 %.12s); %s",
				out, other, old.Path, old.SHA256, rec.Path, rec.SHA256, how)}
		}
	}
	if err := ProbeWritable(out); err != nil {
		return Dir{}, fmt.Errorf("the tables' directory %s is not writable: %w; nothing was run (give a writable --out)", out, err)
	}
	return Dir{Path: out, Spec: rec}, nil
}

// sameSpecFile reports whether the spec paths a and b (as recorded) name
// one file: equal paths, or two paths (a symlink and its target) of the
// same existing file.
func sameSpecFile(a, b string) bool {
	if a == b {
		return true
	}
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	return err == nil && os.SameFile(fa, fb)
}

// probeSize is the size of the file ProbeWritable writes: a disk too
// full for it would fail the tables after hours of compute.
const probeSize = 1 << 20

// ProbeWritable checks that files can be written in dir: it writes
// probeSize bytes into a temporary file in dir or, when dir does not
// exist yet, in its nearest existing ancestor, which must be a
// directory, and removes it.
func ProbeWritable(dir string) error {
	d := dir
	for {
		fi, err := os.Stat(d)
		if err == nil {
			if !fi.IsDir() {
				return fmt.Errorf("%s is not a directory", d)
			}
			break
		}
		parent := filepath.Dir(d)
		if !errors.Is(err, fs.ErrNotExist) || parent == d {
			return err
		}
		d = parent
	}
	f, err := os.CreateTemp(d, ".spn-write-test-*")
	if err != nil {
		return err
	}
	name := f.Name()
	_, err = f.Write(make([]byte, probeSize))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if rerr := os.Remove(name); err == nil {
		err = rerr
	}
	if err != nil {
		return fmt.Errorf("writing %d KiB there: %w", probeSize>>10, err)
	}
	return nil
}

// Dir is where a command writes its tables, proved writable by Prepare,
// with the record of the spec they come from.
type Dir struct {
	Path string
	Spec Record
}

// Previous returns the names of the files spn wrote into the directory
// by its record (none without a readable one).
func (d Dir) Previous() []string {
	b, err := os.ReadFile(filepath.Join(d.Path, RecordFile))
	if err != nil {
		return nil
	}
	var old Record
	if json.Unmarshal(b, &old) != nil {
		return nil
	}
	var names []string
	for _, f := range old.Files {
		// Only plain names in the directory, never the record itself.
		if f != "" && f == filepath.Base(f) && f != "." && f != ".." && f != RecordFile {
			names = append(names, f)
		}
	}
	return names
}

// Record writes the spec's record into the directory (created if needed),
// listing files as written by spn; the commands call it before the tables with the files spn wrote before (so that a write
// cut short still knows them), and after them with the files now there.
func (d Dir) Record(files []string) error {
	rec := d.Spec
	rec.Files = slices.Compact(slices.Sorted(slices.Values(files)))
	b, err := json.MarshalIndent(rec, "", "  ")
	if err == nil {
		err = atomicfile.WriteFile(filepath.Join(d.Path, RecordFile), append(b, '\n'), 0o644)
	}
	return err
}

// Prune removes the files spn wrote before (old) that are not among
// written, the base names of the files this write wrote: the tables and
// figures of another spec, or of this spec before it dropped them. Then
// it records written.
func (d Dir) Prune(old, written []string) error {
	for _, f := range old {
		if slices.Contains(written, f) {
			continue
		}
		if err := os.Remove(filepath.Join(d.Path, f)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("removing %s, a table no longer written there: %w", filepath.Join(d.Path, f), err)
		}
	}
	return d.Record(written)
}

// BaseNames returns the base names of paths.
func BaseNames(paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = filepath.Base(p)
	}
	return out
}

// Default returns the tables' directory of a spec named specName: flag
// (--out) when set, else results/<specName>.
func Default(flag, specName string) string {
	if flag != "" {
		return flag
	}
	return filepath.Join("results", specName)
}

// CopyArtifacts copies the regular files of a stage dir (record.json
// excluded) into out, each through a temp file and a rename. It returns
// the written paths in name order.
func CopyArtifacts(stageDir, out string) ([]string, error) {
	ents, err := os.ReadDir(stageDir)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", stageDir, err)
	}
	var written []string
	for _, e := range ents {
		if !e.Type().IsRegular() || e.Name() == stages.FileRecord {
			continue
		}
		b, err := os.ReadFile(filepath.Join(stageDir, e.Name()))
		if err != nil {
			return written, fmt.Errorf("reading %s: %w", filepath.Join(stageDir, e.Name()), err)
		}
		dst := filepath.Join(out, e.Name())
		if err := atomicfile.WriteFile(dst, b, 0o644); err != nil {
			return written, err
		}
		written = append(written, dst)
	}
	sort.Strings(written)
	return written, nil
}
