package profile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStart: a recorder writes into the file until stopped; a file that
// cannot be created or a recorder that does not start is an error naming
// the label, and nothing is left running.
func TestStart(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name     string
		path     string
		startErr error
		wantErr  string // "" for success
	}{
		{"records", filepath.Join(dir, "a.prof"), nil, ""},
		{"no such dir", filepath.Join(dir, "no", "a.prof"), nil, "--x: open "},
		{"recorder fails", filepath.Join(dir, "b.prof"), errors.New("busy"), "--x: busy"},
	} {
		var w io.Writer
		started, ended := false, false
		stop, err := Start(tc.path, "--x", func(out io.Writer) error {
			started, w = true, out
			return tc.startErr
		}, func() { ended = true; io.WriteString(w, "recorded") })
		if tc.wantErr != "" {
			if err == nil || !strings.HasPrefix(err.Error(), tc.wantErr) || stop != nil || ended {
				t.Errorf("%s: %v, want %q…", tc.name, err, tc.wantErr)
			}
			continue
		}
		if err != nil || !started {
			t.Fatalf("%s: %v (started %v)", tc.name, err, started)
		}
		stop()
		if b, err := os.ReadFile(tc.path); err != nil || string(b) != "recorded" || !ended {
			t.Errorf("%s: file %q, %v; ended %v", tc.name, b, err, ended)
		}
	}
}
