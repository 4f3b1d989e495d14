package cache

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzIndexEntry: whatever bytes an index file holds (a torn or foreign
// file), Last never fails or panics; it reports an entry only when the file
// decodes as one.
func FuzzIndexEntry(f *testing.F) {
	f.Add([]byte(`{"key":"k","version":"1"}`))
	f.Add([]byte(`{"key":`))
	f.Add([]byte(``))
	f.Add([]byte(`[1,2]`))
	f.Add([]byte("\x00\xff"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		c := &Cache{Root: dir}
		p := c.indexPath("train", "v")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		key, version, ok, err := c.Last("train", "v")
		if err != nil {
			t.Fatalf("Last: %v", err)
		}
		var e indexEntry
		valid := json.Unmarshal(data, &e) == nil
		if ok != valid || (ok && (key != e.Key || version != e.Version)) {
			t.Errorf("Last = %q %q %v for %q", key, version, ok, data)
		}
	})
}

// FuzzBoundEntry: whatever bytes a bound index file holds, Bound never
// fails or panics and lists only 64-character keys, each once; SetBound
// then writes an entry that lists the new key last, and BoundStage
// finds no stage (the cache holds none).
func FuzzBoundEntry(f *testing.F) {
	k := strings.Repeat("a", 64)
	f.Add([]byte(`{"keys":["` + k + `"]}`))
	f.Add([]byte(`{"key":"` + k + `","keys":["` + k + `","x"]}`))
	f.Add([]byte(`{"keys":[1]}`))
	f.Add([]byte(`{"key":`))
	f.Add([]byte(``))
	f.Add([]byte("\x00\xff"))
	dir := f.TempDir()
	b := strings.Repeat("b", 64)
	f.Fuzz(func(t *testing.T, data []byte) {
		c := &Cache{Root: dir}
		p := c.boundPath("train", b)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		keys, err := c.Bound("train", b)
		if err != nil {
			t.Fatalf("Bound: %v", err)
		}
		seen := map[string]bool{}
		for _, key := range keys {
			if len(key) != 64 || seen[key] {
				t.Fatalf("Bound = %q for %q", keys, data)
			}
			seen[key] = true
		}
		if _, ok, err := c.BoundStage("train", b, ""); ok || err != nil {
			t.Fatalf("BoundStage found a stage in an empty cache: %v, %v", ok, err)
		}
		if err := c.SetBound("train", b, k); err != nil {
			t.Fatalf("SetBound: %v", err)
		}
		if keys, err := c.Bound("train", b); err != nil || len(keys) == 0 || keys[len(keys)-1] != k {
			t.Fatalf("after SetBound: %q, %v", keys, err)
		}
	})
}
