package refkind

import (
	"strings"
	"testing"

	"github.com/spn-project/spn/models"
	"github.com/spn-project/spn/models/internal/testkit/ref"
	"github.com/spn-project/spn/models/kernels"
)

func TestConstructorErrors(t *testing.T) {
	reg := HandWritten()
	tests := []struct {
		name string
		edit func(*models.Config)
		want string
	}{
		{"gin k", func(c *models.Config) { c.Model.Kind, c.Model.K = "gin", 2 }, "gin aggregates over direct neighbours only"},
		{"k zero", func(c *models.Config) { c.Model.K = 0 }, "model.k = 0"},
		{"layers", func(c *models.Config) { c.Model.Layers = 0 }, "model.layers = 0"},
		{"pool", func(c *models.Config) { c.Model.Pool = "median" }, `unknown pooling "median"`},
		{"dropout", func(c *models.Config) { c.Model.Dropout = 1 }, "model.dropout = 1"},
		{"kind", func(c *models.Config) { c.Model.Kind = "gat" }, `model.kind "gat" is unknown to this model registry (have [gin spn])`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := ref.TestConfig("spn", 2, "sum", 0)
			tc.edit(&c)
			_, err := reg.New(c, 0, kernels.CPU{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want containing %q", err, tc.want)
			}
		})
	}
}
