package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/hashicorp/go-hclog"
	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/data/catalog"
	"github.com/spn-project/spn/data/fetch"
	"github.com/spn-project/spn/data/lrgb"
	"github.com/spn-project/spn/data/prox"
	"github.com/spn-project/spn/data/proxcheck"
	"github.com/spn-project/spn/data/sp"
	"github.com/spn-project/spn/data/stats"
	"github.com/spn-project/spn/data/tu"
)

const dataUsage = `Usage: spn data SUBCOMMAND [flags] [args]

Subcommands:
  fetch NAME...                     download (or copy from --mirror) TU datasets with splits, EXP, CEXP, OGB sets, QM9;
                                    every file is checked against spn's built-in content figures;
                                    peptides-func: LRGB's two raw files, for scripts/data/lrgb_peptides.py
  stats NAME... [--json]            dataset statistics
  export NAME --format jsonl        write a dataset as JSON Lines (one graph per line)
  show NAME --graph I [--json]      one graph (I from 0 in file order) with its distance matrix
  import FILE.jsonl --name NAME     validate a JSONL dataset and store it in the data dir
  hops NAME [--kmax K] [--out FILE] compute the hop sets N_1..N_K and report their size

NAME is a TU dataset (DD, ENZYMES, NCI1, PROTEINS, PROTEINS_full), EXP or
CEXP (expressivity benchmarks, no splits), an OGB MoleculeNet set by its OGB
name (ogbg-molbace, ogbg-molbbbp, ogbg-molclintox, ogbg-molesol,
ogbg-molfreesolv, ogbg-molhiv, ogbg-molsider, ogbg-moltox21,
ogbg-moltoxcast), QM9 (GNN-FiLM's three files) or one of its parts QM9-train,
QM9-valid, QM9-test, "prox"
(generated with --prox-h, --graphs, --seed, --folds, --negatives, --balanced,
--colour-blind) or a name given to import.
Flags of every subcommand: --mirror (env SPN_DATA_MIRROR), --data-dir (env
SPN_DATA, default .spn/data). Run 'spn data SUBCOMMAND -h' for its flags.
`

// cmdData dispatches the data subcommands.
func cmdData(a *app, args []string) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(a.stderr, dataUsage)
		if len(args) == 0 {
			return reported(exitUsage)
		}
		return nil
	}
	subs := map[string]func(*app, []string) error{
		"fetch":  (*app).dataFetch,
		"stats":  (*app).dataStats,
		"export": (*app).dataExport,
		"show":   (*app).dataShow,
		"import": (*app).dataImport,
		"hops":   (*app).dataHops,
	}
	sub, ok := subs[args[0]]
	if !ok {
		return usageErrf("data", "unknown subcommand %q\n\n%s", args[0], strings.TrimSuffix(dataUsage, "\n"))
	}
	return sub(a, args[1:])
}

// dataOpts are the flags shared by the data subcommands.
type dataOpts struct {
	dataSource
	proxH, graphs   int
	folds           int
	seed            int64
	negatives       string
	balanced, blind bool
}

func (a *app) dataFlags(fs *flag.FlagSet, withProx bool) *dataOpts {
	o := &dataOpts{}
	o.dataSource.flags(fs, "`dir` for downloaded and imported data", "accept upstream files whose content differs from spn's built-in figures (a warning instead of an error)")
	if withProx {
		fs.IntVar(&o.proxH, "prox-h", 3, "`h` of the generated h-Proximity dataset (NAME prox)")
		fs.IntVar(&o.graphs, "graphs", prox.DefaultGraphs, "number of generated h-Proximity graphs")
		fs.Int64Var(&o.seed, "seed", 1, "seed of the generated h-Proximity dataset")
		fs.IntVar(&o.folds, "folds", prox.DefaultFolds, "folds of the generated h-Proximity dataset")
		fs.StringVar(&o.negatives, "negatives", prox.NegStrict, "how the h-Proximity twins are drawn: strict or code (the official generator's rule)")
		fs.BoolVar(&o.balanced, "balanced", false, "give every h-Proximity positive one extra edge that keeps the rule")
		fs.BoolVar(&o.blind, "colour-blind", false, "set every h-Proximity node label to 0")
	}
	return o
}

// dataSource is where data files come from: the flags --mirror,
// --data-dir and --accept-data-mismatch, which spn's data and stage
// commands share.
type dataSource struct {
	mirror, dataDir string
	acceptMismatch  bool
}

// flags registers the flags on fs, --data-dir's and
// --accept-data-mismatch's usage (the command's use of them) given.
func (o *dataSource) flags(fs *flag.FlagSet, dataDirUsage, mismatchUsage string) {
	fs.StringVar(&o.mirror, "mirror", "", "local mirror `dir` of upstream data files (env "+envMirror+")")
	fs.StringVar(&o.dataDir, "data-dir", "", dataDirUsage+" (env "+envDataDir+", default "+defaultDataDir+")")
	fs.BoolVar(&o.acceptMismatch, "accept-data-mismatch", false, mismatchUsage)
}

// resolve fills what the flags left unset from the environment and the
// default data dir.
func (o *dataSource) resolve(a *app) {
	if o.mirror == "" {
		o.mirror = a.getenv(envMirror)
	}
	if o.dataDir == "" {
		o.dataDir = a.getenv(envDataDir)
	}
	if o.dataDir == "" {
		o.dataDir = defaultDataDir
	}
}

func (o *dataOpts) fetcher(a *app) *fetch.Fetcher {
	return &fetch.Fetcher{DataDir: o.dataDir, Mirror: o.mirror, AcceptMismatch: o.acceptMismatch, Log: hclog.New(&hclog.LoggerOptions{
		Name: "spn", Level: hclog.Info, Output: a.stderr,
	})}
}

