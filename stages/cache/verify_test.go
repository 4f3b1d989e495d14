package cache

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spn-project/spn/stages"
)

// commitStage commits a stage with two artifacts, one in a subfolder.
func commitStage(t *testing.T, c *Cache, key string) string {
	t.Helper()
	tmp, err := c.NewTemp(key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tmp, "a.bin"), []byte("artifact a"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(tmp, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tmp, "sub", "b.json"), []byte(`{"b": 1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := c.Commit(tmp, &Record{Key: key, Kind: "k", Name: "stage " + key}); err != nil {
		t.Fatal(err)
	}
	return c.StageDir("k", key)
}

func TestCheckDamage(t *testing.T) {
	flip := func(p string) func(string) error {
		return func(dir string) error {
			b, err := os.ReadFile(filepath.Join(dir, p))
			if err != nil {
				return err
			}
			b[0] ^= 1
			return os.WriteFile(filepath.Join(dir, p), b, 0o644)
		}
	}
	cases := []struct {
		name, file, problem string
		damage              func(dir string) error
	}{
		{"flipped byte", "a.bin", "checksum mismatch", flip("a.bin")},
		{"flipped byte in subfolder", "sub/b.json", "checksum mismatch", flip("sub/b.json")},
		{"missing", "a.bin", "missing", func(dir string) error { return os.Remove(filepath.Join(dir, "a.bin")) }},
		{"added", "c.txt", "not written by the stage", func(dir string) error {
			return os.WriteFile(filepath.Join(dir, "c.txt"), nil, 0o644)
		}},
		{"truncated record", stages.FileRecord, "unreadable record", func(dir string) error {
			return os.WriteFile(filepath.Join(dir, stages.FileRecord), []byte(`{"key": `), 0o644)
		}},
		{"symlink", "a.bin", "checksum mismatch", func(dir string) error {
			p := filepath.Join(dir, "a.bin")
			os.Remove(p)
			return os.Symlink("/etc/hostname", p)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			c := &Cache{Root: root}
			dir := commitStage(t, c, "abcdef")
			if ok, err := (&Cache{Root: root}).Has("k", "abcdef"); !ok || err != nil {
				t.Fatalf("intact stage: Has = %v, %v", ok, err)
			}
			if err := tc.damage(dir); err != nil {
				t.Fatal(err)
			}
			var warned []*Damage
			c2 := &Cache{Root: root, Warn: func(d *Damage) { warned = append(warned, d) }}
			for range 2 {
				if ok, err := c2.Has("k", "abcdef"); ok || err != nil {
					t.Fatalf("damaged stage: Has = %v, %v", ok, err)
				}
			}
			if len(warned) != 1 {
				t.Fatalf("warned %d times, want once", len(warned))
			}
			d := warned[0]
			if d.File != tc.file || !strings.Contains(d.Problem, tc.problem) || !strings.Contains(d.Error(), filepath.Join(dir, filepath.FromSlash(tc.file))) {
				t.Errorf("damage = %v, want file %s, problem %q", d, tc.file, tc.problem)
			}
			// Running the stage again replaces the damaged directory.
			commitStage(t, c2, "abcdef")
			if ok, _ := (&Cache{Root: root}).Has("k", "abcdef"); !ok {
				t.Errorf("re-committed stage is not served")
			}
			if ok, _ := c2.Has("k", "abcdef"); !ok {
				t.Errorf("re-committed stage is not served by the cache that committed it")
			}
		})
	}
}

func TestCheckLegacyRecord(t *testing.T) {
	root := t.TempDir()
	c := &Cache{Root: root}
	dir := commitStage(t, c, "abcdef")
	b, _ := os.ReadFile(filepath.Join(dir, stages.FileRecord))
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if _, ok := m["files"]; !ok {
		t.Fatalf("record.json has no files: %s", b)
	}
	delete(m, "files")
	b, _ = json.Marshal(m)
	os.WriteFile(filepath.Join(dir, stages.FileRecord), b, 0o644)
	c2 := &Cache{Root: root}
	if ok, err := c2.Has("k", "abcdef"); !ok || err != nil {
		t.Errorf("record without checksums: Has = %v, %v", ok, err)
	}
	if !c2.Unverifiable("k", "abcdef") {
		t.Errorf("record without checksums is not reported unverifiable")
	}
}

func TestEntriesAndRemove(t *testing.T) {
	root := t.TempDir()
	c := &Cache{Root: root}
	commitStage(t, c, "bbbb")
	commitStage(t, c, "aaaa")
	os.MkdirAll(filepath.Join(root, "k", "cc", "cccc"), 0o755) // no record: not a stage
	es, err := c.Entries()
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 2 || es[0].Key != "aaaa" || es[1].Key != "bbbb" || es[0].Name != "stage aaaa" || es[0].Bytes == 0 {
		t.Fatalf("entries = %+v", es)
	}
	if err := c.Remove("k", "aaaa"); err != nil {
		t.Fatal(err)
	}
	if ok, _ := c.Has("k", "aaaa"); ok {
		t.Errorf("removed stage still served")
	}
	if _, err := os.Stat(c.StageDir("k", "aaaa")); !os.IsNotExist(err) {
		t.Errorf("removed stage dir still there: %v", err)
	}
}
