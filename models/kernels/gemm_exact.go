package kernels

import (
	"math"
	"unsafe"
)

// sgemmExact computes C = op(A)·B + beta·C for op(A) = A (tA false) or Aᵀ,
// B not transposed and alpha = 1, with the same additions in the same order
// and the same roundings as gonum's Sgemm, so the bits are the same:
// C[i,j] is first zeroed (beta = 0) or scaled (beta ≠ 1), then gets
// A[i,l]·B[l,j] added for l = 0..k-1 in order, each product rounded to
// float32 before the addition (no fused multiply-add), and products with
// A[i,l] = ±0 left out. gonum adds them row by row through AxpyUnitary,
// loading and storing C for every l; here each row of C stays in
// registers over the whole l loop (AVX2 row kernels on amd64).
//
// For C = A·Bᵀ (tB, not tA) it reproduces gonum's dot products instead
// (sgemmExactNT).
//
// It reports false, doing nothing, where it does not apply (no AVX2, both
// transposed, alpha ≠ 1, or slices shorter than the shapes need, which
// gonum then reports); the caller then uses gonum.
func sgemmExact(tA, tB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) bool {
	if tB && !tA {
		return sgemmExactNT(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
	}
	if !haveAVX2 || tB || alpha != 1 || m <= 0 || n <= 0 || k < 0 || ldb < n || ldc < n {
		return false
	}
	rowStep, astride := lda, 1 // A[i,l] = a[i·lda + l]
	if tA {
		rowStep, astride = 1, lda // A[i,l] = a[l·lda + i]
		if lda < m || (k > 0 && len(a) < (k-1)*lda+m) {
			return false
		}
	} else if lda < k || (k > 0 && len(a) < (m-1)*lda+k) {
		return false
	}
	if (k > 0 && len(b) < (k-1)*ldb+n) || len(c) < (m-1)*ldc+n {
		return false
	}
	if k == 0 && beta == 1 {
		return true
	}
	if k == 0 || beta != 0 {
		scaleC(m, n, beta, c, ldc)
	}
	if k == 0 {
		return true
	}
	// In blocks of kBlock values of l and 64 columns, so that the part of
	// B one pass reads (kBlock rows of a 64-column strip, 16 KiB) stays in
	// the L1 cache over all rows of C. C[i,j] still gets its products
	// added in l order (kept in memory between blocks of l), so the bits do
	// not depend on the blocking. beta = 0: the first block starts from +0
	// instead of a cleared C.
	for l0 := 0; l0 < k; l0 += kBlock {
		kb := min(kBlock, k-l0)
		for j := 0; j < n; j += 64 {
			w := min(64, n-j)
			for i := 0; i < m; i++ {
				ci := i*ldc + j
				axpyRow(c[ci:ci+w], axpyRowArgs{A: a[i*rowStep+l0*astride:], AStride: astride, K: kb, B: b[l0*ldb+j:], LdB: ldb, Zero: beta == 0 && l0 == 0})
			}
		}
	}
	return true
}

// axpyRowArgs are the operands of axpyRow after its output row c: the K
// values of a row of A, AStride apart (A), the K rows of B they multiply,
// LdB apart (B), and whether c starts from +0 instead of its old values
// (Zero).
type axpyRowArgs struct {
	A          []float32
	AStride, K int
	B          []float32
	LdB        int
	Zero       bool
}

// kBlock is the number of rows of B one pass of sgemmExact's row kernels
// reads.
const kBlock = 64

// axpyRowGo is the portable row kernel: c[j] += a[l·astride]·b[l·ldb+j]
// for l in order, zero a skipped, each product rounded (the float32
// conversion forbids fusing it into the addition).
func axpyRowGo(c, a []float32, astride, k int, b []float32, ldb int) {
	for l := 0; l < k; l++ {
		v := a[l*astride]
		if v == 0 {
			continue
		}
		bl := b[l*ldb : l*ldb+len(c)]
		for j, bv := range bl {
			c[j] += float32(v * bv)
		}
	}
}

// scaleC zeroes (beta = 0) or scales (beta ≠ 1) the m×n matrix c, as
// gonum's Sgemm does before adding products.
func scaleC(m, n int, beta float32, c []float32, ldc int) {
	if beta == 1 {
		return
	}
	for i := 0; i < m; i++ {
		ci := c[i*ldc : i*ldc+n]
		if beta == 0 {
			clear(ci)
			continue
		}
		for j := range ci {
			ci[j] *= beta
		}
	}
}

// gonum's Sgemm splits the inner dimension into blocks of gonumBlock when
// it runs in parallel, which it does from gonumMinParBlocks output blocks
// of gonumBlock×gonumBlock on (gonum/blas/gonum: blockSize, minParBlock).
const (
	gonumBlock        = 64
	gonumMinParBlocks = 4
)

// sgemmExactNT computes C = A·Bᵀ + beta·C (alpha = 1) bit for bit as
// gonum's Sgemm does: C[i,j] += DotUnitary(A[i,:], B[j,:]), whose SSE
// summation order depends on where B's row starts relative to a 16-byte
// boundary (dotUnitaryGo spells it out). Blocks of two rows i and four
// columns j run through dot2x4 (one 8-lane accumulator per dot product, its
// lanes gonum's eight partial sums), the rest through dotUnitaryGo. Where gonum runs in parallel and the inner dimension
// exceeds 64, it splits every dot product into blocks of 64 and adds them
// to C[i,j] one after the other (each block with the alignment prefix of
// its own start); the kernels do the same. Where rows of B differ in
// alignment (ldb not a multiple of 4: widths such as 210, 175 or 125),
// each inner block goes through ntMixed.block instead. It declines (false)
// without AVX2.
func sgemmExactNT(m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) bool {
	if !haveAVX2 || alpha != 1 || m <= 0 || n <= 0 || k < 0 || lda < max(k, 1) || ldb < max(k, 1) || ldc < n {
		return false
	}
	if (k > 0 && (len(a) < (m-1)*lda+k || len(b) < (n-1)*ldb+k)) || len(c) < (m-1)*ldc+n {
		return false
	}
	if k == 0 && beta == 1 {
		return true
	}
	scaleC(m, n, beta, c, ldc)
	if k == 0 {
		for i := 0; i < m; i++ {
			for j, v := range c[i*ldc : i*ldc+n] {
				c[i*ldc+j] = v + 0 // gonum adds the empty dot product
			}
		}
		return true
	}
	// The inner blocks gonum adds one after the other: one of length k,
	// or blocks of gonumBlock in its parallel mode.
	kb := k
	if k > gonumBlock && blocks(m)*blocks(n) >= gonumMinParBlocks {
		kb = gonumBlock
	}
	m2, n4 := m/2*2, n/4*4
	var mixed *ntMixed
	if ldb%4 != 0 {
		mixed = newNTMixed(min(kb, k))
	}
	for k0 := 0; k0 < k; k0 += kb {
		lk := min(kb, k-k0)
		if mixed != nil {
			mixed.block(ntBlock{m: m, n: n, lk: lk, a: a[k0:], lda: lda, b: b[k0:], ldb: ldb, c: c, ldc: ldc})
			continue
		}
		p := alignPrefix(&b[k0], lk)
		rem := lk - p
		nb, t4, t1 := rem/16, rem%16/4, rem%4
		// Columns in blocks of jb rows of B (16 KiB of them, a multiple of
		// 4), each over every pair of rows of C, so that the block stays
		// in the L1 cache; every dot product is whole, so the bits do not
		// depend on the blocking.
		jb := max(4, 16384/(4*lk)/4*4)
		for j0 := 0; j0 < n4; j0 += jb {
			nq := min(jb, n4-j0) / 4
			for i := 0; i < m2; i += 2 {
				dot2x4(&c[i*ldc+j0], ldc, &a[i*lda+k0], lda, &b[j0*ldb+k0], ldb, p, nb, t4, t1, nq)
			}
		}
		for i := 0; i < m; i++ {
			j0 := n4
			if i >= m2 {
				j0 = 0
			}
			for j := j0; j < n; j++ {
				c[i*ldc+j] += dotUnitaryGo(a[i*lda+k0:i*lda+k0+lk], b[j*ldb+k0:j*ldb+k0+lk], p)
			}
		}
	}
	return true
}

func blocks(d int) int { return (d + gonumBlock - 1) / gonumBlock }

// ntBlock is one inner block of C = A·Bᵀ: C[i,j] += dot(A[i,:lk], B[j,:lk])
// for i < m, j < n, a and b starting at the block's first column.
type ntBlock struct {
	m, n, lk int
	a        []float32
	lda      int
	b        []float32
	ldb      int
	c        []float32
	ldc      int
}

// ntMixed is sgemmExactNT's scratch for rows of B that differ in
// alignment: gonum's order for a dot product depends on the alignment
// prefix of B's row, and dot2x4 takes one prefix for its four rows.
type ntMixed struct {
	rows [4][]int  // rows of B by prefix
	pack []float32 // jb rows of B with one prefix, next to each other
	tmp  []float32 // dot2x4's 2 × jb results
	jb   int       // rows of B per cache block (a multiple of 4)
}

// newNTMixed returns the scratch for inner blocks of at most kb columns:
// about 16 KiB of packed rows, whatever the number of rows of B, so that
// a call allocates little (a product with as many rows of B as a batch
// has nodes would otherwise allocate a copy of B per call, garbage that
// raises the collector's peak).
func newNTMixed(kb int) *ntMixed {
	jb := max(4, 16384/(4*kb)/4*4)
	return &ntMixed{pack: make([]float32, jb*kb), tmp: make([]float32, 2*jb), jb: jb}
}

// block adds one inner block to C bit for bit as gonum does. The rows of
// B with the same prefix p are copied next to each other, a cache block
// of jb rows at a time (dot2x4 loads without alignment, and p alone sets
// the order of the additions), run through dot2x4 in groups of four into
// a scratch of −0, the identity of addition (so the scratch holds each
// dot product exactly, −0 included), and added to their columns of C,
// one addition per dot product as gonum makes. The rows left over and
// C's last odd row go through dotUnitaryGo.
func (x *ntMixed) block(bl ntBlock) {
	for p := range x.rows {
		x.rows[p] = x.rows[p][:0]
	}
	for j := 0; j < bl.n; j++ {
		p := alignPrefix(&bl.b[j*bl.ldb], bl.lk)
		x.rows[p] = append(x.rows[p], j)
	}
	negZero := float32(math.Copysign(0, -1))
	m2, lk := bl.m/2*2, bl.lk
	for p, rows := range x.rows {
		g4 := len(rows) / 4 * 4
		rem := lk - p
		nb, t4, t1 := rem/16, rem%16/4, rem%4
		for t0 := 0; t0 < g4; t0 += x.jb {
			w := min(x.jb, g4-t0)
			for t, j := range rows[t0 : t0+w] {
				copy(x.pack[t*lk:(t+1)*lk], bl.b[j*bl.ldb:j*bl.ldb+lk])
			}
			for i := 0; i < m2; i += 2 {
				tmp := x.tmp[:2*w]
				for q := range tmp {
					tmp[q] = negZero
				}
				dot2x4(&tmp[0], w, &bl.a[i*bl.lda], bl.lda, &x.pack[0], lk, p, nb, t4, t1, w/4)
				c0, c1 := bl.c[i*bl.ldc:], bl.c[(i+1)*bl.ldc:]
				for q, j := range rows[t0 : t0+w] {
					c0[j] += tmp[q]
					c1[j] += tmp[w+q]
				}
			}
		}
		for i := 0; i < bl.m; i++ {
			left := rows[g4:]
			if i >= m2 {
				left = rows
			}
			ai := bl.a[i*bl.lda : i*bl.lda+lk]
			for _, j := range left {
				bl.c[i*bl.ldc+j] += dotUnitaryGo(ai, bl.b[j*bl.ldb:j*bl.ldb+lk], p)
			}
		}
	}
}

// alignPrefix is the number of elements DotUnitary handles one by one
// before y reaches a 16-byte boundary (at most k).
func alignPrefix(y *float32, k int) int {
	off := int(uintptr(unsafe.Pointer(y)) & 15)
	if off == 0 {
		return 0
	}
	return min((16-off)/4, k)
}

// dotUnitaryGo is gonum's DotUnitary (amd64 SSE) in Go, for a y whose first
// p elements precede a 16-byte boundary: partial sums s0..s7, the first p
// products into s0, then blocks of 16 elements (element e of a block into
// s[e mod 8]), s0..3 += s4..7 if there was a block, groups of 4 into
// s0..3, the last products into s0, and (s0+s1)+(s2+s3). Products are
// rounded before they are added.
func dotUnitaryGo(x, y []float32, p int) float32 {
	var s [8]float32
	i := 0
	for ; i < p; i++ {
		s[0] += float32(x[i] * y[i])
	}
	nb := (len(x) - i) / 16
	for ; nb > 0; nb-- {
		for e := 0; e < 16; e++ {
			s[e%8] += float32(x[i+e] * y[i+e])
		}
		i += 16
	}
	if (len(x)-p)/16 > 0 {
		for q := 0; q < 4; q++ {
			s[q] += s[q+4]
		}
	}
	for ; i+4 <= len(x); i += 4 {
		for q := 0; q < 4; q++ {
			s[q] += float32(x[i+q] * y[i+q])
		}
	}
	for ; i < len(x); i++ {
		s[0] += float32(x[i] * y[i])
	}
	return (s[0] + s[1]) + (s[2] + s[3])
}

// GEMMKernels names the kernels that compute the default build's GEMMs in
// place of gonum, with gonum's bits ("" when there are none: another
// architecture, a CPU without AVX2, or -tags purego).
func GEMMKernels() string {
	if haveAVX2 {
		return "AVX2 (Go assembly)"
	}
	return ""
}
