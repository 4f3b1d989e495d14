// Package cache stores finished stage artifacts on disk, keyed by stage key.
//
// Layout under the cache root:
//
//	<root>/<kind>/<key[:2]>/<key>/   artifacts plus record.json
//	<root>/tmp/<key>-<random>/       stages being written
//	<root>/index/<kind>/<vkey>.json  last key seen for a version-free params hash
//	<root>/index/<kind>/bound/<key>.json  stages that stood for the stage key (SetBound)
//	<root>/lock                      lock of one host's spn run (pid inside)
//	<root>/locks/<key>.lock          per-stage lock (see LockStage)
//	<root>/failed/<key>.json         last failure of a stage not yet done
//
// A stage directory counts as present only when its record.json exists and
// every artifact still has the SHA-256 the record lists (Check). The
// executor writes into a temp directory, writes record.json last and
// renames the directory into place, so readers never see partial
// artifacts; a damaged stage counts as not cached and runs again.
package cache

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spn-project/spn/internal/atomicfile"
	"github.com/spn-project/spn/stages"
)

// Env names and defaults of the cache location.
const (
	// EnvVar names the environment variable that sets the cache directory.
	EnvVar = "SPN_CACHE"
	// DefaultDir is the cache directory, relative to the working directory,
	// when neither a flag nor EnvVar sets one.
	DefaultDir = ".spn/cache"
)

// Cache is an on-disk stage cache rooted at Root.
type Cache struct {
	// Root is the cache directory.
	Root string
	// Warn, if not nil, is told once about each damaged stage that Has
	// treats as not cached, naming the file at fault.
	Warn func(*Damage)

	mu      sync.Mutex
	checked map[string]checkResult // kind/key → outcome of Check
	warned  map[string]bool
}

// Open returns the cache rooted at root, creating the directory if needed.
func Open(root string) (*Cache, error) {
	if root == "" {
		return nil, errors.New("opening cache: empty directory name")
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("opening cache %s: %w", root, err)
	}
	c := &Cache{Root: root}
	// A file or a broken link in place of tmp or locks (which hold nothing
	// that outlives a run) is removed; the folder is made when needed.
	for _, p := range []string{c.tmpRoot(), c.locksRoot()} {
		if notFolder(p) != "" {
			if err := os.Remove(p); err != nil {
				return nil, fmt.Errorf("opening cache %s: removing %s, which is not a folder: %w", root, p, err)
			}
		}
	}
	return c, nil
}

// Resolve picks the cache directory: the flag value if set, else the
// SPN_CACHE value from getenv, else DefaultDir under wd.
func Resolve(flagValue string, getenv func(string) string, wd string) string {
	if flagValue != "" {
		return flagValue
	}
	if getenv != nil {
		if v := getenv(EnvVar); v != "" {
			return v
		}
	}
	return filepath.Join(wd, DefaultDir)
}

// StageDir is the final directory of the stage kind/key.
func (c *Cache) StageDir(kind, key string) string {
	p := key
	if len(p) > 2 {
		p = key[:2]
	}
	return filepath.Join(c.Root, kind, p, key)
}

// Has reports whether the stage kind/key is complete and intact in the
// cache (see Check). A damaged stage is reported to Warn, once, and counts
// as absent, so it runs again.
func (c *Cache) Has(kind, key string) (bool, error) {
	ok, damage, err := c.Check(kind, key)
	if err != nil {
		return false, err
	}
	if damage != nil {
		c.mu.Lock()
		if c.warned == nil {
			c.warned = map[string]bool{}
		}
		first := !c.warned[kind+"/"+key]
		c.warned[kind+"/"+key] = true
		c.mu.Unlock()
		if first && c.Warn != nil {
			c.Warn(damage)
		}
	}
	return ok, nil
}

// Damaged returns the damage of the stage kind/key if it is present but
// fails verification, nil otherwise.
func (c *Cache) Damaged(kind, key string) *Damage {
	_, d, err := c.Check(kind, key)
	if err != nil {
		return nil
	}
	return d
}

