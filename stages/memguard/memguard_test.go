package memguard

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestParseLimit(t *testing.T) {
	for s, want := range map[string]uint64{"3GiB": 3 << 30, "512MiB": 512 << 20, "1000": 1000, "64KiB": 64 << 10, "7B": 7, "off": 0, "": 0, "-1": 0} {
		if v, _ := ParseLimit(s); v != want {
			t.Errorf("ParseLimit(%q) = %d, want %d", s, v, want)
		}
	}
}

// Limit takes the least of the bounds it finds and names it.
func TestLimit(t *testing.T) {
	dir := t.TempDir()
	meminfo, cg := filepath.Join(dir, "meminfo"), filepath.Join(dir, "memory.max")
	if err := os.WriteFile(meminfo, []byte("MemTotal:       4096 kB\nMemFree: 1 kB\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cg, []byte("max\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	none := func(string) string { return "" }
	if v, what := Limit(none, meminfo, cg); v != 4096<<10 || what != "physical memory" {
		t.Errorf("meminfo only: %d %q", v, what)
	}
	env := func(k string) string {
		if k == "GOMEMLIMIT" {
			return "1MiB"
		}
		return ""
	}
	if v, what := Limit(env, meminfo, cg); v != 1<<20 || what != "GOMEMLIMIT" {
		t.Errorf("with GOMEMLIMIT: %d %q", v, what)
	}
}

// Watch calls back once the heap has grown past the limit.
func TestWatch(t *testing.T) {
	hit := make(chan struct{})
	stop := Watch(1<<20, func() { close(hit) })
	defer stop()
	keep := make([]byte, 8<<20)
	for i := range keep {
		keep[i] = byte(i)
	}
	select {
	case <-hit:
	case <-time.After(5 * time.Second):
		t.Error("no callback after 8 MiB of growth")
	}
	_ = keep[len(keep)-1]
}
