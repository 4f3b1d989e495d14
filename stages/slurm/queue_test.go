package slurm

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/spn-project/spn/stages/cache"
)

// queueCache is a cache with one tasks file of three array tasks (task 1
// runs two stages), as Submit writes them; the path of the tasks file is
// returned too.
func queueCache(t testing.TB) (*cache.Cache, string) {
	t.Helper()
	c, err := cache.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(c.Root, "slurm", "x.tasks")
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte("k0\nk1 k2\nk3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return c, file
}

// Jobs that can never run come back once each, in job id order (numeric),
// whatever the order of squeue's lines.
func TestQueueDeadInOrder(t *testing.T) {
	c, file := queueCache(t)
	var listing strings.Builder
	for _, id := range []string{"1000", "999", "12", "999", "1000"} {
		listing.WriteString(id + "|0|PENDING|DependencyNeverSatisfied|spn:" + file + "\n")
	}
	listing.WriteString("55|2|PENDING|Dependency|spn:" + file + "\n")
	active, dead, err := Queue(context.Background(), &fakeSlurm{squeue: listing.String()}, c)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"12", "999", "1000"}; !reflect.DeepEqual(dead, want) {
		t.Errorf("dead = %q, want %q", dead, want)
	}
	if want := map[string]Active{"k3": {JobID: "55", Task: 2, State: "PENDING", Reason: "Dependency"}}; !reflect.DeepEqual(active, want) {
		t.Errorf("active = %v, want %v", active, want)
	}
}

// FuzzQueue feeds Queue arbitrary squeue output ("@" stands for the path
// of the cache's tasks file). It must not fail or panic; every stage it
// reports is one that the reported array task of the tasks file runs;
// dead jobs come once each, in job id order, and only from lines naming
// a tasks file of this cache.
func FuzzQueue(f *testing.F) {
	f.Add("101|0|RUNNING|None|spn:@\n101|1|PENDING|Priority|spn:@\n999|0|PENDING|None|spn:/elsewhere/x.tasks\n103|0|PENDING|DependencyNeverSatisfied|spn:@\n")
	f.Add("7|2|PENDING|Dependency|spn:@\n7|3|PENDING|Dependency|spn:@\n7|-1|RUNNING|None|spn:@\n7|N/A|RUNNING|None|spn:@\n")
	f.Add("1|0|RUNNING|None|spn:@|x\n|0|||spn:@\n2|0|PENDING|DependencyNeverSatisfied|spn:/other\n")
	c, file := queueCache(f)
	lines := []string{"k0", "k1 k2", "k3"}
	f.Fuzz(func(t *testing.T, listing string) {
		out := strings.ReplaceAll(listing, "@", file)
		active, dead, err := Queue(context.Background(), &fakeSlurm{squeue: out}, c)
		if err != nil {
			t.Fatalf("Queue: %v", err)
		}
		for key, a := range active {
			if a.Task < 0 || a.Task >= len(lines) || !slices.Contains(strings.Fields(lines[a.Task]), key) {
				t.Errorf("stage %q reported at task %d, which does not run it", key, a.Task)
			}
		}
		if !slices.IsSortedFunc(dead, byJobID) || len(slices.Compact(slices.Clone(dead))) != len(dead) {
			t.Errorf("dead jobs not in order, once each: %q", dead)
		}
		for _, id := range dead {
			listed := false
			for _, l := range strings.Split(out, "\n") {
				fields := strings.SplitN(l, "|", 5)
				listed = listed || len(fields) == 5 && fields[0] == id && fields[3] == "DependencyNeverSatisfied" &&
					strings.HasPrefix(fields[4], CommentPrefix+c.Root+string(filepath.Separator))
			}
			if !listed {
				t.Errorf("dead job %q is not listed as never runnable with a tasks file of this cache", id)
			}
		}
	})
}
