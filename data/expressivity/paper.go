package expressivity

import (
	"fmt"

	"github.com/spn-project/spn/data"
)

// Claim is what the paper states about a pair.
type Claim struct {
	// WL and SP: whether 1-WL and the SP kernel distinguish the pair.
	WL, SP bool
	// MinK: SP-MPNN(k) distinguishes the pair exactly for k >= MinK; 0
	// means for no k.
	MinK int
	// WienerA, WienerB are the stated Wiener indices (0: not stated).
	WienerA, WienerB int64
}

// PaperPair is a pair of graphs from the paper's Section 4 figures with
// the paper's claims about it.
type PaperPair struct {
	Pair
	// Figure is the figure's label in paper.tex.
	Figure string
	Claim  Claim
}

// mustGraph builds a graph from a fixed, known-good edge list.
func mustGraph(n int, edges [][2]int) data.Graph {
	g, err := data.FromEdges(n, edges)
	if err != nil {
		panic(fmt.Sprintf("expressivity: bad built-in graph: %v", err))
	}
	return g
}

// PaperPairs returns the pairs of the paper's Figures (Section 4), their
// edges read from the TikZ source of paper.tex (node vi is node i):
//
//   - G1/G2 (fig:indistinguishable): two 4-cycles and an 8-cycle; 1-WL
//     cannot distinguish them, SP can, SP-MPNN with k >= 2 can.
//   - I1/I2 (fig:SPv1WL): two connected 8-node graphs; 1-WL cannot, SP
//     can (Wiener indices 50 and 56).
//   - H1/H2 (fig:wl_sp_indist): the triangular prism and K_{3,3}; neither
//     1-WL nor SP, hence no SP-MPNN, distinguishes them.
//
// The paper states k >= 2 for G1/G2 only; for I1/I2 the claim MinK = 2
// follows from its text (SP-MPNNs with k >= 2 see the longer shortest
// paths) and is checked like the others.
func PaperPairs() []PaperPair {
	return []PaperPair{
		{
			Pair: Pair{
				Name: "G1/G2",
				A:    mustGraph(8, [][2]int{{0, 1}, {0, 2}, {2, 3}, {3, 1}, {4, 5}, {4, 6}, {6, 7}, {7, 5}}),
				B:    mustGraph(8, [][2]int{{0, 1}, {1, 2}, {2, 3}, {3, 4}, {4, 5}, {5, 6}, {6, 7}, {7, 0}}),
			},
			Figure: "fig:indistinguishable",
			Claim:  Claim{WL: false, SP: true, MinK: 2},
		},
		{
			Pair: Pair{
				Name: "I1/I2",
				A:    mustGraph(8, [][2]int{{0, 1}, {0, 2}, {1, 3}, {2, 5}, {2, 4}, {3, 4}, {3, 5}, {5, 7}, {4, 6}, {6, 7}}),
				B:    mustGraph(8, [][2]int{{0, 1}, {0, 2}, {1, 3}, {2, 3}, {2, 4}, {3, 5}, {5, 7}, {5, 4}, {4, 6}, {6, 7}}),
			},
			Figure: "fig:SPv1WL",
			Claim:  Claim{WL: false, SP: true, MinK: 2, WienerA: 50, WienerB: 56},
		},
		{
			Pair: Pair{
				Name: "H1/H2",
				A:    mustGraph(6, [][2]int{{0, 1}, {0, 2}, {2, 1}, {3, 4}, {3, 5}, {5, 4}, {1, 5}, {0, 4}, {2, 3}}),
				B:    mustGraph(6, [][2]int{{0, 1}, {0, 3}, {0, 5}, {2, 1}, {2, 3}, {2, 5}, {4, 1}, {4, 3}, {4, 5}}),
			},
			Figure: "fig:wl_sp_indist",
			Claim:  Claim{WL: false, SP: false, MinK: 0},
		},
	}
}

// Verdict is one claim checked against a result.
type Verdict struct {
	Claim string `json:"claim"`
	Holds bool   `json:"holds"`
	// Found is what spn computed.
	Found string `json:"found"`
}

func yesNo(b bool, yes, no string) string {
	if b {
		return yes
	}
	return no
}

// Verify checks the pair's claims against r, the result of Check on the
// pair with the default ks (every k from 1 to n−1).
func (pp *PaperPair) Verify(r *Result) []Verdict {
	c := pp.Claim
	var out []Verdict
	if c.WienerA != 0 || c.WienerB != 0 {
		out = append(out, Verdict{
			Claim: fmt.Sprintf("Wiener indices %d and %d", c.WienerA, c.WienerB),
			Holds: r.A.Connected && r.B.Connected && r.A.Wiener == c.WienerA && r.B.Wiener == c.WienerB,
			Found: fmt.Sprintf("%d and %d%s", r.A.Wiener, r.B.Wiener, yesNo(r.A.Connected && r.B.Connected, "", " (not both connected)")),
		})
	}
	out = append(out,
		Verdict{
			Claim: yesNo(c.WL, "1-WL distinguishes", "1-WL does not distinguish"),
			Holds: r.WL == c.WL,
			Found: yesNo(r.WL, "distinguished", "not distinguished"),
		},
		Verdict{
			Claim: yesNo(c.SP, "SP distinguishes", "SP does not distinguish"),
			Holds: r.SP == c.SP,
			Found: yesNo(r.SP, "distinguished", "not distinguished"),
		})
	var claim string
	holds := true
	for _, kr := range r.SPMPNN {
		want := c.MinK > 0 && kr.K >= c.MinK
		if kr.Distinguishes != want {
			holds = false
		}
	}
	last := 0
	if n := len(r.SPMPNN); n > 0 {
		last = r.SPMPNN[n-1].K
	}
	switch {
	case c.MinK == 0:
		claim = "no SP-MPNN(k) distinguishes"
	case c.MinK == 1:
		claim = "SP-MPNN(k) distinguishes for every k"
	default:
		claim = fmt.Sprintf("SP-MPNN(k) distinguishes exactly for k >= %d", c.MinK)
	}
	found := fmt.Sprintf("no k in 1..%d", last)
	if r.MinK > 0 {
		found = fmt.Sprintf("smallest k = %d (of 1..%d)", r.MinK, last)
	}
	out = append(out, Verdict{Claim: claim, Holds: holds, Found: found})
	return out
}
