package plan

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spn-project/spn/schema"
	"github.com/spn-project/spn/stages"
	"github.com/spn-project/spn/stages/cache"

	"github.com/spn-project/spn/internal/testkit/golden"
)

type testKind struct{ name, version string }

func (k testKind) Name() string                                 { return k.name }
func (k testKind) Version() string                              { return k.version }
func (k testKind) Run(ctx context.Context, j *stages.Job) error { return nil }

func testRegistry(overrides map[string]string) *stages.Registry {
	var ks []stages.Kind
	for _, n := range []string{stages.KindGenerate, stages.KindPrecompute, stages.KindTrain,
		stages.KindSelect, stages.KindEvaluate, stages.KindTabulate} {
		v := "1"
		if o, ok := overrides[n]; ok {
			v = o
		}
		ks = append(ks, testKind{n, v})
	}
	return stages.NewRegistry(ks...)
}

func fptr(f float64) *float64 { return &f }

func point(k int, lr float64) schema.Point {
	return schema.Point{
		Values: []schema.GridValue{{Path: "model.k", Value: k}, {Path: "training.lr", Value: lr}},
		Model:  schema.Model{Kind: "spn", K: k, Layers: 2, Hidden: 8, Pool: "sum", Eps: 0},
		Training: schema.Training{Optimizer: "adam", LR: lr, BatchSize: 16, Epochs: 3,
			Selection: "best_val_metric"},
	}
}

// testSpec: two holdout experiments on one h-Prox dataset (sharing
// generate and precompute), one errica experiment on a TU dataset, one table.
func testSpec() *schema.Spec {
	prox := schema.Dataset{Kind: "prox", H: 3, Graphs: 40, Levels: [2]int{2, 3}, Width: [2]int{2, 3},
		Seed: 7, Folds: 2, KMax: 3}
	hold := schema.Protocol{Kind: "holdout", Splits: 2, Runs: 2, SelectOn: "val_metric", Metric: "accuracy"}
	return &schema.Spec{
		Name: "small", Device: "cpu", Mode: "smoke",
		Experiments: []schema.Experiment{
			{Name: "prox_gin", Dataset: prox, Protocol: hold, Seeds: []int64{1},
				Points: []schema.Point{point(1, 0.01)}},
			{Name: "prox_spn", Dataset: prox, Protocol: hold, Seeds: []int64{1},
				Points: []schema.Point{point(1, 0.01), point(3, 0.01)}},
			{Name: "tu_spn", Dataset: schema.Dataset{Kind: "tu", Name: "PROTEINS", KMax: 2},
				Protocol: schema.Protocol{Kind: "errica", Splits: 2, Runs: 2, SelectOn: "val_loss", Metric: "accuracy"},
				Seeds:    []int64{5}, Points: []schema.Point{point(1, 0.01), point(2, 0.001)}},
		},
		Tables: []schema.Table{{
			Name: "main", Style: "results", Formats: []string{"markdown"}, Scale: 100, Digits: 1,
			Columns: []schema.Column{{Key: "prox", Header: "3-Prox"}, {Key: "tu", Header: "PROTEINS"}},
			Rows: []schema.Row{
				{Label: "GIN", Cells: map[string]schema.Cell{"prox": {Experiment: "prox_gin"}, "tu": {Mean: fptr(73.1), Std: fptr(4.2), Source: "errica"}}},
				{Label: "SPN", Cells: map[string]schema.Cell{"tu": {Experiment: "tu_spn"}, "prox": {Experiment: "prox_spn"}}},
			},
		}},
	}
}

func mustBuild(t *testing.T, s *schema.Spec, reg *stages.Registry) *Plan {
	t.Helper()
	p, err := Build(s, reg)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	return p
}

func keysByName(p *Plan) map[string]string {
	m := map[string]string{}
	for _, n := range p.Nodes {
		m[n.Name] = n.Key
	}
	return m
}

func countKind(p *Plan, kind string) int {
	c := 0
	for _, n := range p.Nodes {
		if n.Kind == kind {
			c++
		}
	}
	return c
}

