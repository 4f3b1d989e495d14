package plan

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/spn-project/spn/schema"
	"github.com/spn-project/spn/stages"
	"github.com/spn-project/spn/stages/protocol"
)

// Status is whether a node must run.
type Status int

// Node statuses.
const (
	// Unknown: the plan was not resolved against a cache.
	Unknown Status = iota
	// Cached: the node's artifacts are complete in the cache.
	Cached
	// ToRun: the node must run; Reason says why.
	ToRun
)

// String returns "cached", "to run" or "unknown".
func (s Status) String() string {
	switch s {
	case Cached:
		return "cached"
	case ToRun:
		return "to run"
	}
	return "unknown"
}

// Node is one stage of the plan.
type Node struct {
	// Key is the stage key (SHA-256 hex).
	Key string
	// Kind is the stage kind name, e.g. "train".
	Kind string
	// Version is the kind's version that entered Key.
	Version string
	// Name is human readable, e.g. "train prox(h=3) spn k=5 L=5 split=0 run=1".
	Name string
	// Params is one of the stages.*Params values.
	Params any
	// JSON is the canonical JSON of Params (what the stage receives).
	JSON json.RawMessage
	// Deps are the inputs, in the order the stage expects them.
	Deps []*Node
	// VKey is the version-free hash (kind, params, deps' VKeys): equal for
	// the same work under another code version.
	VKey string
	// SeedKey is the key the stage has when every train stage runs on the
	// CPU (the hash of its params without a train stage's device, and of
	// its deps' SeedKeys): the key its seed derives from, so that a stage
	// draws the same random numbers (initial parameters, batch order,
	// dropout masks) on a GPU as on the CPU. It is Key on the CPU.
	SeedKey string
	// Index is the node's position in Plan.Nodes.
	Index int
	// Status and Reason are set by Resolve.
	Status Status
	Reason string
	// Reuses is, for a stage to run, the key of the stage whose artifacts
	// its run copies (ResolveReuse); "" when it computes them.
	Reuses string
}

// ShortKey is the first 12 hex digits of the key.
func (n *Node) ShortKey() string {
	if len(n.Key) > 12 {
		return n.Key[:12]
	}
	return n.Key
}

// Plan is a DAG of stages in a topological order (every node after its
// dependencies; otherwise in the order the spec declares its parts).
type Plan struct {
	// Nodes in plan order.
	Nodes []*Node
	// Evaluate maps experiment names to their evaluate node.
	Evaluate map[string]*Node
	// Tabulate maps table names to their tabulate node.
	Tabulate map[string]*Node
	// TableExperiments maps table names to the experiments the table
	// references (sorted).
	TableExperiments map[string][]string
	// Figure maps figure names to their figure node.
	Figure map[string]*Node
}

type builder struct {
	reg *stages.Registry
	// device is TrainParams.Device of every train stage.
	device string
	plan   *Plan
	byKey  map[string]*Node
	// gen maps experiment names to their generate node (for figures).
	gen map[string]*Node
}

