package plan

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/spn-project/spn/internal/testkit/golden"
)

// dotPlan is testSpec's plan with the first generate stage cached and
// one train stage failed.
func dotPlan(t *testing.T) (*Plan, DOTOptions) {
	t.Helper()
	s := testSpec()
	s.Name = `small "quoted" \ name`
	p := mustBuild(t, s, testRegistry(nil))
	if err := p.Resolve(fakeStore{has: map[string]bool{p.Nodes[0].Key: true}}); err != nil {
		t.Fatal(err)
	}
	var failed string
	for _, n := range p.Nodes {
		if n.Kind == "train" {
			failed = n.Key
			break
		}
	}
	return p, DOTOptions{Title: s.Name, Failure: func(key string) (string, bool) {
		return "out of \"memory\"\nsecond line", key == failed
	}}
}

func TestWriteDOT(t *testing.T) {
	for _, byKind := range []bool{false, true} {
		p, o := dotPlan(t)
		o.ByKind = byKind
		var buf bytes.Buffer
		if err := p.WriteDOT(&buf, o); err != nil {
			t.Fatal(err)
		}
		name := "testdata/plan.dot.golden"
		if byKind {
			name = "testdata/plan_by_kind.dot.golden"
		}
		golden.Check(t, name, buf.Bytes())
		out := buf.String()
		for _, want := range []string{`label="experiment prox_gin"`, `label="experiment tu_spn"`, dotFailed, dotCached, dotToRun, `label="small \"quoted\" \\ name"`} {
			if !strings.Contains(out, want) {
				t.Errorf("byKind=%v: DOT lacks %s", byKind, want)
			}
		}
		// Every stage (or group) is drawn once, and the shared generate
		// stage stands outside the clusters.
		nodes := strings.Count(out, "fillcolor=") - 3 // the legend
		want := len(p.Nodes)
		if byKind {
			want = 0
			seen := map[[2]string]bool{}
			exp := p.ExperimentOf()
			for i, n := range p.Nodes {
				if k := [2]string{exp[i], n.Kind}; !seen[k] {
					seen[k] = true
					want++
				}
			}
		}
		if nodes != want {
			t.Errorf("byKind=%v: %d nodes drawn, want %d", byKind, nodes, want)
		}
		renderDOT(t, buf.Bytes())
	}
}

func TestExperimentOf(t *testing.T) {
	p := mustBuild(t, testSpec(), testRegistry(nil))
	exp := p.ExperimentOf()
	for i, n := range p.Nodes {
		var want string
		switch {
		case strings.Contains(n.Name, "prox(h=3)") && (n.Kind == "generate" || n.Kind == "precompute"):
			want = "" // shared by prox_gin and prox_spn
		case n.Kind == "tabulate":
			want = ""
		case strings.Contains(n.Name, "PROTEINS") || strings.Contains(n.Name, "tu_spn"):
			want = "tu_spn"
		case strings.Contains(n.Name, "prox_gin"):
			want = "prox_gin"
		case strings.Contains(n.Name, "prox_spn"):
			want = "prox_spn"
		default:
			continue // prox train stages: one of the two prox experiments
		}
		if exp[i] != want {
			t.Errorf("%s: experiment %q, want %q", n.Name, exp[i], want)
		}
	}
	if got := strings.Join(p.Experiments(), ","); got != "prox_gin,prox_spn,tu_spn" {
		t.Errorf("experiments %s", got)
	}
}

// renderDOT runs Graphviz's dot on src when it is installed (CI installs
// it: there a missing dot fails) and fails on any error or warning.
func renderDOT(t *testing.T, src []byte) {
	t.Helper()
	path, err := exec.LookPath("dot")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("Graphviz's dot is not on PATH (CI installs the graphviz package)")
		}
		t.Skip("Graphviz's dot is not on PATH (apt-get install graphviz): the DOT output is not rendered")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "-Tsvg")
	cmd.Stdin = bytes.NewReader(src)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil || errb.Len() > 0 {
		t.Fatalf("dot -Tsvg: %v\n%s", err, errb.String())
	}
	if !bytes.Contains(out.Bytes(), []byte("<svg")) {
		t.Fatalf("dot -Tsvg wrote no SVG:\n%s", out.String())
	}
}

// unquoteDOT reads a DOT quoted string as Graphviz reads a label: \" is
// a quote, \\ a backslash, \n a line break.
func unquoteDOT(q string) (string, bool) {
	if len(q) < 2 || q[0] != '"' || q[len(q)-1] != '"' {
		return "", false
	}
	var b strings.Builder
	in := q[1 : len(q)-1]
	for i := 0; i < len(in); i++ {
		c := in[i]
		switch {
		case c == '"':
			return "", false // an unescaped quote ends the string early
		case c != '\\':
			b.WriteByte(c)
		case i+1 == len(in):
			return "", false
		default:
			i++
			switch in[i] {
			case '"', '\\':
				b.WriteByte(in[i])
			case 'n':
				b.WriteByte('\n')
			default:
				return "", false
			}
		}
	}
	return b.String(), true
}

func FuzzDOTQuote(f *testing.F) {
	for _, s := range []string{"", "train prox(h=3) spn k=5", `a "b" \c`, "line\nbreak\r\n", `\`, `"`, "α ×3 ∞", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		q := DOTQuote(s)
		got, ok := unquoteDOT(q)
		if !ok {
			t.Fatalf("DOTQuote(%q) = %s is not one DOT string", s, q)
		}
		want := strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\r", "")
		if !utf8.ValidString(s) {
			want = strings.ReplaceAll(string([]rune(s)), "\r", "")
		}
		if got != want {
			t.Fatalf("DOTQuote(%q) reads back as %q", s, got)
		}
	})
}