func TestBuildStructure(t *testing.T) {
	p := mustBuild(t, testSpec(), testRegistry(nil))
	// prox: 1 generate + 1 precompute shared; tu: 1 + 1.
	want := map[string]int{
		stages.KindGenerate: 2, stages.KindPrecompute: 2,
		// prox_gin's point equals prox_spn's first point: its 4 trains are shared.
		// holdout: (1+2 points)×2 splits×2 runs = 12, deduped to 8; errica: 2 splits×(2 select + 2 final) = 8.
		stages.KindTrain: 16, stages.KindSelect: 2, stages.KindEvaluate: 3, stages.KindTabulate: 1,
	}
	for k, n := range want {
		if got := countKind(p, k); got != n {
			t.Errorf("%d %s nodes, want %d", got, k, n)
		}
	}
	for i, n := range p.Nodes {
		if n.Index != i {
			t.Fatalf("node %s index %d at %d", n.Name, n.Index, i)
		}
		for _, d := range n.Deps {
			if d.Index >= i {
				t.Errorf("%s depends on later node %s", n.Name, d.Name)
			}
		}
	}
	// holdout evaluate inputs: point-major, then split, then run.
	ev := p.Evaluate["prox_spn"]
	if len(ev.Deps) != 8 {
		t.Fatalf("prox_spn evaluate has %d inputs, want 8", len(ev.Deps))
	}
	for i, d := range ev.Deps {
		tp := d.Params.(stages.TrainParams)
		pt, s, r := i/4, (i/2)%2, i%2
		if tp.Point.Model.K != []int{1, 3}[pt] || tp.Split != s || tp.Run != r || tp.Role != stages.RoleHoldout {
			t.Errorf("input %d = %+v, want point %d split %d run %d", i, tp, pt, s, r)
		}
		if tp.Seed != int64(1+r) {
			t.Errorf("input %d seed %d, want %d", i, tp.Seed, 1+r)
		}
		if len(d.Deps) != 2 || d.Deps[0].Kind != stages.KindGenerate || d.Deps[1].Kind != stages.KindPrecompute {
			t.Errorf("train %s deps are not [generate precompute]", d.Name)
		}
	}
	// errica: finals split-major; each depends on its fold's select.
	ev = p.Evaluate["tu_spn"]
	if len(ev.Deps) != 4 {
		t.Fatalf("tu_spn evaluate has %d inputs, want 4", len(ev.Deps))
	}
	for i, d := range ev.Deps {
		tp := d.Params.(stages.TrainParams)
		if tp.Role != stages.RoleFinal || tp.Point != nil || tp.Split != i/2 || tp.Run != i%2 {
			t.Errorf("final %d = %+v", i, tp)
		}
		sel := d.Deps[2]
		sp := sel.Params.(stages.SelectParams)
		if sel.Kind != stages.KindSelect || sp.Split != i/2 || sp.Points != 2 || sp.Runs != 1 || sp.SelectOn != "val_loss" {
			t.Errorf("final %d select = %s %+v", i, sel.Kind, sp)
		}
		for j, st := range sel.Deps {
			stp := st.Params.(stages.TrainParams)
			if stp.Role != stages.RoleSelect || stp.Split != i/2 || stp.Point.Model.K != []int{1, 2}[j] || stp.Run != 0 {
				t.Errorf("select input %d = %+v", j, stp)
			}
		}
	}
	tab := p.Tabulate["main"]
	tp := tab.Params.(stages.TabulateParams)
	if strings.Join(tp.ExperimentNames, ",") != "prox_gin,prox_spn,tu_spn" {
		t.Errorf("tabulate experiments %v", tp.ExperimentNames)
	}
	for i, d := range tab.Deps {
		if d != p.Evaluate[tp.ExperimentNames[i]] {
			t.Errorf("tabulate input %d is %s", i, d.Name)
		}
	}
	gen := p.Nodes[0].Params.(stages.GenerateParams)
	if gen.Dataset.KMax != 0 {
		t.Errorf("generate params carry kmax %d", gen.Dataset.KMax)
	}
}

func TestNodeNames(t *testing.T) {
	p := mustBuild(t, testSpec(), testRegistry(nil))
	names := map[string]bool{}
	for _, n := range p.Nodes {
		if names[n.Name] {
			t.Errorf("duplicate name %q", n.Name)
		}
		names[n.Name] = true
	}
	for _, want := range []string{
		"generate prox(h=3)",
		"precompute prox(h=3) kmax=3",
		"train prox(h=3) spn k=3 L=2 lr=0.01 split=1 run=0",
		"train tu(PROTEINS) spn k=2 L=2 lr=0.001 select split=1",
		"select tu_spn split=0",
		"train tu_spn final split=1 run=1",
		"evaluate prox_spn",
		"tabulate main",
	} {
		if !names[want] {
			t.Errorf("no node named %q", want)
		}
	}
}

