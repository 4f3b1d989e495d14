package train

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/spn-project/spn/internal/testkit/cudatest"
	"github.com/spn-project/spn/models/cuda"
	"github.com/spn-project/spn/stages"
)

// emulatedGPU returns the GPU of the emulated device (built for the test;
// it skips without a C compiler or off Linux), caching its kernels in a
// temporary directory.
func emulatedGPU(t *testing.T) *GPU {
	t.Helper()
	return &GPU{Opener: cudatest.Emulator(t), Ordinals: []int{0}, PTXDir: filepath.Join(t.TempDir(), "ptx")}
}

// TestDeviceRun trains SPN (k = 2) and GIN on the emulated device through
// the stage: the result records cuda:0 and the GPU, the compiled kernels
// are in the PTX directory, a second run gives the same result and model
// bytes, and the accuracies are those of the CPU run within one graph of
// the twelve of the validation and test sets (the losses differ by
// rounding, models/fit's TestTrainOnDevice, which flips an undecided
// graph here and there).
func TestDeviceRun(t *testing.T) {
	in := inputs(t)
	gpu := emulatedGPU(t)
	for _, c := range []struct {
		kind string
		k    int
	}{{"spn", 2}, {"gin", 1}} {
		t.Run(c.kind, func(t *testing.T) {
			p := stages.TrainParams{Role: stages.RoleHoldout, Point: point(c.kind, c.k), Metric: "accuracy", Seed: 1}
			cj := job(t, p, in)
			if err := (Kind{}).Run(context.Background(), cj); err != nil {
				t.Fatal(err)
			}
			cpu := readResult(t, cj.Dir)
			p.Device = "cuda"
			var results, models_ []string
			for range 2 {
				j := job(t, p, in)
				if err := (Kind{GPU: gpu}).Run(context.Background(), j); err != nil {
					t.Fatal(err)
				}
				for _, f := range []struct {
					name string
					dst  *[]string
				}{{stages.FileResult, &results}, {stages.FileModel, &models_}} {
					b, err := os.ReadFile(filepath.Join(j.Dir, f.name))
					if err != nil {
						t.Fatal(err)
					}
					*f.dst = append(*f.dst, string(b))
				}
				r := readResult(t, j.Dir)
				if c := r.Compute; c == nil || c.Device != "cuda:0" || c.GPU == "" || c.Capability == "" || c.Driver == "" {
					t.Fatalf("compute %+v, want cuda:0 with the GPU's name, capability and driver", c)
				}
				if len(r.Epochs) != len(cpu.Epochs) || !reflect.DeepEqual(r.Point, cpu.Point) {
					t.Fatalf("%d epochs of %+v on the device, %d of %+v on the CPU", len(r.Epochs), r.Point, len(cpu.Epochs), cpu.Point)
				}
				if tol := 1.0/12 + 1e-9; math.Abs(r.TestScore-cpu.TestScore) > tol || math.Abs(r.ValScore-cpu.ValScore) > tol {
					t.Errorf("accuracies val %v test %v on the device, %v and %v on the CPU", r.ValScore, r.TestScore, cpu.ValScore, cpu.TestScore)
				}
				t.Logf("%s: %v; val %.4f test %.4f (CPU %.4f, %.4f), epoch %d (CPU %d)", c.kind, r.Compute, r.ValScore, r.TestScore, cpu.ValScore, cpu.TestScore, r.BestEpoch, cpu.BestEpoch)
			}
			if results[0] != results[1] || models_[0] != models_[1] {
				t.Error("two device runs give different results or models")
			}
			ptx, err := filepath.Glob(filepath.Join(gpu.PTXDir, "*.ptx"))
			if err != nil || len(ptx) != 1 {
				t.Errorf("PTX cache holds %v (%v), want one file", ptx, err)
			}
		})
	}
}

// TestDeviceOutOfMemory: a stage that runs out of the GPU's memory fails
// with an error that is stages.ErrDeviceMemory (the executor runs such a
// stage again alone when it shared its GPU) and cuda's out-of-memory
// error, names what to change, and writes no result.
func TestDeviceOutOfMemory(t *testing.T) {
	in := inputs(t)
	lib := cudatest.Emulator(t)
	lib.SetMemory(t, 64<<10)
	t.Cleanup(func() { lib.SetMemory(t, 0) })
	gpu := &GPU{Opener: lib, Ordinals: []int{0}, PTXDir: filepath.Join(t.TempDir(), "ptx")}
	p := stages.TrainParams{Role: stages.RoleHoldout, Point: point("spn", 2), Metric: "accuracy", Seed: 1, Device: "cuda"}
	j := job(t, p, in)
	err := (Kind{GPU: gpu}).Run(context.Background(), j)
	if !errors.Is(err, stages.ErrDeviceMemory) || !errors.Is(err, cuda.ErrOutOfMemory) || !strings.Contains(err.Error(), "training does not fit in cuda:0's memory") {
		t.Fatalf("err = %v, want stages.ErrDeviceMemory and cuda.ErrOutOfMemory with the hint", err)
	}
	if _, err := os.Stat(filepath.Join(j.Dir, stages.FileResult)); !os.IsNotExist(err) {
		t.Errorf("a result was written (%v)", err)
	}
}

// TestDeviceRefusesKind checks that a kind without device math (graphormer)
// fails before training, naming its kind and the device, and writes no
// result.
func TestDeviceRefusesKind(t *testing.T) {
	in := inputs(t)
	p := stages.TrainParams{Role: stages.RoleHoldout, Point: point("graphormer", 1), Metric: "accuracy", Device: "cuda"}
	j := job(t, p, in)
	err := (Kind{GPU: emulatedGPU(t)}).Run(context.Background(), j)
	if err == nil || !strings.Contains(err.Error(), `model kind "graphormer" cannot train on device cuda:0: it has no device math`) {
		t.Fatalf("err = %v, want the refusal of graphormer on cuda:0", err)
	}
	if _, err := os.Stat(filepath.Join(j.Dir, stages.FileResult)); !os.IsNotExist(err) {
		t.Errorf("a result was written (%v)", err)
	}
}

// TestStageGPU: a stage of device "cuda" may run on any of the kind's
// GPUs (the executor runs one at a time on each); CPU stages, and every
// stage of a kind given no GPU, need none. Open refuses a GPU that is
// not one of the kind's.
func TestStageGPU(t *testing.T) {
	gpu := &GPU{Ordinals: []int{2, 0}}
	for _, tc := range []struct {
		name   string
		kind   Kind
		params string
		want   []int
		ok     bool
	}{
		{"cuda stage", Kind{GPU: gpu}, `{"role":"holdout","device":"cuda"}`, []int{2, 0}, true},
		{"cpu stage", Kind{GPU: gpu}, `{"role":"holdout"}`, nil, false},
		{"no GPU given", Kind{}, `{"device":"cuda"}`, nil, false},
		{"no GPUs listed", Kind{GPU: &GPU{}}, `{"device":"cuda"}`, nil, false},
		{"bad params", Kind{GPU: gpu}, `{"device":`, nil, false},
	} {
		got, ok := tc.kind.StageGPU([]byte(tc.params))
		if !slices.Equal(got, tc.want) || ok != tc.ok {
			t.Errorf("%s: StageGPU = %v, %v; want %v, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
	if _, err := gpu.Open(1); err == nil || err.Error() != "device cuda:1: not one of the GPUs given to the train stages ([2 0])" {
		t.Errorf("Open(1) of GPUs 2 and 0: %v", err)
	}
}
