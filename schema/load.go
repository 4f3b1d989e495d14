package schema

import (
	"cmp"
	_ "embed"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/build"
	"cuelang.org/go/cue/cuecontext"
	cueerrors "cuelang.org/go/cue/errors"
	"cuelang.org/go/cue/parser"
	"cuelang.org/go/cue/token"

	"github.com/spn-project/spn/data/graphfile"
)

//go:embed schema.cue
var schemaSource []byte

// SchemaFile is the name the embedded schema carries in CUE positions.
const SchemaFile = "spn:schema/schema.cue"

// modeFile is the name of the generated file that carries Options.Mode.
const modeFile = "spn:mode-override.cue"

// PackageName is the CUE package every spec file must declare.
const PackageName = "spn"

// Modes a spec can be loaded in. A spec reads its mode in comprehensions;
// one that has no branch for a mode fails to load in it (its fields stay
// incomplete).
const (
	ModeFull  = "full"
	ModeSmoke = "smoke"
	// ModePaper1Split is the paper's settings on one split with one run:
	// paper-scale evidence that fits in hours rather than days.
	ModePaper1Split = "paper-1split"
	// ModeEvidence is a reduced but real run that tests one claim of the
	// paper on the data at hand (e.g. QM9 trained on its valid file).
	ModeEvidence = "evidence"
)

// Modes lists every mode, in the order the schema declares them.
var Modes = []string{ModeFull, ModeSmoke, ModePaper1Split, ModeEvidence}

// CheckMode returns an error unless m is one of Modes.
func CheckMode(m string) error {
	if slices.Contains(Modes, m) {
		return nil
	}
	return fmt.Errorf("mode %q is not one of %s", m, quoteList(Modes))
}

// checkModes returns an error when the spec's mode is concrete but not one
// of its (concrete) modes; undecidable cases are left to validation.
func (l *loader) checkModes() *Error {
	var mode string
	var modes []string
	if l.root.LookupPath(cue.ParsePath("mode")).Decode(&mode) != nil ||
		l.root.LookupPath(cue.ParsePath("modes")).Decode(&modes) != nil || slices.Contains(modes, mode) {
		return nil
	}
	l.errAt([]string{"modes"}, "the spec does not define mode %q (its modes: %s; add it to modes with its branches)", mode, quoteList(modes))
	e := l.errs[len(l.errs)-1]
	l.errs = l.errs[:len(l.errs)-1]
	return &e
}

// readModes records the spec's mode and modes as evaluated, and whether
// its file sets mode.
func (l *loader) readModes() {
	var mode string
	var modes []string
	if l.root.LookupPath(cue.ParsePath("mode")).Decode(&mode) == nil && CheckMode(mode) == nil {
		l.ownMode = mode
	}
	if l.root.LookupPath(cue.ParsePath("modes")).Decode(&modes) == nil && len(modes) > 0 &&
		!slices.ContainsFunc(modes, func(m string) bool { return CheckMode(m) != nil }) {
		for _, m := range modes {
			if !slices.Contains(l.modes, m) {
				l.modes = append(l.modes, m)
			}
		}
	}
	// A file that writes one concrete mode fixes it; a default
	// (*"smoke" | "full") can still be overridden.
	v := l.user.LookupPath(cue.ParsePath("mode"))
	op, _ := v.Expr()
	l.fixed = l.idx.has([]string{"mode"}) && v.IsConcrete() && op != cue.OrOp && l.ownMode != ""
}

// quoteList renders ss as "a", "b", "c".
func quoteList(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = strconv.Quote(s)
	}
	return strings.Join(q, ", ")
}

// Source returns a copy of the embedded CUE schema (schema.cue), the
// reference documentation of the spec format.
func Source() []byte { return slices.Clone(schemaSource) }

