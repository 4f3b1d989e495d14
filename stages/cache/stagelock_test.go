package cache

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Many writers of one stage: never two inside at once, and every writer
// gets its turn.
func TestStageLockExclusive(t *testing.T) {
	c, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var inside, maxInside, turns atomic.Int32
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l, err := c.LockStage(context.Background(), "abc123", StageLockOptions{Poll: time.Millisecond})
			if err != nil {
				t.Error(err)
				return
			}
			n := inside.Add(1)
			for {
				m := maxInside.Load()
				if n <= m || maxInside.CompareAndSwap(m, n) {
					break
				}
			}
			time.Sleep(2 * time.Millisecond)
			inside.Add(-1)
			turns.Add(1)
			if err := l.Unlock(); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if maxInside.Load() != 1 || turns.Load() != 8 {
		t.Errorf("max writers inside %d (want 1), turns %d (want 8)", maxInside.Load(), turns.Load())
	}
	if _, err := os.Stat(c.StageLockPath("abc123")); !os.IsNotExist(err) {
		t.Errorf("lock file left after the last unlock: %v", err)
	}
}

func writeLock(t *testing.T, c *Cache, key string, info LockInfo, age time.Duration) {
	t.Helper()
	p := c.StageLockPath(key)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(info)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-age)
	if err := os.Chtimes(p, old, old); err != nil {
		t.Fatal(err)
	}
}

// The stale-lock rule: a lock of a dead process on this host, or one whose
// heartbeat stopped longer than StaleAfter ago, is broken; a live one
// (another host, fresh mtime) is waited for.
func TestStageLockStaleRule(t *testing.T) {
	c, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	host := hostname()
	for _, tc := range []struct {
		name  string
		info  LockInfo
		age   time.Duration
		stale bool
	}{
		{"dead pid here", LockInfo{Host: host, PID: 1 << 22, Token: "x"}, 0, true},
		{"live pid here", LockInfo{Host: host, PID: os.Getpid(), Token: "x"}, 0, false},
		{"other host, fresh", LockInfo{Host: "node-b", PID: 1 << 22, Token: "x"}, time.Second, false},
		{"other host, heartbeat stopped", LockInfo{Host: "node-b", PID: 7, Token: "x"}, time.Hour, true},
		{"empty file, fresh", LockInfo{}, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := "k" + string(rune('a'+len(tc.name)%26))
			writeLock(t, c, key, tc.info, tc.age)
			defer os.Remove(c.StageLockPath(key))
			if _, live := c.StageLocked(key, time.Minute); live == tc.stale {
				t.Errorf("StageLocked live=%v, want %v", live, !tc.stale)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			waited := false
			l, err := c.LockStage(ctx, key, StageLockOptions{StaleAfter: time.Minute, Poll: 10 * time.Millisecond,
				OnWait: func(LockInfo) { waited = true }})
			if tc.stale {
				if err != nil {
					t.Fatalf("stale lock not broken: %v", err)
				}
				l.Unlock()
				return
			}
			if err == nil || !waited {
				t.Errorf("live lock taken over (err %v, waited %v)", err, waited)
			}
		})
	}
}

// A holder's heartbeat keeps its lock fresh past StaleAfter.
func TestStageLockHeartbeat(t *testing.T) {
	c, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	opt := StageLockOptions{StaleAfter: 200 * time.Millisecond, Heartbeat: 20 * time.Millisecond, Poll: 10 * time.Millisecond}
	l, err := c.LockStage(context.Background(), "hb", opt)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock()
	time.Sleep(400 * time.Millisecond)
	// Pretend to be another host: only the mtime rule applies.
	if _, live := c.StageLocked("hb", opt.StaleAfter); !live {
		t.Fatal("held lock with a running heartbeat counts as stale")
	}
}

// CleanTemp keeps the temp dirs of stages a live writer holds.
func TestCleanTempKeepsLockedStages(t *testing.T) {
	c, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	l, err := c.LockStage(context.Background(), "aaaa", StageLockOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock()
	live, err := c.NewTemp("aaaa")
	if err != nil {
		t.Fatal(err)
	}
	dead, err := c.NewTemp("bbbb")
	if err != nil {
		t.Fatal(err)
	}
	n, err := c.CleanTemp()
	if err != nil || n != 1 {
		t.Fatalf("CleanTemp removed %d (%v), want 1", n, err)
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("temp dir of a held stage removed: %v", err)
	}
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Errorf("temp dir of a dead writer kept")
	}
}
