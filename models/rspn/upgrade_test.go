package rspn

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/models"
	"github.com/spn-project/spn/models/internal/testkit/modeltest"
	"github.com/spn-project/spn/models/kernels"
)

// TestCheckpointRevision1 reads testdata/checkpoint_rev1.json, an R-SPN
// checkpoint written by spn before the stacked MLPs (commit a86c562:
// k = 3, 2 layers, hidden 4, mean pooling, three Adam steps on the first
// 16 molecules of QM9's valid file), through the Upgrader: the model's
// evaluation-mode outputs on those molecules are the bits that build
// computed (testdata/checkpoint_rev1_outputs.json; within 1e-5 with
// another build's products, -tags openblas), the checkpoint it
// writes back is in the stacked layout and reads back as it is, and
// damaged revision-1 checkpoints are refused naming the parameter.
func TestCheckpointRevision1(t *testing.T) {
	reg := models.NewRegistry(Kind{})
	old, err := os.ReadFile("testdata/checkpoint_rev1.json")
	if err != nil {
		t.Fatal(err)
	}
	m, err := models.ReadCheckpoint(bytes.NewReader(old), reg, kernels.CPU{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	ds := modeltest.QM9U0(t, 16)
	idx := make([]int, 16)
	for i := range idx {
		idx[i] = i
	}
	b, err := data.NewBatch(ds, modeltest.HopsOf(t, ds, 3), idx, 3)
	if err != nil {
		t.Fatal(err)
	}
	out, err := m.Forward(b, false)
	if err != nil {
		t.Fatal(err)
	}
	var want []uint32
	raw, err := os.ReadFile("testdata/checkpoint_rev1_outputs.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	if len(out) != len(want) {
		t.Fatalf("%d outputs, want %d", len(out), len(want))
	}
	for i, v := range out {
		w := math.Float32frombits(want[i])
		// The same bits with the default build's products, which wrote the
		// file; another build's GEMM (-tags openblas) rounds otherwise.
		if kernels.DefaultGEMM && math.Float32bits(v) != want[i] || math.Abs(float64(v-w)) > 1e-5*(1+math.Abs(float64(w))) {
			t.Fatalf("output %d = %v, revision 1's build gave %v (products: %s)", i, v, w, kernels.GEMM)
		}
	}
	var cur bytes.Buffer
	if err := models.WriteCheckpoint(&cur, m); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(cur.String(), ".mlp_s.") || !strings.Contains(cur.String(), `"layer1.mlps.lin1.w","shape":[24,4]`) {
		t.Errorf("the checkpoint written back is not in the stacked layout: %.300s", cur.String())
	}
	again, err := models.ReadCheckpoint(bytes.NewReader(cur.Bytes()), reg, kernels.CPU{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	var back bytes.Buffer
	if err := models.WriteCheckpoint(&back, again); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(back.Bytes(), cur.Bytes()) {
		t.Error("a stacked checkpoint does not read back as it is")
	}

	for _, c := range []struct{ from, to, want string }{
		{`"layer1.mlp_h.bn1.gamma"`, `"layer1.mlp_x.bn1.gamma"`, `parameter "layer1.mlp_x.bn1.gamma" where layer1's MLPs have "layer1.mlp_h.bn1.gamma"`},
		{`"layer2.mlp_r4.bn2.running_var"`, `"layer2.mlp_r4.bn2.running_vax"`, `no layer2.mlp_r4.bn2.running_var`},
	} {
		bad := strings.Replace(string(old), c.from, c.to, 1)
		if bad == string(old) {
			t.Fatalf("%s is not in the checkpoint", c.from)
		}
		_, err := models.ReadCheckpoint(strings.NewReader(bad), reg, kernels.CPU{Threads: 1})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s renamed: %v, want an error with %q", c.from, err, c.want)
		}
	}
}

// FuzzReadCheckpointRevision1 reads mutations of the revision-1
// checkpoint through the Upgrader: never a panic, and whatever reads
// writes back in the stacked layout and reads back as it is.
func FuzzReadCheckpointRevision1(f *testing.F) {
	old, err := os.ReadFile("testdata/checkpoint_rev1.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(old)
	f.Add(old[:len(old)/2])
	f.Add([]byte(strings.Replace(string(old), `"layer2.mlp_r1.lin2.w","shape":[4,4]`, `"layer2.mlp_r1.lin2.w","shape":[2,8]`, 1)))
	reg := models.NewRegistry(Kind{})
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 1<<20 {
			return
		}
		m, err := models.ReadCheckpoint(bytes.NewReader(b), reg, kernels.CPU{Threads: 1})
		if err != nil {
			return
		}
		var out bytes.Buffer
		if err := models.WriteCheckpoint(&out, m); err != nil {
			return // values a checkpoint may not hold (NaN) decode but do not write
		}
		again, err := models.ReadCheckpoint(bytes.NewReader(out.Bytes()), reg, kernels.CPU{Threads: 1})
		if err != nil {
			t.Fatalf("a checkpoint written back does not read: %v", err)
		}
		var back bytes.Buffer
		if err := models.WriteCheckpoint(&back, again); err != nil || !bytes.Equal(back.Bytes(), out.Bytes()) {
			t.Fatalf("a checkpoint written back does not read back as it is (%v)", err)
		}
	})
}
