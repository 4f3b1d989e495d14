package main

import (
	"io"

	"github.com/spn-project/spn/pipelines"
	"github.com/spn-project/spn/stages"
	"github.com/spn-project/spn/stages/evaluate"
	"github.com/spn-project/spn/stages/figure"
	"github.com/spn-project/spn/stages/generate"
	"github.com/spn-project/spn/stages/precompute"
	"github.com/spn-project/spn/stages/selectstage"
	"github.com/spn-project/spn/stages/tabulate"
	"github.com/spn-project/spn/stages/train"
)

// newRegistry lists every stage kind of this build of spn. A spec whose
// plan needs a kind missing here fails at planning with a clear message.
func newRegistry() *stages.Registry {
	return stages.NewRegistry(
		generate.Kind{},
		precompute.Kind{},
		train.Kind{},
		selectstage.Kind{},
		evaluate.Kind{},
		tabulate.Kind{},
		figure.Kind{},
	)
}

// tablePrinter prints the tables of a finished tabulate stage directory.
func tablePrinter() func(w io.Writer, stageDir string) error {
	return tabulate.PrintTerminal
}

// quickstart returns the built-in spec `spn run` uses without a FILE.
func quickstart() (name string, src []byte, ok bool) {
	return pipelines.QuickstartName, pipelines.Quickstart, len(pipelines.Quickstart) > 0
}
