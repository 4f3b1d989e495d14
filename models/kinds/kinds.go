// Package kinds is the one Go list of the model kinds spn builds. The
// schema's #Model union (#ModelKinds in schema.cue) lists the same names
// (schema/models_test.go checks both agree); spn vet and plan check model
// sections with a kind's Check, and train, predict and checkpoints build
// models through it. Adding a kind is one package under models/, one CUE
// definition and one line here.
package kinds

import (
	"github.com/spn-project/spn/models"
	"github.com/spn-project/spn/models/baseline"
	"github.com/spn-project/spn/models/drew"
	"github.com/spn-project/spn/models/espn"
	"github.com/spn-project/spn/models/gat"
	"github.com/spn-project/spn/models/gcn"
	"github.com/spn-project/spn/models/graphormer"
	"github.com/spn-project/spn/models/rspn"
	"github.com/spn-project/spn/models/spn"
)

// All returns the registry of every model kind.
func All() models.Registry {
	return models.NewRegistry(
		spn.Kind{}, spn.Kind{GIN: true},
		gcn.Kind{}, gat.Kind{}, graphormer.Kind{},
		baseline.Kind{},
		rspn.Kind{}, espn.Kind{},
		drew.Kind{},
	)
}
