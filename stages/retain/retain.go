// Package retain names the cached stages that specs use, for spn cache
// gc: every stage of their plans in either mode and on either device.
package retain

import (
	"errors"
	"fmt"

	"github.com/spn-project/spn/schema"
	"github.com/spn-project/spn/stages"
	"github.com/spn-project/spn/stages/device"
	"github.com/spn-project/spn/stages/plan"
)

// LoadError is a spec that does not load: nothing may be removed then.
type LoadError struct{ error }

// Unwrap returns the loader's error.
func (e *LoadError) Unwrap() error { return e.error }

// Keys returns the stages ("KIND/KEY") of the plans of the spec files,
// each planned with reg in both modes (but the one a spec fixes) and for
// both devices: "auto" resolves to a GPU or the CPU, and spn run
// --device overrides the spec's device. dataDir is the data dir the specs
// read imported datasets from.
func Keys(files []string, dataDir string, reg *stages.Registry) (map[string]bool, error) {
	keep := map[string]bool{}
	for _, f := range files {
		for _, mode := range []string{schema.ModeFull, schema.ModeSmoke} {
			spec, err := schema.Load(f, schema.Options{Mode: mode, DataDir: dataDir})
			if err != nil {
				var errs schema.Errors
				if errors.As(err, &errs) && len(errs) == 1 && errs[0].Path == "mode" {
					continue // the spec fixes the other mode
				}
				return nil, &LoadError{fmt.Errorf("%s (mode %s) does not load, so nothing is removed:\n%w", f, mode, err)}
			}
			for _, d := range []string{schema.DeviceCPU, schema.DeviceCUDA} {
				if spec.Device, err = device.Resolve(nil, d, "", nil, nil); err != nil {
					return nil, err
				}
				p, err := plan.Build(spec, reg)
				if err != nil {
					return nil, fmt.Errorf("planning %s: %w", f, err)
				}
				for _, n := range p.Nodes {
					keep[n.Kind+"/"+n.Key] = true
				}
			}
		}
	}
	return keep, nil
}
