package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/data/catalog"
	"github.com/spn-project/spn/data/fetch"
	"github.com/spn-project/spn/data/graphfile"
	"github.com/spn-project/spn/data/jsonl"
	"github.com/spn-project/spn/data/known"
	"github.com/spn-project/spn/data/lrgb"
	"github.com/spn-project/spn/data/prox"
	"github.com/spn-project/spn/data/proxcheck"
	"github.com/spn-project/spn/data/sp"
	"github.com/spn-project/spn/data/stats"
	"github.com/spn-project/spn/data/tu"
)

// importedDir is the sub-directory of the data dir holding imported datasets.
const importedDir = graphfile.ImportedDir

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

// validName is what import accepts as a dataset name.
var validName = graphfile.ValidName

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
	known := catalog.Fetchable()
	for _, n := range names {
		if !slices.Contains(known, n) {
			return usageErr("data fetch", fmt.Errorf("cannot fetch %q (known: %s)", n, strings.Join(known, ", ")))
		}
	}
	o.resolve(a)
	ctx, cancel := a.signalContext()
	defer cancel()
	for _, n := range names {
		f := o.fetcher(a)
		if *refresh {
			for _, u := range catalog.URLs(n) {
				if err := f.Forget(ctx, u); err != nil {
					return dataErr("fetch", err)
				}
			}
		}
		var err error
		lrgbDir := ""
		if n == lrgb.Name {
			// Raw files for the conversion script, checked against
			// upstream's SHA-256s; spn reads the converted set once
			// imported.
			lrgbDir, err = lrgb.Fetch(ctx, f)
		} else {
			// Fetch parses every file and checks its built-in content
			// figures, so a broken or changed file is reported now, not
			// at training.
			_, err = catalog.FetchKnown(ctx, f, n)
		}
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
			noisy, negs, err := proxcheck.Noise(ds.Graphs, o.proxH)
			if err != nil {
				return dataErr("stats", err)
			}
			f := 1 - float64(noisy)/float64(max(negs, 1))
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

func (a *app) dataExport(args []string) error {
	fs := a.newFlagSet("data export", "data export NAME --format jsonl [--out FILE] [flags]")
	o := a.dataFlags(fs, true)
	format := fs.String("format", "jsonl", "output `format`: jsonl")
	out := fs.String("out", "", "output `file` (default standard output)")
	names, err := parseArgs(fs, args)
	if err != nil {
		return usageErr("data export", err)
	}
	if len(names) != 1 {
		return usageErr("data export", fmt.Errorf("want one dataset NAME, got %d", len(names)))
	}
	if *format != "jsonl" {
		return usageErr("data export", fmt.Errorf("unknown --format %q (supported: jsonl)", *format))
	}
	o.resolve(a)
	ctx, cancel := a.signalContext()
	defer cancel()
	ds, err := o.load(ctx, a, names[0])
	if err != nil {
		return dataErr("export", err)
	}
	if *out == "" {
		if err := jsonl.Write(a.stdout, ds); err != nil {
			return dataErr("export", err)
		}
		return nil
	}
	// Through a temporary file: a failed export leaves no half-written
	// file, and an existing one is replaced whole or not at all.
	if err := data.WriteFileAtomic(*out, func(w io.Writer) error { return jsonl.Write(w, ds) }); err != nil {
		return dataErr("export", err)
	}
	return nil
}

// shownGraph is the JSON form of spn data show.
type shownGraph struct {
	Dataset   string      `json:"dataset"`
	Graph     int         `json:"graph"`
	Nodes     int         `json:"nodes"`
	Edges     [][2]int    `json:"edges"`
	X         []int32     `json:"x,omitempty"`
	Attrs     [][]float32 `json:"attrs,omitempty"`
	Y         *int        `json:"y,omitempty"`
	Target    []float64   `json:"target,omitempty"`
	Distances [][]int32   `json:"distances"`
}

func (a *app) dataShow(args []string) error {
	fs := a.newFlagSet("data show", "data show NAME --graph I [--json] [flags]")
	o := a.dataFlags(fs, true)
	idx := fs.Int("graph", -1, "graph `index` (from 0, in file order)")
	asJSON := fs.Bool("json", false, "print JSON")
	names, err := parseArgs(fs, args)
	if err != nil {
		return usageErr("data show", err)
	}
	if len(names) != 1 {
		return usageErr("data show", fmt.Errorf("want one dataset NAME, got %d", len(names)))
	}
	if *idx < 0 {
		return usageErr("data show", errors.New("--graph I is required (I >= 0)"))
	}
	o.resolve(a)
	ctx, cancel := a.signalContext()
	defer cancel()
	ds, err := o.load(ctx, a, names[0])
	if err != nil {
		return dataErr("show", err)
	}
	if *idx >= len(ds.Graphs) {
		return usageErr("data show", fmt.Errorf("--graph %d: %s has graphs 0..%d", *idx, ds.Name, len(ds.Graphs)-1))
	}
	g := &ds.Graphs[*idx]
	if err := sp.CheckDistances(g); err != nil {
		return dataErr("show", fmt.Errorf("%s graph %d: %w", ds.Name, *idx, err))
	}
	dist := sp.Distances(g)
	sg := shownGraph{Dataset: ds.Name, Graph: *idx, Nodes: g.N, Edges: g.Edges(), X: g.Labels, Target: g.Target}
	if sg.Edges == nil {
		sg.Edges = [][2]int{}
	}
	if ds.NumTargets == 0 {
		y := g.Y
		sg.Y = &y
	}
	if g.Attrs != nil && ds.AttrDim > 0 {
		for u := 0; u < g.N; u++ {
			sg.Attrs = append(sg.Attrs, g.Attrs[u*ds.AttrDim:(u+1)*ds.AttrDim])
		}
	}
	sg.Distances = make([][]int32, g.N)
	for u := range sg.Distances {
		sg.Distances[u] = dist[u*g.N : (u+1)*g.N]
	}
	if *asJSON {
		enc := json.NewEncoder(a.stdout)
		if err := enc.Encode(sg); err != nil {
			return dataErr("show", err)
		}
		return nil
	}
	if err := printGraph(a.stdout, &sg); err != nil {
		return dataErr("show", err)
	}
	return nil
}

// printGraph writes the text view of spn data show.
func printGraph(w io.Writer, sg *shownGraph) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s graph %d: %d nodes, %d edges", sg.Dataset, sg.Graph, sg.Nodes, len(sg.Edges))
	if sg.Y != nil {
		fmt.Fprintf(&b, ", class %d", *sg.Y)
	}
	if sg.Target != nil {
		fmt.Fprintf(&b, ", targets %v", sg.Target)
	}
	b.WriteString("\n")
	if sg.X != nil {
		fmt.Fprintf(&b, "labels: %v\n", sg.X)
	}
	for u, row := range sg.Attrs {
		fmt.Fprintf(&b, "attrs %d: %v\n", u, row)
	}
	b.WriteString("edges:")
	for _, e := range sg.Edges {
		fmt.Fprintf(&b, " %d-%d", e[0], e[1])
	}
	b.WriteString("\ndistances (-1: unreachable):\n")
	for _, row := range sg.Distances {
		for j, d := range row {
			if j > 0 {
				b.WriteString(" ")
			}
			fmt.Fprintf(&b, "%2d", d)
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func (a *app) dataImport(args []string) error {
	fs := a.newFlagSet("data import", "data import FILE.jsonl[.gz] --name NAME [flags]")
	o := a.dataFlags(fs, false)
	name := fs.String("name", "", "dataset `name` to store it under (a spec names it as dataset {kind: \"file\", name: NAME})")
	files, err := parseArgs(fs, args)
	if err != nil {
		return usageErr("data import", err)
	}
	if len(files) != 1 {
		return usageErr("data import", fmt.Errorf("want one FILE.jsonl or FILE.jsonl.gz, got %d", len(files)))
	}
	if !validName.MatchString(*name) {
		return usageErr("data import", fmt.Errorf("--name %q: want letters, digits, '_', '.', '-', starting with a letter or digit", *name))
	}
	kf, knownSet := known.Imported(*name)
	if b := builtinName(*name); b != "" && !knownSet {
		return usageErr("data import", fmt.Errorf("--name %q: %q is a built-in dataset name, which spn reads or generates itself; choose another name", *name, b))
	}
	o.resolve(a)
	f, err := os.Open(files[0])
	if err != nil {
		return usageErr("data import", err)
	}
	defer f.Close()
	ds, err := jsonl.Read(f, files[0])
	if err != nil {
		// The user's file does not validate: exit 2 like a bad spec.
		return usageErr("data import", err)
	}
	if knownSet {
		// A name spn knows stands for known content: the file must have
		// its built-in figures.
		if err := known.Compare(files[0], kf.Rel, kf.Figures, known.Of(ds)); err != nil {
			if !o.acceptMismatch {
				return usageErr("data import", fmt.Errorf("%w\n%s is the name of a dataset spn knows; its file must be that dataset (or pass --accept-data-mismatch)", err, *name))
			}
			fmt.Fprintf(a.stderr, "spn data import: warning (--accept-data-mismatch): %v\n", err)
		}
	}
	ds.Name = *name
	dir := filepath.Join(o.dataDir, importedDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return dataErr("import", err)
	}
	dest := graphfile.ImportedPath(o.dataDir, *name)
	if err := data.WriteDatasetFile(dest, ds); err != nil {
		return dataErr("import", err)
	}
	fmt.Fprintf(a.stdout, "imported %d graphs from %s as %s (%s)\n", len(ds.Graphs), files[0], *name, dest)
	return nil
}

// builtinName returns the built-in dataset name that name is (in any
// case), or "": the names spn data reads from upstream files or
// generates, which an imported dataset must not shadow.
func builtinName(name string) string {
	for _, b := range append(catalog.Fetchable(), "prox") {
		if strings.EqualFold(name, b) {
			return b
		}
	}
	return ""
}

func (a *app) dataHops(args []string) error {
	fs := a.newFlagSet("data hops", "data hops NAME [--kmax K] [--unreachable] [--out FILE] [flags]")
	o := a.dataFlags(fs, true)
	kmax := fs.Int("kmax", sp.DefaultKMax, "largest hop distance `K`")
	unreachable := fs.Bool("unreachable", false, "also compute N_inf (nodes of other components)")
	threads := fs.Int("threads", 0, "worker threads (0: all cores)")
	out := fs.String("out", "", "write the hop sets to `file` (the precompute stage's hops.bin format)")
	names, err := parseArgs(fs, args)
	if err != nil {
		return usageErr("data hops", err)
	}
	if len(names) != 1 {
		return usageErr("data hops", fmt.Errorf("want one dataset NAME, got %d", len(names)))
	}
	if *kmax < 1 {
		return usageErr("data hops", fmt.Errorf("--kmax %d: want >= 1", *kmax))
	}
	o.resolve(a)
	ctx, cancel := a.signalContext()
	defer cancel()
	ds, err := o.load(ctx, a, names[0])
	if err != nil {
		return dataErr("hops", err)
	}
	start := time.Now()
	h, err := sp.Compute(ctx, ds.Graphs, *kmax, *unreachable, *threads)
	if err != nil {
		return dataErr("hops", err)
	}
	elapsed := time.Since(start)
	entries := make([]int, *kmax)
	unr, split := 0, 0 // N_∞'s entries, the graphs with more than one component
	for _, gh := range h.Graphs {
		for d, c := range gh.Hop {
			entries[d] += len(c.Idx)
		}
		if gh.Unreachable != nil && len(gh.Unreachable.Idx) > 0 {
			unr += len(gh.Unreachable.Idx)
			split++
		}
	}
	sets := fmt.Sprintf("N_1..N_%d", *kmax)
	if *unreachable {
		sets += " and N_∞"
	}
	fmt.Fprintf(a.stdout, "%s: %d graphs, hop sets %s in %.3fs\n", ds.Name, len(ds.Graphs), sets, elapsed.Seconds())
	total := 0
	for d, e := range entries {
		fmt.Fprintf(a.stdout, "  N_%d: %d (u,v) pairs\n", d+1, e)
		total += e
	}
	if *unreachable {
		fmt.Fprintf(a.stdout, "  N_∞: %d (u,v) pairs, in %d graphs of more than one component\n", unr, split)
		total += unr
	}
	fmt.Fprintf(a.stdout, "  total: %d pairs\n", total)
	if *out != "" {
		if err := data.WriteHopsFile(*out, h); err != nil {
			return dataErr("hops", err)
		}
		st, err := os.Stat(*out)
		if err != nil {
			return dataErr("hops", err)
		}
		fmt.Fprintf(a.stdout, "wrote %s (%d bytes)\n", *out, st.Size())
	}
	return nil
}
