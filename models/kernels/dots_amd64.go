//go:build amd64 && !purego

package kernels

// dot1x4 sets out[q] (q < 4) to the dot product of x with w_q in gonum's
// DotUnitary order, for w_q with p elements before 16-byte alignment:
// len = p+16·nb+4·t4+t1 (dots_amd64.s).
//
//go:noescape
func dot1x4(out *float32, x, w0, w1, w2, w3 *float32, p, nb, t4, t1 int)
