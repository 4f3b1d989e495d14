package slurm

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TaskKeys reads the task's line, from --task or SLURM_ARRAY_TASK_ID, and
// says which errors are the arguments'; TaskThreads prefers the flag.
func TestTaskKeysThreads(t *testing.T) {
	f := filepath.Join(t.TempDir(), "tasks")
	if err := os.WriteFile(f, []byte("a b\nc\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"SLURM_ARRAY_TASK_ID": "1", "SLURM_CPUS_PER_TASK": "6"}
	getenv := func(k string) string { return env[k] }
	if keys, usage, err := TaskKeys(f, 0, getenv); err != nil || usage || !slices.Equal(keys, []string{"a", "b"}) {
		t.Errorf("task 0: %v %v %v", keys, usage, err)
	}
	if keys, _, err := TaskKeys(f, -1, getenv); err != nil || !slices.Equal(keys, []string{"c"}) {
		t.Errorf("task from the environment: %v %v", keys, err)
	}
	if _, usage, err := TaskKeys(f, 2, getenv); err == nil || !usage {
		t.Errorf("task 2 of 2: %v %v", usage, err)
	}
	if _, usage, err := TaskKeys(filepath.Join(f, "x"), 0, getenv); err == nil || usage {
		t.Errorf("unreadable file: %v %v", usage, err)
	}
	if n := TaskThreads(3, getenv); n != 3 {
		t.Errorf("flag 3: %d", n)
	}
	if n := TaskThreads(0, getenv); n != 6 {
		t.Errorf("from the environment: %d", n)
	}
}
