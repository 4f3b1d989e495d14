package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"

	"github.com/spn-project/spn/data/expressivity"
	"github.com/spn-project/spn/models/separation"
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
	in, err := expressivity.Load(ctx, expressivity.Sources{Fetcher: opt.data.fetcher(a), Stdin: os.Stdin}, opt.input, opt.paper, opt.ks)
	if ie := (*expressivity.InputError)(nil); errors.As(err, &ie) {
		return usageErr("expressivity", err)
	} else if err != nil {
		return runtimeErr("expressivity", err)
	}
	rep, err := expressivity.Analyze(ctx, in, expressivity.AnalyzeOptions{Unreachable: opt.unreachable, Seeds: opt.seeds, Separate: separation.SPN})
	if err != nil {
		return runtimeErr("expressivity", err)
	}
	if opt.asJSON {
		enc := json.NewEncoder(a.stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(rep)
	} else {
		err = renderExpr(a.stdout, rep, !in.Dataset)
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
	if opt.ks, err = expressivity.ParseKs(*kList); err != nil {
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
func renderExpr(w io.Writer, rep *expressivity.Report, perPair bool) error {
	if perPair {
		t := newTable(w)
		head := []string{"pair", "nodes", "edges", "connected", "diameter", "Wiener", "1-WL", "SP", "SP-MPNN(k)"}
		if rep.SPNSeeds > 0 {
			head = append(head, "SPN(k)")
		}
		t.Header(head)
		for _, p := range rep.Pairs {
			ks, yes := p.SPMPNNKs()
			two := func(a, b any) string { return fmt.Sprintf("%v / %v", a, b) }
			row := []string{p.Name, two(p.A.Nodes, p.B.Nodes), two(p.A.Edges, p.B.Edges),
				two(yn(p.A.Connected), yn(p.B.Connected)), two(p.A.Diameter, p.B.Diameter), two(p.A.Wiener, p.B.Wiener),
				yn(p.WL), yn(p.SP), kSummary(ks, yes)}
			if rep.SPNSeeds > 0 {
				sks, spnYes := p.SPNKs()
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
		desc := separation.Description
		if rep.Unreachable {
			desc += ", N_∞ aggregated with α_∞"
		}
		notes = append(notes, fmt.Sprintf("SPN(k): some of %d random SPNs (%s) separates the outputs by more than %g (relative).", rep.SPNSeeds, desc, separation.Tolerance))
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
