package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spn-project/spn/stages"
	"github.com/spn-project/spn/stages/cache"
)

// TestFinalRunsOutliveGridGrowth: under the errica protocol, a grid that
// grows by a point that does not win leaves every final run's result and
// checkpoint as they were. Each final stage is seeded as the training of
// its fold's winner (stages.Binder), not from its select stage's key, so
// a fresh cache gives the same bytes; in the same cache the final stages
// (new keys: their select stages saw one more point) take the earlier
// ones' artifacts instead of training again, and still do after spn cache
// gc removed the stages that took them last; spn plan says which stage a
// final stage to run will copy.
func TestFinalRunsOutliveGridGrowth(t *testing.T) {
	dir := t.TempDir()
	spec := func(lrs string) string {
		src := `package spn

name: "grow"
mode: "smoke"
experiments: spn: {
	dataset: {kind: "prox", h: 3, graphs: 60, folds: 3, kmax: 3}
	model: {kind: "spn", k: 3}
	grid: "training.lr": [` + lrs + `]
	training: epochs: 3
	protocol: {kind: "errica", splits: 2, runs: 2}
}
tables: main: {
	formats: ["csv"]
	columns: [{key: "prox", header: "3-Prox"}]
	rows: [{label: "SPN", cells: prox: experiment: "spn"}]
}
`
		f := filepath.Join(dir, "grow.cue")
		if err := os.WriteFile(f, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return f
	}
	type final struct {
		rec           *cache.Record
		result, model []byte
	}
	// finals returns the final stages of cacheDir by "split/run", the
	// newest last.
	finals := func(cacheDir string) map[string][]final {
		c, err := cache.Open(cacheDir)
		if err != nil {
			t.Fatal(err)
		}
		recs, _ := filepath.Glob(filepath.Join(cacheDir, stages.KindTrain, "*", "*", stages.FileRecord))
		out := map[string][]final{}
		for _, f := range recs {
			var r cache.Record
			var p stages.TrainParams
			b, err := os.ReadFile(f)
			if err == nil {
				err = json.Unmarshal(b, &r)
			}
			if err == nil {
				err = json.Unmarshal(r.Params, &p)
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.Role != stages.RoleFinal {
				continue
			}
			d := c.StageDir(stages.KindTrain, r.Key)
			res, err1 := os.ReadFile(filepath.Join(d, stages.FileResult))
			mod, err2 := os.ReadFile(filepath.Join(d, stages.FileModel))
			if err := errors.Join(err1, err2); err != nil {
				t.Fatal(err)
			}
			k := fmt.Sprintf("%d/%d", p.Split, p.Run)
			out[k] = append(out[k], final{&r, res, mod})
		}
		for _, fs := range out {
			slices.SortFunc(fs, func(a, b final) int { return a.rec.End.Compare(b.rec.End) })
		}
		return out
	}
	run := func(cacheDir, lrs string) map[string][]final {
		t.Helper()
		if r := spn(realEngine(), cacheDir, "run", spec(lrs), "--out", filepath.Join(dir, "out")); r.code != exitOK {
			t.Fatalf("run with lr %s: exit %d:\n%s", lrs, r.code, r.stderr)
		}
		return finals(cacheDir)
	}
	same := func(what string, a, b final) {
		t.Helper()
		if a.rec.BoundKey == "" || a.rec.Key == b.rec.Key {
			t.Fatalf("%s: keys %s and %s, bound key %q: want two keys and a bound key", what, a.rec.Key, b.rec.Key, a.rec.BoundKey)
		}
		if a.rec.BoundKey != b.rec.BoundKey {
			t.Fatalf("test setup: the added point won %s's fold (bound keys differ)", what)
		}
		if a.rec.Seed != b.rec.Seed || !bytes.Equal(a.result, b.result) || !bytes.Equal(a.model, b.model) {
			t.Errorf("%s: seeds %d and %d; same result %v, same model %v", what, a.rec.Seed, b.rec.Seed,
				bytes.Equal(a.result, b.result), bytes.Equal(a.model, b.model))
		}
		if !strings.Contains(string(a.result), `"lr": 0.01,`) {
			t.Errorf("%s trained another point: %s", what, a.result)
		}
	}
	// A learning rate this small leaves the model as initialised: it does
	// not win a fold (same checks that).
	one := run(filepath.Join(dir, "one"), "0.01")
	fresh := run(filepath.Join(dir, "fresh"), "0.01, 1e-9")
	grown := run(filepath.Join(dir, "one"), "0.01, 1e-9")
	if len(one) != 4 || len(fresh) != 4 {
		t.Fatalf("%d and %d final runs, want 4 (2 splits × 2 runs)", len(one), len(fresh))
	}
	for k, f := range one {
		if len(f) != 1 || len(fresh[k]) != 1 || len(grown[k]) != 2 {
			t.Fatalf("final %s: %d, %d and %d stages in the caches, want 1, 1 and 2", k, len(f), len(fresh[k]), len(grown[k]))
		}
		same("final "+k+" in a fresh cache", f[0], fresh[k][0])
		if f[0].rec.ReusedFrom != "" || fresh[k][0].rec.ReusedFrom != "" {
			t.Errorf("final %s: reused in a cache without it", k)
		}
		same("final "+k+" in the same cache", f[0], grown[k][1])
		if got := grown[k][1].rec.ReusedFrom; got != f[0].rec.Key {
			t.Errorf("final %s: reused from %q, want %s", k, got, f[0].rec.Key)
		}
	}
	// spn cache gc keeping the one-point spec removes the grown spec's
	// final stages, the stages the bound index names last; run again, the
	// grown spec's final stages take the one-point spec's artifacts.
	spec("0.01")
	if r := spn(realEngine(), filepath.Join(dir, "one"), "cache", "gc", filepath.Join(dir, "grow.cue")); r.code != exitOK {
		t.Fatalf("cache gc: exit %d:\n%s", r.code, r.stderr)
	}
	again := run(filepath.Join(dir, "one"), "0.01, 1e-9")
	for k, f := range one {
		if len(again[k]) != 2 || again[k][0].rec.Key != f[0].rec.Key {
			t.Fatalf("final %s: %d stages after cache gc and a rerun, want the one-point spec's and the grown spec's", k, len(again[k]))
		}
		same("final "+k+" after cache gc", f[0], again[k][1])
		if got := again[k][1].rec.ReusedFrom; got != f[0].rec.Key {
			t.Errorf("final %s after cache gc: reused from %q, want %s", k, got, f[0].rec.Key)
		}
	}
	// A final stage lost after its select stage ran (an interrupted run):
	// spn plan says that its run copies the one-point spec's stage.
	lost := again["0/0"][1].rec.Key
	c, err := cache.Open(filepath.Join(dir, "one"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(c.StageDir(stages.KindTrain, lost)); err != nil {
		t.Fatal(err)
	}
	r := spn(realEngine(), filepath.Join(dir, "one"), "plan", "--json", spec("0.01, 1e-9"))
	if r.code != exitOK {
		t.Fatalf("plan: exit %d:\n%s", r.code, r.stderr)
	}
	var nodes []struct{ Key, Status, Reason string }
	if err := json.Unmarshal([]byte(r.stdout), &nodes); err != nil {
		t.Fatal(err)
	}
	toRun := 0
	for _, n := range nodes {
		if n.Status == "cached" {
			continue
		}
		toRun++
		want := "; its run copies stage " + one["0/0"][0].rec.Key[:12] + ", bound to the same training"
		if n.Key != lost || !strings.HasSuffix(n.Reason, want) {
			t.Errorf("plan: %s %s (%s), want only %s to run, its reason ending %q", n.Key[:12], n.Status, n.Reason, lost[:12], want)
		}
	}
	if toRun != 1 {
		t.Errorf("plan: %d stages to run, want the lost final stage", toRun)
	}
	// spn status counts it among the stages to run that train nothing.
	r = spn(realEngine(), filepath.Join(dir, "one"), "status", spec("0.01, 1e-9"))
	if r.code != exitOK {
		t.Fatalf("status: exit %d:\n%s", r.code, r.stderr)
	}
	if want := "of the stages to run, 1 copy a cached stage bound to the same training and train nothing\n"; !strings.Contains(r.stdout, want) {
		t.Errorf("status:\n%s\nwant a line %q", r.stdout, want)
	}
}
