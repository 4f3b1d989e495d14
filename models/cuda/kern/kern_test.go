package kern_test

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spn-project/spn/data/csr"
	"github.com/spn-project/spn/models/cuda/kern"
)

// signature matches a kernel's declaration in a .cu file.
var signature = regexp.MustCompile(`(?s)SPN_KERNEL void (\w+)\((.*?)\)\s*\{`)

// TestKernelTable checks kern.Kernels against the sources: the same
// kernels, in the same files, with the same parameter names and C types
// (const and __restrict__ aside).
func TestKernelTable(t *testing.T) {
	want := map[string]kern.Kernel{}
	for _, k := range kern.Kernels() {
		if _, dup := want[k.Name]; dup {
			t.Fatalf("kernel %s listed twice", k.Name)
		}
		want[k.Name] = k
	}
	seen := 0
	for _, f := range kern.Files {
		text, err := kern.File(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range signature.FindAllStringSubmatch(text, -1) {
			name := m[1]
			k, ok := want[name]
			if !ok {
				t.Errorf("%s: kernel %s is not in kern.Kernels", f, name)
				continue
			}
			seen++
			if k.File != f {
				t.Errorf("%s is in %s, the table says %s", name, f, k.File)
			}
			var got []string
			for _, p := range strings.Split(m[2], ",") {
				p = strings.Join(strings.Fields(strings.NewReplacer("const ", "", "__restrict__", "").Replace(p)), " ")
				got = append(got, p)
			}
			var exp []string
			for _, p := range k.Params {
				exp = append(exp, p.Kind.C()+" "+p.Name)
			}
			if strings.Join(got, ", ") != strings.Join(exp, ", ") {
				t.Errorf("%s(%s) in %s; the table says (%s)", name, strings.Join(got, ", "), f, strings.Join(exp, ", "))
			}
		}
	}
	if seen != len(want) {
		t.Errorf("the sources declare %d of the table's %d kernels", seen, len(want))
	}
}

// TestSource: every file is in Source behind a #line directive naming it.
func TestSource(t *testing.T) {
	src := kern.Source()
	for _, f := range append([]string{kern.Header}, kern.Files...) {
		text, err := kern.File(f)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(src, "#line 1 \""+f+"\"\n"+text) {
			t.Errorf("Source lacks %s behind its #line directive", f)
		}
	}
	if _, err := kern.File("nope.cu"); err == nil || !strings.Contains(err.Error(), `no kernel file "nope.cu"`) {
		t.Errorf("File(nope.cu): %v", err)
	}
	code := regexp.MustCompile(`//.*`).ReplaceAllString(src, "") // comments may name them
	for _, bad := range []string{"atomic", "__shared__", "__syncthreads"} {
		if strings.Contains(code, bad) {
			t.Errorf("the kernels use %s: they must stay deterministic and emulable", bad)
		}
	}
}

func TestPackHops(t *testing.T) {
	a := csr.CSR{Ptr: []int32{0, 1, 2, 2}, Idx: []int32{1, 0}}
	b := csr.CSR{Ptr: []int32{0, 0, 1, 2}, Idx: []int32{2, 1}}
	ptr, idx, err := kern.PackHops([]csr.CSR{a, b}, 3)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int32{0, 1, 2, 2, 2, 2, 3, 4}; !slices.Equal(ptr, want) {
		t.Errorf("ptr %v, want %v", ptr, want)
	}
	if want := []int32{1, 0, 2, 1}; !slices.Equal(idx, want) {
		t.Errorf("idx %v, want %v", idx, want)
	}
	if ptr, idx, err := kern.PackHops(nil, 3); err != nil || len(ptr) != 0 || len(idx) != 0 {
		t.Errorf("no hops: %v %v %v", ptr, idx, err)
	}
	for _, c := range []struct {
		name string
		hops []csr.CSR
		want string
	}{
		{"rows", []csr.CSR{a, {Ptr: []int32{0, 0}, Idx: nil}}, "kern: hop set 2 has 2 row offsets, want 4 for 3 nodes"},
		{"no offsets", []csr.CSR{{}}, "kern: hop set 1 has 0 row offsets, want 4 for 3 nodes"},
		{"entries", []csr.CSR{{Ptr: []int32{0, 1, 2, 3}, Idx: []int32{1}}}, "kern: hop set 1 has 1 entries, its offsets say 3"},
	} {
		if _, _, err := kern.PackHops(c.hops, 3); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}