// StageKeys returns the keys of kind that have a stage directory in the
// cache now, complete or not (Has tells which are): one listing per key
// prefix, where asking Has of every key of a large plan tries to open a
// record.json per key.
func (c *Cache) StageKeys(kind string) (map[string]bool, error) {
	root := filepath.Join(c.Root, kind)
	prefixes, err := os.ReadDir(root)
	if errors.Is(err, os.ErrNotExist) || notFolder(root) != "" {
		// A file or a broken link in place of the kind's folder holds no
		// stage; Strays reports it, Commit replaces it.
		return map[string]bool{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing cache %s: %w", root, err)
	}
	keys := map[string]bool{}
	for _, p := range prefixes {
		if !p.IsDir() {
			continue
		}
		ents, err := os.ReadDir(filepath.Join(root, p.Name()))
		if err != nil {
			return nil, fmt.Errorf("listing cache %s: %w", root, err)
		}
		for _, e := range ents {
			keys[e.Name()] = true
		}
	}
	return keys, nil
}

// IndexKeys returns the version-free hashes of kind the index holds now
// (SetLast), listed at once as StageKeys lists stages.
func (c *Cache) IndexKeys(kind string) (map[string]bool, error) {
	dir := filepath.Join(c.Root, "index", kind)
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]bool{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing cache index %s: %w", dir, err)
	}
	keys := map[string]bool{}
	for _, e := range ents {
		if name, ok := strings.CutSuffix(e.Name(), ".json"); ok && !e.IsDir() {
			keys[name] = true
		}
	}
	return keys, nil
}

// ReadRecord reads the record of a complete stage.
func (c *Cache) ReadRecord(kind, key string) (*Record, error) {
	path := filepath.Join(c.StageDir(kind, key), stages.FileRecord)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	var r Record
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return &r, nil
}

func (c *Cache) tmpRoot() string { return filepath.Join(c.Root, "tmp") }

// NewTemp creates a private, empty directory <root>/tmp/<key>-<random>/ for
// a stage being written.
func (c *Cache) NewTemp(key string) (string, error) {
	if err := ensureFolder(c.tmpRoot()); err != nil {
		return "", fmt.Errorf("creating cache temp dir: %w", err)
	}
	dir, err := os.MkdirTemp(c.tmpRoot(), key+"-")
	if err != nil {
		return "", fmt.Errorf("creating cache temp dir: %w", err)
	}
	return dir, nil
}

// CleanTemp removes the directories left under <root>/tmp by writers that
// died: every entry except those of stages whose per-stage lock a live
// writer holds (see LockStage), so it is safe while other processes or
// Slurm jobs write to the cache. It returns how many entries it removed.
func (c *Cache) CleanTemp() (int, error) {
	if notFolder(c.tmpRoot()) != "" {
		if err := os.Remove(c.tmpRoot()); err != nil {
			return 0, fmt.Errorf("removing %s, which is not a folder: %w", c.tmpRoot(), err)
		}
		return 1, nil
	}
	ents, err := os.ReadDir(c.tmpRoot())
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("listing %s: %w", c.tmpRoot(), err)
	}
	n := 0
	for _, e := range ents {
		p := filepath.Join(c.tmpRoot(), e.Name())
		if key, _, ok := strings.Cut(e.Name(), "-"); ok {
			if _, live := c.StageLocked(key, 0); live {
				continue
			}
		}
		if err := os.RemoveAll(p); err != nil {
			return n, fmt.Errorf("removing stale %s: %w", p, err)
		}
		n++
	}
	return n, nil
}

