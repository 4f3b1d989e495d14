package schema

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"cuelang.org/go/cue"

	"github.com/spn-project/spn/data/ogb"
)

// MaxPoints bounds the number of points of one experiment's grid.
const MaxPoints = 10000

// TUFolds is the number of outer folds of the Errica et al. TU splits.
const TUFolds = 10

// decode turns the validated root value into a Spec, recording the errors
// of the Go-side checks in l.errs.
func (l *loader) decode() *Spec {
	spec := &Spec{File: l.file}
	l.decodeInto([]string{"name"}, l.root.LookupPath(cue.ParsePath("name")), &spec.Name)
	if d := l.root.LookupPath(cue.ParsePath("description")); d.Exists() {
		l.decodeInto([]string{"description"}, d, &spec.Description)
	}
	l.decodeInto([]string{"device"}, l.root.LookupPath(cue.ParsePath("device")), &spec.Device)
	l.decodeInto([]string{"mode"}, l.root.LookupPath(cue.ParsePath("mode")), &spec.Mode)
	if _, _, err := ParseDevice(spec.Device); err != nil && len(l.errs) == 0 {
		l.errAt([]string{"device"}, "%v", err)
	}
	l.executor(spec)
	var seeds []int64
	l.decodeInto([]string{"seeds"}, l.root.LookupPath(cue.ParsePath("seeds")), &seeds)
	l.distinctSeeds([]string{"seeds"}, seeds)

	names := map[string]bool{}
	for _, f := range sortedFields(l.root.LookupPath(cue.ParsePath("experiments"))) {
		names[f.name] = true // even when invalid, so tables do not report it missing
		if e, ok := l.experiment(f.name, f.v, seeds); ok {
			spec.Experiments = append(spec.Experiments, e)
		}
	}
	restore := l.checking(CheckTable)
	for _, f := range sortedFields(l.root.LookupPath(cue.ParsePath("tables"))) {
		spec.Tables = append(spec.Tables, l.table(f.name, f.v, names))
	}
	for _, f := range sortedFields(l.root.LookupPath(cue.ParsePath("figures"))) {
		spec.Figures = append(spec.Figures, l.figure(f.name, f.v, spec.Experiments, names))
	}
	l.sourceCaptions(spec)
	l.pairedSplits(spec)
	restore()
	if spec.Experiments == nil {
		spec.Experiments = []Experiment{}
	}
	if spec.Tables == nil {
		spec.Tables = []Table{}
	}
	return spec
}

// decodeInto decodes v into x, recording a positioned error on failure.
func (l *loader) decodeInto(segs []string, v cue.Value, x any) bool {
	if err := v.Decode(x); err != nil {
		if !l.numericRange(segs, v, 0) {
			l.errAt(segs, "%v", strings.Join(strings.Fields(err.Error()), " "))
		}
		return false
	}
	return true
}

// numericRange reports, at the field itself, every number below v that
// does not fit the Go type it decodes into (an int beyond 64 bits, a float
// beyond float64's range or so small it would round to 0). It returns
// whether it found one.
func (l *loader) numericRange(segs []string, v cue.Value, depth int) bool {
	found := false
	switch v.Kind() {
	case cue.IntKind:
		if _, err := v.Int64(); err != nil {
			l.errAt(segs, "%v does not fit a 64-bit integer (%d..%d)", v, int64(math.MinInt64), int64(math.MaxInt64))
			found = true
		}
	case cue.FloatKind:
		f, err := v.Float64()
		switch {
		case err != nil && (math.IsInf(f, 0) || math.Abs(f) == math.MaxFloat64):
			l.errAt(segs, "%v is beyond the float64 range (±%g)", v, math.MaxFloat64)
			found = true
		case err != nil:
			l.errAt(segs, "%v is too close to 0 for a float64 (it would round to %g; the smallest magnitude is %g)", v, f, math.SmallestNonzeroFloat64)
			found = true
		}
	case cue.StructKind:
		if depth > 16 {
			return false
		}
		for _, f := range sortedFields(v) {
			if l.numericRange(append(slices.Clone(segs), f.name), f.v, depth+1) {
				found = true
			}
		}
	case cue.ListKind:
		if depth > 16 {
			return false
		}
		it, err := v.List()
		if err != nil {
			return false
		}
		for i := 0; it.Next(); i++ {
			if l.numericRange(append(slices.Clone(segs), strconv.Itoa(i)), it.Value(), depth+1) {
				found = true
			}
		}
	}
	return found
}

