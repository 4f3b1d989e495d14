package predict

import (
	"errors"
	"strings"
	"testing"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/models"
)

// CheckInput names the graph whose nodes or labels do not fit the model.
func TestCheckInput(t *testing.T) {
	cls := models.Config{Task: models.TaskClassification, Out: 2}
	reg := models.Config{Task: models.TaskRegression, Out: 1}
	for _, tc := range []struct {
		ds    *data.Dataset
		cfg   models.Config
		graph int
		want  string
	}{
		{&data.Dataset{Graphs: []data.Graph{{N: 1}, {N: 0}}}, cls, 1, "without nodes"},
		{&data.Dataset{NumClasses: 2, Graphs: []data.Graph{{N: 1, Y: 2}}}, cls, 0, "outside the model's classes 0..1"},
		{&data.Dataset{NumClasses: 2, Graphs: []data.Graph{{N: 1}}}, reg, 0, `"y" given`},
		{&data.Dataset{Graphs: []data.Graph{{N: 1, Target: []float64{1, 2}}}}, reg, 0, `"target" has 2 values`},
		{&data.Dataset{Graphs: []data.Graph{{N: 1, Target: []float64{1}}}}, reg, -1, ""},
	} {
		err := CheckInput(tc.ds, tc.cfg)
		var ge *GraphError
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%+v: %v", tc.ds.Graphs, err)
		case tc.want != "" && (!errors.As(err, &ge) || ge.Graph != tc.graph || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%+v: %v, want graph %d: %s", tc.ds.Graphs, err, tc.graph, tc.want)
		}
	}
}
