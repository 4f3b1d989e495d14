package cache

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spn-project/spn/internal/atomicfile"
)

// Failure is the last failure of a stage, kept in <root>/failed/<key>.json
// until the stage completes. It lets `spn status` and `spn run --wait`
// report failures of stages that ran in other processes (Slurm jobs).
type Failure struct {
	Key   string    `json:"key"`
	Kind  string    `json:"kind"`
	Name  string    `json:"name"`
	Error string    `json:"error"`
	Time  time.Time `json:"time"`
	// Job is the Slurm job that ran the stage, if any.
	Job string `json:"job,omitempty"`
}

func (c *Cache) failurePath(key string) string {
	return filepath.Join(c.Root, "failed", key+".json")
}

// RecordFailure writes f (atomically) as the last failure of its stage.
func (c *Cache) RecordFailure(f Failure) error {
	if f.Key == "" {
		return errors.New("recording failure: empty key")
	}
	if f.Job == "" {
		f.Job = slurmJob()
	}
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding failure of %s: %w", f.Name, err)
	}
	return atomicfile.WriteFile(c.failurePath(f.Key), append(b, '\n'), 0o644)
}

// ClearFailure forgets the failure of stage key, if any.
func (c *Cache) ClearFailure(key string) error {
	err := os.Remove(c.failurePath(key))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("clearing failure of %s: %w", key, err)
	}
	return nil
}

// LastFailure returns the recorded failure of stage key, if any. A damaged
// file counts as a failure with an unknown error.
func (c *Cache) LastFailure(key string) (*Failure, bool) {
	b, err := os.ReadFile(c.failurePath(key))
	if err != nil {
		return nil, false
	}
	var f Failure
	if json.Unmarshal(b, &f) != nil {
		f = Failure{Key: key, Error: "unknown (damaged failure record)"}
	}
	return &f, true
}

// FailureMessage returns the error of the recorded failure of stage key,
// if any (LastFailure), as plan.DOTOptions.Failure takes it.
func (c *Cache) FailureMessage(key string) (string, bool) {
	f, ok := c.LastFailure(key)
	if !ok {
		return "", false
	}
	return f.Error, true
}