// TestPointLabel: kind, k and layers, "unreachable" for a model that
// reads N_∞, "layer_norm" for one whose readout has layer norms, then the
// other grid values.
func TestPointLabel(t *testing.T) {
	for _, c := range []struct {
		p    schema.Point
		want string
	}{
		{schema.Point{Model: schema.Model{Kind: "spn", K: 5, Layers: 3}}, "spn k=5 L=3"},
		{schema.Point{Model: schema.Model{Kind: "spn", K: 5, Layers: 3, Unreachable: true}}, "spn k=5 L=3 unreachable"},
		{schema.Point{Model: schema.Model{Kind: "spn", K: 2, Layers: 3, Unreachable: true},
			Values: []schema.GridValue{{Path: "model.k", Value: 2.0}, {Path: "model.unreachable", Value: true}, {Path: "training.lr", Value: 0.01}}},
			"spn k=2 L=3 unreachable lr=0.01"},
		{schema.Point{Model: schema.Model{Kind: "espn", K: 5, Layers: 5, LayerNorm: true},
			Values: []schema.GridValue{{Path: "model.layer_norm", Value: true}, {Path: "training.lr", Value: 0.001}}},
			"espn k=5 L=5 layer_norm lr=0.001"},
		{schema.Point{Model: schema.Model{Kind: "drew", Layers: 5, Conv: "gin", Weights: "learned"},
			Values: []schema.GridValue{{Path: "model.delay", Value: "none"}, {Path: "training.lr", Value: 0.001}}},
			"drew k=0 L=5 conv=gin delay=none weights=learned lr=0.001"},
	} {
		if got := PointLabel(c.p); got != c.want {
			t.Errorf("PointLabel(%+v) = %q, want %q", c.p, got, c.want)
		}
	}
}

func TestSeeds(t *testing.T) {
	for _, c := range []struct {
		seeds []int64
		run   int
		want  int64
	}{
		{nil, 2, 2}, {[]int64{10}, 0, 10}, {[]int64{10}, 3, 13},
		{[]int64{4, 9, 2}, 1, 9}, {[]int64{4, 9, 2}, 2, 2}, {[]int64{4, 9}, 3, 7},
	} {
		if got := RunSeed(c.seeds, c.run); got != c.want {
			t.Errorf("RunSeed(%v, %d) = %d, want %d", c.seeds, c.run, got, c.want)
		}
	}
}

// Keys depend on content only: map insertion order and names of nodes do
// not matter; a deep copy gives the same keys.
func TestKeysStable(t *testing.T) {
	a := mustBuild(t, testSpec(), testRegistry(nil))
	s := testSpec()
	// Same cells, built in another insertion order.
	s.Tables[0].Rows[1].Cells = map[string]schema.Cell{}
	s.Tables[0].Rows[1].Cells["prox"] = schema.Cell{Experiment: "prox_spn"}
	s.Tables[0].Rows[1].Cells["tu"] = schema.Cell{Experiment: "tu_spn"}
	s.Description = "other text"
	s.File = "elsewhere.cue"
	b := mustBuild(t, s, testRegistry(nil))
	if len(a.Nodes) != len(b.Nodes) {
		t.Fatalf("%d vs %d nodes", len(a.Nodes), len(b.Nodes))
	}
	for i := range a.Nodes {
		if a.Nodes[i].Key != b.Nodes[i].Key {
			t.Errorf("%s: key changed", a.Nodes[i].Name)
		}
	}
}