// Options controls how a spec is loaded.
type Options struct {
	// Mode, when not empty, sets the spec's mode (one of Modes) before
	// evaluation, so comprehensions such as `if mode == "smoke" {...}` see
	// it. Empty keeps the spec's own mode (default "full").
	Mode string
	// Models, when not nil, checks every model section (of every grid
	// point) against its kind's constraints, with the errors positioned at
	// the field or grid value that set it. Without it only the CUE
	// definitions of the model kinds apply.
	Models ModelChecker
	// DataDir is the data dir (spn's --data-dir), where a file dataset
	// named by name was imported. A file dataset is read when the spec
	// loads: its path relative to the spec file's folder, its name below
	// DataDir.
	DataDir string
	// Unimported lets a file dataset name a dataset that is not imported
	// under DataDir (spn vet): its file checks are then skipped, and
	// Spec.Unimported lists it. Without it such a name is an error, as
	// plan and run need the graphs.
	Unimported bool

	// jointGrid fills every grid point into the whole experiment, even
	// where its sections could be filled separately (tests compare both).
	jointGrid bool
}

// Load reads, validates and decodes the spec file at path. Validation
// problems are returned as Errors; an unreadable file as a wrapped I/O error.
func Load(path string, opt Options) (*Spec, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading spec %s: %w", path, err)
	}
	return LoadBytes(path, src, opt)
}

// LoadBytes validates and decodes the spec src, reporting positions under
// filename. It unifies src with the embedded schema as one CUE instance of
// package spn, fills defaults, checks that every value is concrete, decodes
// into Spec, unrolls the grids and applies the checks CUE cannot express
// (device, grid paths and values, the model kinds' own constraints through
// opt.Models, splits ≤ folds, table references). On failure the error is Errors, sorted by position.
func LoadBytes(filename string, src []byte, opt Options) (*Spec, error) {
	spec, _, err := loadBytes(filename, src, opt)
	return spec, err
}

// loadBytes is LoadBytes, returning the loader too (for the modes it read).
// The errors carry the mode the spec was loaded in, when it is known.
func loadBytes(filename string, src []byte, opt Options) (spec *Spec, l *loader, err error) {
	if opt.Mode != "" {
		if err := CheckMode(opt.Mode); err != nil {
			return nil, nil, fmt.Errorf("loading %s: %w", filename, err)
		}
	}
	l = &loader{file: filename, mode: opt.Mode, models: opt.Models, joint: opt.jointGrid, dataDir: opt.DataDir, unimported: opt.Unimported}
	defer func() {
		// The CUE evaluator is large; a defect in it must not take the
		// caller down on some input. Report it as an error of this file.
		if r := recover(); r != nil {
			spec = nil
			err = Errors{{File: filename, Line: 1, Col: 1, Check: CheckSchema, Mode: cmp.Or(opt.Mode, l.ownMode),
				Msg: fmt.Sprintf("internal error evaluating the spec (please report): %v", r)}}
		}
	}()
	spec, errs := l.load(src)
	if len(errs) > 0 {
		mode := cmp.Or(opt.Mode, l.ownMode)
		for i := range errs {
			errs[i].Mode = mode
		}
		return nil, l, errs.normalize()
	}
	spec.Unimported = l.skipped
	return spec, l, nil
}

// LoadAllModes loads the spec at path in every mode it defines (its modes
// field, default "full" and "smoke"; only its own mode when the spec fixes
// mode) and returns those modes. Each mode is evaluated once. The errors
// of all modes come together as one Errors, each carrying its mode
// (Error.Mode); an error found before the modes could be read (a syntax
// error) is returned once, with no mode. An unreadable file is a wrapped
// I/O error. opt.Mode must be empty.
func LoadAllModes(path string, opt Options) ([]string, error) {
	if opt.Mode != "" {
		return nil, fmt.Errorf("loading %s in every mode: a mode (%q) is given", path, opt.Mode)
	}
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading spec %s: %w", path, err)
	}
	// The spec's own mode first: it says which modes the spec has.
	_, l, err := loadBytes(path, src, opt)
	if l == nil || l.modes == nil {
		return nil, err
	}
	modes := l.modes
	if l.fixed {
		modes = []string{l.ownMode}
	}
	var all Errors
	for _, m := range modes {
		if m == l.ownMode {
			var errs Errors
			if errors.As(err, &errs) {
				all = append(all, errs...)
			}
			continue
		}
		mo := opt
		mo.Mode = m
		_, _, merr := loadBytes(path, src, mo)
		var errs Errors
		if errors.As(merr, &errs) {
			all = append(all, errs...)
		} else if merr != nil {
			return modes, merr
		}
	}
	if len(all) > 0 {
		return modes, all.normalize()
	}
	return modes, nil
}

