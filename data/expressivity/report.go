package expressivity

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/spn-project/spn/data"
)

// PairReport is one pair's answer: the refinement's and the concrete SPNs'.
type PairReport struct {
	*Result
	// SPN holds the concrete SPNs per k (absent with --spn-seeds 0).
	SPN []Separation `json:"spn,omitempty"`
	// Claims are the paper's claims about the pair (--paper only).
	Claims []Verdict `json:"claims,omitempty"`
}

// SPMPNNKs returns the hop limits the SP-MPNN(k) refinement checked for
// the pair, ascending, and those at which it distinguishes the pair.
func (p *PairReport) SPMPNNKs() (ks, yes []int) {
	for _, kr := range p.SPMPNN {
		ks = append(ks, kr.K)
		if kr.Distinguishes {
			yes = append(yes, kr.K)
		}
	}
	return ks, yes
}

// SPNKs returns the hop limits of the concrete SPNs run on the pair and
// those at which some random SPN separates it.
func (p *PairReport) SPNKs() (ks, yes []int) {
	for _, s := range p.SPN {
		ks = append(ks, s.K)
		if s.Separates() {
			yes = append(yes, s.K)
		}
	}
	return ks, yes
}

// Count is how many pairs one method separates.
type Count struct {
	Method    string `json:"method"`
	K         int    `json:"k,omitempty"`
	Separated int    `json:"separated"`
	Pairs     int    `json:"pairs"`
}

// Report is the answer of Analyze for a set of pairs (the JSON of spn
// expressivity).
type Report struct {
	Source      string  `json:"source"`
	Unreachable bool    `json:"unreachable"`
	SPNSeeds    int     `json:"spn_seeds"`
	Counts      []Count `json:"counts"`
	// Bound counts pairs a concrete SPN separated although the SP-MPNN(k)
	// refinement, its upper bound, does not: 0 unless something is wrong.
	BoundViolations int          `json:"bound_violations"`
	Pairs           []PairReport `json:"pairs"`
	// ClaimsHold is set with --paper: every claim holds.
	ClaimsHold *bool `json:"claims_hold,omitempty"`
}

// Separation is the concrete check of one pair for one k: random models
// run on its two graphs.
type Separation struct {
	K      int `json:"k"`
	Layers int `json:"layers"`
	Seeds  int `json:"seeds"`
	// Separating counts the seeds whose two outputs differ by more than
	// the tolerance.
	Separating int `json:"separating"`
	// MaxRelDiff is the largest relative output difference over the seeds.
	MaxRelDiff float64 `json:"max_rel_diff"`
}

// Separates reports whether some random SPN told the pair apart.
func (s Separation) Separates() bool { return s.Separating > 0 }

// ParseKs parses the --k list of hop limits: "1,2,5" or "1-4" or a mix ("1-3,6").
func ParseKs(s string) ([]int, error) {
	if s == "" {
		return nil, nil
	}
	var ks []int
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 1 {
			return nil, fmt.Errorf("--k %q: %q is not a hop count >= 1", s, part)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a || b > 1<<16 {
				return nil, fmt.Errorf("--k %q: %q is not a range lo-hi with 1 <= lo <= hi", s, part)
			}
		}
		for k := a; k <= b; k++ {
			ks = append(ks, k)
		}
	}
	slices.Sort(ks)
	return slices.Compact(ks), nil
}

// Input is a set of pairs to analyse and where they come from.
type Input struct {
	// Source is "paper", the dataset's name, the file or "stdin".
	Source string
	Pairs  []Pair
	// Paper is parallel to Pairs for the paper's pairs (their claims are
	// checked), else nil.
	Paper []PaperPair
	// Ks are the hop limits to check (nil: 1..n−1 per pair).
	Ks []int
	// Dataset is set when the pairs are a dataset's consecutive graphs
	// (EXP, CEXP): too many to list one by one, only their counts are
	// reported.
	Dataset bool
}

// Separator runs the concrete models on pairs (results[i] is pairs[i]'s
// refinement), seeds random models per k, and returns each pair's
// separations, parallel to pairs (separation.SPN).
type Separator func(ctx context.Context, pairs []Pair, results []*Result, seeds int, unreachable bool) ([][]Separation, error)

// AnalyzeOptions says how Analyze decides the pairs.
type AnalyzeOptions struct {
	// Unreachable: SP-MPNN(k) also aggregates over N_∞.
	Unreachable bool
	// Seeds random models per pair and k run through Separate (0: none).
	Seeds    int
	Separate Separator
}

