package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"

	"github.com/spn-project/spn/data/exp"
	"github.com/spn-project/spn/data/expressivity"
)

const expressivityUsage = "expressivity (--paper | EXP | CEXP | PAIRS.jsonl) [--k LIST] [--unreachable] [--spn-seeds N] [--json] [flags]"

const expressivityHelp = `Decide which graph pairs 1-WL, the SP kernel and SP-MPNN(k) can tell
apart (exact colour refinement, no hashing), and whether concrete SPNs with
random weights separate their outputs.

  --paper        the pairs of the paper's Section 4 (G1/G2, I1/I2, H1/H2)
                 and whether each of the paper's claims holds (exit 1 if not)
  EXP, CEXP      the expressivity datasets (consecutive graphs are a pair),
                 read through --mirror / --data-dir; prints counts
  PAIRS.jsonl    one pair per line: {"name": …, "a": GRAPH, "b": GRAPH},
                 GRAPH as in spn data export ({"nodes": n, "edges":
                 [[u, v], …], "x": [labels…]}, "x" optional); - for stdin
`

// exprPair is one pair's answer: the refinement's and the concrete SPNs'.
type exprPair struct {
	*expressivity.Result
	// SPN holds the concrete SPNs per k (absent with --spn-seeds 0).
	SPN []spnSeparation `json:"spn,omitempty"`
	// Claims are the paper's claims about the pair (--paper only).
	Claims []expressivity.Verdict `json:"claims,omitempty"`
}

// exprCount is how many pairs one method separates.
type exprCount struct {
	Method    string `json:"method"`
	K         int    `json:"k,omitempty"`
	Separated int    `json:"separated"`
	Pairs     int    `json:"pairs"`
}

// exprReport is the --json output.
type exprReport struct {
	Source      string      `json:"source"`
	Unreachable bool        `json:"unreachable"`
	SPNSeeds    int         `json:"spn_seeds"`
	Counts      []exprCount `json:"counts"`
	// Bound counts pairs a concrete SPN separated although the SP-MPNN(k)
	// refinement, its upper bound, does not: 0 unless something is wrong.
	BoundViolations int        `json:"bound_violations"`
	Pairs           []exprPair `json:"pairs"`
	// ClaimsHold is set with --paper: every claim holds.
	ClaimsHold *bool `json:"claims_hold,omitempty"`
}

