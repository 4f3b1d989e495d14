package fetch

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

func sha(b string) string {
	s := sha256.Sum256([]byte(b))
	return hex.EncodeToString(s[:])
}

// redirect sends every request to the test server, keeping the path, so
// the real upstream URLs exercise the real HTTP code on loopback.
type redirect struct{ target *url.URL }

func (r redirect) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.URL.Scheme = r.target.Scheme
	req.URL.Host = r.target.Host
	return http.DefaultTransport.RoundTrip(req)
}

func TestLocalPath(t *testing.T) {
	tests := []struct {
		url, want string
		ok        bool
	}{
		{TUBase + "DD.zip", "tu/DD.zip", true},
		{ErricaBase + "NCI1_splits.json", "splits/errica/NCI1_splits.json", true},
		{QM9Base + "valid.jsonl.gz", "qm9/valid.jsonl.gz", true},
		{OGBBase + "bace.zip", "ogb/bace.zip", true},
		{ExpressivityBase + "EXP/raw/GRAPHSAT.txt", "expressivity/EXP/GRAPHSAT.txt", true},
		{ExpressivityBase + "CEXP/raw/GRAPHSAT.txt", "expressivity/CEXP/GRAPHSAT.txt", true},
		{ExpressivityBase + "EXP/GRAPHSAT.txt", "", false},
		{PeptidesFuncCSV, "lrgb/peptide_multi_class_dataset.csv.gz", true},
		{PeptidesFuncSplit, "lrgb/splits_random_stratified_peptide.pickle", true},
		{strings.TrimSuffix(PeptidesFuncCSV, "?dl=1"), "", false},
		{PeptidesFuncCSV + "&x=1", "", false},
		{strings.Replace(PeptidesFuncCSV, "peptide_multi_class_dataset.csv.gz", "..", 1), "", false},
		{TUBase + "../etc/passwd", "", false},
		{TUBase, "", false},
		{"https://example.com/x.zip", "", false},
	}
	for _, tc := range tests {
		got, ok := LocalPath(tc.url)
		if got != tc.want || ok != tc.ok {
			t.Errorf("LocalPath(%q) = %q, %v; want %q, %v", tc.url, got, ok, tc.want, tc.ok)
		}
	}
}

