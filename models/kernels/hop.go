package kernels

import (
	"sync"

	"github.com/spn-project/spn/data/csr"
)

// This file is the CPU arithmetic of the SPN hop aggregation, read top to
// bottom: HopAggregateSums (y = Scale·x + Σ_i Coef_i·A_i·x per row chunk),
// the row sums it is made of (sumRowsCSR, sumRows, sumRowsGo; the AVX2
// kernels give the same bits), and Dots, the chunked dot products of the
// hop weights' gradients (dotsExact).

// HopAggregate implements Backend.
func (c CPU) HopAggregate(y, x []float32, m HopMix, n, d int) {
	c.HopAggregateSums(y, nil, x, m, n, d)
}

// HopAggregateSums implements Backend: per row chunk, the hop sums of
// every row first, then y = scale·x and y += coef_i·sums_i over the whole
// chunk, hop by hop (the same operations per value as row by row, in
// fewer and longer kernel calls).
func (c CPU) HopAggregateSums(y []float32, sums [][]float32, x []float32, mix HopMix, n, d int) {
	hop, coef, scale := mix.Hops, mix.Coef, mix.Scale
	c.ForEachChunk(n, func(_, lo, hi int) {
		m := (hi - lo) * d
		var tmp []float32
		if sums == nil {
			bp := hopPool.Get().(*[]float32)
			defer hopPool.Put(bp)
			if cap(*bp) < len(hop)*m {
				*bp = make([]float32, len(hop)*m)
			}
			tmp = (*bp)[:len(hop)*m]
		}
		var sbuf [16][]float32 // k ≤ 16 without allocating
		ss := sbuf[:0]
		for i, a := range hop {
			if sums != nil {
				ss = append(ss, sums[i][lo*d:hi*d])
			} else {
				ss = append(ss, tmp[i*m:(i+1)*m])
			}
			sumRowsCSR(ss[i], x, a, lo, hi, d)
		}
		yc := y[lo*d : hi*d]
		scaleInto(yc, x[lo*d:hi*d], scale)
		for i, si := range ss {
			impl.Saxpy(m, coef[i], si, 1, yc, 1)
		}
	})
}

// hopPool holds HopAggregate's per-chunk hop sums when the caller keeps
// none.
var hopPool = sync.Pool{New: func() any { return new([]float32) }}

// scaleInto sets y = a·x (each product rounded on its own).
func scaleInto(y, x []float32, a float32) {
	i := scaleAVX2(y, x, a)
	x = x[:len(y)]
	for ; i < len(y); i++ {
		y[i] = a * x[i]
	}
}

// Dots implements Backend.
func (c CPU) Dots(g []float32, xs [][]float32, n, d int) []float64 {
	k := len(xs)
	nc := NumChunks(n)
	part := make([]float64, nc*k)
	c.ForEachChunk(n, func(ch, lo, hi int) {
		var buf [16][]float32
		ys := buf[:0]
		for _, x := range xs {
			ys = append(ys, x[lo*d:hi*d])
		}
		var dbuf [16]float32
		dots := dbuf[:]
		if k > len(dots) {
			dots = make([]float32, k)
		}
		dots = dots[:k]
		dotsExact(dots, g[lo*d:hi*d], ys)
		for i, v := range dots {
			part[ch*k+i] = float64(v)
		}
	})
	out := make([]float64, k)
	for ch := 0; ch < nc; ch++ {
		for i := range out {
			out[i] += part[ch*k+i]
		}
	}
	return out
}

// sumRows sets s = Σ_{v ∈ rows} x_v (rows of width d), adding four rows at
// a time in a fixed order (sumRowsGo; the AVX2 kernels give the same bits).
func sumRows(s, x []float32, rows []int32, d int) {
	if !sumRowsAVX2(s, x, rows, d) {
		sumRowsGo(s, x, rows, d, d)
	}
}

// sumRowsCSR sets s[(u−lo)·d : (u−lo+1)·d] = Σ_{v ∈ a's row u} x[v·d : v·d+d]
// for the rows u = lo..hi-1 of a, each as sumRows computes it.
func sumRowsCSR(s, x []float32, a csr.CSR, lo, hi, d int) {
	if sumRowsCSRAVX2(s, x, a, lo, hi, d) {
		return
	}
	for u := lo; u < hi; u++ {
		sumRows(s[(u-lo)*d:(u-lo+1)*d], x, a.Idx[a.Ptr[u]:a.Ptr[u+1]], d)
	}
}

// sumRowsGo sets s[0:w] = Σ_{v ∈ rows} x[v·ld : v·ld+w], adding four rows
// at a time as s += (x0+x1) + (x2+x3), then the rest one at a time.
func sumRowsGo(s, x []float32, rows []int32, ld, w int) {
	s = s[:w]
	clear(s)
	r := 0
	for ; r+4 <= len(rows); r += 4 {
		x0 := x[int(rows[r])*ld : int(rows[r])*ld+w]
		x1 := x[int(rows[r+1])*ld : int(rows[r+1])*ld+w]
		x2 := x[int(rows[r+2])*ld : int(rows[r+2])*ld+w]
		x3 := x[int(rows[r+3])*ld : int(rows[r+3])*ld+w]
		x1, x2, x3 = x1[:len(x0)], x2[:len(x0)], x3[:len(x0)]
		for j, v := range x0 {
			s[j] += (v + x1[j]) + (x2[j] + x3[j])
		}
	}
	for ; r < len(rows); r++ {
		xr := x[int(rows[r])*ld : int(rows[r])*ld+w]
		for j, v := range xr {
			s[j] += v
		}
	}
}

// dotsExact sets out[i] = ⟨x, ys[i]⟩ with the bits of gonum's Sdot(x,
// ys[i]) (DotUnitary, whose order depends on where ys[i] starts relative
// to a 16-byte boundary). Dot products whose ys start at the same
// alignment go four at a time through dot1x4, which reads x once for the
// four and keeps four independent sums (gonum's one-at-a-time loop waits
// on one chain of additions); the others go through gonum.
func dotsExact(out, x []float32, ys [][]float32) {
	n := len(x)
	for i := 0; i < len(ys); {
		if !haveAVX2 || n == 0 {
			out[i] = impl.Sdot(n, x, 1, ys[i], 1)
			i++
			continue
		}
		// The next up to four ys with the alignment of ys[i]; a short
		// group repeats ys[i] in the unused slots.
		p := alignPrefix(&ys[i][0], n)
		var w [4]*float32
		var idx [4]int
		g := 0
		for j := i; j < len(ys) && g < 4; j++ {
			if alignPrefix(&ys[j][0], n) != p {
				break
			}
			_ = ys[j][n-1] // bounds: the kernel reads n values
			w[g], idx[g] = &ys[j][0], j
			g++
		}
		for q := g; q < 4; q++ {
			w[q] = w[0]
		}
		rem := n - p
		var res [4]float32
		dot1x4(&res[0], &x[0], w[0], w[1], w[2], w[3], p, rem/16, rem%16/4, rem%4)
		for q := 0; q < g; q++ {
			out[idx[q]] = res[q]
		}
		i += g
	}
}
