package cache

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spn-project/spn/stages"
)

// Subprocess helper: with SPN_CACHE_LOCK_HELPER=dir the test binary takes
// the lock of the cache at dir, prints "locked", and holds it until its
// stdin closes.
func TestMain(m *testing.M) {
	if dir := os.Getenv("SPN_CACHE_LOCK_HELPER"); dir != "" {
		c, err := Open(dir)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		l, err := c.Lock(context.Background(), true, nil)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println("locked")
		bufio.NewReader(os.Stdin).ReadString('\n')
		l.Unlock()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestResolve(t *testing.T) {
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == EnvVar {
				return v
			}
			return ""
		}
	}
	cases := []struct {
		flag, env, want string
	}{
		{"/f", "/e", "/f"},
		{"", "/e", "/e"},
		{"", "", "/wd/.spn/cache"},
	}
	for _, c := range cases {
		if got := Resolve(c.flag, env(c.env), "/wd"); got != c.want {
			t.Errorf("Resolve(%q, env %q) = %q, want %q", c.flag, c.env, got, c.want)
		}
	}
}

func TestCommit(t *testing.T) {
	c, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	key := strings.Repeat("ab", 32)
	if ok, _ := c.Has("train", key); ok {
		t.Fatal("empty cache has a stage")
	}
	tmp, err := c.NewTemp(key)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(filepath.Base(tmp), key+"-") || filepath.Dir(tmp) != filepath.Join(c.Root, "tmp") {
		t.Errorf("temp dir %s", tmp)
	}
	if err := os.WriteFile(filepath.Join(tmp, "a.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	// An incomplete leftover (no record) in the final place is replaced.
	final := c.StageDir("train", key)
	if err := os.MkdirAll(final, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(final, "junk"), nil, 0o644)
	if ok, _ := c.Has("train", key); ok {
		t.Fatal("a dir without record counts as present")
	}
	rec := &Record{Key: key, Kind: "train", Version: "3", Name: "train x"}
	if err := c.Commit(tmp, rec); err != nil {
		t.Fatal(err)
	}
	if final != filepath.Join(c.Root, "train", "ab", key) {
		t.Errorf("stage dir %s", final)
	}
	if ok, _ := c.Has("train", key); !ok {
		t.Fatal("committed stage not present")
	}
	if _, err := os.Stat(filepath.Join(final, "junk")); err == nil {
		t.Error("leftover file survived")
	}
	got, err := c.ReadRecord("train", key)
	if err != nil || got.Name != "train x" || got.Version != "3" {
		t.Errorf("record %+v, %v", got, err)
	}
	// A second writer of the same key keeps the first and cleans up.
	tmp2, _ := c.NewTemp(key)
	if err := c.Commit(tmp2, rec); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(tmp2); !errors.Is(err, os.ErrNotExist) {
		t.Error("second writer's temp dir left behind")
	}
	// A stage may not write its own record.
	tmp3, _ := c.NewTemp("cd")
	os.WriteFile(filepath.Join(tmp3, stages.FileRecord), nil, 0o644)
	err = c.Commit(tmp3, &Record{Key: "cd", Kind: "select", Name: "select x"})
	if err == nil || err.Error() != "committing select x: the stage wrote its own record.json" {
		t.Errorf("err %v", err)
	}
	// Stale temp dirs are cleaned.
	n, err := c.CleanTemp()
	if err != nil || n != 1 {
		t.Errorf("CleanTemp removed %d, %v", n, err)
	}
}

func TestIndex(t *testing.T) {
	c, _ := Open(t.TempDir())
	if _, _, ok, err := c.Last("train", "v1"); ok || err != nil {
		t.Fatalf("empty index: ok=%v err=%v", ok, err)
	}
	if err := c.SetLast("train", "v1", "k1", "1"); err != nil {
		t.Fatal(err)
	}
	if err := c.SetLast("train", "v1", "k2", "2"); err != nil {
		t.Fatal(err)
	}
	k, v, ok, err := c.Last("train", "v1")
	if !ok || err != nil || k != "k2" || v != "2" {
		t.Errorf("Last = %q %q %v %v", k, v, ok, err)
	}
	// A damaged entry is ignored, not fatal.
	os.WriteFile(filepath.Join(c.Root, "index", "train", "v1.json"), []byte("{"), 0o644)
	if _, _, ok, err := c.Last("train", "v1"); ok || err != nil {
		t.Errorf("damaged entry: ok=%v err=%v", ok, err)
	}
}

// TestBoundIndex: Bound returns the stage last recorded for a bound key
// (SetBound); a missing, damaged or malformed entry is none, and no
// stage is ever listed for the index (Entries).
// TestBoundIndex: the bound index lists every stage that stood for a
// stage, and BoundStage finds the newest one still complete whose record
// names that stage, so that removing one (spn cache gc) leaves the others
// to take from.
func TestBoundIndex(t *testing.T) {
	c, _ := Open(t.TempDir())
	b := strings.Repeat("b", 64)
	commit := func(key, boundKey string) {
		t.Helper()
		tmp, err := c.NewTemp(key)
		if err == nil {
			err = c.Commit(tmp, &Record{Key: key, Kind: "train", Name: "train " + key[:1], BoundKey: boundKey})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	found := func(except, want string) {
		t.Helper()
		k, ok, err := c.BoundStage("train", b, except)
		if err != nil || ok != (want != "") || k != want {
			t.Errorf("BoundStage(except %.1s) = %.1s %v %v, want %.1s", except, k, ok, err, want)
		}
	}
	if keys, err := c.Bound("train", b); keys != nil || err != nil {
		t.Fatalf("empty index: %v %v", keys, err)
	}
	found("", "")
	k1, k2, k3, other := strings.Repeat("1", 64), strings.Repeat("2", 64), strings.Repeat("3", 64), strings.Repeat("4", 64)
	commit(k1, b)
	commit(k2, b)
	commit(other, strings.Repeat("c", 64))
	for _, k := range []string{k1, k2, k1, k3, other} { // k3 is not in the cache
		if err := c.SetBound("train", b, k); err != nil {
			t.Fatal(err)
		}
	}
	// k3 was dropped from the entry when other was added: it is not in
	// the cache.
	if keys, err := c.Bound("train", b); err != nil || !slices.Equal(keys, []string{k2, k1, other}) {
		t.Errorf("Bound = %.1s, %v; want 2 1 4", keys, err)
	}
	found("", k1) // other's record names another bound key
	found(k1, k2) // a stage does not take its own artifacts
	if keys, _ := c.Bound("select", b); keys != nil {
		t.Error("a train stage's bound key found for select")
	}
	// The newest removed, the older one is found.
	if err := c.Remove("train", k1); err != nil {
		t.Fatal(err)
	}
	found("", k2)
	if err := c.Remove("train", k2); err != nil {
		t.Fatal(err)
	}
	found("", "")
	path := filepath.Join(c.Root, "index", "train", "bound", b+".json")
	// An entry written before the index listed keys names one.
	commit(k1, b)
	os.WriteFile(path, []byte(`{"key":"`+k1+`"}`), 0o644)
	found("", k1)
	for _, bad := range []string{"{", `{"key":"k1"}`, `{"key":""}`, `{"keys":["k1"]}`, `{"keys":7}`} {
		os.WriteFile(path, []byte(bad), 0o644)
		if keys, err := c.Bound("train", b); keys != nil || err != nil {
			t.Errorf("entry %s: %v %v", bad, keys, err)
		}
	}
	if err := c.SetBound("train", b, k2); err != nil {
		t.Errorf("SetBound over a damaged entry: %v", err)
	}
}

func TestLockInProcess(t *testing.T) {
	c, _ := Open(t.TempDir())
	l, err := c.Lock(context.Background(), false, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(c.LockPath())
	if strings.TrimSpace(string(b)) != fmt.Sprint(os.Getpid()) {
		t.Errorf("lock file holds %q", b)
	}
	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
	l2, err := c.Lock(context.Background(), false, nil)
	if err != nil {
		t.Fatalf("relock: %v", err)
	}
	l2.Unlock()
}

// Two processes: while one holds the lock, another fails at once without
// waiting, or waits (reporting the holder once) and gets the lock when the
// holder lets go.
func TestLockContention(t *testing.T) {
	if testing.Short() {
		t.Skip("subprocess test")
	}
	dir := t.TempDir()
	c, _ := Open(dir)
	cmd := osexec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "SPN_CACHE_LOCK_HELPER="+dir)
	stdin, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "locked\n" {
		t.Fatalf("helper said %q, %v", line, err)
	}
	pid := cmd.Process.Pid
	_, err = c.Lock(context.Background(), false, nil)
	want := fmt.Sprintf("cache is locked by another process (pid %d): %s", pid, c.LockPath())
	if !errors.Is(err, ErrLocked) || err.Error() != want {
		t.Errorf("no-wait error %v\nwant %s", err, want)
	}
	// A cancelled wait gives up cleanly.
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	_, err = c.Lock(ctx, true, nil)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("cancelled wait: %v", err)
	}
	var waits []int
	got := make(chan error, 1)
	go func() {
		l, err := c.Lock(context.Background(), true, func(p int) { waits = append(waits, p) })
		if err == nil {
			err = l.Unlock()
		}
		got <- err
	}()
	time.Sleep(500 * time.Millisecond)
	select {
	case err := <-got:
		t.Fatalf("second locker did not wait: %v", err)
	default:
	}
	stdin.Close()
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if len(waits) != 1 || waits[0] != pid {
		t.Errorf("onWait calls %v, want one with pid %d", waits, pid)
	}
	cmd.Wait()
}