// gridAxis is one grid key with its values, as the spec declares them. A
// key names one path ("model.k") or couples several ("model.hidden,
// model.layers"), whose values are then tuples: values[i][c] is the value
// of paths[c] in the i-th entry.
type gridAxis struct {
	key    string   // the grid key as written
	paths  []string // its dotted paths
	sels   []cue.Path
	values [][]cue.Value
}

// experiment decodes one experiment and unrolls its grid.
func (l *loader) experiment(name string, v cue.Value, seeds []int64) (Experiment, bool) {
	base := []string{"experiments", name}
	at := func(rest ...string) []string { return append(slices.Clone(base), rest...) }
	e := Experiment{Name: name, Seeds: slices.Clone(seeds)}
	nerr := len(l.errs)
	l.decodeInto(at("dataset"), v.LookupPath(cue.ParsePath("dataset")), &e.Dataset)
	e.Dataset = e.Dataset.Canonical()
	l.decodeInto(at("protocol"), v.LookupPath(cue.ParsePath("protocol")), &e.Protocol)
	if s := v.LookupPath(cue.ParsePath("seeds")); s.Exists() {
		l.decodeInto(at("seeds"), s, &e.Seeds)
	}
	if e.Seeds == nil {
		e.Seeds = []int64{}
	}

	folds := TUFolds
	if e.Dataset.Kind == "prox" {
		folds = e.Dataset.Folds
		l.proxChecks(at, e.Dataset)
	} else {
		for _, f := range []string{"h", "graphs", "levels", "width", "seed", "folds"} {
			if e.Dataset.Kind == "file" && (f == "seed" || f == "folds") {
				continue
			}
			if l.idx.has(at("dataset", f)) {
				l.errAt(at("dataset", f), "not allowed for dataset kind %q (only for \"prox\")", e.Dataset.Kind)
			}
		}
	}
	if e.Dataset.Kind != "tu" && e.Dataset.Kind != "ogb" && e.Dataset.Kind != "file" && l.idx.has(at("dataset", "name")) {
		l.errAt(at("dataset", "name"), "not allowed for dataset kind %q (only for \"tu\", \"ogb\" and \"file\")", e.Dataset.Kind)
	}
	if e.Dataset.Kind == "file" {
		folds = l.fileChecks(at, &e.Dataset, e.Protocol)
	} else {
		for _, f := range []string{"path", "task"} {
			if l.idx.has(at("dataset", f)) {
				l.errAt(at("dataset", f), "not allowed for dataset kind %q (only for \"file\")", e.Dataset.Kind)
			}
		}
	}
	if e.Dataset.Kind != "ogb" && l.idx.has(at("dataset", "features")) {
		l.errAt(at("dataset", "features"), "not allowed for dataset kind %q (only for \"ogb\")", e.Dataset.Kind)
	}
	if e.Dataset.Kind == "ogb" {
		folds = 1
		if want := ogb.Metric(e.Dataset.Name); want != "" && e.Protocol.Metric != want {
			l.errAt(at("protocol", "metric"), "OGB's %s is evaluated with %q, not %q", e.Dataset.Name, want, e.Protocol.Metric)
		}
	}
	if e.Dataset.Kind == "qm9" {
		folds = 1
		l.qm9Checks(at, e.Dataset)
	} else {
		if e.Protocol.Metric == "film_error" {
			l.errAt(at("protocol", "metric"), "film_error needs QM9's chemical-accuracy factors; dataset kind %q has none", e.Dataset.Kind)
		}
		for _, f := range []string{"targets", "source", "train_size", "limit"} {
			if f == "limit" && e.Dataset.Kind == "file" {
				continue
			}
			if l.idx.has(at("dataset", f)) {
				l.errAt(at("dataset", f), "not allowed for dataset kind %q (only for \"qm9\")", e.Dataset.Kind)
			}
		}
	}
	if e.Protocol.Splits > folds && folds > 0 {
		l.errAt(at("protocol", "splits"), "%d splits requested but dataset %s has only %d folds", e.Protocol.Splits, datasetLabel(e.Dataset), folds)
	}

	if v.LookupPath(cue.ParsePath("seeds")).Exists() {
		l.distinctSeeds(at("seeds"), e.Seeds)
	}
	axes, ok := l.gridAxes(at, v)
	if !ok {
		return e, false
	}
	n := 1
	for _, ax := range axes {
		n *= len(ax.values)
		if n > MaxPoints {
			defer l.checking(CheckLimits)()
			l.errAt(at("grid"), "the grid has more than %d points; split the experiment", MaxPoints)
			return e, false
		}
	}
	l.unroll(at, v, axes, &e)
	return e, len(l.errs) == nerr
}

