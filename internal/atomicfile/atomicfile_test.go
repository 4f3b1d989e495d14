package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// entries returns the names in dir.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// A failing writer leaves no file and no temporary file, and its error
// comes back wrapped with the path.
func TestWriteFailingWriterLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	boom := errors.New("boom")
	err := Write(path, func(w io.Writer) error {
		if _, err := io.WriteString(w, "half"); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), path) {
		t.Errorf("failed write: %v, want boom naming %s", err, path)
	}
	if names := entries(t, dir); len(names) != 0 {
		t.Errorf("after a failed write %s holds %v, want nothing", dir, names)
	}
}

// A failing writer leaves an existing file as it was (content and
// permission), and a later successful write replaces it whole with
// permission Perm, leaving only it in the folder.
func TestWriteKeepsExistingFileOnFailure(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, ".hidden")
	if err := os.WriteFile(path, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	if err := Write(path, func(w io.Writer) error { io.WriteString(w, "new but cut"); return boom }); !errors.Is(err, boom) {
		t.Fatalf("failed write: %v", err)
	}
	b, err := os.ReadFile(path)
	if err != nil || string(b) != "old" {
		t.Errorf("after a failed write the file holds %q (%v), want \"old\"", b, err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("after a failed write the file's mode is %v (%v), want 0600", fi.Mode(), err)
	}
	if err := Write(path, func(w io.Writer) error { _, err := io.WriteString(w, "new"); return err }); err != nil {
		t.Fatal(err)
	}
	b, err = os.ReadFile(path)
	if err != nil || string(b) != "new" {
		t.Errorf("after a write the file holds %q (%v), want \"new\"", b, err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != Perm {
		t.Errorf("after a write the file's mode is %v (%v), want %v", fi.Mode(), err, Perm)
	}
	if names := entries(t, dir); len(names) != 1 || names[0] != ".hidden" {
		t.Errorf("%s holds %v, want only .hidden", dir, names)
	}
}

// WriteFile creates missing parent folders, gives the file the asked
// permission and replaces an existing file.
func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a", "b", "f.json")
	for _, content := range []string{"first", "second, longer than the first"} {
		if err := WriteFile(path, []byte(content), 0o640); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil || string(b) != content {
			t.Errorf("file holds %q (%v), want %q", b, err, content)
		}
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o640 {
		t.Errorf("mode %v (%v), want 0640", fi.Mode(), err)
	}
	if names := entries(t, filepath.Dir(path)); len(names) != 1 {
		t.Errorf("%s holds %v, want only f.json", filepath.Dir(path), names)
	}
}

// A destination that cannot be replaced (a folder) is an error naming
// the path, and the temporary file is removed.
func TestWriteOverFolderFails(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "d")
	if err := os.Mkdir(filepath.Join(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(path, "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	err := WriteFile(path, []byte("data"), 0o644)
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("writing over a folder: %v, want an error naming %s", err, path)
	}
	if names := entries(t, dir); len(names) != 1 || names[0] != "d" {
		t.Errorf("%s holds %v, want only d", dir, names)
	}
}

// A parent that is a file is an error, and nothing is written.
func TestWriteUnderFileFails(t *testing.T) {
	dir := t.TempDir()
	parent := filepath.Join(dir, "p")
	if err := os.WriteFile(parent, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(filepath.Join(parent, "f"), []byte("data"), 0o644); err == nil {
		t.Error("writing under a file: no error")
	}
	if b, _ := os.ReadFile(parent); string(b) != "x" {
		t.Errorf("the parent file holds %q", b)
	}
}