// Every parameter enters the keys of the stages it feeds and only those.
func TestKeysChange(t *testing.T) {
	base := keysByName(mustBuild(t, testSpec(), testRegistry(nil)))
	cases := []struct {
		name    string
		mutate  func(*schema.Spec)
		reg     map[string]string
		changed []string // node names (of the base plan) whose key must change
		same    []string // node names whose key must not change
	}{
		{"dataset seed", func(s *schema.Spec) { s.Experiments[0].Dataset.Seed = 8; s.Experiments[1].Dataset.Seed = 8 },
			nil, []string{"generate prox(h=3)", "precompute prox(h=3) kmax=3", "evaluate prox_spn", "tabulate main"},
			[]string{"generate tu(PROTEINS)", "evaluate tu_spn"}},
		{"kmax", func(s *schema.Spec) { s.Experiments[2].Dataset.KMax = 4 },
			nil, []string{"evaluate tu_spn", "select tu_spn split=0"},
			[]string{"generate tu(PROTEINS)", "evaluate prox_spn"}},
		{"lr", func(s *schema.Spec) { s.Experiments[1].Points[1].Training.LR = 0.02 },
			nil, []string{"evaluate prox_spn", "tabulate main"},
			[]string{"evaluate prox_gin", "train prox(h=3) spn k=1 L=2 lr=0.01 split=0 run=0"}},
		{"hidden", func(s *schema.Spec) { s.Experiments[2].Points[0].Model.Hidden = 9 },
			nil, []string{"select tu_spn split=1", "train tu_spn final split=0 run=0"},
			[]string{"precompute tu(PROTEINS) kmax=2"}},
		{"unreachable", func(s *schema.Spec) {
			s.Experiments[2].Dataset.Unreachable = true
			for i := range s.Experiments[2].Points {
				s.Experiments[2].Points[i].Model.Unreachable = true
			}
		},
			nil, []string{"precompute tu(PROTEINS) kmax=2", "train tu(PROTEINS) spn k=1 L=2 lr=0.01 select split=0", "select tu_spn split=0"},
			[]string{"generate tu(PROTEINS)", "evaluate prox_spn"}},
		{"runs", func(s *schema.Spec) { s.Experiments[0].Protocol.Runs = 3 },
			nil, []string{"evaluate prox_gin"},
			[]string{"train prox(h=3) spn k=1 L=2 lr=0.01 split=0 run=0", "evaluate prox_spn"}},
		{"seeds", func(s *schema.Spec) { s.Experiments[2].Seeds = []int64{6} },
			nil, []string{"train tu_spn final split=0 run=0", "train tu(PROTEINS) spn k=1 L=2 lr=0.01 select split=0"},
			[]string{"generate tu(PROTEINS)"}},
		{"select_on", func(s *schema.Spec) { s.Experiments[2].Protocol.SelectOn = "val_metric" },
			nil, []string{"select tu_spn split=0", "evaluate tu_spn"},
			[]string{"train tu(PROTEINS) spn k=1 L=2 lr=0.01 select split=0"}},
		{"table digits", func(s *schema.Spec) { s.Tables[0].Digits = 2 },
			nil, []string{"tabulate main"}, []string{"evaluate prox_spn"}},
		{"cited constant", func(s *schema.Spec) { s.Tables[0].Rows[0].Cells["tu"] = schema.Cell{Mean: fptr(73.2), Std: fptr(4.2)} },
			nil, []string{"tabulate main"}, nil},
		{"train version", nil, map[string]string{stages.KindTrain: "2"},
			[]string{"train tu_spn final split=0 run=0", "select tu_spn split=0", "evaluate prox_gin", "tabulate main"},
			[]string{"generate prox(h=3)", "precompute tu(PROTEINS) kmax=2"}},
		{"generate version", nil, map[string]string{stages.KindGenerate: "2"},
			[]string{"generate prox(h=3)", "precompute prox(h=3) kmax=3", "evaluate prox_gin"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := testSpec()
			if c.mutate != nil {
				c.mutate(s)
			}
			p := mustBuild(t, s, testRegistry(c.reg))
			got := map[string]bool{}
			for _, n := range p.Nodes {
				got[n.Key] = true
			}
			for _, n := range c.changed {
				if base[n] == "" {
					t.Fatalf("no base node %q", n)
				}
				if got[base[n]] {
					t.Errorf("%s: key unchanged", n)
				}
			}
			for _, n := range c.same {
				if base[n] == "" {
					t.Fatalf("no base node %q", n)
				}
				if !got[base[n]] {
					t.Errorf("%s: key changed", n)
				}
			}
		})
	}
}

func TestSharedPrecompute(t *testing.T) {
	s := testSpec()
	// A third prox experiment with another kmax: same generate, own precompute.
	e := s.Experiments[0]
	e.Name = "prox_k5"
	e.Dataset.KMax = 5
	s.Experiments = append(s.Experiments, e)
	p := mustBuild(t, s, testRegistry(nil))
	if g, pc := countKind(p, stages.KindGenerate), countKind(p, stages.KindPrecompute); g != 2 || pc != 3 {
		t.Errorf("%d generate and %d precompute nodes, want 2 and 3", g, pc)
	}
	var pre []*Node
	for _, n := range p.Nodes {
		if n.Kind == stages.KindPrecompute && strings.HasPrefix(n.Name, "precompute prox") {
			pre = append(pre, n)
		}
	}
	if len(pre) != 2 || pre[0].Deps[0] != pre[1].Deps[0] {
		t.Errorf("prox precomputes do not share one generate")
	}
}

