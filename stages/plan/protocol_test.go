package plan

import (
	"testing"

	"github.com/spn-project/spn/schema"
	"github.com/spn-project/spn/stages"
)

// TestFixedProtocol: the fixed protocol trains Points×Runs models on the
// dataset's own split (split 0), seeded run by run, and its train stages
// are the same work (same keys) as holdout with one split; only the
// evaluation differs.
func TestFixedProtocol(t *testing.T) {
	s := testSpec()
	e := s.Experiments[1] // prox_spn: 2 points
	e.Protocol = schema.Protocol{Kind: "fixed", Splits: 1, Runs: 3, SelectOn: "val_loss", Metric: "accuracy"}
	s.Experiments = []schema.Experiment{e}
	s.Tables[0].Rows = s.Tables[0].Rows[:1]
	s.Tables[0].Rows[0].Cells = map[string]schema.Cell{"prox": {Experiment: "prox_spn"}}
	p := mustBuild(t, s, testRegistry(nil))
	ev := p.Evaluate["prox_spn"]
	if len(ev.Deps) != 6 || countKind(p, stages.KindTrain) != 6 || countKind(p, stages.KindSelect) != 0 {
		t.Fatalf("evaluate has %d inputs, plan %d train and %d select stages; want 6, 6, 0",
			len(ev.Deps), countKind(p, stages.KindTrain), countKind(p, stages.KindSelect))
	}
	for i, d := range ev.Deps {
		tp := d.Params.(stages.TrainParams)
		if tp.Role != stages.RoleHoldout || tp.Split != 0 || tp.Run != i%3 || tp.Seed != int64(1+i%3) || tp.Point.Model.K != e.Points[i/3].Model.K {
			t.Errorf("train %d: %+v", i, tp)
		}
	}
	hold := e
	hold.Protocol.Kind = "holdout"
	s2 := testSpec()
	s2.Experiments = []schema.Experiment{hold}
	s2.Tables = nil
	p2 := mustBuild(t, s2, testRegistry(nil))
	for i, d := range p2.Evaluate["prox_spn"].Deps {
		if d.Key != ev.Deps[i].Key {
			t.Errorf("train %d: fixed key %s, holdout key %s", i, ev.Deps[i].ShortKey(), d.ShortKey())
		}
	}
	if p2.Evaluate["prox_spn"].Key == ev.Key {
		t.Error("fixed and holdout evaluate stages share a key")
	}
	e.Protocol.Splits = 2
	s.Experiments = []schema.Experiment{e}
	if _, err := Build(s, testRegistry(nil)); err == nil {
		t.Error("fixed protocol with 2 splits: no error")
	}
}
