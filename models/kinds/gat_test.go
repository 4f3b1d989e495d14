package kinds

import (
	"testing"

	"github.com/spn-project/spn/models/gat"
)

func TestGATLearns(t *testing.T) { learnCase(t, gat.Name, 2, 4, 0, 80, 3e-3, 0.75) }
