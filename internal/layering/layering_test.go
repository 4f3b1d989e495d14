package layering

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/spn-project/spn"

// pkg is one package of the module: its path relative to the module root
// ("models/spn"), the imports of its non-test files and of its _test.go
// files, whether it has non-test files, whether it is a command (package
// main) and whether it is a stage kind.
type pkg struct {
	rel         string
	imports     []string
	testImports []string
	code        bool
	command     bool
	stageKind   bool
}

// root returns the module root: two folders above this test's source.
func root(t *testing.T) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("no caller information")
	}
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// loadPackages parses the import clauses of every Go file under the
// module root (skipping testdata and hidden folders) and returns the
// packages by module-relative path.
func loadPackages(t *testing.T) map[string]*pkg {
	t.Helper()
	top := root(t)
	pkgs := map[string]*pkg{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(top, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != top && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") {
			return nil
		}
		test := strings.HasSuffix(name, "_test.go")
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(top, filepath.Dir(path))
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		p := pkgs[rel]
		if p == nil {
			p = &pkg{rel: rel}
			pkgs[rel] = p
		}
		list := &p.imports
		if test {
			list = &p.testImports
		} else {
			p.code = true
			p.command = p.command || f.Name.Name == "main"
			p.stageKind = p.stageKind || hasKindRun(f)
		}
		for _, imp := range f.Imports {
			s, err := strconv.Unquote(imp.Path.Value)
			if err != nil {
				return err
			}
			if !slices.Contains(*list, s) {
				*list = append(*list, s)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) < 20 {
		t.Fatalf("found %d packages under %s; is this the module root?", len(pkgs), top)
	}
	return pkgs
}

// hasKindRun reports whether f declares a Run method on a type named Kind
// (the stages.Kind implementation of a stage kind package).
func hasKindRun(f *ast.File) bool {
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Recv == nil || fn.Name.Name != "Run" || len(fn.Recv.List) != 1 {
			continue
		}
		typ := fn.Recv.List[0].Type
		if star, ok := typ.(*ast.StarExpr); ok {
			typ = star.X
		}
		if id, ok := typ.(*ast.Ident); ok && id.Name == "Kind" {
			return true
		}
	}
	return false
}

// under reports whether the module-relative path rel is dir or inside it.
func under(rel, dir string) bool { return rel == dir || strings.HasPrefix(rel, dir+"/") }

// testkit reports whether rel is a test-only helper package: one under a
// folder internal/testkit (internal/testkit/... for the whole module,
// models/internal/testkit/... for the model library's tests).
func testkit(rel string) bool {
	return under(rel, "internal/testkit") || strings.Contains(rel, "/internal/testkit/") || strings.HasSuffix(rel, "/internal/testkit")
}

// refPkg is the hand-written reference the model kinds are tested
// against.
const refPkg = "models/internal/testkit/ref"

// kernel reports whether rel is one of the kernels: the CPU kernels
// (models/kernels/...) or the CUDA C kernels (models/cuda/kern/...).
func kernel(rel string) bool { return under(rel, "models/kernels") || under(rel, "models/cuda/kern") }

// local returns the module-relative path of import path imp, or "" when
// imp is outside the module.
func local(imp string) string {
	if imp == module {
		return "."
	}
	if rel, ok := strings.CutPrefix(imp, module+"/"); ok {
		return rel
	}
	return ""
}

// deps returns the transitive imports of rel (module packages and the
// others), by import path.
func deps(pkgs map[string]*pkg, rel string) map[string]bool {
	seen := map[string]bool{}
	var walk func(string)
	walk = func(r string) {
		p := pkgs[r]
		if p == nil {
			return
		}
		for _, imp := range p.imports {
			if seen[imp] {
				continue
			}
			seen[imp] = true
			if l := local(imp); l != "" {
				walk(l)
			}
		}
	}
	walk(rel)
	return seen
}

// forbidden reports why the module package from importing the module
// package to breaks a rule of the package doc, or "".
func forbidden(pkgs map[string]*pkg, from *pkg, to string) string {
	switch {
	case under(to, "cmd"):
		return "nothing imports a command"
	case from.rel == "internal/atomicfile":
		return "internal/atomicfile imports no package of the module, so that every layer may use it"
	case (under(from.rel, "data") || under(from.rel, "schema")) && (under(to, "models") || under(to, "stages")):
		return "data and schema are the lowest layer"
	case under(from.rel, "models") && under(to, "stages"):
		return "models sit below stages"
	case under(from.rel, "models") && to == "schema":
		return "models read schema/modelspec, not the CUE loader"
	case under(from.rel, "cmd") && (to == "models/fit" || to == "models/kinds" || modelKind(pkgs, to)):
		return "a command parses flags and prints: training and the model kinds are reached through stages"
	case under(from.rel, "stages") && pkgs[to] != nil && pkgs[to].stageKind:
		if from.stageKind {
			return "a stage kind imports no sibling stage kind"
		}
		return "the stage engine knows the kinds only through stages.Registry"
	case from.rel == "stages" && under(to, "models") && to != "models/curve":
		return "the stage engine's root depends on no model package but models/curve"
	case from.rel == "models/kernels" && under(to, "data") && to != "data/csr":
		return "the kernels know graphs only as data/csr's CSR"
	case kernel(from.rel) && under(to, "models") && !kernel(to):
		return "the kernels sit below the runtime (models/rt, nbop, op, ...) and the CUDA driver: they import no other model package"
	case from.rel == refPkg && (kernel(to) || under(to, "models/rt") || under(to, "models/nbop") || under(to, "models/op") || under(to, "models/cuda")):
		return "the reference is independent of what it checks: plain loops, no kernel and no runtime op"
	case testkit(to) && !testkit(from.rel):
		return "test helpers (internal/testkit/...) are imported by tests and other test helpers only"
	}
	return ""
}

// modelKind reports whether rel is a model kind's package: one that
// models/kinds, the registry of every kind, imports (models, the kinds'
// common interface, aside).
func modelKind(pkgs map[string]*pkg, rel string) bool {
	reg := pkgs["models/kinds"]
	if reg == nil || rel == "models" {
		return false
	}
	for _, imp := range reg.imports {
		if local(imp) == rel {
			return true
		}
	}
	return false
}

// maxCommandLines is the most lines a non-test Go file of a command may
// have, and maxCommandTotal the most all of one command's non-test files
// may have together: a command is flags, dispatch and printing.
const (
	maxCommandLines = 400
	maxCommandTotal = 3500
)

// TestCommandFileSizes checks that no non-test Go file under cmd/ has
// more than maxCommandLines lines, and no command more than
// maxCommandTotal.
func TestCommandFileSizes(t *testing.T) {
	top := root(t)
	files, err := filepath.Glob(filepath.Join(top, "cmd", "*", "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no command sources under %s: %v", top, err)
	}
	total := map[string]int{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		n := bytes.Count(b, []byte("\n"))
		total[filepath.Dir(f)] += n
		if n > maxCommandLines {
			rel, _ := filepath.Rel(top, f)
			t.Errorf("%s has %d lines, more than %d: move its logic below cmd", filepath.ToSlash(rel), n, maxCommandLines)
		}
	}
	for dir, n := range total {
		if n > maxCommandTotal {
			rel, _ := filepath.Rel(top, dir)
			t.Errorf("%s has %d lines in its non-test files, more than %d: move logic below cmd", filepath.ToSlash(rel), n, maxCommandTotal)
		}
	}
}

func TestLayering(t *testing.T) {
	pkgs := loadPackages(t)
	rels := slices.Sorted(maps.Keys(pkgs))
	kinds := 0
	for _, rel := range rels {
		p := pkgs[rel]
		if p.stageKind {
			kinds++
		}
		for _, imp := range p.imports {
			if rel == refPkg && strings.HasPrefix(imp, "gorgonia.org/") {
				t.Errorf("%s imports %s: the reference computes in plain loops, not on Gorgonia", rel, imp)
			}
			to := local(imp)
			if to == "" {
				continue
			}
			if why := forbidden(pkgs, p, to); why != "" {
				t.Errorf("%s imports %s: %s", p.rel, to, why)
			}
		}
	}
	for _, rel := range testOnly(pkgs) {
		if !testkit(rel) {
			t.Errorf("%s is imported by tests only: a test helper lives under internal/testkit/... (or goes into _test.go files)", rel)
		}
	}
	if kinds < 7 {
		t.Errorf("found %d stage kinds (packages with a Kind.Run method), want at least the 7 of spn run", kinds)
	}
	for _, rel := range rels {
		if !under(rel, "models") {
			continue
		}
		for _, imp := range slices.Sorted(maps.Keys(deps(pkgs, rel))) {
			if strings.HasPrefix(imp, "cuelang.org/") {
				t.Errorf("%s depends on %s: the model library is free of CUE", rel, imp)
				break
			}
		}
	}
}

// testOnly returns, sorted, the packages with non-test files that tests
// import and no production package does: a package counts as production
// when it is a command, or a package outside internal/testkit that a
// production package imports. Packages imported by no one (and no test)
// are not listed.
func testOnly(pkgs map[string]*pkg) []string {
	prod := map[string]bool{}
	var mark func(string)
	mark = func(rel string) {
		if prod[rel] || pkgs[rel] == nil || testkit(rel) {
			return
		}
		prod[rel] = true
		for _, imp := range pkgs[rel].imports {
			if l := local(imp); l != "" {
				mark(l)
			}
		}
	}
	for rel, p := range pkgs {
		if p.command {
			mark(rel)
		}
	}
	// Production packages imported by no command (a library's leaves, the
	// layering package itself) are production too unless a test imports them.
	tested := map[string]bool{}
	for rel, p := range pkgs {
		for _, imp := range slices.Concat(p.testImports, p.imports) {
			if l := local(imp); l != "" && l != rel {
				tested[l] = true
			}
		}
	}
	for rel, p := range pkgs {
		if p.code && !tested[rel] {
			mark(rel)
		}
	}
	var out []string
	for rel, p := range pkgs {
		if p.code && !p.command && !prod[rel] && tested[rel] {
			out = append(out, rel)
		}
	}
	slices.Sort(out)
	return out
}

// TestRules checks that the rules catch what they are for, on imports
// the module does not have, and allow the ones it needs.
func TestRules(t *testing.T) {
	pkgs := loadPackages(t)
	for _, rel := range []string{"models", "stages", "data", "schema", "stages/plan", "stages/train", "stages/selectstage", "stages/evaluate", "internal/atomicfile", "models/kernels", "models/cuda", "cmd/spn"} {
		if pkgs[rel] == nil {
			t.Fatalf("package %s not found", rel)
		}
	}
	if !pkgs["stages/train"].stageKind || !pkgs["stages/selectstage"].stageKind || pkgs["stages/plan"].stageKind {
		t.Errorf("stage kinds misdetected: train %v, selectstage %v, plan %v",
			pkgs["stages/train"].stageKind, pkgs["stages/selectstage"].stageKind, pkgs["stages/plan"].stageKind)
	}
	tests := []struct {
		from, to string
		bad      bool
	}{
		{"models", "schema", true},
		{"models/rt", "schema/modelspec", false},
		{"models/fit", "stages", true},
		{"data", "models/kernels", true},
		{"schema", "stages", true},
		{"stages/train", "cmd/spn", true},
		{"stages/evaluate", "stages/selectstage", true},
		{"stages/plan", "stages/train", true},
		{"stages/evaluate", "stages/selection", false},
		{"stages", "models/fit", true},
		{"stages", "models/curve", false},
		{"stages/train", "models/fit", false},
		{"models/kernels", "data/csr", false},
		{"models/kernels", "data", true},
		{"data", "internal/atomicfile", false},
		{"data/fetch", "internal/atomicfile", false},
		{"schema", "internal/atomicfile", false},
		{"models/cuda", "internal/atomicfile", false},
		{"models/kernels", "internal/atomicfile", false},
		{"stages", "internal/atomicfile", false},
		{"stages/cache", "internal/atomicfile", false},
		{"stages/train", "internal/atomicfile", false},
		{"cmd/spn", "internal/atomicfile", false},
		{"internal/atomicfile", "data", true},
		{"internal/atomicfile", "internal/jsonpos", true},
		{"models/kinds", "models/internal/testkit/ref", true},
		{"models/nbop", "models/internal/testkit/optest", true},
		{"models/internal/testkit/modeltest", "models/internal/testkit/optest", false},
		{"data", "internal/testkit/golden", true},
		{"models/cuda/kern", "models/rt", true},
		{"models/kernels", "models/nbop", true},
		{"models/kernels", "models/cuda", true},
		{"models/cuda/kern", "data/csr", false},
		{"models/cuda/engine", "models/kernels", false},
		{refPkg, "models/kernels", true},
		{refPkg, "models/rt", true},
		{refPkg, "models/param", false},
		{"cmd/spn", "models/fit", true},
		{"cmd/spn", "models/kinds", true},
		{"cmd/spn", "models/spn", true},
		{"cmd/spn", "models/gat", true},
		{"cmd/spn", "models", false},
		{"cmd/spn", "models/cuda", false},
		{"cmd/spn", "stages/train", false},
	}
	for _, tc := range tests {
		from := pkgs[tc.from]
		if from == nil {
			from = &pkg{rel: tc.from}
		}
		if why := forbidden(pkgs, from, tc.to); (why != "") != tc.bad {
			t.Errorf("%s importing %s: forbidden %q, want forbidden %v", tc.from, tc.to, why, tc.bad)
		}
	}
	// A helper that only a test imports is test-only, also when another
	// test-only helper imports it; a package a command reaches is not.
	fake := map[string]*pkg{
		"cmd/x":            {rel: "cmd/x", code: true, command: true, imports: []string{module + "/lib"}},
		"lib":              {rel: "lib", code: true, testImports: []string{module + "/lib/helper"}},
		"lib/helper":       {rel: "lib/helper", code: true, imports: []string{module + "/lib/helper/deep", module + "/lib"}},
		"lib/helper/deep":  {rel: "lib/helper/deep", code: true},
		"internal/testkit": {rel: "internal/testkit", code: true, imports: []string{module + "/lib/kitonly"}},
		"lib/kitonly":      {rel: "lib/kitonly", code: true},
		"lib/leaf":         {rel: "lib/leaf", code: true},
	}
	if got, want := testOnly(fake), []string{"lib/helper", "lib/helper/deep", "lib/kitonly"}; !slices.Equal(got, want) {
		t.Errorf("testOnly = %v, want %v", got, want)
	}
	if !deps(pkgs, "schema")["cuelang.org/go/cue"] {
		t.Error("schema does not depend on cuelang.org/go/cue: the CUE check of TestLayering would pass vacuously")
	}
}
