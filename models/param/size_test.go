package param

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestSizeArithmetic(t *testing.T) {
	const inf = math.MaxInt64
	for _, c := range []struct {
		name      string
		got, want int64
	}{
		{"Prod()", Prod(), 1},
		{"Prod(3, 4)", Prod(3, 4), 12},
		{"Prod(3, 0)", Prod(3, 0), 0},
		{"Prod(3, -4)", Prod(3, -4), 0},
		{"Prod(1<<31, 1<<31)", Prod(1<<31, 1<<31), 1 << 62},
		{"Prod(1<<32, 1<<32)", Prod(1<<32, 1<<32), inf},
		{"Prod(1<<40, 1<<40, 0)", Prod(1<<40, 1<<40, 0), 0},
		{"Sum(1, 2, -3)", Sum(1, 2, -3), 3},
		{"Sum(inf, 1)", Sum(inf, 1), inf},
		{"Sum(1<<62, 1<<62)", Sum(1<<62, 1<<62), inf},
		{"Times(3, 5)", Times(3, 5), 15},
		{"Times(-3, 5)", Times(-3, 5), 0},
		{"Times(1<<32, 1<<32)", Times(1<<32, 1<<32), inf},
	} {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", c.name, c.got, c.want)
		}
	}
}

// TestLayerSizes checks each size against the values its constructor
// allocates.
func TestLayerSizes(t *testing.T) {
	rng := NewInit(1)
	count := func(ps []*Param) int64 {
		var n int64
		for _, p := range ps {
			n += int64(len(p.W))
		}
		return n
	}
	for _, d := range []struct{ a, b int }{{1, 1}, {3, 5}, {0, 4}, {7, 0}} {
		if got, want := LinearSize(d.a, d.b), count(NewLinear("l", d.a, d.b, rng).Params()); got != want {
			t.Errorf("LinearSize(%d, %d) = %d, NewLinear holds %d", d.a, d.b, got, want)
		}
		if got, want := LinearSize(d.a, d.b), count(NewGlorotLinear("l", d.a, d.b, rng).Params()); got != want {
			t.Errorf("LinearSize(%d, %d) = %d, NewGlorotLinear holds %d", d.a, d.b, got, want)
		}
		if got, want := HopAggregationSize(d.a), count(NewHopAggregation("h", d.a, d.b, 0, true).Params()); got != want {
			t.Errorf("HopAggregationSize(%d) = %d, NewHopAggregation holds %d", d.a, got, want)
		}
		if got, want := BatchNormReLUSize(d.b), count(NewBatchNormReLU("bn", d.b).Params()); got != want {
			t.Errorf("BatchNormReLUSize(%d) = %d, NewBatchNormReLU holds %d", d.b, got, want)
		}
		if got, want := LayerNormSize(d.b), count(NewLayerNorm("ln", d.b).Params()); got != want {
			t.Errorf("LayerNormSize(%d) = %d, NewLayerNorm holds %d", d.b, got, want)
		}
	}
	for _, e := range []struct{ labels, attrs, dim int }{{0, 0, 4}, {5, 0, 4}, {0, 3, 4}, {5, 3, 8}} {
		if got, want := EncoderSize(e.labels, e.attrs, e.dim), count(NewEncoder("e", e.labels, e.attrs, e.dim, rand.New(rand.NewPCG(1, 2))).Params()); got != want {
			t.Errorf("EncoderSize(%d, %d, %d) = %d, NewEncoder holds %d", e.labels, e.attrs, e.dim, got, want)
		}
	}
}
