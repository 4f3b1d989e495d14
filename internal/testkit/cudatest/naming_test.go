package cudatest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// TestNamesOfGPUTests: a test that needs a GPU (it calls NoGPU or
// enginetest.GPU, directly or through a function of its package's test
// files) is named TestGPU…, and a test so named needs one.
// scripts/gpu-check.sh runs only those (-test.run '^TestGPU') on a GPU
// machine, where every minute counts; the CPU tests run in CI.
func TestNamesOfGPUTests(t *testing.T) {
	root := filepath.Join("..", "..", "..", "models")
	byDir := map[string][]*ast.File{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		byDir[filepath.Dir(path)] = append(byDir[filepath.Dir(path)], f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	tests := 0
	for dir, files := range byDir {
		reaches := gpuFuncs(files)
		for _, f := range files {
			for _, d := range f.Decls {
				fn, ok := d.(*ast.FuncDecl)
				if !ok || fn.Recv != nil || !strings.HasPrefix(fn.Name.Name, "Test") {
					continue
				}
				name, gpu := fn.Name.Name, reaches[fn.Name.Name]
				switch {
				case gpu && !strings.HasPrefix(name, "TestGPU"):
					t.Errorf("%s: %s needs a GPU: name it TestGPU…", dir, name)
				case !gpu && strings.HasPrefix(name, "TestGPU"):
					t.Errorf("%s: %s does not need a GPU: only tests that do are named TestGPU…", dir, name)
				case gpu:
					tests++
				}
			}
		}
	}
	if tests < 20 {
		t.Errorf("found %d GPU tests under models/: the walk missed them", tests)
	}
}

// gpuFuncs returns the package-level functions of files that reach a GPU:
// those that call NoGPU or enginetest.GPU, and those that refer to one
// that does.
func gpuFuncs(files []*ast.File) map[string]bool {
	refs := map[string][]string{} // function → the package-level names it refers to
	reaches := map[string]bool{}
	for _, f := range files {
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || fn.Body == nil {
				continue
			}
			name := fn.Name.Name
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.SelectorExpr:
					x, ok := n.X.(*ast.Ident)
					if !ok {
						return true
					}
					if x.Name == "cudatest" && n.Sel.Name == "NoGPU" || x.Name == "enginetest" && n.Sel.Name == "GPU" {
						reaches[name] = true
					}
					return false // pkg.Name or v.field: neither is a function of this package
				case *ast.Ident:
					refs[name] = append(refs[name], n.Name)
				}
				return true
			})
		}
	}
	reaches["NoGPU"] = true // within this package
	for changed := true; changed; {
		changed = false
		names := make([]string, 0, len(refs))
		for n := range refs {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			if reaches[n] {
				continue
			}
			for _, r := range refs[n] {
				if r != n && reaches[r] {
					reaches[n], changed = true, true
					break
				}
			}
		}
	}
	return reaches
}
