package slurm

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/spn-project/spn/stages"
	"github.com/spn-project/spn/stages/cache"
	"github.com/spn-project/spn/stages/plan"
)

// TestSubmitGPU: the train stages of a CUDA plan go to jobs that ask for
// one GPU, in the script they write and on sbatch's command line, and run
// their stages on the job's GPU; the other stages ask for none.
func TestSubmitGPU(t *testing.T) {
	c, err := cache.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	p := testPlan()
	for _, n := range p.Nodes {
		if n.Kind == stages.KindTrain {
			n.Params = stages.TrainParams{Device: "cuda"}
		}
	}
	f := &fakeSlurm{}
	sub, err := Submit(context.Background(), p, c, nil, Options{Config: cfg("array", 1000, 1),
		Binary: "/shared/spn", Spec: "t", Runner: f})
	if err != nil {
		t.Fatal(err)
	}
	if len(sub.Jobs) == 0 {
		t.Fatal("no jobs")
	}
	var gpuJobs int
	for i, j := range sub.Jobs {
		script, err := os.ReadFile(j.Script)
		if err != nil {
			t.Fatal(err)
		}
		call := strings.Join(f.calls[i], " ")
		gpu := j.Kind == stages.KindTrain
		if gpu {
			gpuJobs++
		}
		for _, c := range []struct {
			what, text, want string
		}{
			{"script", string(script), "#SBATCH --gres=gpu:1\n"},
			{"script", string(script), " --device cuda:0 "},
			{"sbatch call", call, " --gres=gpu:1 "},
		} {
			if strings.Contains(c.text, c.want) != gpu {
				t.Errorf("%s job: %s has %q: %v, want %v:\n%s", j.Kind, c.what, c.want, !gpu, gpu, c.text)
			}
		}
		if !strings.HasPrefix(string(script), "#!/bin/sh\n") {
			t.Errorf("%s job: script does not start with #!/bin/sh:\n%s", j.Kind, script)
		}
	}
	if gpuJobs != 2 {
		t.Errorf("%d GPU jobs, want 2 (select trains, final trains)", gpuJobs)
	}
}

// TestGroupSeparatesDevices: CPU and GPU train stages never share a job.
func TestGroupSeparatesDevices(t *testing.T) {
	p := testPlan()
	var trains []*plan.Node
	for _, n := range p.Nodes {
		if n.Kind == stages.KindTrain && n.Name != "final 0" && n.Name != "final 1" {
			trains = append(trains, n)
		}
	}
	trains[1].Params = stages.TrainParams{Device: "cuda"}
	trains[3].Params = stages.TrainParams{Device: "cuda"}
	jobs := Group(trains, cfg("array", 1000, 10))
	if len(jobs) != 2 {
		t.Fatalf("%d jobs, want 2: %q", len(jobs), shape(jobs))
	}
	for _, j := range jobs {
		for _, task := range j.Tasks {
			for _, n := range task {
				if n.Device() != j.Device {
					t.Errorf("job of device %q holds %s of device %q", j.Device, n.Name, n.Device())
				}
			}
		}
	}
}