func TestMirrorAndLock(t *testing.T) {
	mirror := t.TempDir()
	if err := os.MkdirAll(filepath.Join(mirror, "tu"), 0o755); err != nil {
		t.Fatal(err)
	}
	content := "zip bytes"
	if err := os.WriteFile(filepath.Join(mirror, "tu", "X.txt"), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	f := &Fetcher{DataDir: dir, Mirror: mirror}
	ctx := context.Background()
	p, err := f.Get(ctx, TUBase+"X.txt")
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "tu", "X.txt"); p != want {
		t.Fatalf("path %s, want %s", p, want)
	}
	lock, err := os.ReadFile(filepath.Join(dir, LockFile))
	if err != nil {
		t.Fatal(err)
	}
	wantLock := fmt.Sprintf(`{
  "files": {
    "tu/X.txt": {
      "sha256": "%s",
      "size": %d,
      "url": "%sX.txt"
    }
  },
  "version": 1
}
`, sha(content), len(content), TUBase)
	if string(lock) != wantLock {
		t.Fatalf("lock file:\n%s\nwant:\n%s", lock, wantLock)
	}
	if _, err := f.Get(ctx, TUBase+"X.txt"); err != nil {
		t.Fatalf("second Get: %v", err)
	}
	// A tampered local copy is detected and left alone.
	if err := os.WriteFile(p, []byte("tampered"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = f.Get(ctx, TUBase+"X.txt")
	if err == nil || !strings.Contains(err.Error(), sha("tampered")) || !strings.Contains(err.Error(), sha(content)) || !strings.Contains(err.Error(), p) {
		t.Fatalf("tampered file: got %v, want error naming the file and both hashes", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "tampered" {
		t.Fatal("tampered file was overwritten")
	}
	// A mirror file that is missing is a clear error.
	if _, err := f.Get(ctx, TUBase+"Missing.zip"); err == nil || !strings.Contains(err.Error(), "mirror") {
		t.Fatalf("missing mirror file: got %v", err)
	}
	if _, err := f.Get(ctx, "https://example.com/x"); err == nil {
		t.Fatal("unknown URL accepted")
	}
}

func TestHTTP(t *testing.T) {
	var body atomic.Value
	body.Store("first")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/graphkerneldatasets/Gone.zip" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, body.Load().(string))
	}))
	defer srv.Close()
	target, _ := url.Parse(srv.URL)
	dir := t.TempDir()
	f := &Fetcher{DataDir: dir, Client: &http.Client{Transport: redirect{target}}}
	ctx := context.Background()
	p, err := f.Get(ctx, TUBase+"Y.txt")
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "first" {
		t.Fatalf("downloaded %q", b)
	}
	// Upstream changes: a re-download no longer matches the lock.
	body.Store("second")
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	_, err = f.Get(ctx, TUBase+"Y.txt")
	if err == nil || !strings.Contains(err.Error(), sha("second")) || !strings.Contains(err.Error(), sha("first")) {
		t.Fatalf("changed upstream: got %v", err)
	}
	if _, err := os.Stat(p); !os.IsNotExist(err) {
		t.Fatal("mismatching download was written")
	}
	entries, _ := os.ReadDir(filepath.Join(dir, "tu"))
	if len(entries) != 0 {
		t.Fatalf("temporary files left behind: %v", entries)
	}
	if _, err := f.Get(ctx, TUBase+"Gone.zip"); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("404: got %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := f.Get(cctx, TUBase+"Z.zip"); err == nil {
		t.Fatal("cancelled context: no error")
	}
}

func TestOffline(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	target, _ := url.Parse(srv.URL)
	srv.Close() // nothing listens there any more
	f := &Fetcher{DataDir: t.TempDir(), Client: &http.Client{Transport: redirect{target}}}
	_, err := f.Get(context.Background(), TUBase+"DD.zip")
	if err == nil || !strings.Contains(err.Error(), "offline?") {
		t.Fatalf("offline: got %v", err)
	}
}

func TestConcurrentGet(t *testing.T) {
	mirror := t.TempDir()
	os.MkdirAll(filepath.Join(mirror, "tu"), 0o755)
	for _, n := range []string{"A", "B", "C"} {
		os.WriteFile(filepath.Join(mirror, "tu", n+".txt"), []byte("content "+n), 0o644)
	}
	dir := t.TempDir()
	errs := make(chan error, 12)
	for i := 0; i < 12; i++ {
		go func(i int) {
			f := &Fetcher{DataDir: dir, Mirror: mirror}
			_, err := f.Get(context.Background(), TUBase+[]string{"A", "B", "C"}[i%3]+".txt")
			errs <- err
		}(i)
	}
	for i := 0; i < 12; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	lk, err := readLock(filepath.Join(dir, LockFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(lk.Files) != 3 {
		t.Fatalf("lock file records %d files, want 3", len(lk.Files))
	}
}

// zipOf returns a zip archive holding one member with content.
func zipOf(t *testing.T, content string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, err := zw.Create("X/X_A.txt")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(w, content); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// A truncated download is never recorded in the lock file, so the good
// file is accepted when it comes; a damaged local copy names the way out,
// and Forget (spn data fetch --refresh) takes it.
func TestTruncatedNotLocked(t *testing.T) {
	good := zipOf(t, strings.Repeat("1, 2\n", 1000))
	var body atomic.Value
	body.Store(good[:len(good)/2])
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write(body.Load().([]byte))
	}))
	defer srv.Close()
	target, _ := url.Parse(srv.URL)
	dir := t.TempDir()
	f := &Fetcher{DataDir: dir, Client: &http.Client{Transport: redirect{target}}}
	ctx := context.Background()
	u := TUBase + "X.zip"
	_, err := f.Get(ctx, u)
	if err == nil || !strings.Contains(err.Error(), "malformed") || !strings.Contains(err.Error(), "nothing was written or locked") {
		t.Fatalf("truncated zip: got %v", err)
	}
	if lk, _ := readLock(filepath.Join(dir, LockFile)); len(lk.Files) != 0 {
		t.Fatalf("truncated zip was locked: %v", lk.Files)
	}
	// Splits that are not JSON are refused the same way.
	if _, err := f.Get(ctx, ErricaBase+"X_splits.json"); err == nil || !strings.Contains(err.Error(), "not valid JSON") {
		t.Fatalf("bad JSON: got %v", err)
	}
	body.Store(good)
	p, err := f.Get(ctx, u)
	if err != nil {
		t.Fatalf("good zip after a truncated one: %v", err)
	}
	// A truncated file put there by hand, unlocked, is fetched again.
	os.WriteFile(p, good[:10], 0o644)
	lk, _ := readLock(filepath.Join(dir, LockFile))
	delete(lk.Files, "tu/X.zip")
	writeLock(filepath.Join(dir, LockFile), lk)
	if _, err := f.Get(ctx, u); err != nil {
		t.Fatalf("unlocked truncated copy: %v", err)
	}
	if b, _ := os.ReadFile(p); !bytes.Equal(b, good) {
		t.Fatal("unlocked truncated copy was not replaced")
	}
	// A locked file damaged later: the error says how to recover.
	os.WriteFile(p, good[:10], 0o644)
	if _, err := f.Get(ctx, u); err == nil || !strings.Contains(err.Error(), "spn data fetch --refresh NAME") {
		t.Fatalf("damaged locked copy: got %v", err)
	}
	// Upstream changed for real: --refresh accepts the new file.
	newer := zipOf(t, "other")
	body.Store(newer)
	if err := f.Forget(ctx, u); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Get(ctx, u); err != nil {
		t.Fatalf("after Forget: %v", err)
	}
	if b, _ := os.ReadFile(p); !bytes.Equal(b, newer) {
		t.Fatal("Forget did not lead to a fresh fetch")
	}
}

// A malformed file in a local mirror is reported as the mirror's file,
// with its path, not as a download to retry.
func TestMalformedMirrorFile(t *testing.T) {
	mir := t.TempDir()
	os.MkdirAll(filepath.Join(mir, "tu"), 0o755)
	good := zipOf(t, "1, 2\n")
	bad := filepath.Join(mir, "tu", "X.zip")
	os.WriteFile(bad, good[:len(good)/2], 0o644)
	f := &Fetcher{DataDir: t.TempDir(), Mirror: mir}
	_, err := f.Get(context.Background(), TUBase+"X.zip")
	if err == nil || !strings.Contains(err.Error(), "the mirror's file "+bad+" (for "+TUBase+"X.zip) is malformed") || strings.Contains(err.Error(), "retry") || strings.Contains(err.Error(), "fetched") {
		t.Fatalf("malformed mirror file: %v", err)
	}
}

// The part files an interrupted download left behind are removed at the
// next fetch of the same file, and only those.
func TestStalePartsRemoved(t *testing.T) {
	mir := t.TempDir()
	os.MkdirAll(filepath.Join(mir, "tu"), 0o755)
	os.WriteFile(filepath.Join(mir, "tu", "X.zip"), zipOf(t, "1, 2\n"), 0o644)
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "tu"), 0o755)
	stale := []string{".X.zip.part123", ".X.zip.part9"}
	for _, s := range stale {
		os.WriteFile(filepath.Join(dir, "tu", s), []byte("half"), 0o644)
	}
	other := filepath.Join(dir, "tu", ".Y.zip.part1")
	os.WriteFile(other, []byte("half"), 0o644)
	f := &Fetcher{DataDir: dir, Mirror: mir}
	if _, err := f.Get(context.Background(), TUBase+"X.zip"); err != nil {
		t.Fatal(err)
	}
	for _, s := range stale {
		if _, err := os.Stat(filepath.Join(dir, "tu", s)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s left behind: %v", s, err)
		}
	}
	if _, err := os.Stat(other); err != nil {
		t.Errorf("another file's part removed: %v", err)
	}
	// Also when the file itself is already there.
	os.WriteFile(filepath.Join(dir, "tu", stale[0]), []byte("half"), 0o644)
	if _, err := f.Get(context.Background(), TUBase+"X.zip"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "tu", stale[0])); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s left behind next to a fetched file: %v", stale[0], err)
	}
}