// Analyze decides every pair of in by colour refinement, runs the
// concrete models (with opt.Seeds > 0) and checks the paper's claims
// (when in.Paper is set), and counts what each method separates.
func Analyze(ctx context.Context, in *Input, opt AnalyzeOptions) (*Report, error) {
	rep := &Report{Source: in.Source, Unreachable: opt.Unreachable, SPNSeeds: opt.Seeds}
	for i := range in.Pairs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		r, err := Check(ctx, &in.Pairs[i], Options{Ks: in.Ks, Unreachable: opt.Unreachable})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", in.Source, err)
		}
		ep := PairReport{Result: r}
		if in.Paper != nil {
			// The paper's SP-MPNNs aggregate over N_1..N_k only: its claims
			// are checked without N_∞ even when unreachable is asked.
			rc := r
			if opt.Unreachable {
				if rc, err = Check(ctx, &in.Pairs[i], Options{Ks: in.Ks}); err != nil {
					return nil, fmt.Errorf("%s: %w", in.Source, err)
				}
			}
			ep.Claims = in.Paper[i].Verify(rc)
		}
		rep.Pairs = append(rep.Pairs, ep)
	}
	if opt.Seeds > 0 {
		results := make([]*Result, len(rep.Pairs))
		for i, p := range rep.Pairs {
			results[i] = p.Result
		}
		seps, err := opt.Separate(ctx, in.Pairs, results, opt.Seeds, opt.Unreachable)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", in.Source, err)
		}
		for i := range rep.Pairs {
			rep.Pairs[i].SPN = seps[i]
		}
	}
	rep.count()
	if in.Paper != nil {
		hold := true
		for _, p := range rep.Pairs {
			for _, v := range p.Claims {
				hold = hold && v.Holds
			}
		}
		rep.ClaimsHold = &hold
	}
	return rep, nil
}

// DatasetPairs returns the consecutive pairs of ds (Consecutive) and the
// hop limits 1..its largest diameter (k beyond it adds nothing).
func DatasetPairs(ds *data.Dataset) ([]Pair, []int, error) {
	pairs, err := Consecutive(ds)
	if err != nil {
		return nil, nil, err
	}
	d := 1
	for i := range ds.Graphs {
		info, err := Info(&ds.Graphs[i])
		if err != nil {
			return nil, nil, fmt.Errorf("%s graph %d: %w", ds.Name, i, err)
		}
		d = max(d, info.Diameter)
	}
	ks := make([]int, d)
	for k := range ks {
		ks[k] = k + 1
	}
	return pairs, ks, nil
}

// count fills Counts and BoundViolations from Pairs.
func (rep *Report) count() {
	n := len(rep.Pairs)
	wl, sp := 0, 0
	perK, spnK := map[int]int{}, map[int]int{}
	// Pairs asked per k: by default a pair's ks stop at its n−1.
	ofK, ofSPN := map[int]int{}, map[int]int{}
	var ks, spnKs []int
	for _, p := range rep.Pairs {
		if p.WL {
			wl++
		}
		if p.SP {
			sp++
		}
		bound := map[int]bool{}
		for _, kr := range p.SPMPNN {
			if _, ok := perK[kr.K]; !ok {
				ks = append(ks, kr.K)
				perK[kr.K] = 0
			}
			bound[kr.K] = kr.Distinguishes
			ofK[kr.K]++
			if kr.Distinguishes {
				perK[kr.K]++
			}
		}
		violated := false
		for _, s := range p.SPN {
			if _, ok := spnK[s.K]; !ok {
				spnKs = append(spnKs, s.K)
				spnK[s.K] = 0
			}
			ofSPN[s.K]++
			if s.Separates() {
				spnK[s.K]++
				violated = violated || !bound[s.K]
			}
		}
		if violated {
			rep.BoundViolations++
		}
	}
	slices.Sort(ks)
	slices.Sort(spnKs)
	rep.Counts = []Count{{Method: "1-WL", Separated: wl, Pairs: n}, {Method: "SP kernel", Separated: sp, Pairs: n}}
	for _, k := range ks {
		rep.Counts = append(rep.Counts, Count{Method: "SP-MPNN", K: k, Separated: perK[k], Pairs: ofK[k]})
	}
	for _, k := range spnKs {
		rep.Counts = append(rep.Counts, Count{Method: "SPN", K: k, Separated: spnK[k], Pairs: ofSPN[k]})
	}
}
