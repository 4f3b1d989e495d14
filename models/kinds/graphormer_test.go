package kinds

import (
	"testing"

	"github.com/spn-project/spn/models/graphormer"
)

func TestGraphormerLearns(t *testing.T) { learnCase(t, graphormer.Name, 2, 4, 5, 15, 1e-3, 0.75) }