// loader carries the state of one LoadBytes call.
type loader struct {
	src    []byte // the spec's source
	file   string
	mode   string
	idx    *posIndex
	root   cue.Value
	ctx    *cue.Context // the context root, schema and user are built in
	schema cue.Value    // the schema alone, for probing
	errs   Errors
	// check is the kind of check running (Error.Check; "" is CheckSchema).
	check  string
	models ModelChecker
	user   cue.Value // the user's file alone, for the model kinds in probe
	// ownMode is the spec's mode as evaluated ("" until known, or when it
	// is not concrete); modes is its modes field (nil until known, or
	// when invalid); fixed says the spec's file sets mode itself.
	ownMode string
	modes   []string
	fixed   bool
	// dataDir is Options.DataDir; sources caches the file datasets read.
	dataDir string
	sources map[string]*graphfile.Source
	// unimported is Options.Unimported; skipped lists the names it skipped.
	unimported bool
	skipped    []string
	// joint forces jointRoots; separate says the schema and the spec
	// allow separateRoots (see separable).
	joint, separate bool
}

func (l *loader) load(src []byte) (*Spec, Errors) {
	l.src = src
	if errs := l.sizeErrors(src); len(errs) > 0 {
		return nil, errs
	}
	f, err := parser.ParseFile(l.file, src, parser.ParseComments)
	if err != nil {
		return nil, l.syntaxErrors(err)
	}
	if errs := l.syntaxLimits(f); len(errs) > 0 {
		return nil, errs
	}
	l.idx = indexFile(f)
	if name := f.PackageName(); name != PackageName {
		pos := token.NoPos
		found := "no package clause"
		for _, d := range f.Decls {
			if p, ok := d.(*ast.Package); ok {
				pos = p.Pos()
				found = fmt.Sprintf("found package %q", name)
			}
		}
		l.check = CheckSyntax
		return nil, Errors{l.at(pos, "package", fmt.Sprintf("a spec file must declare \"package %s\" (%s)", PackageName, found))}
	}

	sf, err := parser.ParseFile(SchemaFile, schemaSource, parser.ParseComments)
	if err != nil {
		return nil, Errors{{File: SchemaFile, Line: 1, Col: 1, Msg: fmt.Sprintf("embedded schema does not parse: %v", err)}}
	}
	bi := build.NewContext().NewInstance("", nil)
	files := []*ast.File{sf, f}
	if l.mode != "" {
		mf, err := parser.ParseFile(modeFile, fmt.Sprintf("package %s\nmode: %q\n", PackageName, l.mode))
		if err != nil {
			return nil, Errors{{File: modeFile, Line: 1, Col: 1, Msg: fmt.Sprintf("mode override does not parse: %v", err)}}
		}
		files = append(files, mf)
	}
	for _, file := range files {
		if err := bi.AddSyntax(file); err != nil {
			return nil, l.convertCUE(err)
		}
	}
	if err := bi.Complete(); err != nil {
		return nil, l.convertCUE(err)
	}
	if bi.ResolutionErr != nil {
		return nil, l.convertCUE(bi.ResolutionErr)
	}
	l.separate = !l.joint && separable(sf) && separable(f)
	l.ctx = cuecontext.New()
	l.root = l.ctx.BuildInstance(bi)
	l.schema = l.ctx.BuildFile(sf)
	l.user = l.ctx.BuildFile(f)
	l.readModes()
	// A mode the spec does not define leaves its mode branches out, and the
	// errors that follow from that would hide the cause: report it alone.
	if err := l.checkModes(); err != nil {
		return nil, Errors{*err}
	}
	if errs := l.validate(l.root); len(errs) > 0 {
		return nil, errs
	}
	spec := l.decode()
	if len(l.errs) > 0 {
		return nil, l.errs
	}
	return spec, nil
}

// syntaxErrors converts parser errors.
func (l *loader) syntaxErrors(err error) Errors {
	defer l.checking(CheckSyntax)()
	var out Errors
	for _, e := range cueerrors.Errors(err) {
		format, args := e.Msg()
		out = append(out, l.at(e.Position(), "", "syntax error: "+fmt.Sprintf(format, args...)))
	}
	if len(out) == 0 {
		out = Errors{l.at(token.NoPos, "", "syntax error: "+err.Error())}
	}
	return out
}

