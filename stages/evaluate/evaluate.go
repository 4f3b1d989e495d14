// Package evaluate implements the "evaluate" stage kind: it aggregates the
// train stages of one experiment into the scores a table reports.
package evaluate

import (
	"context"

	"github.com/spn-project/spn/stages"
	"github.com/spn-project/spn/stages/protocol"
	"github.com/spn-project/spn/stages/selection"
)

// Protocol kinds (schema.Protocol.Kind), as stages/protocol names them.
const (
	ProtocolHoldout = protocol.KindHoldout
	ProtocolErrica  = protocol.KindErrica
	ProtocolFixed   = protocol.KindFixed
)

// Kind is the evaluate stage kind. Artifact: stages.FileResult holding a
// stages.EvalResult.
//
// The inputs are the train stages of the protocol's layout
// (protocol.Layout.Evaluated, in that order), and the aggregation is the
// protocol's (protocol.Protocol.Evaluate): see stages/protocol for holdout,
// errica and fixed.
type Kind struct{}

// Name returns "evaluate".
func (Kind) Name() string { return stages.KindEvaluate }

// Version returns the kind's version.
func (Kind) Version() string { return "1" }

// Run reads the train results, aggregates them and writes result.json.
func (Kind) Run(ctx context.Context, job *stages.Job) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	var p stages.EvaluateParams
	if err := job.Decode(&p); err != nil {
		return err
	}
	runs, err := selection.ReadTrainRuns(job.InputsOf(stages.KindTrain))
	if err != nil {
		return err
	}
	res, err := Evaluate(p, runs)
	if err != nil {
		return err
	}
	return selection.WriteResult(job.Dir, res)
}

// Evaluate aggregates runs with the protocol of p.Protocol.Kind.
func Evaluate(p stages.EvaluateParams, runs []selection.TrainRun) (*stages.EvalResult, error) {
	pr, err := protocol.Get(p.Protocol.Kind)
	if err != nil {
		return nil, err
	}
	return pr.Evaluate(p.Protocol, p.Points, runs)
}