// distinctSeeds reports a repeated seed, which would only repeat runs,
// and more than MaxSeeds seeds.
func (l *loader) distinctSeeds(segs []string, seeds []int64) {
	if len(seeds) > MaxSeeds {
		defer l.checking(CheckLimits)()
		l.errAt(segs, "%d seeds; at most %d are allowed", len(seeds), MaxSeeds)
		return
	}
	seen := map[int64]bool{}
	for i, s := range seeds {
		if seen[s] {
			l.errAt(append(slices.Clone(segs), strconv.Itoa(i)), "seed %d is repeated", s)
		}
		seen[s] = true
	}
}

// proxChecks checks the h-Prox generator ranges.
func (l *loader) proxChecks(at func(...string) []string, d Dataset) {
	for _, r := range []struct {
		name string
		v    [2]int
	}{{"levels", d.Levels}, {"width", d.Width}} {
		if r.v[0] > r.v[1] {
			l.errAt(at("dataset", r.name), "[min, max] range has min %d > max %d", r.v[0], r.v[1])
		}
	}
	if d.Graphs%2 != 0 {
		l.errAt(at("dataset", "graphs"), "%d graphs: must be even (half positive, half negative)", d.Graphs)
	}
	if n := d.Levels[0] * d.Width[0]; d.Levels[0] <= d.Levels[1] && d.Width[0] <= d.Width[1] && n < ProxMinNodes {
		l.errAt(at("dataset", "levels"), "the smallest graph has levels min %d × width min %d = %d nodes, fewer than the %d that 3 red and 6 blue nodes need; raise levels[0] or width[0]",
			d.Levels[0], d.Width[0], n, ProxMinNodes)
	}
	if d.Graphs >= 2 && d.Graphs/2 < d.Folds {
		l.errAt(at("dataset", "graphs"), "%d graphs are %d positive/negative twins, too few for %d folds (twins share a fold): use graphs ≥ %d or fewer folds",
			d.Graphs, d.Graphs/2, d.Folds, 2*d.Folds)
	}
}

// ProxMinNodes is the fewest nodes an h-Proximity graph can have: 3 red
// and 6 blue nodes (data/prox checks the same at generation).
const ProxMinNodes = 9

// qm9Checks checks the QM9 settings: distinct targets, train_size only
// with source "valid-as-train" and leaving molecules to validate on.
func (l *loader) qm9Checks(at func(...string) []string, d Dataset) {
	seen := map[string]bool{}
	for i, t := range d.Targets {
		if seen[t] {
			l.errAt(at("dataset", "targets", strconv.Itoa(i)), "property %q is repeated", t)
		}
		seen[t] = true
	}
	if d.Source != "valid-as-train" && l.idx.has(at("dataset", "train_size")) {
		l.errAt(at("dataset", "train_size"), "only for source \"valid-as-train\" (source is %q)", d.Source)
	}
	if d.Source == "valid-as-train" && d.Limit > 0 && d.TrainSize >= d.Limit {
		l.errAt(at("dataset", "train_size"), "train_size %d leaves none of the %d molecules read from the valid file (limit) to validate on", d.TrainSize, d.Limit)
	}
	if d.Source == "valid-as-train" && d.Limit == 0 && d.TrainSize >= QM9ValidMolecules {
		l.errAt(at("dataset", "train_size"), "train_size %d leaves none of the valid file's %d molecules to validate on", d.TrainSize, QM9ValidMolecules)
	}
}

