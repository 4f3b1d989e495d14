package models

import (
	"testing"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/schema/modelspec"
)

func TestBinaryTask(t *testing.T) {
	ds := &data.Dataset{Name: "mol", NumTargets: 3, Task: data.TaskBinary, EdgeFeatVocab: []int{5, 6, 2}, NodeCatVocab: []int{3}, NumEdgeTypes: 2}
	cfg, err := ConfigFor(modelspec.Model{Kind: "espn"}, ds)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Task != TaskBinary || cfg.Out != 3 || len(cfg.EdgeFeatVocab) != 3 || len(cfg.NodeCatVocab) != 1 || cfg.NumEdgeTypes != 2 {
		t.Fatalf("ConfigFor = %+v", cfg)
	}
}