// validate collects every error of v: CUE stops descending at the first
// failing struct, so each field is validated on its own too and the
// results are merged.
func (l *loader) validate(v cue.Value) Errors {
	var out Errors
	seen := map[string]bool{}
	add := func(err error) {
		for _, e := range l.convertCUE(err) {
			k := e.Error()
			if !seen[k] {
				seen[k] = true
				out = append(out, e)
			}
		}
	}
	if v.Err() == nil && v.Validate(cue.Concrete(true)) == nil {
		return nil // the common case: nothing to hunt for
	}
	add(v.Err())
	var walk func(v cue.Value, depth int)
	walk = func(v cue.Value, depth int) {
		add(v.Validate(cue.Concrete(true)))
		if depth > 64 {
			return
		}
		// Errored values report BottomKind, yet their fields can often
		// still be listed; try both shapes.
		if it, err := v.Fields(); err == nil {
			for it.Next() {
				walk(it.Value(), depth+1)
			}
			return
		}
		if it, err := v.List(); err == nil {
			for it.Next() {
				walk(it.Value(), depth+1)
			}
		}
	}
	walk(v, 0)
	// unknownFields' errors replace CUE's own "field not allowed" at the
	// same place (theirs name the allowed fields).
	type place struct {
		line, col int
		path      string
	}
	unknown := l.unknownFields()
	replaced := map[place]bool{}
	for _, e := range unknown {
		replaced[place{e.Line, e.Col, e.Path}] = true
	}
	out = slices.DeleteFunc(out, func(e Error) bool {
		return e.Msg == "field not allowed" && replaced[place{e.Line, e.Col, e.Path}]
	})
	for _, e := range unknown {
		if k := e.Error(); !seen[k] {
			seen[k] = true
			out = append(out, e)
		}
	}
	return l.rangeLengths(out)
}

// rangeLengths replaces the errors of a [min, max] range field (dataset
// levels and width) written with other than 2 elements by one error that
// says so: CUE reports such a list as element conflicts with the default
// range ("conflicting values 10 and 4"), which does not mention length.
func (l *loader) rangeLengths(errs Errors) Errors {
	bad := map[string]int{} // display path of the field → its length
	for _, e := range errs {
		segs := strings.Split(e.Path, ".")
		for len(segs) > 0 && isIndex(segs[len(segs)-1]) {
			segs = segs[:len(segs)-1]
		}
		if len(segs) != 4 || segs[0] != "experiments" || segs[2] != "dataset" || (segs[3] != "levels" && segs[3] != "width") {
			continue
		}
		n := 0
		for l.idx.has(append(slices.Clone(segs), strconv.Itoa(n))) {
			n++
		}
		if n != 2 && n > 0 {
			bad[strings.Join(segs, ".")] = n
		}
	}
	if len(bad) == 0 {
		return errs
	}
	var out Errors
	done := map[string]bool{}
	for _, e := range errs {
		field := ""
		for f := range bad {
			if e.Path == f || strings.HasPrefix(e.Path, f+".") {
				field = f
			}
		}
		if field == "" {
			out = append(out, e)
			continue
		}
		if done[field] {
			continue
		}
		done[field] = true
		segs := strings.Split(field, ".")
		p, _ := l.idx.closest(segs)
		out = append(out, l.at(p, field, fmt.Sprintf("a [min, max] range needs exactly 2 elements; this list has %d", bad[field])))
	}
	return out
}

// unknownFields reports every field of the user's file that the schema
// does not allow where it is written. CUE reports only the first error of
// a struct that also fails otherwise (and a present field always counts as
// allowed once it is there), so each parent is probed on the schema alone:
// the schema is unified with an empty value of the parent's shape and
// asked whether it allows the label.
func (l *loader) unknownFields() Errors {
	var out Errors
	probes := map[string]cue.Value{}
	for _, f := range l.idx.fields {
		key := pathKey(f.parent)
		parent, ok := probes[key]
		if !ok {
			parent = l.probe(f.parent)
			probes[key] = parent
		}
		if !parent.Exists() {
			continue
		}
		if _, err := parent.Fields(cue.Optional(true)); err != nil {
			continue // not a struct in the schema: reported as a type error
		}
		if !parent.Allows(cue.Str(f.label)) {
			segs := append(slices.Clone(f.parent), f.label)
			out = append(out, l.at(f.pos, displayPath(segs...), "field not allowed"+allowedHint(parent, f.label, f.parent)))
		}
	}
	return out
}