// QM9ValidMolecules is the number of molecules of GNN-FiLM's valid file.
const QM9ValidMolecules = 10000

func datasetLabel(d Dataset) string {
	switch d.Kind {
	case "prox":
		return fmt.Sprintf("prox(h=%d)", d.H)
	case "qm9":
		return "QM9"
	case "file":
		if d.Path != "" {
			return d.Path
		}
	}
	return d.Name
}

// gridAxes reads and checks the grid: each path must name a field of
// #Model or #Training, must not also be set in model/training, and each
// value must be valid for it (filled into the experiment and validated).
func (l *loader) gridAxes(at func(...string) []string, v cue.Value) ([]gridAxis, bool) {
	allowed := map[string][]string{
		"model":    slices.DeleteFunc(fieldNames(v.LookupPath(cue.ParsePath("model"))), func(s string) bool { return s == "kind" }),
		"training": l.defFields("#Training"),
	}
	ok := true
	var axes []gridAxis
	seen := map[string]string{} // path → the grid key that sets it
	for _, f := range sortedFields(v.LookupPath(cue.ParsePath("grid"))) {
		segs := at("grid", f.name)
		ax := gridAxis{key: f.name}
		good := true
		for _, path := range strings.Split(f.name, ",") {
			path = strings.TrimSpace(path)
			parts := strings.Split(path, ".")
			if path == "model.kind" {
				l.errAt(segs, "the model kind cannot be gridded: declare one experiment per kind")
				good = false
				continue
			}
			fields, known := allowed[parts[0]]
			if len(parts) != 2 || !known || !slices.Contains(fields, parts[1]) {
				l.errAt(segs, "grid path %q does not name a field of model or training (model: %s; training: %s)",
					path, strings.Join(allowed["model"], ", "), strings.Join(allowed["training"], ", "))
				good = false
				continue
			}
			if l.idx.has(at(parts[0], parts[1])) {
				l.errAt(at(parts[0], parts[1]), "set both here and in grid %q; remove one", f.name)
				good = false
				continue
			}
			if other, dup := seen[path]; dup {
				l.errAt(segs, "grid path %q is also set by grid key %q", path, other)
				good = false
				continue
			}
			seen[path] = f.name
			ax.paths = append(ax.paths, path)
			ax.sels = append(ax.sels, cue.MakePath(cue.Str(parts[0]), cue.Str(parts[1])))
		}
		if !good {
			ok = false
			continue
		}
		it, err := f.v.List()
		if err != nil {
			l.errAt(segs, "grid values must be a list: %v", err)
			ok = false
			continue
		}
		for i := 0; it.Next(); i++ {
			vals, err := gridTuple(it.Value(), len(ax.paths))
			if err != nil {
				p, _ := l.idx.closest(append(slices.Clone(segs), strconv.Itoa(i)))
				l.errs = append(l.errs, l.at(p, displayIndexPath(i, segs...), fmt.Sprintf("grid key %q %v", f.name, err)))
				ok = false
				continue
			}
			valid := true
			for _, root := range gridRoots() {
				if !slices.ContainsFunc(ax.paths, func(p string) bool { return strings.HasPrefix(p, root+".") }) {
					continue
				}
				if err := l.section(v, root, ax.paths, vals).Validate(cue.Concrete(true)); err != nil {
					p, _ := l.idx.closest(append(slices.Clone(segs), strconv.Itoa(i)))
					for _, ce := range l.convertCUE(err) {
						l.errs = append(l.errs, l.at(p, displayIndexPath(i, segs...), ce.Msg))
					}
					valid = false
				}
			}
			if !valid {
				ok = false
				continue
			}
			ax.values = append(ax.values, vals)
		}
		axes = append(axes, ax)
	}
	return axes, ok
}

// gridTuple returns the values of one grid entry: the entry itself for a
// single path, the n elements of a list for a key that couples n paths.
func gridTuple(entry cue.Value, n int) ([]cue.Value, error) {
	if n == 1 {
		return []cue.Value{entry}, nil
	}
	it, err := entry.List()
	if err != nil {
		return nil, fmt.Errorf("couples %d paths: each value must be a list of %d values", n, n)
	}
	var vals []cue.Value
	for it.Next() {
		vals = append(vals, it.Value())
	}
	if len(vals) != n {
		return nil, fmt.Errorf("couples %d paths: this value has %d elements, want %d", n, len(vals), n)
	}
	return vals, nil
}

