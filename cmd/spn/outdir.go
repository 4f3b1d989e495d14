package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spn-project/spn/schema"
	"github.com/spn-project/spn/stages/cache"
)

// specRecordFile, in a results directory, names the spec whose tables it
// holds: its path and the SHA-256 of its source.
const specRecordFile = "spec-source.json"

// specRecord is the content of specRecordFile.
type specRecord struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
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

// prepareOut runs before any stage: it checks that the tables' directory
// (the --out flag value, or results/<spec name>) can be written, without
// creating it, and returns it with the record of the spec that will write
// there (written with the tables, see tablesDir.record). Without --out, a directory that records another spec file with
// other content is refused, naming both: two specs with the same name
// would overwrite each other's tables.
func (a *app) prepareOut(en *engine, cmd, file string, spec *schema.Spec, flagOut string) (tablesDir, error) {
	out := outDir(flagOut, spec)
	rec, err := specSource(en, file)
	if err != nil {
		return tablesDir{}, runtimeErr(cmd, err)
	}
	if flagOut == "" {
		if b, err := os.ReadFile(filepath.Join(out, specRecordFile)); err == nil {
			var old specRecord
			if json.Unmarshal(b, &old) == nil && !sameSpecFile(old.Path, rec.Path) && old.SHA256 != rec.SHA256 {
				return tablesDir{}, usageErrf(cmd, "%s holds the tables of another spec named %q: %s (sha256 %.12s), this is %s (sha256 %.12s); give this one another directory with --out, or rename one of the specs",
					out, spec.Name, old.Path, old.SHA256, rec.Path, rec.SHA256)
			}
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

// probeWritable checks that files can be written in dir: it creates and
// removes a temporary file in dir or, when dir does not exist yet, in its
// nearest existing ancestor, which must be a directory.
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
	f.Close()
	return os.Remove(name)
}

// tablesDir is where a command writes its tables, proved writable by
// prepareOut, with the record of the spec they come from.
type tablesDir struct {
	cmd  string // the command, for messages
	path string
	spec specRecord
}

// record writes the spec's record into the directory (created if needed);
// writeTables and writePartialTables call it before the tables.
func (d tablesDir) record() error {
	b, err := json.MarshalIndent(d.spec, "", "  ")
	if err == nil {
		err = cache.WriteFileAtomic(filepath.Join(d.path, specRecordFile), append(b, '\n'))
	}
	if err != nil {
		return runtimeErr(d.cmd, err)
	}
	return nil
}
