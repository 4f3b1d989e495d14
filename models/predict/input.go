package predict

import (
	"errors"
	"fmt"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/models"
)

// CheckInput checks what Graphs does not read: every graph
// has a node, and the labels given ("y" or "target") fit the model.
func CheckInput(ds *data.Dataset, cfg models.Config) error {
	for i := range ds.Graphs {
		g := &ds.Graphs[i]
		if g.N == 0 {
			return &GraphError{Graph: i, Err: errors.New(`"nodes": 0: a graph without nodes has no prediction`)}
		}
		if ds.NumClasses > 0 { // the lines carry "y"
			if cfg.Task != models.TaskClassification {
				return &GraphError{Graph: i, Err: fmt.Errorf(`"y" given, but the model predicts %s targets ("target")`, cfg.Task)}
			}
			if g.Y >= cfg.Out {
				return &GraphError{Graph: i, Err: fmt.Errorf(`"y": %d is outside the model's classes 0..%d`, g.Y, cfg.Out-1)}
			}
		}
		if g.Target != nil {
			if cfg.Task == models.TaskClassification {
				return &GraphError{Graph: i, Err: fmt.Errorf(`"target" given, but the model predicts a class ("y" in 0..%d)`, cfg.Out-1)}
			}
			if len(g.Target) != cfg.Out {
				return &GraphError{Graph: i, Err: fmt.Errorf(`"target" has %d values, the model predicts %d`, len(g.Target), cfg.Out)}
			}
		}
	}
	return nil
}
