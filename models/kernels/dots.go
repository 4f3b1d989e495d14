package kernels

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
