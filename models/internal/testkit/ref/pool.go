package ref

import (
	"fmt"

	"github.com/spn-project/spn/models"
)

// Pool reduces node rows to graph rows over the segments of a batch:
// graph g owns rows ptr[g]..ptr[g+1]-1.
type Pool struct {
	Kind string
	Dim  int

	ptr    []int32
	n      int
	argmax []int
}

// NewPool returns a pooling of the given kind ("sum", "mean" or "max").
func NewPool(kind string, dim int) (*Pool, error) {
	switch kind {
	case models.PoolSum, models.PoolMean, models.PoolMax:
		return &Pool{Kind: kind, Dim: dim}, nil
	}
	return nil, fmt.Errorf("unknown pooling %q (want sum, mean or max)", kind)
}

// Forward pools x (n×Dim) into len(ptr)-1 graph rows: the sum, the mean or
// the maximum (the first row of the maximum) of each graph's rows. An
// empty graph pools to zeros.
func (p *Pool) Forward(x []float64, ptr []int32, n int) []float64 {
	d, g := p.Dim, len(ptr)-1
	p.ptr, p.n = ptr, n
	y := make([]float64, g*d)
	p.argmax = make([]int, g*d)
	for gi := 0; gi < g; gi++ {
		a, b := int(ptr[gi]), int(ptr[gi+1])
		if a == b {
			continue
		}
		for j := 0; j < d; j++ {
			k := gi*d + j
			switch p.Kind {
			case models.PoolMax:
				p.argmax[k] = a
				for r := a + 1; r < b; r++ {
					if x[r*d+j] > x[p.argmax[k]*d+j] {
						p.argmax[k] = r
					}
				}
				y[k] = x[p.argmax[k]*d+j]
			default:
				for r := a; r < b; r++ {
					y[k] += x[r*d+j]
				}
				if p.Kind == models.PoolMean {
					y[k] /= float64(b - a)
				}
			}
		}
	}
	return y
}

// Backward returns dx for the last Forward.
func (p *Pool) Backward(dy []float64) []float64 {
	d, g := p.Dim, len(p.ptr)-1
	dx := make([]float64, p.n*d)
	for gi := 0; gi < g; gi++ {
		a, b := int(p.ptr[gi]), int(p.ptr[gi+1])
		if a == b {
			continue
		}
		for j := 0; j < d; j++ {
			k := gi*d + j
			switch p.Kind {
			case models.PoolMax:
				dx[p.argmax[k]*d+j] = dy[k]
			case models.PoolMean:
				for r := a; r < b; r++ {
					dx[r*d+j] = dy[k] / float64(b-a)
				}
			default:
				for r := a; r < b; r++ {
					dx[r*d+j] = dy[k]
				}
			}
		}
	}
	return dx
}
