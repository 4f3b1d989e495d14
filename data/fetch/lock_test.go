package fetch

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/spn-project/spn/internal/testkit/golden"
)

const lockSHA = "7a4d3c1e0b5f6a7d8c9e0f1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e"

// TestParseLockErrors: each kind of broken lock file is refused with the
// file, and the line and column or the entry, named
// (testdata/lock_errors.golden).
func TestParseLockErrors(t *testing.T) {
	entry := func(rel, sha, size, url string) string {
		return `{"version": 1, "files": {"` + rel + `": {"sha256": "` + sha + `", "size": ` + size + `, "url": "` + url + `"}}}`
	}
	const u = "https://www.chrsmrrs.com/graphkerneldatasets/PROTEINS.zip"
	var out strings.Builder
	for _, c := range []struct{ name, in string }{
		{"syntax", "{\"version\": 1,\n \"files\": {,}}"},
		{"wrong type", `{"version": "1"}`},
		{"unknown field", `{"version": 1, "fiels": {}}`},
		{"trailing data", "{\"version\": 1}\n{\"version\": 1}"},
		{"empty", ``},
		{"version", `{"version": 2, "files": {}}`},
		{"no version", `{"files": {}}`},
		{"sha256 short", entry("tu/PROTEINS.zip", "abc", "1", u)},
		{"sha256 upper case", entry("tu/PROTEINS.zip", strings.ToUpper(lockSHA), "1", u)},
		{"negative size", entry("tu/PROTEINS.zip", lockSHA, "-1", u)},
		{"no url", entry("tu/PROTEINS.zip", lockSHA, "1", "")},
		{"path outside", entry("../PROTEINS.zip", lockSHA, "1", u)},
		{"absolute path", entry("/tu/PROTEINS.zip", lockSHA, "1", u)},
		{"unclean path", entry("tu//PROTEINS.zip", lockSHA, "1", u)},
		{"empty path", entry("", lockSHA, "1", u)},
	} {
		_, err := parseLock("spn-data.lock.json", []byte(c.in))
		if err == nil {
			t.Errorf("%s: parsed", c.name)
			continue
		}
		out.WriteString(c.name + ": " + err.Error() + "\n")
	}
	golden.CheckString(t, "testdata/lock_errors.golden", out.String())
	lk, err := parseLock("l", []byte(entry("tu/PROTEINS.zip", lockSHA, "7", u)))
	if err != nil || !reflect.DeepEqual(lk.Files, map[string]lockEntry{"tu/PROTEINS.zip": {lockSHA, 7, u}}) {
		t.Errorf("a good lock: %+v, %v", lk, err)
	}
	if lk, err := parseLock("l", []byte(`{"version": 1}`)); err != nil || lk.Files == nil {
		t.Errorf("a lock without files: %+v, %v (want an empty map)", lk, err)
	}
}

// FuzzParseLock: parseLock never panics; what it accepts is of version
// 1 with every entry valid, and writing it as writeLock does and parsing
// that again gives the same lock.
func FuzzParseLock(f *testing.F) {
	f.Add([]byte(`{"version": 1, "files": {"tu/PROTEINS.zip": {"sha256": "` + lockSHA + `", "size": 7, "url": "u"}}}`))
	f.Add([]byte(`{"version": 1}`))
	f.Add([]byte(`{"version": 1, "files": {"a/../b": {}}}`))
	f.Add([]byte("{\"version\": 1}\n["))
	f.Fuzz(func(t *testing.T, b []byte) {
		lk, err := parseLock("f", b)
		if err != nil {
			return
		}
		if lk.Version != 1 || lk.Files == nil {
			t.Fatalf("accepted %+v", lk)
		}
		for rel, e := range lk.Files {
			if rel == "" || strings.HasPrefix(rel, "/") || strings.Contains("/"+rel+"/", "/../") || !isSHA256(e.SHA256) || e.Size < 0 || e.URL == "" {
				t.Fatalf("accepted entry %q: %+v", rel, e)
			}
		}
		enc, err := json.MarshalIndent(lk, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		again, err := parseLock("f", append(enc, '\n'))
		if err != nil || !reflect.DeepEqual(again, lk) {
			t.Fatalf("round trip: %+v, %v; want %+v\n%s", again, err, lk, bytes.TrimSpace(enc))
		}
	})
}
