package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/data/catalog"
	"github.com/spn-project/spn/data/jsonl"
	"github.com/spn-project/spn/data/known"
	"github.com/spn-project/spn/data/sp"
	"github.com/spn-project/spn/data/stats"
	"github.com/spn-project/spn/internal/atomicfile"
)

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
	if err := atomicfile.Write(*out, func(w io.Writer) error { return jsonl.Write(w, ds) }); err != nil {
		return dataErr("export", err)
	}
	return nil
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
	sg, err := stats.Show(ds, *idx)
	if err != nil {
		return dataErr("show", err)
	}
	if *asJSON {
		enc := json.NewEncoder(a.stdout)
		if err := enc.Encode(sg); err != nil {
			return dataErr("show", err)
		}
		return nil
	}
	if err := sg.WriteText(a.stdout); err != nil {
		return dataErr("show", err)
	}
	return nil
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
	if err := catalog.CheckImportName(*name); err != nil {
		return usageErrf("data import", "--%w", err)
	}
	o.resolve(a)
	ds, dest, err := catalog.Import(files[0], *name, catalog.ImportOptions{DataDir: o.dataDir, AcceptMismatch: o.acceptMismatch,
		Warn: func(err error) { fmt.Fprintf(a.stderr, "spn data import: warning (--accept-data-mismatch): %v\n", err) }})
	if ie, me := (*catalog.ImportError)(nil), (*known.MismatchError)(nil); errors.As(err, &ie) {
		// The user's file does not validate: exit 2 like a bad spec.
		return usageErr("data import", err)
	} else if errors.As(err, &me) {
		return usageErr("data import", fmt.Errorf("%w\n%s is the name of a dataset spn knows; its file must be that dataset (or pass --accept-data-mismatch)", err, *name))
	} else if err != nil {
		return dataErr("import", err)
	}
	fmt.Fprintf(a.stdout, "imported %d graphs from %s as %s (%s)\n", len(ds.Graphs), files[0], *name, dest)
	return nil
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
	sizes := h.Sizes()
	sets := fmt.Sprintf("N_1..N_%d", *kmax)
	if *unreachable {
		sets += " and N_∞"
	}
	fmt.Fprintf(a.stdout, "%s: %d graphs, hop sets %s in %.3fs\n", ds.Name, len(ds.Graphs), sets, elapsed.Seconds())
	for d, e := range sizes.Entries {
		fmt.Fprintf(a.stdout, "  N_%d: %d (u,v) pairs\n", d+1, e)
	}
	if *unreachable {
		fmt.Fprintf(a.stdout, "  N_∞: %d (u,v) pairs, in %d graphs of more than one component\n", sizes.Unreachable, sizes.Split)
	}
	fmt.Fprintf(a.stdout, "  total: %d pairs\n", sizes.Total())
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