// Commit writes rec as record.json into the temp directory tmp (which holds
// the stage's artifacts) and renames tmp to the stage's final directory.
// If another writer committed the same key first, tmp is removed and the
// existing directory is kept (same key, same content).
func (c *Cache) Commit(tmp string, rec *Record) error {
	if rec.Key == "" || rec.Kind == "" {
		return errors.New("committing stage: record without kind or key")
	}
	recPath := filepath.Join(tmp, stages.FileRecord)
	if _, err := os.Lstat(recPath); err == nil {
		return fmt.Errorf("committing %s: the stage wrote its own %s", rec.Name, stages.FileRecord)
	}
	sums, err := Checksums(tmp)
	if err != nil {
		return fmt.Errorf("committing %s: %w", rec.Name, err)
	}
	for name, sum := range sums {
		if !strings.HasPrefix(sum, "sha256:") {
			return fmt.Errorf("committing %s: %s is %s", rec.Name, name, sum)
		}
	}
	rec.Files = sums
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding record of %s: %w", rec.Name, err)
	}
	if err := os.WriteFile(recPath, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", recPath, err)
	}
	final := c.StageDir(rec.Kind, rec.Key)
	// A file or a broken link where the kind's, the prefix's or the
	// stage's folder belongs is damage (Check): replace it.
	for _, p := range []string{filepath.Dir(filepath.Dir(final)), filepath.Dir(final), final} {
		if notFolder(p) != "" {
			if err := os.Remove(p); err != nil {
				return fmt.Errorf("committing %s: removing %s, which is not a folder: %w", rec.Name, p, err)
			}
		}
	}
	if err := os.MkdirAll(filepath.Dir(final), 0o755); err != nil {
		return fmt.Errorf("committing %s: %w", rec.Name, err)
	}
	id := rec.Kind + "/" + rec.Key
	if err := os.Rename(tmp, final); err != nil {
		c.remember(id, checkResult{}) // look again: another writer may have committed
		if ok, _, _ := c.Check(rec.Kind, rec.Key); ok {
			return os.RemoveAll(tmp)
		}
		// A record-less leftover (not a complete stage) or a damaged
		// stage may block the rename; neither is ever served, so
		// replace it.
		if _, serr := os.Stat(final); serr == nil {
			if rerr := os.RemoveAll(final); rerr != nil {
				return fmt.Errorf("committing %s: removing incomplete %s: %w", rec.Name, final, rerr)
			}
			if err2 := os.Rename(tmp, final); err2 == nil {
				c.remember(id, checkResult{ok: true})
				return nil
			}
		}
		return fmt.Errorf("committing %s to %s: %w", rec.Name, final, err)
	}
	c.remember(id, checkResult{ok: true})
	return nil
}

// Input is one dependency as recorded in a Record.
type Input struct {
	Kind string `json:"kind"`
	Key  string `json:"key"`
	Name string `json:"name"`
}

// Record is the provenance record (record.json) of a finished stage. It
// holds no host names or user names.
type Record struct {
	Key     string          `json:"key"`
	Kind    string          `json:"kind"`
	Version string          `json:"version"`
	Name    string          `json:"name"`
	Params  json.RawMessage `json:"params"`
	Inputs  []Input         `json:"inputs"`
	// BoundKey, for a stage that stood for another once its inputs were
	// finished (stages.Binder: a final train stage), is that stage's key;
	// Seed then derives from that stage's seed key.
	BoundKey string `json:"bound_key,omitempty"`
	// ReusedFrom, when set, is the key of an earlier stage bound to the
	// same BoundKey whose artifacts this stage took instead of running
	// (they are the bytes a run would write).
	ReusedFrom string `json:"reused_from,omitempty"`
	// Seed is the seed the stage received.
	Seed uint64 `json:"seed"`
	// Threads is how many threads the stage was allowed (for a stage
	// given more threads while it ran, the count at its end).
	Threads    int       `json:"threads"`
	Start      time.Time `json:"start"`
	End        time.Time `json:"end"`
	Seconds    float64   `json:"seconds"`
	SPNVersion string    `json:"spn_version"`
	GoVersion  string    `json:"go_version"`
	GOOS       string    `json:"goos"`
	GOARCH     string    `json:"goarch"`
	// Files holds "sha256:HEX" of every artifact (record.json excluded),
	// by slash-separated path relative to the stage directory. Check
	// verifies them before the stage is served. Nil in records written
	// before checksums existed.
	Files map[string]string `json:"files,omitempty"`
}

// indexEntry is what the index keeps for a version-free params hash.
type indexEntry struct {
	Key     string `json:"key"`
	Version string `json:"version"`
}

func (c *Cache) indexPath(kind, vkey string) string {
	return filepath.Join(c.Root, "index", kind, vkey+".json")
}

// SetLast records that key (of the given kind version) is the latest stage
// with the version-free hash vkey.
func (c *Cache) SetLast(kind, vkey, key, version string) error {
	p := c.indexPath(kind, vkey)
	b, err := json.Marshal(indexEntry{Key: key, Version: version})
	if err != nil {
		return fmt.Errorf("encoding index entry: %w", err)
	}
	if err := atomicfile.WriteFile(p, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("updating cache index: %w", err)
	}
	return nil
}

// Last returns the key and version last recorded for vkey, if any.
func (c *Cache) Last(kind, vkey string) (key, version string, ok bool, err error) {
	p := c.indexPath(kind, vkey)
	b, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return "", "", false, nil
	}
	if err != nil {
		return "", "", false, fmt.Errorf("reading %s: %w", p, err)
	}
	var e indexEntry
	if err := json.Unmarshal(b, &e); err != nil {
		// A damaged index entry only costs a less precise status reason.
		return "", "", false, nil
	}
	return e.Key, e.Version, true, nil
}