// Build unrolls spec into a plan. The registry supplies each kind's version
// (part of every key); a kind missing from it is an error.
func Build(spec *schema.Spec, reg *stages.Registry) (*Plan, error) {
	if spec == nil {
		return nil, errors.New("building plan: nil spec")
	}
	if reg == nil {
		return nil, errors.New("building plan: nil registry")
	}
	device, err := trainDevice(spec.Device)
	if err != nil {
		return nil, err
	}
	b := &builder{
		reg:    reg,
		device: device,
		plan: &Plan{
			Evaluate:         map[string]*Node{},
			Tabulate:         map[string]*Node{},
			TableExperiments: map[string][]string{},
			Figure:           map[string]*Node{},
		},
		byKey: map[string]*Node{},
		gen:   map[string]*Node{},
	}
	for i := range spec.Experiments {
		e := &spec.Experiments[i]
		if _, dup := b.plan.Evaluate[e.Name]; dup {
			return nil, fmt.Errorf("experiments: duplicate experiment name %q", e.Name)
		}
		ev, err := b.experiment(e)
		if err != nil {
			return nil, fmt.Errorf("experiments.%s: %w", e.Name, err)
		}
		b.plan.Evaluate[e.Name] = ev
	}
	for i := range spec.Tables {
		t := &spec.Tables[i]
		if _, dup := b.plan.Tabulate[t.Name]; dup {
			return nil, fmt.Errorf("tables: duplicate table name %q", t.Name)
		}
		if err := b.table(t); err != nil {
			return nil, fmt.Errorf("tables.%s: %w", t.Name, err)
		}
	}
	for i := range spec.Figures {
		f := &spec.Figures[i]
		if err := b.figure(spec, f); err != nil {
			return nil, fmt.Errorf("figures.%s: %w", f.Name, err)
		}
	}
	disambiguate(b.plan.Nodes)
	return b.plan, nil
}

// trainDevice is TrainParams.Device for the spec's device, which the
// command has resolved: "cpu" (or empty) gives "", "cuda" and "cuda:N"
// give "cuda"; "auto" is an error, since only the machine that runs the
// stages can resolve it.
func trainDevice(device string) (string, error) {
	if device == "" {
		return "", nil
	}
	kind, _, err := schema.ParseDevice(device)
	if err != nil {
		return "", fmt.Errorf("building plan: device: %w", err)
	}
	switch kind {
	case schema.DeviceCUDA:
		return schema.DeviceCUDA, nil
	case schema.DeviceAuto:
		return "", errors.New(`building plan: device "auto" must be resolved to "cpu" or "cuda:N" first`)
	}
	return "", nil
}

// Device returns the device kind of a train node ("" for the CPU or any
// other kind of node).
func (n *Node) Device() string {
	if tp, ok := n.Params.(stages.TrainParams); ok {
		return tp.Device
	}
	return ""
}

func (b *builder) add(kind, name string, params any, deps []*Node) (*Node, error) {
	k, ok := b.reg.Get(kind)
	if !ok {
		return nil, fmt.Errorf("no stage kind %q is registered in this build of spn", kind)
	}
	id, err := identify(k, params, deps)
	if err != nil {
		return nil, err
	}
	if n, ok := b.byKey[id.key]; ok {
		return n, nil
	}
	n := &Node{
		Key: id.key, Kind: kind, Version: id.version, Name: name,
		Params: params, JSON: id.raw, Deps: deps,
		VKey: id.vKey, SeedKey: id.seedKey,
		Index: len(b.plan.Nodes),
	}
	b.byKey[id.key] = n
	b.plan.Nodes = append(b.plan.Nodes, n)
	return n, nil
}

// identity is what identifies a stage of kind k with parameters params
// on deps: its parameters' JSON (what the stage receives), the kind's
// version for them, and its three keys (see the package documentation,
// doc.go). Planned stages (builder.add) and bound ones (Bind) are
// identified here and nowhere else.
type identity struct {
	raw                json.RawMessage
	version            string
	key, vKey, seedKey string
}

