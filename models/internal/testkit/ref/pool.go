package ref

import (
	"fmt"

	"github.com/spn-project/spn/models"
	"github.com/spn-project/spn/models/kernels"
)

// Pool reduces node rows to graph rows over the segments of a batch:
// graph g owns rows ptr[g]..ptr[g+1]-1.
type Pool struct {
	Kind string
	Dim  int

	ptr    []int32
	n      int
	argmax []int32
	y, dx  []float32
}

// NewPool returns a pooling of the given kind ("sum", "mean" or "max").
func NewPool(kind string, dim int) (*Pool, error) {
	switch kind {
	case models.PoolSum, models.PoolMean, models.PoolMax:
		return &Pool{Kind: kind, Dim: dim}, nil
	}
	return nil, fmt.Errorf("unknown pooling %q (want sum, mean or max)", kind)
}

// Forward pools x (n×Dim) into len(ptr)-1 graph rows. An empty graph pools
// to zeros.
func (p *Pool) Forward(be kernels.Backend, x []float32, ptr []int32, n int) []float32 {
	d, g := p.Dim, len(ptr)-1
	p.ptr, p.n = ptr, n
	p.y = Grow(p.y, g*d)
	if p.Kind == models.PoolMax {
		p.argmax = make([]int32, g*d)
	}
	be.ForEachChunk(g, func(_, lo, hi int) {
		for gi := lo; gi < hi; gi++ {
			yr := p.y[gi*d : (gi+1)*d]
			clear(yr)
			a, b := int(ptr[gi]), int(ptr[gi+1])
			if a == b {
				continue
			}
			switch p.Kind {
			case models.PoolMax:
				copy(yr, x[a*d:(a+1)*d])
				am := p.argmax[gi*d : (gi+1)*d]
				for j := range am {
					am[j] = int32(a)
				}
				for r := a + 1; r < b; r++ {
					for j, v := range x[r*d : (r+1)*d] {
						if v > yr[j] {
							yr[j], am[j] = v, int32(r)
						}
					}
				}
			default:
				for r := a; r < b; r++ {
					for j, v := range x[r*d : (r+1)*d] {
						yr[j] += v
					}
				}
				if p.Kind == models.PoolMean {
					inv := 1 / float32(b-a)
					for j := range yr {
						yr[j] *= inv
					}
				}
			}
		}
	})
	return p.y
}

// Backward returns dx for the last Forward.
func (p *Pool) Backward(be kernels.Backend, dy []float32) []float32 {
	d, g := p.Dim, len(p.ptr)-1
	p.dx = Grow(p.dx, p.n*d)
	be.ForEachChunk(g, func(_, lo, hi int) {
		for gi := lo; gi < hi; gi++ {
			a, b := int(p.ptr[gi]), int(p.ptr[gi+1])
			dr := dy[gi*d : (gi+1)*d]
			switch p.Kind {
			case models.PoolMax:
				clear(p.dx[a*d : b*d])
				for j, r := range p.argmax[gi*d : (gi+1)*d] {
					if b > a {
						p.dx[int(r)*d+j] = dr[j]
					}
				}
			default:
				scale := float32(1)
				if p.Kind == models.PoolMean && b > a {
					scale = 1 / float32(b-a)
				}
				for r := a; r < b; r++ {
					xr := p.dx[r*d : (r+1)*d]
					for j := range xr {
						xr[j] = dr[j] * scale
					}
				}
			}
		}
	})
	return p.dx
}
