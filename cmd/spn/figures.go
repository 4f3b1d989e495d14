package main

import (
	"fmt"
	"strings"

	"github.com/spn-project/spn/schema"
	"github.com/spn-project/spn/stages/cache"
	"github.com/spn-project/spn/stages/outdir"
	"github.com/spn-project/spn/stages/plan"
)

// writeFigures copies every figure's files from its figure stage into out
// (atomically, file by file).
func (a *app) writeFigures(spec *schema.Spec, p *plan.Plan, c *cache.Cache, out string) ([]string, error) {
	var written []string
	for _, f := range spec.Figures {
		n := p.Figure[f.Name]
		if n == nil {
			return written, runtimeErrf("", "figure %s is not in the plan", f.Name)
		}
		files, err := outdir.CopyArtifacts(c.StageDir(n.Kind, n.Key), out)
		if err != nil {
			return written, runtimeErrf("", "figure %s: %w", f.Name, err)
		}
		fmt.Fprintf(a.stderr, "spn: figure %s: wrote %s\n", f.Name, strings.Join(files, ", "))
		written = append(written, files...)
	}
	return written, nil
}
