package cache

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spn-project/spn/stages"
)

// Damage says why a stage directory that has a record.json cannot be
// served: its record is unreadable, or an artifact is missing, was added
// or changed since the stage was committed. The stage then counts as not
// cached and runs again.
type Damage struct {
	// Dir is the stage directory.
	Dir string
	// File is the artifact at fault, relative to Dir.
	File string
	// Problem says what is wrong with it.
	Problem string
}

func (d *Damage) Error() string {
	return fmt.Sprintf("%s: %s", filepath.Join(d.Dir, filepath.FromSlash(d.File)), d.Problem)
}

// Stray is an entry of the cache that is not what spn writes there: a
// file or a link loop where a folder belongs (a stage's, its kind's or
// prefix's, or any other folder of the cache root: tmp, locks, ...), or a
// folder at a path no stage has. Verify reports them, gc removes them.
type Stray struct {
	Path, Problem string
}

// kindFolders are the stage kinds whose folders hold stages; the cache
// root's other folders (tmp, locks, index, failed, slurm, ptx) are only
// checked to be folders.
var kindFolders = []string{stages.KindGenerate, stages.KindPrecompute, stages.KindTrain, stages.KindSelect, stages.KindEvaluate, stages.KindTabulate, stages.KindFigure}

// Strays lists the entries of the cache that are not well-formed: see
// Stray. The lock file is one of spn's.
func (c *Cache) Strays() ([]Stray, error) {
	top, err := os.ReadDir(c.Root)
	if err != nil {
		return nil, fmt.Errorf("listing cache %s: %w", c.Root, err)
	}
	var out []Stray
	for _, k := range top {
		p := filepath.Join(c.Root, k.Name())
		if p == c.LockPath() {
			continue
		}
		if why := notFolder(p); why != "" {
			out = append(out, Stray{p, why})
			continue
		}
		if !slices.Contains(kindFolders, k.Name()) {
			continue
		}
		prefixes, err := os.ReadDir(p)
		if err != nil {
			return nil, fmt.Errorf("listing cache %s: %w", c.Root, err)
		}
		for _, pre := range prefixes {
			pp := filepath.Join(p, pre.Name())
			if why := notFolder(pp); why != "" {
				out = append(out, Stray{pp, why})
				continue
			}
			keys, err := os.ReadDir(pp)
			if err != nil {
				return nil, fmt.Errorf("listing cache %s: %w", c.Root, err)
			}
			for _, key := range keys {
				kp := filepath.Join(pp, key.Name())
				switch {
				case notFolder(kp) != "":
					out = append(out, Stray{kp, notFolder(kp)})
				case kp != c.StageDir(k.Name(), key.Name()):
					out = append(out, Stray{kp, "a folder at a path no stage has"})
				}
			}
		}
	}
	return out, nil
}

// checkResult is the memoised outcome of one Check.
type checkResult struct {
	ok     bool
	damage *Damage
}

// Check reports whether the stage kind/key is complete and intact: its
// record.json parses, and every artifact the record lists has the size
// and SHA-256 it had when the stage was committed, with no artifact
// missing or added. A stage that is present but fails verification
// returns ok false and its Damage; I/O errors other than "does not exist"
// are returned as err. Records written before checksums existed (no
// "files") are served unverified; Verify reports them.
//
// The outcome is kept for the life of c, so a stage is hashed once per
// process; Commit updates it.
func (c *Cache) Check(kind, key string) (ok bool, damage *Damage, err error) {
	id := kind + "/" + key
	c.mu.Lock()
	r, seen := c.checked[id]
	c.mu.Unlock()
	// An absent stage is always looked up again: another writer (process,
	// Slurm job) may commit it at any time.
	if seen && (r.ok || r.damage != nil) {
		return r.ok, r.damage, nil
	}
	ok, damage, err = c.check(kind, key)
	if err != nil {
		return false, nil, err
	}
	c.remember(id, checkResult{ok: ok, damage: damage})
	return ok, damage, nil
}

// Forget drops the outcomes Check remembers, so the next Check looks at
// the disk again (after another process may have written stages).
func (c *Cache) Forget() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.checked = nil
}

func (c *Cache) remember(id string, r checkResult) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.checked == nil {
		c.checked = map[string]checkResult{}
	}
	c.checked[id] = r
}

func (c *Cache) check(kind, key string) (bool, *Damage, error) {
	dir := c.StageDir(kind, key)
	b, err := os.ReadFile(filepath.Join(dir, stages.FileRecord))
	if errors.Is(err, os.ErrNotExist) && notFolder(dir) == "" {
		return false, nil, nil
	}
	if err != nil {
		// A file or a link loop in place of the stage's folder, or of a
		// folder above it: damage, so that the stage runs again (Commit
		// replaces it).
		for _, p := range []string{filepath.Join(c.Root, kind), filepath.Dir(dir), dir} {
			if why := notFolder(p); why != "" {
				return false, &Damage{Dir: p, Problem: why}, nil
			}
		}
	}
	if err != nil {
		return false, nil, fmt.Errorf("checking cache for %s %s: %w", kind, key, err)
	}
	var rec Record
	if err := json.Unmarshal(b, &rec); err != nil {
		return false, &Damage{Dir: dir, File: stages.FileRecord, Problem: fmt.Sprintf("unreadable record (%v)", err)}, nil
	}
	if rec.Key != key || rec.Kind != kind {
		return false, &Damage{Dir: dir, File: stages.FileRecord, Problem: fmt.Sprintf("record is for %s %s, not this stage", rec.Kind, rec.Key)}, nil
	}
	if rec.Files == nil {
		return true, nil, nil // written before checksums
	}
	have, err := Checksums(dir)
	if err != nil {
		return false, nil, fmt.Errorf("checking cache for %s %s: %w", kind, key, err)
	}
	if d := compareSums(rec.Files, have); d != nil {
		d.Dir = dir
		return false, d, nil
	}
	return true, nil, nil
}

