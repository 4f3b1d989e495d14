package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/spn-project/spn/schema"
	"github.com/spn-project/spn/stages/cache"
	"github.com/spn-project/spn/stages/outdir"
	"github.com/spn-project/spn/stages/plan"
	"github.com/spn-project/spn/stages/tabulate"
)

// keptGoing ends a spn run whose stages that did not depend on a failure
// all ran (the local executor with --keep-going, Slurm jobs always):
// it prints failed, the run's report, then writes the tables with what
// completed (writePartialTables) and report.html, and returns failed's
// exit status.
func (a *app) keptGoing(en *engine, spec *schema.Spec, p *plan.Plan, c *cache.Cache, dir tablesDir, failed error) error {
	fmt.Fprintln(a.stderr, failed)
	a.writePartialTables(en, spec, p, c, dir, tabulate.Failed)
	// The report shows the failed stages with their errors.
	if err := a.writeReport(en, spec, p, c, dir); err != nil {
		fmt.Fprintln(a.stderr, err)
	}
	return reported(exitCode(failed))
}

// writePartialTables writes every table it can while some experiments
// have no results (after a run with --keep-going in which some stages
// failed, or for spn table --partial: why is tabulate.Failed or NotYet): a
// table whose stage completed is copied as usual; any other is rendered
// from the experiments that did finish, the others' cells marked
// (tabulate.Partial), and written to out without entering the cache. It
// reports what it wrote, as the command that prepared dir.
func (a *app) writePartialTables(en *engine, spec *schema.Spec, p *plan.Plan, c *cache.Cache, dir tablesDir, why string) {
	cmd := dir.cmd
	// A partial write removes nothing: the tables it could not write keep
	// their last complete version.
	known := dir.Previous()
	if err := dir.record(known); err != nil {
		fmt.Fprintln(a.stderr, err)
		return
	}
	defer func() {
		if err := dir.record(known); err != nil {
			fmt.Fprintln(a.stderr, err)
		}
	}()
	out := dir.Path
	for _, t := range spec.Tables {
		n := p.Tabulate[t.Name]
		if n == nil {
			continue
		}
		if ok, _ := c.Has(n.Kind, n.Key); ok {
			dir := c.StageDir(n.Kind, n.Key)
			files, err := outdir.CopyArtifacts(dir, out)
			if err != nil {
				fmt.Fprintf(a.stderr, "spn %s: table %s: %v\n", cmd, t.Name, err)
				continue
			}
			if en.printTable != nil {
				en.printTable(a.stdout, dir)
			}
			fmt.Fprintf(a.stderr, "spn %s: table %s: wrote %s\n", cmd, t.Name, strings.Join(files, ", "))
			known = append(known, outdir.BaseNames(files)...)
			continue
		}
		results, missing := p.TableResults(t.Name, c)
		files, err := tabulate.Render(tabulate.Partial(t, missing, why), results)
		if err != nil {
			fmt.Fprintf(a.stderr, "spn %s: table %s: not written: %v\n", cmd, t.Name, err)
			continue
		}
		written, err := a.writeRendered(en, files, out)
		if err != nil {
			fmt.Fprintf(a.stderr, "spn %s: table %s: %v\n", cmd, t.Name, err)
			continue
		}
		fmt.Fprintf(a.stderr, "spn %s: table %s: incomplete, %d experiments missing (%s): wrote %s\n",
			cmd, t.Name, len(missing), strings.Join(missing, ", "), strings.Join(written, ", "))
		known = append(known, outdir.BaseNames(written)...)
	}
}

// writeRendered writes a table's rendered files into out through a
// temporary folder (copyArtifacts, as for a cached table), prints the
// table when the engine prints tables, and returns the files written.
func (a *app) writeRendered(en *engine, files map[string][]byte, out string) ([]string, error) {
	tmp, err := os.MkdirTemp("", "spn-partial-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	if err := tabulate.WriteFiles(tmp, files); err != nil {
		return nil, fmt.Errorf("not written: %w", err)
	}
	written, err := outdir.CopyArtifacts(tmp, out)
	if err != nil {
		return nil, err
	}
	if en.printTable != nil {
		en.printTable(a.stdout, tmp)
	}
	return written, nil
}
