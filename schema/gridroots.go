package schema

import (
	"strconv"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"
)

// A grid point's model and training are the experiment's with the point's
// grid values filled in. Filling the whole experiment and evaluating it
// again costs about 0.8 ms a point (its dataset, protocol and grid are
// evaluated anew each time), which made Table 3's 3 468 points take
// seconds to load. When neither section can see the other's values, each
// is filled on its own instead, once per combination of the grid keys
// that touch it, and the points reuse those: a few dozen small
// evaluations per experiment instead of one large one per point.
//
// Whether a section can see the other's values is decided on the source,
// conservatively, by separable; the results are the same either way
// (TestGridRootsSameSpecs loads every shipped spec both ways).

// gridRoots returns the sections of an experiment that grid keys fill.
func gridRoots() [2]string { return [2]string{"model", "training"} }

// crossName reports whether an expression inside an experiment can refer
// to the experiment's own, filled sections through name.
func crossName(name string) bool {
	return name == "model" || name == "training" || name == "experiments"
}

// separable reports whether no expression in f can see a grid value of an
// experiment's section from outside that section. An expression sees the
// filled experiment only through a name that resolves inside it: its
// fields model and training (a field referring to its own section's
// fields by their bare names resolves inside the section and sees the
// fill either way), or an alias, which can name the experiment or a
// section. So f is separable when it refers to no identifier named model
// or training (or experiments, which is harmless but cheap to exclude)
// and declares no alias. Field labels and selectors do not count:
// "model: {...}" declares, and "r.model" reads a field of r, which can be
// an experiment only through one of those names.
func separable(f *ast.File) bool {
	ok := true
	var visit func(n ast.Node) bool
	visit = func(n ast.Node) bool {
		if !ok {
			return false
		}
		switch n := n.(type) {
		case *ast.Field:
			if n.Alias != nil {
				ok = false
				return false
			}
			switch lab := n.Label.(type) {
			case *ast.Ident, *ast.BasicLit:
				// A declaration, not a reference.
			case *ast.Alias:
				ok = false
				return false
			default:
				// A dynamic or pattern label is an expression.
				ast.Walk(lab, visit, nil)
			}
			for _, a := range n.Attrs {
				ast.Walk(a, visit, nil)
			}
			ast.Walk(n.Value, visit, nil)
			return false
		case *ast.SelectorExpr:
			ast.Walk(n.X, visit, nil)
			return false
		case *ast.Alias:
			ok = false
		case *ast.Ident:
			if crossName(n.Name) {
				ok = false
			}
		}
		return ok
	}
	ast.Walk(f, visit, nil)
	return ok
}

// pointRoots returns the evaluation of a grid point's sections by the
// point's value indices: filled separately when the spec allows it and
// every combination decodes, else filled together (jointRoots).
func (l *loader) pointRoots(at func(...string) []string, v cue.Value, axes []gridAxis) func(idx []int) (Model, Training, bool) {
	if l.separate {
		if f := l.separateRoots(at, v, axes); f != nil {
			return f
		}
	}
	return l.jointRoots(at, v, axes)
}

// jointRoots fills each point's values into the whole experiment v.
// prefix[a] holds v with axes 0..a-1 filled; when the odometer advances,
// only the fills from the first changed axis on are redone, so a point
// costs about one FillPath instead of one per axis.
func (l *loader) jointRoots(at func(...string) []string, v cue.Value, axes []gridAxis) func(idx []int) (Model, Training, bool) {
	prefix := make([]cue.Value, len(axes)+1)
	prefix[0] = v
	var prev []int // nil before the first point: every fill is stale
	return func(idx []int) (Model, Training, bool) {
		from := 0
		if prev != nil {
			for from < len(idx) && idx[from] == prev[from] {
				from++
			}
		}
		prev = append(prev[:0], idx...)
		for a := from; a < len(axes); a++ {
			prefix[a+1] = prefix[a]
			for c, val := range axes[a].values[idx[a]] {
				prefix[a+1] = prefix[a+1].FillPath(axes[a].sels[c], val)
			}
		}
		filled := prefix[len(axes)]
		var m Model
		var t Training
		okM := l.decodeInto(at("model"), filled.LookupPath(cue.MakePath(cue.Str("model"))), &m)
		okT := l.decodeInto(at("training"), filled.LookupPath(cue.MakePath(cue.Str("training"))), &t)
		return m, t, okM && okT
	}
}

