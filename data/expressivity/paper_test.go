package expressivity

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/spn-project/spn/internal/testkit/mirrortest"
)

// TestPaperClaims checks every claim of Section 4 on the paper's pairs.
func TestPaperClaims(t *testing.T) {
	for _, pp := range PaperPairs() {
		r, err := Check(context.Background(), &pp.Pair, Options{})
		if err != nil {
			t.Fatal(err)
		}
		vs := pp.Verify(r)
		if len(vs) < 3 {
			t.Fatalf("%s: %d verdicts", pp.Name, len(vs))
		}
		for _, v := range vs {
			if !v.Holds {
				t.Errorf("%s: claim %q does not hold: found %s", pp.Name, v.Claim, v.Found)
			}
		}
	}
}

// TestVerifyDetectsFalseClaims checks that Verify is not vacuous: with
// each claim flipped, some verdict fails.
func TestVerifyDetectsFalseClaims(t *testing.T) {
	for _, pp := range PaperPairs() {
		r, err := Check(context.Background(), &pp.Pair, Options{})
		if err != nil {
			t.Fatal(err)
		}
		flips := []func(c *Claim){
			func(c *Claim) { c.WL = !c.WL },
			func(c *Claim) { c.SP = !c.SP },
			func(c *Claim) { c.MinK++ },
		}
		if pp.Claim.WienerA != 0 {
			flips = append(flips, func(c *Claim) { c.WienerB++ })
		}
		for i, flip := range flips {
			q := pp
			flip(&q.Claim)
			failed := false
			for _, v := range q.Verify(r) {
				failed = failed || !v.Holds
			}
			if !failed {
				t.Errorf("%s: flipped claim %d still holds", pp.Name, i)
			}
		}
	}
}

// tikzEdges extracts the edges of the two scopes of the paper.tex figure
// labelled label: within a \draw path, "edge (vj)" joins the current node
// to vj, and a node outside an edge operation becomes the current node.
func tikzEdges(t *testing.T, tex, label string) [2][][2]int {
	t.Helper()
	end := strings.Index(tex, `\label{`+label+`}`)
	if end < 0 {
		t.Fatalf("paper.tex has no \\label{%s}", label)
	}
	start := max(strings.LastIndex(tex[:end], `\begin{wrapfigure}`), strings.LastIndex(tex[:end], `\begin{figure}`))
	if start < 0 {
		t.Fatalf("no figure environment before \\label{%s}", label)
	}
	scopes := strings.Split(tex[start:end], `\begin{scope}`)[1:]
	if len(scopes) != 2 {
		t.Fatalf("figure %s: %d scopes, want 2", label, len(scopes))
	}
	tok := regexp.MustCompile(`\(v(\d+)\)|\bedge\b`)
	draw := regexp.MustCompile(`(?s)\\draw\[[^\]]*\](.*?);`)
	var out [2][][2]int
	for i, sc := range scopes {
		for _, d := range draw.FindAllStringSubmatch(sc, -1) {
			cur, pendingEdge := -1, false
			for _, m := range tok.FindAllStringSubmatch(d[1], -1) {
				if m[0] == "edge" {
					pendingEdge = true
					continue
				}
				v, _ := strconv.Atoi(m[1])
				if pendingEdge {
					out[i] = append(out[i], [2]int{min(cur, v), max(cur, v)})
					pendingEdge = false
				} else {
					cur = v
				}
			}
		}
		slices.SortFunc(out[i], func(a, b [2]int) int { return slices.Compare(a[:], b[:]) })
	}
	return out
}

// TestPaperPairsMatchPaperTex reads the pairs' edges from the TikZ source
// of the paper's figures and the Wiener indices from results.json, and
// compares them with PaperPairs.
func TestPaperPairsMatchPaperTex(t *testing.T) {
	dir := mirrortest.PaperDir(t)
	tex, err := os.ReadFile(filepath.Join(dir, "paper.tex"))
	if err != nil {
		t.Fatal(err)
	}
	for _, pp := range PaperPairs() {
		got := tikzEdges(t, string(tex), pp.Figure)
		for i, want := range [][][2]int{pp.A.Edges(), pp.B.Edges()} {
			if !slices.Equal(got[i], want) {
				t.Errorf("%s graph %d: paper.tex has edges %v, PaperPairs %v", pp.Name, i+1, got[i], want)
			}
		}
	}

	raw, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Expressivity struct {
			I1 int64    `json:"I1_wiener_index"`
			I2 int64    `json:"I2_wiener_index"`
			C  []string `json:"claims"`
		} `json:"expressivity"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	for _, pp := range PaperPairs() {
		if pp.Name == "I1/I2" && (pp.Claim.WienerA != res.Expressivity.I1 || pp.Claim.WienerB != res.Expressivity.I2) {
			t.Errorf("I1/I2 Wiener claim %d, %d; results.json says %d, %d", pp.Claim.WienerA, pp.Claim.WienerB, res.Expressivity.I1, res.Expressivity.I2)
		}
		// The pair's claim in results.json says what Claim says.
		var claim string
		for _, c := range res.Expressivity.C {
			if strings.HasPrefix(c, strings.Replace(pp.Name, "/", " vs ", 1)) || strings.HasPrefix(c, strings.SplitN(pp.Name, "/", 2)[0]+" (") {
				claim = c
			}
		}
		if claim == "" {
			t.Errorf("results.json's expressivity claims do not mention %s", pp.Name)
			continue
		}
		neither := strings.Contains(claim, "neither 1-WL nor SP")
		wlNo := neither || strings.Contains(claim, "1-WL cannot")
		spYes := strings.Contains(claim, "SP can")
		if wlNo == pp.Claim.WL || spYes != pp.Claim.SP || spYes == neither {
			t.Errorf("%s: results.json says %q; Claim has WL %v, SP %v", pp.Name, claim, pp.Claim.WL, pp.Claim.SP)
		}
		if strings.Contains(claim, "k>=2") && pp.Claim.MinK != 2 {
			t.Errorf("%s: results.json says %q; Claim has MinK %d", pp.Name, claim, pp.Claim.MinK)
		}
	}
	if len(res.Expressivity.C) != len(PaperPairs()) {
		t.Errorf("results.json has %d expressivity claims, PaperPairs %d pairs", len(res.Expressivity.C), len(PaperPairs()))
	}
}
