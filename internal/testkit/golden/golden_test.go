package golden

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// recorder is a testing.TB that records failures instead of failing.
type recorder struct {
	testing.TB
	errors []string
	fatal  bool
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
	r.fatal = true
}

func (r *recorder) Fatal(args ...any) {
	r.errors = append(r.errors, fmt.Sprint(args...))
	r.fatal = true
}

func TestCheck(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "out.golden")

	t.Setenv(EnvUpdate, "1")
	r := &recorder{TB: t}
	Check(r, path, []byte("a\nb\n"))
	if len(r.errors) != 0 {
		t.Fatalf("update: %v", r.errors)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "a\nb\n" {
		t.Fatalf("update wrote %q, %v", b, err)
	}

	t.Setenv(EnvUpdate, "")
	tests := []struct {
		name, got, want string
	}{
		{"same", "a\nb\n", ""},
		{"differs", "a\nc\n", "first difference at line 2:\n got: c\nwant: b\n"},
		{"longer", "a\nb\nc\n", "first difference at line 3:\n got: c\nwant: \n"},
	}
	for _, tc := range tests {
		r := &recorder{TB: t}
		CheckString(r, path, tc.got)
		switch {
		case tc.want == "" && len(r.errors) != 0:
			t.Errorf("%s: unexpected failure %v", tc.name, r.errors)
		case tc.want != "" && (len(r.errors) != 1 || !strings.Contains(r.errors[0], tc.want) || !strings.Contains(r.errors[0], EnvUpdate+"=1")):
			t.Errorf("%s: failures %q, want one containing %q", tc.name, r.errors, tc.want)
		}
	}

	r = &recorder{TB: t}
	Check(r, filepath.Join(t.TempDir(), "missing.golden"), nil)
	if !r.fatal || !strings.Contains(r.errors[0], "reading golden file") {
		t.Errorf("missing file: %v", r.errors)
	}
}

func TestDiff(t *testing.T) {
	long := strings.Repeat("x\n", maxShown+1)
	if d := Diff(long+"y", long+"z"); strings.Contains(d, "--- got") || !strings.Contains(d, fmt.Sprintf("line %d:", maxShown+2)) {
		t.Errorf("long texts: %q", d)
	}
	if d := Diff("a", "b"); !strings.Contains(d, "--- got\na\n--- want\nb") {
		t.Errorf("short texts are not shown in full: %q", d)
	}
}