func (c *Cache) boundPath(kind, boundKey string) string {
	return filepath.Join(c.Root, "index", kind, "bound", boundKey+".json")
}

// boundEntry is what the index keeps for a bound key: the stages that
// stood for it, oldest first. Key is the one stage an entry written by
// spn before Keys existed names.
type boundEntry struct {
	Key  string   `json:"key,omitempty"`
	Keys []string `json:"keys,omitempty"`
}

// SetBound records that the stage kind/key stood for the stage boundKey
// (stages.Binder; Record.BoundKey), so that a later stage bound to the
// same stage can take its artifacts (BoundStage). The entry lists every
// such stage the cache still holds, so that removing one (spn cache gc)
// leaves the others to take from: key is added last, and stages no
// longer in the cache are dropped. Two writers updating one entry at
// once may drop each other's key, which costs at most a training.
func (c *Cache) SetBound(kind, boundKey, key string) error {
	old, err := c.Bound(kind, boundKey)
	if err != nil {
		return err
	}
	keys := make([]string, 0, len(old)+1)
	for _, k := range old {
		if k == key {
			continue
		}
		if _, err := os.Stat(filepath.Join(c.StageDir(kind, k), stages.FileRecord)); err == nil {
			keys = append(keys, k)
		}
	}
	b, err := json.Marshal(boundEntry{Keys: append(keys, key)})
	if err != nil {
		return fmt.Errorf("encoding index entry: %w", err)
	}
	if err := atomicfile.WriteFile(c.boundPath(kind, boundKey), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("updating cache index: %w", err)
	}
	return nil
}

// Bound returns the keys of the stages recorded as standing for the stage
// boundKey (SetBound), oldest first: what the index says, unchecked.
func (c *Cache) Bound(kind, boundKey string) ([]string, error) {
	p := c.boundPath(kind, boundKey)
	b, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", p, err)
	}
	var e boundEntry
	if json.Unmarshal(b, &e) != nil {
		return nil, nil // a damaged entry only costs a rerun
	}
	var keys []string
	for _, k := range append([]string{e.Key}, e.Keys...) {
		if len(k) == 64 && !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	return keys, nil
}

// BoundStage returns the newest stage of kind, other than except, that
// stood for the stage boundKey and is complete in the cache (Has), its
// record naming boundKey; ok is false when there is none.
func (c *Cache) BoundStage(kind, boundKey, except string) (key string, ok bool, err error) {
	keys, err := c.Bound(kind, boundKey)
	if err != nil {
		return "", false, err
	}
	for _, k := range slices.Backward(keys) {
		if k == except {
			continue
		}
		if has, err := c.Has(kind, k); err != nil || !has {
			continue
		}
		if rec, err := c.ReadRecord(kind, k); err == nil && rec.BoundKey == boundKey {
			return k, true, nil
		}
	}
	return "", false, nil
}

// notFolder says why path, which should be a folder of the cache, is not
// one: "a regular file" (or another non-folder), "a symbolic link loop",
// "a broken symbolic link"; "" when it is a folder (or a link to one) or
// does not exist.
func notFolder(path string) string {
	fi, err := os.Stat(path)
	switch {
	case err == nil && fi.IsDir():
		return ""
	case err == nil && fi.Mode().IsRegular():
		return "a regular file, not a folder"
	case err == nil:
		return fmt.Sprintf("not a folder (%s)", fi.Mode().Type())
	case errors.Is(err, syscall.ELOOP):
		return "a symbolic link loop, not a folder"
	case errors.Is(err, os.ErrNotExist):
		if li, lerr := os.Lstat(path); lerr == nil && li.Mode()&os.ModeSymlink != 0 {
			return "a broken symbolic link, not a folder"
		}
		return ""
	case errors.Is(err, syscall.ENOTDIR):
		return "" // a folder above it is not one; that one is reported
	}
	return fmt.Sprintf("unreadable (%v)", err)
}

// ensureFolder creates the folder path, first removing a file or a broken
// link in its place (the tmp and locks folders hold nothing that outlives
// a run, so what stands in their place is damage).
func ensureFolder(path string) error {
	if notFolder(path) != "" {
		if err := os.Remove(path); err != nil {
			return fmt.Errorf("removing %s, which is not a folder: %w", path, err)
		}
	}
	return os.MkdirAll(path, 0o755)
}