// separateRoots decodes every combination of each section's grid values
// up front, the section alone filled with them, and returns the lookup;
// nil (with nothing reported) when a combination does not decode, so
// that the joint evaluation reports it exactly as it always has.
func (l *loader) separateRoots(at func(...string) []string, v cue.Value, axes []gridAxis) func(idx []int) (Model, Training, bool) {
	nerr := len(l.errs)
	models, mTouch, ok := decodeCombos[Model](l, at, v, axes, "model")
	var trainings map[string]Training
	var tTouch []int
	if ok {
		trainings, tTouch, ok = decodeCombos[Training](l, at, v, axes, "training")
	}
	if !ok {
		l.errs = l.errs[:nerr]
		return nil
	}
	return func(idx []int) (Model, Training, bool) {
		return models[comboKey(idx, mTouch)], trainings[comboKey(idx, tTouch)], true
	}
}

// decodeCombos decodes section root of experiment v, filled alone, for
// every combination of the values of the axes that touch it, by comboKey
// over those axes (returned too); false when one does not decode.
func decodeCombos[T any](l *loader, at func(...string) []string, v cue.Value, axes []gridAxis, root string) (map[string]T, []int, bool) {
	touch := touching(axes, root)
	out := map[string]T{}
	idx := make([]int, len(axes))
	for {
		var paths []string
		var vals []cue.Value
		for _, a := range touch {
			paths = append(paths, axes[a].paths...)
			vals = append(vals, axes[a].values[idx[a]]...)
		}
		var x T
		if !l.decodeInto(at(root), l.section(v, root, paths, vals), &x) {
			return nil, nil, false
		}
		out[comboKey(idx, touch)] = x
		if !advance(idx, touch, axes) {
			return out, touch, true
		}
	}
}

// section returns section root ("model" or "training") of experiment v
// with vals filled in at paths (dotted, "model.k"). With separable
// sections only the paths into root are filled, into the section alone,
// in one unification (each FillPath would evaluate it again); else all
// are filled into the whole experiment.
func (l *loader) section(v cue.Value, root string, paths []string, vals []cue.Value) cue.Value {
	if !l.separate {
		for c, val := range vals {
			r, field, _ := strings.Cut(paths[c], ".")
			v = v.FillPath(cue.MakePath(cue.Str(r), cue.Str(field)), val)
		}
		return v.LookupPath(cue.MakePath(cue.Str(root)))
	}
	patch := l.ctx.CompileString("{}")
	for c, val := range vals {
		if r, field, _ := strings.Cut(paths[c], "."); r == root {
			patch = patch.FillPath(cue.MakePath(cue.Str(field)), val)
		}
	}
	return v.LookupPath(cue.MakePath(cue.Str(root))).Unify(patch)
}

// touching lists the axes with a path in section root.
func touching(axes []gridAxis, root string) []int {
	var out []int
	for a, ax := range axes {
		for _, p := range ax.paths {
			if strings.HasPrefix(p, root+".") {
				out = append(out, a)
				break
			}
		}
	}
	return out
}

// comboKey names the values of the axes in touch at idx.
func comboKey(idx, touch []int) string {
	var b strings.Builder
	for _, a := range touch {
		b.WriteString(strconv.Itoa(idx[a]))
		b.WriteByte(',')
	}
	return b.String()
}

// advance steps idx over the axes in touch (an odometer, the last axis
// fastest) and reports whether a combination is left.
func advance(idx, touch []int, axes []gridAxis) bool {
	for i := len(touch) - 1; i >= 0; i-- {
		a := touch[i]
		idx[a]++
		if idx[a] < len(axes[a].values) {
			return true
		}
		idx[a] = 0
	}
	return false
}