func TestBuildErrors(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*schema.Spec)
		reg    *stages.Registry
		want   string
	}{
		{"unknown protocol", func(s *schema.Spec) { s.Experiments[1].Protocol.Kind = "kfold" }, nil,
			`experiments.prox_spn: protocol.kind: unknown protocol kind "kfold" (want holdout, errica, fixed)`},
		{"no runs", func(s *schema.Spec) { s.Experiments[0].Protocol.Runs = 0 }, nil,
			"experiments.prox_gin: protocol.runs: need at least 1, got 0"},
		{"no points", func(s *schema.Spec) { s.Experiments[2].Points = nil }, nil,
			"experiments.tu_spn: points: the experiment has no configuration"},
		{"unknown experiment", func(s *schema.Spec) { s.Tables[0].Rows[1].Cells["tu"] = schema.Cell{Experiment: "nope"} }, nil,
			`tables.main: rows[1].cells.tu.experiment: unknown experiment "nope"`},
		{"missing kind", nil, stages.NewRegistry(testKind{"generate", "1"}),
			`experiments.prox_gin: no stage kind "precompute" is registered in this build of spn`},
		{"NaN", func(s *schema.Spec) { s.Tables[0].Scale = nan() }, nil,
			"tables.main: encoding tabulate parameters: json: unsupported value: NaN"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := testSpec()
			if c.mutate != nil {
				c.mutate(s)
			}
			reg := c.reg
			if reg == nil {
				reg = testRegistry(nil)
			}
			_, err := Build(s, reg)
			if err == nil || err.Error() != c.want {
				t.Errorf("error %v\nwant  %s", err, c.want)
			}
		})
	}
}

func nan() float64 { z := 0.0; return z / z }

// fakeStore: has = complete keys; last = version-free hash → (key, version).
type fakeStore struct {
	has  map[string]bool
	last map[string][2]string
}

func (f fakeStore) Has(kind, key string) (bool, error) { return f.has[key], nil }
func (f fakeStore) Last(kind, vkey string) (string, string, bool, error) {
	e, ok := f.last[vkey]
	return e[0], e[1], ok, nil
}

func TestResolve(t *testing.T) {
	s := testSpec()
	s.Experiments = s.Experiments[:1]
	s.Experiments[0].Protocol.Splits, s.Experiments[0].Protocol.Runs = 1, 1
	s.Tables = nil
	p := mustBuild(t, s, testRegistry(nil))
	// generate cached; precompute was run under version 0; train never.
	st := fakeStore{has: map[string]bool{p.Nodes[0].Key: true},
		last: map[string][2]string{p.Nodes[1].VKey: {"oldkey", "0"}}}
	if err := p.Resolve(st); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := p.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "testdata/resolve.txt.golden", buf.Bytes())
	want := []string{"", "code version changed (was 0)", "input precompute prox(h=3) kmax=3 must run", "input train prox(h=3) spn k=1 L=2 lr=0.01 split=0 run=0 must run"}
	for i, n := range p.Nodes {
		if n.Reason != want[i] {
			t.Errorf("%s: reason %q, want %q", n.Name, n.Reason, want[i])
		}
	}
	if c, r := p.Counts(); c != 1 || r != 3 {
		t.Errorf("counts %d cached %d to run", c, r)
	}
	// Everything cached but the evaluate, whose last key differs: an input
	// changed (e.g. a train rerun under another key elsewhere).
	st = fakeStore{has: map[string]bool{}, last: map[string][2]string{p.Nodes[3].VKey: {"other", "1"}}}
	for _, n := range p.Nodes[:3] {
		st.has[n.Key] = true
	}
	if err := p.Resolve(st); err != nil {
		t.Fatal(err)
	}
	if p.Nodes[3].Reason != "an input changed" || p.Nodes[0].Status != Cached {
		t.Errorf("evaluate reason %q, generate %s", p.Nodes[3].Reason, p.Nodes[0].Status)
	}
	st.last = nil
	if err := p.Resolve(st); err != nil {
		t.Fatal(err)
	}
	if p.Nodes[3].Reason != "not in cache" {
		t.Errorf("evaluate reason %q", p.Nodes[3].Reason)
	}
}

