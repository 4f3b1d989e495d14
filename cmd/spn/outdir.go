package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/spn-project/spn/internal/atomicfile"
	"github.com/spn-project/spn/schema"
)

// specRecordFile, in a results directory, names the spec whose tables it
// holds: its path and the SHA-256 of its source.
const specRecordFile = "spec-source.json"

// specRecord is the content of specRecordFile.
type specRecord struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
	// Files are the names of the tables' and figures' files spn wrote
	// into the directory for this spec: the next write of the directory
	// removes those its spec no longer writes, and nothing else (a file
	// spn did not write stays).
	Files []string `json:"files,omitempty"`
}

// specSource returns the path (absolute, symlinks resolved) and SHA-256
// that identify the spec read from file (the built-in quickstart when file
// is empty).
func specSource(en *engine, file string) (specRecord, error) {
	var src []byte
	var p string
	if file == "" {
		name, b, ok := en.quickstart()
		if !ok {
			return specRecord{}, errors.New("no built-in quickstart spec")
		}
		p, src = "built-in:"+name, b
	} else {
		b, err := os.ReadFile(file)
		if err != nil {
			return specRecord{}, err
		}
		abs, err := filepath.Abs(file)
		if err != nil {
			return specRecord{}, err
		}
		// A spec reached through a symlink is its target's spec.
		if res, err := filepath.EvalSymlinks(abs); err == nil {
			abs = res
		}
		p, src = abs, b
	}
	sum := sha256.Sum256(src)
	return specRecord{Path: p, SHA256: hex.EncodeToString(sum[:])}, nil
}

// takeOverFlag is the flag of spn run and spn table that lets a spec
// write into a results directory that holds another spec's tables.
const takeOverFlag = "take-over"

// prepareOut runs before any stage: it checks that the tables' directory
// (the --out flag value, or results/<spec name>) can be written, without
// creating it, and returns it with the record of the spec that will write
// there (written with the tables, see tablesDir.record). A directory that
// records another spec file with other content is refused, naming both
// (two specs would mix their tables there), unless takeOver: then the
// other spec's files that spn wrote are removed with the tables' write.
func (a *app) prepareOut(en *engine, cmd, file string, spec *schema.Spec, flagOut string, takeOver bool) (tablesDir, error) {
	out := outDir(flagOut, spec)
	rec, err := specSource(en, file)
	if err != nil {
		return tablesDir{}, runtimeErr(cmd, err)
	}
	if b, err := os.ReadFile(filepath.Join(out, specRecordFile)); err == nil && !takeOver {
		var old specRecord
		if json.Unmarshal(b, &old) == nil && !sameSpecFile(old.Path, rec.Path) && old.SHA256 != rec.SHA256 {
			other, how := fmt.Sprintf("another spec named %q", spec.Name), "give this one another directory with --out, rename one of the specs, or pass --"+takeOverFlag+" to replace its tables"
			if flagOut != "" {
				other, how = "another spec", "give this one another --out, or pass --"+takeOverFlag+" to replace its tables"
			}
			return tablesDir{}, usageErrf(cmd, "%s holds the tables of %s: %s (sha256 %.12s), this is %s (sha256 %.12s); %s",
				out, other, old.Path, old.SHA256, rec.Path, rec.SHA256, how)
		}
	}
	if err := probeWritable(out); err != nil {
		return tablesDir{}, runtimeErrf(cmd, "the tables' directory %s is not writable: %w; nothing was run (give a writable --out)", out, err)
	}
	return tablesDir{cmd: cmd, path: out, spec: rec}, nil
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

// probeSize is the size of the file probeWritable writes: a disk too
// full for it would fail the tables after hours of compute.
const probeSize = 1 << 20

// probeWritable checks that files can be written in dir: it writes
// probeSize bytes into a temporary file in dir or, when dir does not
// exist yet, in its nearest existing ancestor, which must be a
// directory, and removes it.
func probeWritable(dir string) error {
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

// tablesDir is where a command writes its tables, proved writable by
// prepareOut, with the record of the spec they come from.
type tablesDir struct {
	cmd  string // the command, for messages
	path string
	spec specRecord
}

// previous returns the names of the files spn wrote into the directory
// by its record (none without a readable one).
func (d tablesDir) previous() []string {
	b, err := os.ReadFile(filepath.Join(d.path, specRecordFile))
	if err != nil {
		return nil
	}
	var old specRecord
	if json.Unmarshal(b, &old) != nil {
		return nil
	}
	var names []string
	for _, f := range old.Files {
		// Only plain names in the directory, never the record itself.
		if f != "" && f == filepath.Base(f) && f != "." && f != ".." && f != specRecordFile {
			names = append(names, f)
		}
	}
	return names
}

// record writes the spec's record into the directory (created if needed),
// listing files as written by spn; writeTables and writePartialTables call
// it before the tables with the files spn wrote before (so that a write
// cut short still knows them), and after them with the files now there.
func (d tablesDir) record(files []string) error {
	rec := d.spec
	rec.Files = slices.Compact(slices.Sorted(slices.Values(files)))
	b, err := json.MarshalIndent(rec, "", "  ")
	if err == nil {
		err = atomicfile.WriteFile(filepath.Join(d.path, specRecordFile), append(b, '\n'), 0o644)
	}
	if err != nil {
		return runtimeErr(d.cmd, err)
	}
	return nil
}

// prune removes the files spn wrote before (old) that are not among
// written, the base names of the files this write wrote: the tables and
// figures of another spec, or of this spec before it dropped them. Then
// it records written.
func (d tablesDir) prune(old, written []string) error {
	for _, f := range old {
		if slices.Contains(written, f) {
			continue
		}
		if err := os.Remove(filepath.Join(d.path, f)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return runtimeErrf(d.cmd, "removing %s, a table no longer written there: %w", filepath.Join(d.path, f), err)
		}
	}
	return d.record(written)
}

// baseNames returns the base names of paths.
func baseNames(paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = filepath.Base(p)
	}
	return out
}

// takeOverFlagVar registers --take-over on fs.
func takeOverFlagVar(fs *flag.FlagSet) *bool {
	return fs.Bool(takeOverFlag, false, "write the tables into a results directory that holds another spec's, removing the files spn wrote there for it")
}