// identify returns the identity of a stage of kind k with parameters
// params on deps. A dep without a SeedKey (a plan file's input) seeds
// with its Key (Node.seedKey).
func identify(k stages.Kind, params any, deps []*Node) (identity, error) {
	kind := k.Name()
	var id identity
	var err error
	if id.raw, err = json.Marshal(params); err != nil {
		return identity{}, fmt.Errorf("encoding %s parameters: %w", kind, err)
	}
	id.version = stages.VersionOfValue(k, params, id.raw)
	// The key's and the version-free key's parameters: a file's content
	// hash enters the key but neither its path nor anything of it the
	// version-free key (stages.FileParams).
	keyRaw, vRaw := id.raw, id.raw
	if fp, ok := params.(stages.FileParams); ok {
		if keyRaw, err = json.Marshal(fp.KeyParams()); err == nil {
			vRaw, err = json.Marshal(fp.VersionFreeParams())
		}
		if err != nil {
			return identity{}, fmt.Errorf("encoding %s parameters: %w", kind, err)
		}
	}
	depKeys := make([]string, len(deps))
	depV := make([]string, len(deps))
	depSeed := make([]string, len(deps))
	for i, d := range deps {
		depKeys[i], depV[i], depSeed[i] = d.Key, d.VKey, d.seedKey()
	}
	id.key = hashOf(keyDoc{Kind: kind, Version: id.version, Params: keyRaw, Deps: depKeys})
	id.vKey = hashOf(keyDoc{Kind: kind, Params: vRaw, Deps: depV})
	id.seedKey = id.key
	if cpu, ok := seedParams(params); ok || !slices.Equal(depSeed, depKeys) {
		cpuRaw := keyRaw
		if ok {
			if cpuRaw, err = json.Marshal(cpu); err != nil {
				return identity{}, fmt.Errorf("encoding %s parameters: %w", kind, err)
			}
		}
		id.seedKey = hashOf(keyDoc{Kind: kind, Version: id.version, Params: cpuRaw, Deps: depSeed})
	}
	return id, nil
}

// seedKey is the key n's seed derives from: its SeedKey, or its Key for
// a node built without one (a plan file's input).
func (n *Node) seedKey() string {
	if n.SeedKey != "" {
		return n.SeedKey
	}
	return n.Key
}

// seedParams returns params as they enter a seed key, and whether they
// differ: a train stage's without its device (a stage draws the same
// random numbers on a GPU as on the CPU) and without the notes of a bound
// final stage (stages.TrainParams.Notes).
func seedParams(params any) (any, bool) {
	tp, ok := params.(stages.TrainParams)
	if !ok || (tp.Device == "" && tp.Notes == nil) {
		return params, false
	}
	tp.Device, tp.Notes = "", nil
	return tp, true
}

// keyDoc is what a key hashes. Version is empty for version-free hashes.
type keyDoc struct {
	Kind    string          `json:"kind"`
	Version string          `json:"version,omitempty"`
	Params  json.RawMessage `json:"params"`
	Deps    []string        `json:"deps"`
}

// hashOf returns the hex SHA-256 of d's JSON encoding, the bytes
// json.Marshal(d) gives when d.Params is compact (json.Marshal's own
// output, as the builder's always is). It writes them to the hash itself
// rather than through json.Marshal, which re-validates and compacts
// Params for every key (a quarter of the time of planning a large spec).
func hashOf(d keyDoc) string {
	buf := make([]byte, 0, 64+len(d.Params)+67*len(d.Deps))
	buf = append(buf, `{"kind":`...)
	buf = appendJSONString(buf, d.Kind)
	if d.Version != "" {
		buf = append(buf, `,"version":`...)
		buf = appendJSONString(buf, d.Version)
	}
	buf = append(buf, `,"params":`...)
	if d.Params == nil {
		buf = append(buf, "null"...)
	} else {
		buf = append(buf, d.Params...)
	}
	buf = append(buf, `,"deps":`...)
	if d.Deps == nil {
		buf = append(buf, "null"...)
	} else {
		buf = append(buf, '[')
		for i, k := range d.Deps {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = appendJSONString(buf, k)
		}
		buf = append(buf, ']')
	}
	buf = append(buf, '}')
	sum := sha256.Sum256(buf)
	return hex.EncodeToString(sum[:])
}

// appendJSONString appends s as json.Marshal encodes a string: plain
// letters, digits and punctuation as they are (the kinds, versions and hex
// keys of a plan), anything else through json.Marshal itself.
func appendJSONString(buf []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			b, _ := json.Marshal(s) // a string always encodes
			return append(buf, b...)
		}
	}
	buf = append(buf, '"')
	buf = append(buf, s...)
	return append(buf, '"')
}