// parseKs parses "1,2,5" or "1-4" or a mix ("1-3,6").
func parseKs(s string) ([]int, error) {
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

// exprOptions are the flags and the input of spn expressivity.
type exprOptions struct {
	data *dataOpts
	// paper: the paper's Section 4 pairs and claims; else input names EXP,
	// CEXP or a PAIRS.jsonl file (- for stdin).
	paper bool
	input string
	// ks are the hop limits asked (nil: the default per pair or dataset).
	ks          []int
	unreachable bool
	seeds       int
	asJSON      bool
}

// exprPairs are the pairs to check and where they come from.
type exprPairs struct {
	source string // "paper", the dataset's name, the file or "stdin"
	// dataset is set for EXP and CEXP: only the counts are printed.
	dataset bool
	pairs   []expressivity.Pair
	// paper is parallel to pairs with --paper, else nil.
	paper []expressivity.PaperPair
	// ks are the hop limits to check (nil: 1..n−1 per pair).
	ks []int
}

// cmdExpressivity implements spn expressivity: parse the options, load the
// pairs, check them (refinement, concrete SPNs and, with --paper, the
// paper's claims) and print the report. It fails (exit 1) when a claim of
// the paper does not hold.
func cmdExpressivity(a *app, args []string) error {
	opt, err := a.exprOptions(args)
	if opt == nil {
		return err // nil after -h
	}
	ctx, cancel := a.signalContext()
	defer cancel()
	in, err := loadPairs(ctx, a, opt)
	if err != nil {
		return err
	}
	rep, err := checkPairs(ctx, in, opt)
	if err != nil {
		return err
	}
	if opt.asJSON {
		enc := json.NewEncoder(a.stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(rep)
	} else {
		err = rep.render(a.stdout, !in.dataset)
	}
	if err != nil {
		return runtimeErr("expressivity", err)
	}
	if rep.ClaimsHold != nil && !*rep.ClaimsHold {
		return reported(exitFail) // the report names the failing claims
	}
	return nil
}

// exprOptions parses spn expressivity's arguments. Both results are nil
// after -h.
func (a *app) exprOptions(args []string) (*exprOptions, error) {
	fs := a.newFlagSet("expressivity", expressivityUsage)
	base := fs.Usage
	fs.Usage = func() {
		fmt.Fprint(a.stderr, expressivityHelp+"\n")
		base()
	}
	opt := &exprOptions{data: a.dataFlags(fs, false)}
	fs.BoolVar(&opt.paper, "paper", false, "check the paper's Section 4 pairs and claims")
	kList := fs.String("k", "", "hop limits k of SP-MPNN(k), e.g. 1-4 or 1,2,5 (default 1..n-1 per pair; for a dataset 1..its largest diameter)")
	fs.BoolVar(&opt.unreachable, "unreachable", false, "SP-MPNN(k) also aggregates over N_∞ (nodes in other components)")
	fs.IntVar(&opt.seeds, "spn-seeds", 3, "random SPNs per pair and k for the concrete check (0: skip it)")
	fs.BoolVar(&opt.asJSON, "json", false, "print JSON instead of tables")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return nil, usageErr("expressivity", err)
	}
	if opt.ks, err = parseKs(*kList); err != nil {
		return nil, usageErr("expressivity", err)
	}
	if opt.seeds < 0 || opt.seeds > 100 {
		return nil, usageErrf("expressivity", "--spn-seeds %d out of range 0..100", opt.seeds)
	}
	switch {
	case opt.paper && len(pos) > 0:
		return nil, usageErrf("expressivity", "--paper takes no other input")
	case !opt.paper && len(pos) != 1:
		return nil, usageErrf("expressivity", "want --paper, EXP, CEXP or one PAIRS.jsonl file (see 'spn expressivity -h')")
	case !opt.paper:
		opt.input = pos[0]
	}
	opt.data.resolve(a)
	return opt, nil
}

// loadPairs returns the pairs opt asks for: the paper's, a dataset's
// consecutive graphs (by default with k up to its largest diameter) or a
// PAIRS.jsonl file's.
func loadPairs(ctx context.Context, a *app, opt *exprOptions) (*exprPairs, error) {
	in := &exprPairs{source: opt.input, ks: opt.ks}
	switch {
	case opt.paper:
		in.source = "paper"
		in.paper = expressivity.PaperPairs()
		for _, pp := range in.paper {
			in.pairs = append(in.pairs, pp.Pair)
		}
	case slices.Contains(exp.Names(), opt.input):
		in.dataset = true
		ds, err := exp.Fetch(ctx, opt.data.fetcher(a), opt.input)
		if err != nil {
			return nil, runtimeErr("expressivity", err)
		}
		if in.pairs, err = expressivity.Consecutive(ds); err != nil {
			return nil, runtimeErr("expressivity", err)
		}
		if in.ks == nil {
			// k beyond the largest diameter adds nothing.
			d := 1
			for i := range ds.Graphs {
				info, err := expressivity.Info(&ds.Graphs[i])
				if err != nil {
					return nil, runtimeErrf("expressivity", "%s graph %d: %w", opt.input, i, err)
				}
				d = max(d, info.Diameter)
			}
			for k := 1; k <= d; k++ {
				in.ks = append(in.ks, k)
			}
		}
	default:
		var r io.Reader = os.Stdin
		if opt.input != "-" {
			f, err := os.Open(opt.input)
			if err != nil {
				return nil, usageErr("expressivity", err)
			}
			defer f.Close()
			r = f
		} else {
			in.source = "stdin"
		}
		var err error
		if in.pairs, err = expressivity.ReadPairs(r, in.source); err != nil {
			return nil, usageErr("expressivity", err)
		}
	}
	return in, nil
}

// checkPairs decides every pair by colour refinement, runs the concrete
// SPNs (unless --spn-seeds 0) and checks the paper's claims (--paper).
func checkPairs(ctx context.Context, in *exprPairs, opt *exprOptions) (*exprReport, error) {
	rep := &exprReport{Source: in.source, Unreachable: opt.unreachable, SPNSeeds: opt.seeds}
	for i := range in.pairs {
		if err := ctx.Err(); err != nil {
			return nil, runtimeErr("expressivity", err)
		}
		r, err := expressivity.Check(ctx, &in.pairs[i], expressivity.Options{Ks: in.ks, Unreachable: opt.unreachable})
		if err != nil {
			return nil, runtimeErrf("expressivity", "%s: %w", in.source, err)
		}
		ep := exprPair{Result: r}
		if in.paper != nil {
			// The paper's SP-MPNNs aggregate over N_1..N_k only: its claims
			// are checked without N_∞ even when --unreachable is given.
			rc := r
			if opt.unreachable {
				if rc, err = expressivity.Check(ctx, &in.pairs[i], expressivity.Options{Ks: in.ks}); err != nil {
					return nil, runtimeErrf("expressivity", "%s: %w", in.source, err)
				}
			}
			ep.Claims = in.paper[i].Verify(rc)
		}
		rep.Pairs = append(rep.Pairs, ep)
	}
	if opt.seeds > 0 {
		results := make([]*expressivity.Result, len(rep.Pairs))
		for i, p := range rep.Pairs {
			results[i] = p.Result
		}
		seps, err := separateSPN(ctx, in.pairs, results, opt.seeds, opt.unreachable)
		if err != nil {
			return nil, runtimeErrf("expressivity", "%s: %w", in.source, err)
		}
		for i := range rep.Pairs {
			rep.Pairs[i].SPN = seps[i]
		}
	}
	rep.count()
	if in.paper != nil {
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

// count fills Counts and BoundViolations from Pairs.
func (rep *exprReport) count() {
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
	rep.Counts = []exprCount{{Method: "1-WL", Separated: wl, Pairs: n}, {Method: "SP kernel", Separated: sp, Pairs: n}}
	for _, k := range ks {
		rep.Counts = append(rep.Counts, exprCount{Method: "SP-MPNN", K: k, Separated: perK[k], Pairs: ofK[k]})
	}
	for _, k := range spnKs {
		rep.Counts = append(rep.Counts, exprCount{Method: "SPN", K: k, Separated: spnK[k], Pairs: ofSPN[k]})
	}
}

func newTable(w io.Writer) *tablewriter.Table {
	return tablewriter.NewTable(w,
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithHeaderAutoWrap(tw.WrapNone),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
	)
}

func yn(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// kSummary says for which k a per-k answer is yes: "k ≥ 2", "k = 2, 5",
// or "no (k = 1..7)".
func kSummary(ks, yes []int) string {
	if len(ks) == 0 {
		return "-"
	}
	span := fmt.Sprintf("%d..%d", ks[0], ks[len(ks)-1])
	if len(ks) == 1 {
		span = strconv.Itoa(ks[0])
	}
	switch {
	case len(yes) == 0:
		return "no (k = " + span + ")"
	case slices.Equal(yes, ks[len(ks)-len(yes):]):
		if len(yes) == len(ks) {
			return "yes (k = " + span + ")"
		}
		return fmt.Sprintf("k ≥ %d", yes[0])
	}
	parts := make([]string, len(yes))
	for i, k := range yes {
		parts[i] = strconv.Itoa(k)
	}
	return "k = " + strings.Join(parts, ", ")
}

// render prints the per-pair table (perPair), the counts, the claims
// (--paper) and any bound violation.
func (rep *exprReport) render(w io.Writer, perPair bool) error {
	if perPair {
		t := newTable(w)
		head := []string{"pair", "nodes", "edges", "connected", "diameter", "Wiener", "1-WL", "SP", "SP-MPNN(k)"}
		if rep.SPNSeeds > 0 {
			head = append(head, "SPN(k)")
		}
		t.Header(head)
		for _, p := range rep.Pairs {
			var ks, yes, spnYes []int
			for _, kr := range p.SPMPNN {
				ks = append(ks, kr.K)
				if kr.Distinguishes {
					yes = append(yes, kr.K)
				}
			}
			two := func(a, b any) string { return fmt.Sprintf("%v / %v", a, b) }
			row := []string{p.Name, two(p.A.Nodes, p.B.Nodes), two(p.A.Edges, p.B.Edges),
				two(yn(p.A.Connected), yn(p.B.Connected)), two(p.A.Diameter, p.B.Diameter), two(p.A.Wiener, p.B.Wiener),
				yn(p.WL), yn(p.SP), kSummary(ks, yes)}
			if rep.SPNSeeds > 0 {
				var sks []int
				for _, s := range p.SPN {
					sks = append(sks, s.K)
					if s.Separates() {
						spnYes = append(spnYes, s.K)
					}
				}
				row = append(row, kSummary(sks, spnYes))
			}
			if err := t.Append(row); err != nil {
				return err
			}
		}
		if err := t.Render(); err != nil {
			return err
		}
	}
	fmt.Fprintf(w, "%s: %d pairs separated by\n", rep.Source, len(rep.Pairs))
	t := newTable(w)
	t.Header("method", "k", "separated", "of")
	for _, c := range rep.Counts {
		k := ""
		if c.K > 0 {
			k = strconv.Itoa(c.K)
		}
		if err := t.Append([]string{c.Method, k, strconv.Itoa(c.Separated), strconv.Itoa(c.Pairs)}); err != nil {
			return err
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	notes := []string{"SP-MPNN(k): colour refinement over N_1..N_k, the upper bound of any SP-MPNN with hop limit k (k = 1 is 1-WL)."}
	if rep.Unreachable {
		notes[0] = "SP-MPNN(k): colour refinement over N_1..N_k and N_∞, the upper bound of any SP-MPNN with hop limit k that also aggregates over N_∞."
	}
	if rep.SPNSeeds > 0 {
		desc := spnDescription
		if rep.Unreachable {
			desc += ", N_∞ aggregated with α_∞"
		}
		notes = append(notes, fmt.Sprintf("SPN(k): some of %d random SPNs (%s) separates the outputs by more than %g (relative).", rep.SPNSeeds, desc, spnTolerance))
	}
	for _, n := range notes {
		fmt.Fprintln(w, n)
	}
	if rep.BoundViolations > 0 {
		fmt.Fprintf(w, "WARNING: on %d pairs a concrete SPN separated what SP-MPNN(k) refinement does not (float error above the tolerance, or a defect)\n", rep.BoundViolations)
	}
	if rep.ClaimsHold != nil {
		fmt.Fprintln(w, "\nThe paper's claims (Section 4; SP-MPNN(k) over N_1..N_k, without N_∞):")
		for _, p := range rep.Pairs {
			for _, v := range p.Claims {
				mark := "holds"
				if !v.Holds {
					mark = "FAILS"
				}
				fmt.Fprintf(w, "  %-6s %-5s %s: %s\n", p.Name, mark, v.Claim, v.Found)
			}
		}
		if *rep.ClaimsHold {
			fmt.Fprintln(w, "All claims hold.")
		} else {
			fmt.Fprintln(w, "Some claims do NOT hold.")
		}
	}
	return nil
}