// defFields lists the field names of a schema definition, in schema order.
func (l *loader) defFields(def string) []string {
	return fieldNames(l.root.LookupPath(cue.ParsePath(def)))
}

// fieldNames returns the field names of v, optional ones included.
func fieldNames(v cue.Value) []string {
	it, err := v.Fields(cue.Optional(true))
	if err != nil {
		return nil
	}
	var out []string
	for it.Next() {
		out = append(out, it.Selector().Unquoted())
	}
	return out
}

// unroll enumerates the grid points (paths sorted, values in declared
// order, last path fastest), decodes each point's model and training and
// checks gin ⇒ k = 1 and k ≤ kmax.
func (l *loader) unroll(at func(...string) []string, v cue.Value, axes []gridAxis, e *Experiment) {
	roots := l.pointRoots(at, v, axes)
	idx := make([]int, len(axes))
	all := make([]int, len(axes)) // every axis, for advance
	for a := range all {
		all[a] = a
	}
	for {
		var values []GridValue
		for a, ax := range axes {
			for c, val := range ax.values[idx[a]] {
				values = append(values, GridValue{Path: ax.paths[c], Value: plainValue(val)})
			}
		}
		pt := Point{Values: values}
		var ok bool
		if pt.Model, pt.Training, ok = roots(idx); ok {
			pt.Model = pt.Model.Canonical()
			l.pointChecks(at, axes, idx, pt, e.Dataset)
			e.Points = append(e.Points, pt)
		}
		if !advance(idx, all, axes) {
			break
		}
	}
}

// pointChecks applies the per-point rules, positioned at the grid value
// that set the field when there is one.
func (l *loader) pointChecks(at func(...string) []string, axes []gridAxis, idx []int, pt Point, d Dataset) {
	where := func(path string) []string {
		for a, ax := range axes {
			if slices.Contains(ax.paths, path) {
				return at("grid", ax.key, strconv.Itoa(idx[a]))
			}
		}
		return at(strings.Split(path, ".")...)
	}
	pathOf := func(path string) string {
		for a, ax := range axes {
			if slices.Contains(ax.paths, path) {
				return displayIndexPath(idx[a], at("grid", ax.key)...)
			}
		}
		return displayPath(at(strings.Split(path, ".")...)...)
	}
	reported := map[string]bool{}
	add := func(path, format string, args ...any) {
		reported[path] = true
		p, _ := l.idx.closest(where(path))
		l.errs = append(l.errs, l.at(p, pathOf(path), fmt.Sprintf(format, args...)))
	}
	// The models compute in float32: a value the schema accepts may still
	// round onto a bound there.
	if pt.Model.Dropout >= 1 || float32(pt.Model.Dropout) >= 1 {
		add("model.dropout", "dropout is below 1 as written but rounds to 1 in float32 (as the models compute), which would drop every unit; use a value below %v", math.Nextafter32(1, 0))
	}
	if pt.Training.LR > 0 && float32(pt.Training.LR) == 0 {
		add("training.lr", "lr %v rounds to 0 in float32 (as the optimiser computes); use at least %g", pt.Training.LR, math.SmallestNonzeroFloat32)
	}
	if pt.Training.Plateau != nil && pt.Training.StepEvery > 0 {
		add("training.plateau", "a reduce-on-plateau schedule cannot be combined with the step schedule (step_every = %d): set step_every to 0 or remove plateau", pt.Training.StepEvery)
	}
	if l.models == nil {
		return
	}
	defer l.checking(CheckModel)()
	for _, fe := range l.models.CheckModel(pt.Model, InfoOf(d)) {
		if !reported["model."+fe.Field] { // one message per field
			add("model."+fe.Field, "%s", fe.Msg)
		}
	}
}

