package cache

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Per-stage locks make sure no stage runs twice at the same time, whether
// the writers are goroutines of one spn process, spn processes on one
// machine or Slurm jobs on many nodes sharing the cache over NFS.
//
// The scheme relies only on what NFS (v3 and later) guarantees across
// clients: link(2) to an existing name fails atomically (the NFS-safe form
// of exclusive create), exclusive create (O_CREAT|O_EXCL) is atomic,
// rename within a directory is atomic, and mtimes are visible to every
// client. It never
// uses flock or fcntl locks, which are not reliable across nodes.
//
//   - A writer writes a JSON LockInfo (host, pid, a random token, start
//     time) to a private file in <root>/locks and hard-links it to
//     <root>/locks/<key>.lock; the link succeeds for one writer only.
//   - While it holds the lock, a goroutine refreshes the file's mtime every
//     Heartbeat.
//   - A lock is stale when its mtime is older than StaleAfter (the holder
//     died or lost the filesystem; this needs the nodes' clocks to agree
//     within StaleAfter/2, which NTP gives), or at once when its holder ran
//     on this host and its pid no longer exists.
//   - Breaking a stale lock is itself guarded by an O_EXCL file
//     <key>.lock.break, so two breakers cannot remove a lock just taken by
//     a third writer; a break file older than StaleAfter is removed.
//   - The stage's artifacts still appear only through the atomic rename of
//     a complete temp directory (Commit), so a reader never sees a partial
//     stage whatever happens to the lock.

// Lock timing defaults.
const (
	// DefaultStaleAfter is how old a lock's mtime must be before another
	// writer may break it.
	DefaultStaleAfter = 10 * time.Minute
	// DefaultHeartbeat is how often a holder refreshes its lock's mtime.
	DefaultHeartbeat = time.Minute
)

// LockInfo is what a stage lock file holds.
type LockInfo struct {
	Host  string    `json:"host"`
	PID   int       `json:"pid"`
	Token string    `json:"token"`
	Start time.Time `json:"start"`
	// Job is the Slurm job (SLURM_JOB_ID[_SLURM_ARRAY_TASK_ID]) if any.
	Job string `json:"job,omitempty"`
}

// StageLockOptions tune LockStage; zero values take the defaults.
type StageLockOptions struct {
	StaleAfter time.Duration
	Heartbeat  time.Duration
	// Poll is how often a waiting writer looks again (default 1 s).
	Poll time.Duration
	// OnWait, if set, is called once when the lock is held by another
	// writer, with what its lock file says.
	OnWait func(LockInfo)
}

func (o StageLockOptions) withDefaults() StageLockOptions {
	if o.StaleAfter <= 0 {
		o.StaleAfter = DefaultStaleAfter
	}
	if o.Heartbeat <= 0 {
		o.Heartbeat = min(DefaultHeartbeat, o.StaleAfter/4)
	}
	if o.Poll <= 0 {
		o.Poll = time.Second
	}
	return o
}

// StageLock is a held per-stage lock.
type StageLock struct {
	path  string
	token string
	stop  chan struct{}
	wg    sync.WaitGroup
	once  sync.Once
}

func (c *Cache) locksRoot() string { return filepath.Join(c.Root, "locks") }

// StageLockPath is the lock file of the stage with the given key.
func (c *Cache) StageLockPath(key string) string {
	return filepath.Join(c.locksRoot(), key+".lock")
}

// LockStage takes the lock of stage key, waiting (polling) while a live
// writer holds it and breaking it when it is stale. It returns when the
// lock is held or ctx is done.
func (c *Cache) LockStage(ctx context.Context, key string, opt StageLockOptions) (*StageLock, error) {
	opt = opt.withDefaults()
	if key == "" || strings.ContainsAny(key, "/\\") || key == "." || key == ".." {
		return nil, fmt.Errorf("locking stage: invalid key %q", key)
	}
	if err := ensureFolder(c.locksRoot()); err != nil {
		return nil, fmt.Errorf("locking stage %s: %w", key, err)
	}
	told := false
	for {
		l, held, err := c.tryLockStage(key, opt)
		if err != nil {
			return nil, err
		}
		if l != nil {
			return l, nil
		}
		if !told && opt.OnWait != nil && held != nil {
			opt.OnWait(*held)
			told = true
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for the lock of stage %s: %w", key, context.Cause(ctx))
		case <-time.After(opt.Poll):
		}
	}
}