// compareSums returns the first difference between the recorded and the
// present checksums, in file name order.
func compareSums(want, have map[string]string) *Damage {
	names := make([]string, 0, len(want)+len(have))
	for n := range want {
		names = append(names, n)
	}
	for n := range have {
		if _, ok := want[n]; !ok {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	for _, n := range names {
		w, inWant := want[n]
		h, inHave := have[n]
		switch {
		case !inHave:
			return &Damage{File: n, Problem: "missing (listed in record.json)"}
		case !inWant:
			return &Damage{File: n, Problem: "not written by the stage (not listed in record.json)"}
		case w != h:
			return &Damage{File: n, Problem: fmt.Sprintf("checksum mismatch: the file was changed after the stage wrote it (want %s, have %s)", w, h)}
		}
	}
	return nil
}

// Checksums returns "sha256:HEX" for every regular file below dir except
// record.json, keyed by slash-separated relative path. Anything that is
// neither a regular file nor a directory (a symlink, a device) is an
// error: a stage writes only regular files.
func Checksums(dir string) (map[string]string, error) {
	sums := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		switch {
		case d.IsDir():
			return nil
		case rel == stages.FileRecord:
			return nil
		case !d.Type().IsRegular():
			sums[rel] = "not a regular file"
			return nil
		}
		sum, err := fileSum(path)
		if err != nil {
			return err
		}
		sums[rel] = sum
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("hashing %s: %w", dir, err)
	}
	return sums, nil
}

func fileSum(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

// Entry is one stage directory found in a cache.
type Entry struct {
	Kind, Key string
	// Dir is the stage directory.
	Dir string
	// Name is the stage name from its record ("" when unreadable).
	Name string
	// Bytes is the total size of its files, record included.
	Bytes int64
}

// Entries lists every stage directory of the cache that holds a
// record.json (complete stages, damaged or not), sorted by kind and key.
// The tmp/ and index/ folders and the lock are not stages.
func (c *Cache) Entries() ([]Entry, error) {
	kinds, err := os.ReadDir(c.Root)
	if err != nil {
		return nil, fmt.Errorf("listing cache %s: %w", c.Root, err)
	}
	var out []Entry
	for _, k := range kinds {
		if !k.IsDir() || k.Name() == "tmp" || k.Name() == "index" {
			continue
		}
		prefixes, err := os.ReadDir(filepath.Join(c.Root, k.Name()))
		if err != nil {
			return nil, fmt.Errorf("listing cache %s: %w", c.Root, err)
		}
		for _, p := range prefixes {
			if !p.IsDir() {
				continue
			}
			keys, err := os.ReadDir(filepath.Join(c.Root, k.Name(), p.Name()))
			if err != nil {
				return nil, fmt.Errorf("listing cache %s: %w", c.Root, err)
			}
			for _, key := range keys {
				dir := filepath.Join(c.Root, k.Name(), p.Name(), key.Name())
				if !key.IsDir() || dir != c.StageDir(k.Name(), key.Name()) {
					continue
				}
				if _, err := os.Stat(filepath.Join(dir, stages.FileRecord)); err != nil {
					continue
				}
				e := Entry{Kind: k.Name(), Key: key.Name(), Dir: dir}
				if rec, err := c.ReadRecord(e.Kind, e.Key); err == nil {
					e.Name = rec.Name
				}
				e.Bytes = dirSize(dir)
				out = append(out, e)
			}
		}
	}
	slices.SortFunc(out, func(a, b Entry) int {
		if c := strings.Compare(a.Kind, b.Kind); c != 0 {
			return c
		}
		return strings.Compare(a.Key, b.Key)
	})
	return out, nil
}

func dirSize(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}

// Unverifiable reports whether the intact stage kind/key was written
// before checksums existed, so Check served it without verifying it.
func (c *Cache) Unverifiable(kind, key string) bool {
	rec, err := c.ReadRecord(kind, key)
	return err == nil && rec.Files == nil
}

// Remove deletes the stage directory kind/key. Call it only while holding
// the exclusive lock. The directory is first renamed into tmp/, so a
// killed removal never leaves a half-deleted stage that looks complete.
func (c *Cache) Remove(kind, key string) error {
	dir := c.StageDir(kind, key)
	tmp, err := c.NewTemp(key)
	if err != nil {
		return err
	}
	if err := os.Remove(tmp); err != nil {
		return fmt.Errorf("removing %s: %w", dir, err)
	}
	if err := os.Rename(dir, tmp); err != nil {
		return fmt.Errorf("removing %s: %w", dir, err)
	}
	c.remember(kind+"/"+key, checkResult{})
	if err := os.RemoveAll(tmp); err != nil {
		return fmt.Errorf("removing %s: %w", dir, err)
	}
	return nil
}