// RunSeed is the seed of run r of an experiment with the given seeds (see
// the package documentation).
func RunSeed(seeds []int64, r int) int64 {
	if r < len(seeds) && len(seeds) > 1 {
		return seeds[r]
	}
	if len(seeds) == 0 {
		return int64(r)
	}
	return seeds[0] + int64(r)
}

func (b *builder) experiment(e *schema.Experiment) (*Node, error) {
	p := e.Protocol
	proto, err := protocol.Get(p.Kind)
	if err != nil {
		return nil, fmt.Errorf("protocol.kind: %w", err)
	}
	if len(e.Points) == 0 {
		return nil, errors.New("points: the experiment has no configuration")
	}
	layout, err := proto.Layout(p, len(e.Points))
	if err != nil {
		return nil, err
	}
	ds := e.Dataset
	label := DatasetLabel(ds)
	targets, factors, err := targets(ds, p.Metric)
	if err != nil {
		return nil, err
	}
	genDS := ds
	// generate does not depend on the precompute settings nor on the
	// targets a model predicts (train selects them): leave them out so
	// every kmax and every property shares one generated dataset.
	genDS.KMax, genDS.Unreachable, genDS.Targets = 0, false, nil
	gen, err := b.add(stages.KindGenerate, "generate "+label, stages.GenerateParams{Dataset: genDS}, nil)
	if err != nil {
		return nil, err
	}
	b.gen[e.Name] = gen
	preName := fmt.Sprintf("precompute %s kmax=%d", label, ds.KMax)
	if ds.Unreachable {
		preName += " unreachable"
	}
	pre, err := b.add(stages.KindPrecompute, preName,
		stages.PrecomputeParams{KMax: ds.KMax, Unreachable: ds.Unreachable}, []*Node{gen})
	if err != nil {
		return nil, err
	}
	train := func(t protocol.Train, sel *Node) (*Node, error) {
		tp := stages.TrainParams{Role: t.Role, Metric: p.Metric, Split: t.Split, Run: t.Run, Seed: RunSeed(e.Seeds, t.Run),
			Targets: targets, Factors: factors, Device: b.device}
		deps := []*Node{gen, pre}
		var name string
		switch {
		case t.Point < 0:
			if sel == nil {
				return nil, fmt.Errorf("protocol %s: a %s train stage without a point needs a select stage", p.Kind, t.Role)
			}
			deps = append(deps, sel)
			name = fmt.Sprintf("train %s final split=%d run=%d", e.Name, t.Split, t.Run)
		case t.Point >= len(e.Points):
			return nil, fmt.Errorf("protocol %s: layout names grid point %d of %d", p.Kind, t.Point, len(e.Points))
		default:
			pt := e.Points[t.Point]
			tp.Point = &pt
			if t.Role == stages.RoleSelect {
				name = fmt.Sprintf("train %s %s select split=%d", label, PointLabel(pt), t.Split)
			} else {
				name = fmt.Sprintf("train %s %s split=%d run=%d", label, PointLabel(pt), t.Split, t.Run)
			}
		}
		return b.add(stages.KindTrain, name, tp, deps)
	}
	// Selection stages are added just before the first stage that needs
	// them, so the plan order follows the protocol's (fold by fold).
	sels := make([]*Node, len(layout.Selects))
	selectNode := func(i int) (*Node, error) {
		if i < 0 {
			return nil, nil
		}
		if i >= len(sels) {
			return nil, fmt.Errorf("protocol %s: layout names select stage %d of %d", p.Kind, i, len(sels))
		}
		if sels[i] != nil {
			return sels[i], nil
		}
		s := layout.Selects[i]
		deps := make([]*Node, 0, len(s.Trains))
		for _, t := range s.Trains {
			n, err := train(t, nil)
			if err != nil {
				return nil, err
			}
			deps = append(deps, n)
		}
		n, err := b.add(stages.KindSelect, fmt.Sprintf("select %s split=%d", e.Name, s.Split),
			stages.SelectParams{Split: s.Split, Points: len(e.Points), Runs: s.Runs, SelectOn: p.SelectOn}, deps)
		if err != nil {
			return nil, err
		}
		sels[i] = n
		return n, nil
	}
	evalDeps := make([]*Node, 0, len(layout.Evaluated))
	for _, t := range layout.Evaluated {
		sel, err := selectNode(t.Select)
		if err != nil {
			return nil, err
		}
		n, err := train(t, sel)
		if err != nil {
			return nil, err
		}
		evalDeps = append(evalDeps, n)
	}
	return b.add(stages.KindEvaluate, "evaluate "+e.Name,
		stages.EvaluateParams{Protocol: p, Points: len(e.Points)}, evalDeps)
}

