package main

import (
	"errors"
	"flag"

	"github.com/spn-project/spn/schema"
	"github.com/spn-project/spn/stages/outdir"
)

// prepareOut runs before any stage: it checks that the tables' directory
// (the --out flag value, or results/<spec name>) can be written
// (outdir.Prepare) and returns it; another spec's directory is a usage
// error unless takeOver.
func (a *app) prepareOut(en *engine, cmd, file string, spec *schema.Spec, flagOut string, takeOver bool) (tablesDir, error) {
	rec, err := outdir.Source(file, en.quickstart)
	if err != nil {
		return tablesDir{}, runtimeErr(cmd, err)
	}
	d, err := outdir.Prepare(outdir.Default(flagOut, spec.Name), rec, spec.Name, flagOut != "", takeOver)
	if ce := (*outdir.ConflictError)(nil); errors.As(err, &ce) {
		return tablesDir{}, usageErr(cmd, err)
	} else if err != nil {
		return tablesDir{}, runtimeErr(cmd, err)
	}
	return tablesDir{cmd: cmd, Dir: d}, nil
}

// tablesDir is the results directory of command cmd (for messages).
type tablesDir struct {
	cmd string
	outdir.Dir
}

// record is outdir.Dir.Record; its errors are runtime errors.
func (d tablesDir) record(files []string) error {
	if err := d.Record(files); err != nil {
		return runtimeErr(d.cmd, err)
	}
	return nil
}

// prune is outdir.Dir.Prune; its errors are runtime errors.
func (d tablesDir) prune(old, written []string) error {
	if err := d.Prune(old, written); err != nil {
		return runtimeErr(d.cmd, err)
	}
	return nil
}

// takeOverFlagVar registers --take-over on fs.
func takeOverFlagVar(fs *flag.FlagSet) *bool {
	return fs.Bool(outdir.TakeOverFlag, false, "write the tables into a results directory that holds another spec's, removing the files spn wrote there for it")
}