// countingStore is a cache.Cache seen only through Store (no listing),
// counting the lookups.
type countingStore struct {
	c     *cache.Cache
	calls int
}

func (s *countingStore) Has(kind, key string) (bool, error) { s.calls++; return s.c.Has(kind, key) }
func (s *countingStore) Last(kind, vkey string) (string, string, bool, error) {
	s.calls++
	return s.c.Last(kind, vkey)
}
func (s *countingStore) Damaged(kind, key string) *cache.Damage {
	s.calls++
	return s.c.Damaged(kind, key)
}

// listedStore is a countingStore that lists as the cache does.
type listedStore struct{ *countingStore }

func (s listedStore) StageKeys(kind string) (map[string]bool, error) { return s.c.StageKeys(kind) }
func (s listedStore) IndexKeys(kind string) (map[string]bool, error) { return s.c.IndexKeys(kind) }

// TestResolveListedCache: Resolve over a cache.Cache, which lists its
// stages and index entries at once, gives every stage the status and
// reason that asking the cache stage by stage gives: a cached stage, a
// damaged one, one run under another version, one whose input changed,
// and absent ones.
func TestResolveListedCache(t *testing.T) {
	s := testSpec()
	s.Experiments = s.Experiments[:1]
	s.Experiments[0].Protocol.Splits, s.Experiments[0].Protocol.Runs = 1, 2
	s.Tables = nil
	p := mustBuild(t, s, testRegistry(nil))
	c, err := cache.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	commit := func(n *Node) string {
		tmp, err := c.NewTemp(n.Key)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(tmp, "out.txt"), []byte(n.Name), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := c.Commit(tmp, &cache.Record{Key: n.Key, Kind: n.Kind, Version: n.Version, Name: n.Name}); err != nil {
			t.Fatal(err)
		}
		return c.StageDir(n.Kind, n.Key)
	}
	gen, pre, train0, train1 := p.Nodes[0], p.Nodes[1], p.Nodes[2], p.Nodes[3]
	commit(gen)
	commit(pre)
	os.WriteFile(filepath.Join(commit(train0), "out.txt"), []byte("damaged"), 0o644)
	if err := c.SetLast(train1.Kind, train1.VKey, train1.Key, "0"); err != nil {
		t.Fatal(err)
	}
	ev := p.Evaluate[s.Experiments[0].Name]
	if err := c.SetLast(ev.Kind, ev.VKey, strings.Repeat("e", 64), ev.Version); err != nil {
		t.Fatal(err)
	}
	resolve := func(st Store) []string {
		if err := p.Resolve(st); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, n := range p.Nodes {
			out = append(out, n.Status.String()+": "+n.Reason)
		}
		return out
	}
	c.Forget()
	plain := &countingStore{c: c}
	want := resolve(plain)
	c.Forget()
	listed := listedStore{&countingStore{c: c}}
	got := resolve(listed)
	if !slices.Equal(got, want) {
		t.Errorf("listed:\n%s\nstage by stage:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for i, w := range []string{"cached: ", "cached: ", "to run: damaged in cache, runs again: ", "to run: code version changed (was 0)"} {
		if !strings.HasPrefix(want[i], w) {
			t.Errorf("%s: %q, want %q…", p.Nodes[i].Name, want[i], w)
		}
	}
	if ev.Status != ToRun || !strings.HasPrefix(ev.Reason, "input train") {
		t.Errorf("evaluate: %s (%s)", ev.Status, ev.Reason)
	}
	// Listed: Has of the 3 stages there, Damaged of the damaged one, Last
	// of the 2 indexed: 6 lookups where the plain store takes 5 Has, 3
	// Damaged and 3 Last.
	if plain.calls != 11 || listed.calls != 6 {
		t.Errorf("lookups: %d stage by stage (want 11), %d listed (want 6)", plain.calls, listed.calls)
	}
	c.Forget()
	if err := p.Resolve(c); err != nil || !slices.Equal(resolve(c), want) {
		t.Errorf("over the cache itself: %v", err)
	}
}

func TestGoldenPlan(t *testing.T) {
	p := mustBuild(t, testSpec(), testRegistry(nil))
	if err := p.Resolve(fakeStore{}); err != nil {
		t.Fatal(err)
	}
	var txt, js bytes.Buffer
	if err := p.WriteText(&txt); err != nil {
		t.Fatal(err)
	}
	if err := p.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "testdata/plan.txt.golden", txt.Bytes())
	golden.Check(t, "testdata/plan.json.golden", js.Bytes())
}
