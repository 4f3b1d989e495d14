package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spn-project/spn/data/prox"
	"github.com/spn-project/spn/data/proxcheck"
	"github.com/spn-project/spn/models"
	"github.com/spn-project/spn/models/kernels"
	"github.com/spn-project/spn/schema"
	"github.com/spn-project/spn/stages/device"
	"github.com/spn-project/spn/stages/plan"
)

// FuzzSpecPath runs the whole spec path on mutated specs: spn vet's loader
// must never panic and must position every error in the file; a spec it
// accepts must plan, its h-Proximity datasets must pass the generator's
// own checks (small ones are generated for real), and every grid point's
// model must build, for prox and TU datasets (the dimensions of
// ENZYMES: 3 labels, 18 attributes, 6 classes). A spec vet accepts and a
// stage then rejects is a failure: vet could have known. Seeds: every
// spec of the repository up to 4 KiB (the paper's specs are too slow for
// a fuzz iteration; TestSmokeSpecs runs them).
//
// Run it with -fuzzminimizetime 0s: by default Go minimises every new
// interesting input for up to a minute, and these inputs are whole specs
// of up to 4 KiB, so the fuzzer spends most of its time minimising (on
// the 2-core machine, 12 minutes with the default made 254 executions a
// second, 3 minutes without minimising 3 150; no single input took over
// 2 s).
func FuzzSpecPath(f *testing.F) {
	var files []string
	for _, pat := range []string{"testdata/*.cue", "../../schema/testdata/*/*.cue", "../../pipelines/*.cue", "../../pipelines/*/*.cue"} {
		m, err := filepath.Glob(pat)
		if err != nil {
			f.Fatal(err)
		}
		files = append(files, m...)
	}
	for _, file := range files {
		src, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		if len(src) > 4096 {
			// The paper's specs (hundreds of grid points) take seconds and
			// gigabytes per load under the fuzzer's coverage build, which
			// then kills the worker; TestSmokeSpecs runs them for real.
			continue
		}
		f.Add(src, true)
		f.Add(src, false)
	}
	reg := newRegistry()
	mreg := device.TrainModels(reg)
	f.Fuzz(func(t *testing.T, src []byte, smoke bool) {
		opt := schema.Options{Models: mreg}
		if smoke {
			opt.Mode = schema.ModeSmoke
		}
		const name = "fuzz.cue"
		spec, err := schema.LoadBytes(name, src, opt)
		if err != nil {
			var errs schema.Errors
			if !errors.As(err, &errs) || len(errs) == 0 {
				t.Fatalf("error is not a non-empty schema.Errors: %T %v", err, err)
			}
			for _, e := range errs {
				if strings.Contains(e.Msg, "internal error") {
					t.Fatalf("loader panicked: %v", e)
				}
				if e.File != name || e.Line < 1 || e.Col < 1 {
					t.Fatalf("error not positioned in the input: %#v", e)
				}
			}
			return
		}
		if _, err := plan.Build(spec, reg); err != nil {
			t.Fatalf("vet accepts the spec, plan rejects it: %v", err)
		}
		for _, e := range spec.Experiments {
			d := e.Dataset
			var cfg models.Config
			switch d.Kind {
			case "prox":
				pc := prox.Config{H: d.H, Graphs: d.Graphs, Levels: d.Levels, Width: d.Width, Seed: d.Seed, Folds: d.Folds, Threads: 1}
				if err := pc.Validate(); err != nil {
					t.Fatalf("vet accepts experiment %s, the generator rejects it: %v", e.Name, err)
				}
				if d.Graphs <= 24 && d.Levels[1]*d.Width[1] <= 40 && d.H <= 4 {
					if _, err := prox.Generate(context.Background(), pc); err != nil {
						t.Fatalf("vet accepts experiment %s, generation fails: %v", e.Name, err)
					}
				}
				cfg = models.Config{NumLabels: proxcheck.NumColours, Task: models.TaskClassification, Out: 2}
			case "tu":
				cfg = models.Config{NumLabels: 3, AttrDim: 18, Task: models.TaskClassification, Out: 6}
			default:
				continue // dataset shapes of the other kinds come from their files
			}
			for i, pt := range e.Points {
				if i >= 16 {
					break // enough to cover every gridded value of a fuzzed grid
				}
				m := pt.Model
				if m.Hidden > 256 || m.Layers > 8 || m.Heads > 64 || m.K > 32 {
					continue // too large to build in a fuzz iteration
				}
				cfg.Model = m
				if _, err := mreg.New(cfg, 1, kernels.CPU{Threads: 1}); err != nil {
					t.Fatalf("vet accepts experiment %s point %d, the model rejects it: %v", e.Name, i, err)
				}
			}
		}
	})
}