// allowedHint names the fields the schema allows in parent, for the error
// about label: the closest one first when label looks like a misspelling
// of it, and the model kind the list is for when parent is a model.
func allowedHint(parent cue.Value, label string, parentPath []string) string {
	it, err := parent.Fields(cue.Optional(true))
	if err != nil {
		return ""
	}
	var names []string
	for it.Next() {
		if sel := it.Selector(); sel.IsString() {
			names = append(names, sel.Unquoted())
		}
	}
	if len(names) == 0 {
		return ""
	}
	slices.Sort(names)
	hint := ""
	best, bestD, lower := "", 3, strings.ToLower(label) // at most 2 edits away
	for _, n := range names {
		if d := editDistance(lower, strings.ToLower(n)); d < bestD {
			best, bestD = n, d
		}
	}
	if best != "" {
		hint = fmt.Sprintf("; did you mean %q?", best)
	}
	where := "here"
	if len(parentPath) > 0 && parentPath[len(parentPath)-1] == "model" {
		if k, err := parent.LookupPath(cue.ParsePath("kind")).String(); err == nil {
			where = fmt.Sprintf("in a %q model", k)
		}
	}
	return fmt.Sprintf("%s (allowed %s: %s)", hint, where, strings.Join(names, ", "))
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// probe returns the schema's value at segs, reached through empty structs
// and lists (a list index i is reached through i+1 empty elements).
func (l *loader) probe(segs []string) cue.Value {
	var build func(i int) any
	build = func(i int) any {
		if i == len(segs) {
			return map[string]any{}
		}
		if isIndex(segs[i]) {
			n, _ := strconv.Atoi(segs[i])
			if n > 1<<16 {
				return map[string]any{}
			}
			list := make([]any, n+1)
			for j := range n {
				list[j] = map[string]any{}
			}
			list[n] = build(i + 1)
			return list
		}
		sub := build(i + 1)
		if m, ok := sub.(map[string]any); ok && segs[i] == "model" {
			// The fields of a model section depend on its kind: probe
			// with the user's kind.
			if k, err := l.user.LookupPath(cue.MakePath(append(selsOf(segs[:i+1]), cue.Str("kind"))...)).String(); err == nil {
				m["kind"] = k
			}
		}
		return map[string]any{segs[i]: sub}
	}
	shape := l.ctx.Encode(build(0))
	return l.schema.Unify(shape).LookupPath(cue.MakePath(selsOf(segs)...))
}

// selsOf returns the selectors of the path segs (digits: list indices).
func selsOf(segs []string) []cue.Selector {
	sels := make([]cue.Selector, len(segs))
	for i, s := range segs {
		if isIndex(s) {
			n, _ := strconv.Atoi(s)
			sels[i] = cue.Index(n)
		} else {
			sels[i] = cue.Str(s)
		}
	}
	return sels
}

// at builds an error at pos in the user's file (its start when pos is
// unknown).
func (l *loader) at(pos token.Pos, path, msg string) Error {
	e := Error{File: l.file, Line: 1, Col: 1, Path: path, Msg: msg, Check: cmp.Or(l.check, CheckSchema)}
	if pos.IsValid() {
		e.Line, e.Col = pos.Line(), pos.Column()
	}
	return e
}

// checking makes the errors recorded until the returned function is
// called come from check (one of Checks), and returns that function.
func (l *loader) checking(check string) (restore func()) {
	prev := l.check
	l.check = check
	return func() { l.check = prev }
}

// errAt records an error for the path segs, positioned at the closest
// field the user's file writes.
func (l *loader) errAt(segs []string, format string, args ...any) {
	p, _ := l.idx.closest(segs)
	l.errs = append(l.errs, l.at(p, displayPath(segs...), fmt.Sprintf(format, args...)))
}

// sortedFields returns the regular fields of a struct value in label order.
func sortedFields(v cue.Value) []field {
	it, err := v.Fields()
	if err != nil {
		return nil
	}
	var out []field
	for it.Next() {
		out = append(out, field{name: it.Selector().Unquoted(), v: it.Value()})
	}
	slices.SortFunc(out, func(a, b field) int { return strings.Compare(a.name, b.name) })
	return out
}

type field struct {
	name string
	v    cue.Value
}
