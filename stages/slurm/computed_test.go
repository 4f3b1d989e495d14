package slurm

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/spn-project/spn/stages"
	"github.com/spn-project/spn/stages/cache"
	"github.com/spn-project/spn/stages/plan"
)

// Reusing counts the reusing stages that still have to run: not those
// cached, queued or running, and not the stages that train.
func TestReusing(t *testing.T) {
	c, err := cache.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	p := testPlan()
	trains := []*plan.Node{}
	for _, n := range p.Nodes {
		if n.Kind == "train" {
			trains = append(trains, n)
		}
	}
	// trains 0..4 select, 5 and 6 final; 1..4 and the finals reuse 0.
	for _, n := range trains[1:] {
		n.Reuses = trains[0].Key
	}
	trains[2].Status = plan.Cached
	active := map[string]Active{
		trains[3].Key: {JobID: "7", State: "PENDING"},
		trains[4].Key: {JobID: "7", Task: 1, State: "RUNNING"},
	}
	if got := Reusing(p, c, active); got != 3 { // trains 1, 5, 6
		t.Fatalf("Reusing = %d, want 3", got)
	}
	if got := Reusing(p, c, nil); got != 5 {
		t.Fatalf("Reusing without a queue = %d, want 5", got)
	}
}

// Computed counts the cached train results by what computed them, skips
// stages still to run and the other kinds, and names the file it cannot
// read.
func TestComputed(t *testing.T) {
	c, err := cache.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	p := testPlan()
	write := func(n *plan.Node, body string) {
		t.Helper()
		dir := c.StageDir(n.Kind, n.Key)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, stages.FileResult), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		n.Status = plan.Cached
	}
	var trains []*plan.Node
	for _, n := range p.Nodes {
		if n.Kind == "train" {
			trains = append(trains, n)
		}
	}
	write(trains[0], `{"compute":{"device":"cpu","gemm":"gonum"}}`)
	write(trains[1], `{"compute":{"device":"cpu","gemm":"gonum"}}`)
	write(trains[2], `{"compute":{"device":"cuda:0","gpu":"NVIDIA H100","capability":"9.0","driver":"13.0"}}`)
	write(trains[3], `{"metrics":{}}`) // written before results recorded compute
	write(p.Nodes[0], `not json: a generate stage is not read`)
	got, err := Computed(p, c)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{
		"cpu, gonum": 2,
		"cuda:0, NVIDIA H100 (compute capability 9.0, driver CUDA 13.0)": 1,
		"not recorded": 1,
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Computed = %v, want %v", got, want)
	}
	write(trains[4], `{"compute":`)
	path := filepath.Join(c.StageDir("train", trains[4].Key), stages.FileResult)
	if _, err := Computed(p, c); err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("a damaged result: error %v, want one naming %s", err, path)
	}
}

// InQueue counts the stages with a job that are not cached; Tasks the
// array tasks of a submission's jobs.
func TestInQueueAndTasks(t *testing.T) {
	p := testPlan()
	for _, tc := range []struct {
		name   string
		active map[string]Active
		cached []int // nodes cached
		want   int
	}{
		{"no queue", nil, nil, 0},
		{"two queued", map[string]Active{p.Nodes[1].Key: {JobID: "7"}, p.Nodes[2].Key: {JobID: "7", Task: 1}}, nil, 2},
		{"one of them cached meanwhile", map[string]Active{p.Nodes[1].Key: {JobID: "7"}, p.Nodes[2].Key: {JobID: "7", Task: 1}}, []int{2}, 1},
		{"unknown keys", map[string]Active{"zz": {JobID: "8"}}, nil, 0},
	} {
		for _, n := range p.Nodes {
			n.Status = plan.ToRun
		}
		for _, i := range tc.cached {
			p.Nodes[i].Status = plan.Cached
		}
		if got := InQueue(p, tc.active); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
	n := p.Nodes[0]
	sub := &Submission{Jobs: []*Job{{Tasks: [][]*plan.Node{{n}, {n, n}}}, {Tasks: [][]*plan.Node{{n}}}, {}}}
	if got := sub.Tasks(); got != 3 {
		t.Errorf("Tasks = %d, want 3", got)
	}
	if got := (&Submission{}).Tasks(); got != 0 {
		t.Errorf("Tasks of an empty submission = %d", got)
	}
}