// plainValue converts a concrete grid value to a plain Go value: int64,
// float64, string, bool, or what Decode gives for composites.
func plainValue(v cue.Value) any {
	switch v.Kind() {
	case cue.IntKind:
		if i, err := v.Int64(); err == nil {
			return i
		}
	case cue.FloatKind:
		if f, err := v.Float64(); err == nil {
			return f
		}
	case cue.StringKind:
		if s, err := v.String(); err == nil {
			return s
		}
	case cue.BoolKind:
		if b, err := v.Bool(); err == nil {
			return b
		}
	}
	var x any
	if err := v.Decode(&x); err != nil {
		return nil
	}
	return x
}

// table decodes one table and checks its references.
func (l *loader) table(name string, v cue.Value, experiments map[string]bool) Table {
	base := []string{"tables", name}
	at := func(rest ...string) []string { return append(slices.Clone(base), rest...) }
	t := Table{Name: name}
	if !l.decodeInto(base, v, &t) {
		return t
	}
	t.Name = name
	if t.Formats == nil {
		t.Formats = []string{}
	}
	if t.Columns == nil {
		t.Columns = []Column{}
	}
	if t.Rows == nil {
		t.Rows = []Row{}
	}
	if len(t.Columns) == 0 {
		l.errAt(base, "a table needs at least one column")
	}
	if len(t.Rows) == 0 {
		l.errAt(base, "a table needs at least one row")
	}
	keys := map[string]bool{}
	for i, c := range t.Columns {
		if keys[c.Key] {
			l.errAt(at("columns", strconv.Itoa(i), "key"), "duplicate column key %q", c.Key)
		}
		keys[c.Key] = true
	}
	for i, r := range t.Rows {
		ri := strconv.Itoa(i)
		if r.Derived != nil {
			l.derivedRow(at("rows", ri), t, i, keys)
		}
		for _, k := range slices.Sorted(maps.Keys(r.Cells)) {
			c := r.Cells[k]
			cs := at("rows", ri, "cells", k)
			if !keys[k] {
				l.errAt(cs, "no column with key %q (columns: %s)", k, strings.Join(columnKeys(t.Columns), ", "))
			}
			switch {
			case c.Experiment != "" && (c.Mean != nil || c.Std != nil || c.Source != ""):
				l.errAt(cs, "a cell is either {experiment} or a cited {mean, std?, source}, not both")
			case c.Experiment != "":
				if !experiments[c.Experiment] {
					l.errAt(append(cs, "experiment"), "no experiment named %q in this spec", c.Experiment)
				}
			case c.Mean != nil:
				if c.Source == "" {
					l.errAt(cs, "a cited constant needs a source, e.g. source: \"Errica et al. 2020\"")
				}
				if c.PaperMean != nil || c.PaperStd != nil {
					l.errAt(cs, "paper_mean/paper_std apply to experiment cells only")
				}
			default:
				l.errAt(cs, "a cell needs either experiment or a cited mean with its source")
			}
		}
	}
	return t
}

func columnKeys(cs []Column) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = fmt.Sprintf("%q", c.Key)
	}
	return out
}

// sbatchReserved are the sbatch options spn sets itself.
var sbatchReserved = []string{"--array", "--dependency", "--job-name", "--comment", "--output",
	"--error", "--parsable", "--hold", "--kill-on-invalid-dep", "-a", "-d", "-J", "-o", "-e", "-H"}

// executor decodes the executor settings and checks the sbatch options.
func (l *loader) executor(spec *Spec) {
	at := []string{"executor"}
	if !l.decodeInto(at, l.root.LookupPath(cue.ParsePath("executor")), &spec.Executor) {
		return
	}
	s := &spec.Executor.Slurm
	check := func(segs []string, opts []string) {
		for i, o := range opts {
			p := append(slices.Clone(segs), "sbatch", strconv.Itoa(i))
			if !strings.HasPrefix(o, "-") {
				l.errAt(p, "%q is not an sbatch option (options start with -)", o)
				continue
			}
			name, _, _ := strings.Cut(o, "=")
			if slices.Contains(sbatchReserved, name) {
				l.errAt(p, "%s is set by spn itself and cannot be given here", name)
			}
		}
	}
	check([]string{"executor", "slurm"}, s.Sbatch)
	for _, k := range []string{"generate", "precompute", "train", "select", "evaluate", "tabulate"} {
		check([]string{"executor", "slurm", k}, s.Resources(k).Sbatch)
	}
}