func (b *builder) table(t *schema.Table) error {
	seen := map[string]bool{}
	for ri, row := range t.Rows {
		cols := make([]string, 0, len(row.Cells))
		for c := range row.Cells {
			cols = append(cols, c)
		}
		sort.Strings(cols)
		for _, c := range cols {
			exp := row.Cells[c].Experiment
			if exp == "" {
				continue
			}
			if _, ok := b.plan.Evaluate[exp]; !ok {
				return fmt.Errorf("rows[%d].cells.%s.experiment: unknown experiment %q", ri, c, exp)
			}
			seen[exp] = true
		}
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	deps := make([]*Node, len(names))
	for i, n := range names {
		deps[i] = b.plan.Evaluate[n]
	}
	n, err := b.add(stages.KindTabulate, "tabulate "+t.Name,
		stages.TabulateParams{Table: *t, ExperimentNames: names}, deps)
	if err != nil {
		return err
	}
	b.plan.Tabulate[t.Name] = n
	b.plan.TableExperiments[t.Name] = names
	return nil
}

// disambiguate appends " [shortkey]" to names that several distinct nodes
// share, so every line of a plan names one stage.
func disambiguate(nodes []*Node) {
	count := map[string]int{}
	for _, n := range nodes {
		count[n.Name]++
	}
	for _, n := range nodes {
		if count[n.Name] > 1 {
			n.Name += " [" + n.Key[:8] + "]"
		}
	}
}

// DatasetLabel is d.Label() (schema.Dataset.Label), the dataset's part
// of stage names: "prox(h=3)", "tu(NCI1)".
func DatasetLabel(d schema.Dataset) string { return d.Label() }

// PointLabel is a short human label of a grid point, e.g.
// "spn k=5 L=5 lr=0.001": the model kind, k and layers ("unreachable"
// after them when the model reads N_∞, "layer_norm" when its readout has
// layer norms, DRew's conv, delay and weights), then the other grid
// values by the last element of their path.
func PointLabel(p schema.Point) string {
	parts := []string{p.Model.Kind, "k=" + strconv.Itoa(p.Model.K), "L=" + strconv.Itoa(p.Model.Layers)}
	if p.Model.Unreachable {
		parts = append(parts, "unreachable")
	}
	if p.Model.LayerNorm {
		parts = append(parts, "layer_norm")
	}
	if p.Model.Conv != "" {
		parts = append(parts, "conv="+p.Model.Conv, "delay="+p.Model.Delay.String(), "weights="+p.Model.Weights)
	}
	for _, v := range p.Values {
		switch v.Path {
		case "model.kind", "model.k", "model.layers", "model.unreachable", "model.layer_norm", "model.conv", "model.delay", "model.weights":
			continue
		}
		short := v.Path
		if i := strings.LastIndexByte(short, '.'); i >= 0 {
			short = short[i+1:]
		}
		parts = append(parts, short+"="+formatValue(v.Value))
	}
	return strings.Join(parts, " ")
}

func formatValue(v any) string {
	switch x := v.(type) {
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case string:
		return x
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