// load returns the dataset called name (catalog.Load).
func (o *dataOpts) load(ctx context.Context, a *app, name string) (*data.Dataset, error) {
	return catalog.Load(ctx, catalog.Source{Fetcher: o.fetcher(a), DataDir: o.dataDir, Prox: prox.Config{H: o.proxH, Graphs: o.graphs,
		Seed: o.seed, Folds: o.folds, Negatives: o.negatives, Balanced: o.balanced, ColourBlind: o.blind}}, name)
}

// dataErr is err of subcommand sub: a usage error for unknown names and
// impossible flags, a runtime error otherwise.
func dataErr(sub string, err error) error {
	var big *sp.SizeError
	if errors.Is(err, catalog.ErrUnknown) || errors.Is(err, catalog.ErrBadConfig) || errors.As(err, &big) {
		return usageErr("data "+sub, err)
	}
	return runtimeErr("data "+sub, err)
}

func (a *app) dataFetch(args []string) error {
	fs := a.newFlagSet("data fetch", "data fetch NAME... [--refresh] [flags]")
	o := a.dataFlags(fs, false)
	refresh := fs.Bool("refresh", false, "fetch the files again and record their new checksums in the lock file (after a damaged or changed file)")
	names, err := parseArgs(fs, args)
	if err != nil {
		return usageErr("data fetch", err)
	}
	if len(names) == 0 {
		return usageErr("data fetch", fmt.Errorf("no dataset named (known: %s)", strings.Join(tu.Names(), ", ")))
	}
	if err := catalog.CheckFetchable(names); err != nil {
		return usageErr("data fetch", err)
	}
	o.resolve(a)
	ctx, cancel := a.signalContext()
	defer cancel()
	for _, n := range names {
		f := o.fetcher(a)
		lrgbDir, err := catalog.Fetch(ctx, f, n, *refresh)
		for _, s := range f.Sources() {
			fmt.Fprintf(a.stdout, "%s\t%s\n", n, filepath.Join(o.dataDir, filepath.FromSlash(s.Path)))
		}
		if err != nil {
			return dataErr("fetch", err)
		}
		if lrgbDir != "" {
			a.printLRGBNext(o, lrgbDir)
		}
	}
	return nil
}

// printLRGBNext tells, on standard error, the two commands that turn the
// fetched Peptides-func files in dir into the dataset peptides-func.
func (a *app) printLRGBNext(o *dataOpts, dir string) {
	out := filepath.Join(dir, lrgb.Name+".jsonl.gz")
	dataDir := ""
	if o.dataDir != defaultDataDir {
		dataDir = " --data-dir " + o.dataDir
	}
	fmt.Fprintf(a.stderr, "%s: raw files fetched; convert them (Python 3 with RDKit and NumPy, from a checkout of spn) and import the result:\n  python3 %s %s %s\n  spn data import %s --name %s%s\n",
		lrgb.Name, lrgb.Script, dir, out, out, lrgb.Name, dataDir)
}

func (a *app) dataStats(args []string) error {
	fs := a.newFlagSet("data stats", "data stats NAME... [--json] [flags]")
	o := a.dataFlags(fs, true)
	asJSON := fs.Bool("json", false, "print JSON instead of a table")
	names, err := parseArgs(fs, args)
	if err != nil {
		return usageErr("data stats", err)
	}
	if len(names) == 0 {
		return usageErr("data stats", errors.New("no dataset named"))
	}
	o.resolve(a)
	ctx, cancel := a.signalContext()
	defer cancel()
	var sums []stats.Summary
	for _, n := range names {
		ds, err := o.load(ctx, a, n)
		if err != nil {
			return dataErr("stats", err)
		}
		s, err := stats.Compute(ctx, ds, 0)
		if err != nil {
			return dataErr("stats", err)
		}
		if n == "prox" && !o.blind {
			f, err := proxcheck.Violating(ds.Graphs, o.proxH)
			if err != nil {
				return dataErr("stats", err)
			}
			s.NegativesViolating = &f
		}
		sums = append(sums, s)
	}
	if *asJSON {
		enc := json.NewEncoder(a.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(sums); err != nil {
			return dataErr("stats", err)
		}
		return nil
	}
	if err := renderStats(a.stdout, sums); err != nil {
		return dataErr("stats", err)
	}
	for _, s := range sums {
		if s.NegativesViolating != nil {
			fmt.Fprintf(a.stdout, "%s: %.1f%% of the negatives violate the rule (the rest are label noise)\n", s.Name, 100**s.NegativesViolating)
		}
	}
	return nil
}

// renderStats prints the summaries as a terminal table.
func renderStats(w io.Writer, sums []stats.Summary) error {
	tab := tablewriter.NewTable(w,
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithHeaderAutoWrap(tw.WrapNone),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
	)
	tab.Header("dataset", "graphs", "mean nodes", "mean edges", "max nodes", "node labels", "attributes", "classes", "diameter mean", "diameter median", "connected")
	for _, s := range sums {
		row := []string{
			s.Name, strconv.Itoa(s.Graphs),
			fmt.Sprintf("%.2f", s.MeanNodes), fmt.Sprintf("%.2f", s.MeanEdges), strconv.Itoa(s.MaxNodes),
			strconv.Itoa(s.NodeLabels), strconv.Itoa(s.AttrDim), strconv.Itoa(s.Classes),
			fmt.Sprintf("%.2f", s.DiameterMean), fmt.Sprintf("%g", s.DiameterMedian),
			fmt.Sprintf("%.1f%%", 100*s.FracConnected),
		}
		if err := tab.Append(row); err != nil {
			return err
		}
	}
	return tab.Render()
}
