package doccheck

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// repoRoot returns the repository root: the folder holding go.mod.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		up := filepath.Dir(dir)
		if up == dir {
			t.Fatal("go.mod not found above the test's folder")
		}
		dir = up
	}
}

// TestDocLinks checks every relative link of README.md and docs/*.md.
func TestDocLinks(t *testing.T) {
	root := repoRoot(t)
	files := []string{"README.md"}
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		rel, _ := filepath.Rel(root, d)
		files = append(files, rel)
	}
	if _, err := os.Stat(filepath.Join(root, "CHANGELOG.md")); err == nil {
		files = append(files, "CHANGELOG.md")
	}
	probs, err := Links(root, files)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range probs {
		t.Errorf("broken link: %s", p)
	}
}

// TestReadmeShort: the README stays a short entry, at most 300 lines;
// subjects live in docs/.
func TestReadmeShort(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n > 300 {
		t.Fatalf("README.md has %d lines, more than 300: move a subject to docs/", n)
	}
}

// TestLinksReportsBroken runs the check on files with known broken links:
// each is reported, and nothing else.
func TestLinksReportsBroken(t *testing.T) {
	probs, err := Links("testdata/broken", []string{"a.md", "sub/b.md"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range probs {
		got = append(got, p.String())
	}
	want := []string{
		"a.md:10: sub/c.md: no such file or folder sub/c.md",
		"a.md:10: sub/b.md#nowhere: no heading or anchor #nowhere in sub/b.md",
		"a.md:11: #same-heading-2: no heading or anchor #same-heading-2 in a.md",
		"a.md:12: ../../../../../../x.md: points outside the repository",
		"a.md:20: sub/missing.md: no such file or folder sub/missing.md",
	}
	if !slices.Equal(got, want) {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestSlug(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"Status and limits", "status-and-limits"},
		{"spn expressivity: which pairs can SP-MPNNs tell apart?", "spn-expressivity-which-pairs-can-sp-mpnns-tell-apart"},
		{"Table 4 (QM9, R-SPN)", "table-4-qm9-r-spn"},
		{"`spn run` and `spn_table`", "spn-run-and-spn_table"},
		{"See [the spec](spec.md) — fields", "see-the-spec--fields"},
		{"α and ε", "α-and-ε"},
	} {
		if got := Slug(c.in); got != c.want {
			t.Errorf("Slug(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestPreamble(t *testing.T) {
	tex := "% Figure f.\n" +
		"% Needs \\usepackage{pgfplots} and \\pgfplotsset{compat=1.16} in the preamble.\n" +
		"% Needs \\usepackage[table]{xcolor}.\n" +
		"\\usepackage{notme}\n"
	got := Preamble(tex)
	want := []string{`\usepackage{pgfplots}`, `\pgfplotsset{compat=1.16}`, `\usepackage[table]{xcolor}`}
	if !slices.Equal(got, want) {
		t.Errorf("Preamble = %q, want %q", got, want)
	}
}

// TestLaTeXCompiles compiles tables and a figure as spn writes them (their
// golden files) in a document whose preamble is only what their "% Needs"
// headers ask for, so a header that forgets a package fails here.
func TestLaTeXCompiles(t *testing.T) {
	pdflatex, err := exec.LookPath("pdflatex")
	if err != nil {
		t.Skip("pdflatex not installed (apt-get install texlive-latex-base texlive-latex-recommended texlive-pictures)")
	}
	root := repoRoot(t)
	for _, golden := range []string{
		"stages/tabulate/testdata/tu_results.tex.golden",
		"stages/tabulate/testdata/prox_compare.tex.golden",
		"stages/figure/testdata/hop_weights.tex.golden",
	} {
		t.Run(filepath.Base(golden), func(t *testing.T) {
			body, err := os.ReadFile(filepath.Join(root, golden))
			if err != nil {
				t.Fatal(err)
			}
			pre := Preamble(string(body))
			if len(pre) == 0 {
				t.Fatalf("%s has no %q header", golden, "% Needs")
			}
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "part.tex"), body, 0o644); err != nil {
				t.Fatal(err)
			}
			doc := "\\documentclass{article}\n" + strings.Join(pre, "\n") +
				"\n\\begin{document}\n\\input{part.tex}\n\\end{document}\n"
			if err := os.WriteFile(filepath.Join(dir, "doc.tex"), []byte(doc), 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(pdflatex, "-interaction=nonstopmode", "-halt-on-error", "-no-shell-escape", "doc.tex")
			cmd.Dir = dir
			out, err := cmd.CombinedOutput()
			if err != nil {
				tail := out
				if len(tail) > 3000 {
					tail = tail[len(tail)-3000:]
				}
				t.Fatalf("pdflatex on %s with preamble %q: %v\n%s", golden, pre, err, tail)
			}
			if fi, err := os.Stat(filepath.Join(dir, "doc.pdf")); err != nil || fi.Size() == 0 {
				t.Fatalf("pdflatex wrote no doc.pdf: %v", err)
			}
		})
	}
}