// tryLockStage makes one attempt: it returns the lock, or (nil, info of
// the holder) when a live writer holds it.
func (c *Cache) tryLockStage(key string, opt StageLockOptions) (*StageLock, *LockInfo, error) {
	path := c.StageLockPath(key)
	info := LockInfo{Host: hostname(), PID: os.Getpid(), Token: randomToken(), Start: time.Now().UTC(), Job: slurmJob()}
	b, err := json.Marshal(info)
	if err != nil {
		return nil, nil, fmt.Errorf("locking stage %s: %w", key, err)
	}
	// The lock is written completely to a private file first and then
	// hard-linked to its name: link fails with EEXIST atomically (also on
	// NFS, where this is the documented way to take a lock file), and the
	// lock is never seen empty or half-written.
	tmp, err := os.CreateTemp(c.locksRoot(), ".new-"+key+"-")
	if err != nil {
		return nil, nil, fmt.Errorf("locking stage %s: %w", key, err)
	}
	_, werr := tmp.Write(append(b, '\n'))
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		os.Remove(tmp.Name())
		return nil, nil, fmt.Errorf("writing stage lock %s: %w", path, werr)
	}
	err = os.Link(tmp.Name(), path)
	os.Remove(tmp.Name())
	if err == nil {
		l := &StageLock{path: path, token: info.Token, stop: make(chan struct{})}
		l.wg.Add(1)
		go l.heartbeat(opt.Heartbeat)
		return l, nil, nil
	}
	if !errors.Is(err, os.ErrExist) {
		return nil, nil, fmt.Errorf("creating stage lock %s: %w", path, err)
	}
	held, stale, exists := c.inspect(path, opt.StaleAfter)
	if !exists {
		return nil, nil, nil // freed meanwhile: try again
	}
	if !stale {
		return nil, &held, nil
	}
	if err := c.breakStale(path, held, opt.StaleAfter); err != nil {
		return nil, nil, err
	}
	return nil, nil, nil // try again at once on the next round
}

// inspect reads a lock file and tells whether it is stale, and whether
// it exists: a lock that vanished meanwhile is free, and not to be
// broken (a writer may take it at any moment).
func (c *Cache) inspect(path string, staleAfter time.Duration) (info LockInfo, stale, exists bool) {
	st, err := os.Stat(path)
	if err != nil {
		return info, errors.Is(err, os.ErrNotExist), false
	}
	if b, err := os.ReadFile(path); err == nil {
		// A lock being written may be empty for a moment: then only its
		// mtime speaks.
		_ = json.Unmarshal(b, &info)
	}
	if time.Since(st.ModTime()) > staleAfter {
		return info, true, true
	}
	if info.Host != "" && info.Host == hostname() && info.PID > 0 && !pidAlive(info.PID) {
		return info, true, true
	}
	return info, false, true
}

// breakStale removes the stale lock at path, once, under the break file.
func (c *Cache) breakStale(path string, seen LockInfo, staleAfter time.Duration) error {
	brk := path + ".break"
	f, err := os.OpenFile(brk, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		if !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("breaking stale lock %s: %w", path, err)
		}
		// Someone else is breaking it; a break file left by a dead
		// breaker goes after StaleAfter.
		if st, serr := os.Stat(brk); serr == nil && time.Since(st.ModTime()) > staleAfter {
			os.Remove(brk)
		}
		return nil
	}
	f.Close()
	defer os.Remove(brk)
	// Under the break file, look again: the lock must still be the stale
	// one we saw (another breaker may have freed it and a writer taken
	// it), and still be there: removing a lock that vanished would
	// remove the one a writer takes in between.
	now, stale, exists := c.inspect(path, staleAfter)
	if !exists || !stale || now.Token != seen.Token {
		return nil
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("breaking stale lock %s: %w", path, err)
	}
	return nil
}

// heartbeat refreshes the lock's mtime until Unlock.
func (l *StageLock) heartbeat(every time.Duration) {
	defer l.wg.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
			now := time.Now()
			_ = os.Chtimes(l.path, now, now)
		}
	}
}

// Unlock releases the lock: it stops the heartbeat and removes the lock
// file if it is still this holder's. Calling it again does nothing.
func (l *StageLock) Unlock() error {
	if l == nil {
		return nil
	}
	var err error
	l.once.Do(func() {
		close(l.stop)
		l.wg.Wait()
		b, rerr := os.ReadFile(l.path)
		if rerr != nil {
			return // broken by someone who thought us dead
		}
		var info LockInfo
		if json.Unmarshal(b, &info) == nil && info.Token != l.token {
			return
		}
		if rerr := os.Remove(l.path); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
			err = fmt.Errorf("releasing stage lock %s: %w", l.path, rerr)
		}
	})
	return err
}

// StageLocked reports whether a live (not stale) writer holds the lock of
// stage key, and what its lock file says.
func (c *Cache) StageLocked(key string, staleAfter time.Duration) (LockInfo, bool) {
	if staleAfter <= 0 {
		staleAfter = DefaultStaleAfter
	}
	info, stale, exists := c.inspect(c.StageLockPath(key), staleAfter)
	return info, exists && !stale
}

func hostname() string {
	h, err := os.Hostname()
	if err != nil {
		return ""
	}
	return h
}

func pidAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

func randomToken() string { return rand.Text() }

func slurmJob() string {
	j := os.Getenv("SLURM_JOB_ID")
	if j != "" {
		if t := os.Getenv("SLURM_ARRAY_TASK_ID"); t != "" {
			j = os.Getenv("SLURM_ARRAY_JOB_ID") + "_" + t
		}
	}
	return j
}
