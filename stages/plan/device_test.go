package plan

import (
	"strings"
	"testing"

	"github.com/spn-project/spn/stages"
)

// TestDeviceKeys: a CUDA device changes exactly the keys of the train
// stages and of what depends on them, whatever the ordinal; the CPU (or an
// empty device) keeps the keys; "auto" must be resolved first.
func TestDeviceKeys(t *testing.T) {
	build := func(device string) *Plan {
		s := testSpec()
		s.Device = device
		return mustBuild(t, s, testRegistry(nil))
	}
	cpu := build("cpu")
	if empty := build(""); !equalKeys(cpu, empty) {
		t.Error(`device "" and "cpu" give different keys`)
	}
	cuda, cuda1 := build("cuda"), build("cuda:1")
	if !equalKeys(cuda, cuda1) {
		t.Error(`"cuda" and "cuda:1" give different keys`)
	}
	ck := keysByName(cpu)
	for _, n := range cuda.Nodes {
		trainDep := n.Kind == stages.KindTrain
		for _, d := range n.Deps {
			trainDep = trainDep || d.Key != ck[d.Name]
		}
		if changed := n.Key != ck[n.Name]; changed != trainDep {
			t.Errorf("%s: key changed %v, want %v", n.Name, changed, trainDep)
		}
		want := ""
		if n.Kind == stages.KindTrain {
			want = "cuda"
		}
		if n.Device() != want {
			t.Errorf("%s: Device() = %q, want %q", n.Name, n.Device(), want)
		}
	}
	for _, n := range cpu.Nodes {
		if n.Device() != "" || strings.Contains(string(n.JSON), `"device"`) {
			t.Errorf("%s: CPU node has a device: %s", n.Name, n.JSON)
		}
		if n.SeedKey != n.Key {
			t.Errorf("%s: CPU node's seed key %.12s is not its key %.12s", n.Name, n.SeedKey, n.Key)
		}
	}
	// Every stage of the GPU plan seeds as the CPU plan's stage of the
	// same name does.
	for _, n := range cuda.Nodes {
		if n.SeedKey != ck[n.Name] {
			t.Errorf("%s: seed key %.12s on the GPU, key %.12s on the CPU", n.Name, n.SeedKey, ck[n.Name])
		}
	}
	s := testSpec()
	s.Device = "auto"
	if _, err := Build(s, testRegistry(nil)); err == nil || !strings.Contains(err.Error(), `device "auto" must be resolved`) {
		t.Errorf(`Build with "auto": %v`, err)
	}
	s.Device = "gpu"
	if _, err := Build(s, testRegistry(nil)); err == nil || !strings.Contains(err.Error(), `"gpu" is not a device`) {
		t.Errorf(`Build with "gpu": %v`, err)
	}
}

// TestWriteDevice: a CUDA plan's text ends with its GPU stage count; a
// CPU plan's has no such line.
func TestWriteDevice(t *testing.T) {
	for _, c := range []struct{ device, want string }{{"cpu", ""}, {"cuda:0", "16 train stages run on a GPU (device cuda)\n"}} {
		s := testSpec()
		s.Device = c.device
		var b strings.Builder
		if err := mustBuild(t, s, testRegistry(nil)).WriteText(&b); err != nil {
			t.Fatal(err)
		}
		text := b.String()
		last := text[strings.LastIndex(strings.TrimSuffix(text, "\n"), "\n")+1:]
		if c.want == "" && strings.Contains(text, "GPU") || c.want != "" && last != c.want {
			t.Errorf("device %s: plan ends %q", c.device, last)
		}
	}
}

func equalKeys(a, b *Plan) bool {
	if len(a.Nodes) != len(b.Nodes) {
		return false
	}
	for i := range a.Nodes {
		if a.Nodes[i].Key != b.Nodes[i].Key {
			return false
		}
	}
	return true
}
