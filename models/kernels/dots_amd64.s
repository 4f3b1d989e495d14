//go:build amd64 && !purego

#include "textflag.h"

// One step of dot1x4 at byte offset off from AX: x's values (X8/Y8) times
// each w_q's (X10/Y10), rounded (X11/Y11), added to accumulator q (X/Y q).
// STEP_SS takes one value, STEP_X four (a group of 4), STEP_Y eight (half a
// block of 16).
#define STEP_SS(off) \
	VMOVSS off(SI)(AX*1), X8; \
	VMOVSS off(R8)(AX*1), X10; VMULSS X10, X8, X11; VADDSS X11, X0, X0; \
	VMOVSS off(R9)(AX*1), X10; VMULSS X10, X8, X11; VADDSS X11, X1, X1; \
	VMOVSS off(R10)(AX*1), X10; VMULSS X10, X8, X11; VADDSS X11, X2, X2; \
	VMOVSS off(R11)(AX*1), X10; VMULSS X10, X8, X11; VADDSS X11, X3, X3

#define STEP_X(off) \
	VMOVUPS off(SI)(AX*1), X8; \
	VMOVUPS off(R8)(AX*1), X10; VMULPS X10, X8, X11; VADDPS X11, X0, X0; \
	VMOVUPS off(R9)(AX*1), X10; VMULPS X10, X8, X11; VADDPS X11, X1, X1; \
	VMOVUPS off(R10)(AX*1), X10; VMULPS X10, X8, X11; VADDPS X11, X2, X2; \
	VMOVUPS off(R11)(AX*1), X10; VMULPS X10, X8, X11; VADDPS X11, X3, X3

#define STEP_Y(off) \
	VMOVUPS off(SI)(AX*1), Y8; \
	VMOVUPS off(R8)(AX*1), Y10; VMULPS Y10, Y8, Y11; VADDPS Y11, Y0, Y0; \
	VMOVUPS off(R9)(AX*1), Y10; VMULPS Y10, Y8, Y11; VADDPS Y11, Y1, Y1; \
	VMOVUPS off(R10)(AX*1), Y10; VMULPS Y10, Y8, Y11; VADDPS Y11, Y2, Y2; \
	VMOVUPS off(R11)(AX*1), Y10; VMULPS Y10, Y8, Y11; VADDPS Y11, Y3, Y3

// func dot1x4(out *float32, x, w0, w1, w2, w3 *float32, p, nb, t4, t1 int)
// Sets out[q] (q < 4) to the dot product of x with w_q, in gonum's
// DotUnitary order for w_q with p elements before 16-byte alignment (len =
// p+16·nb+4·t4+t1), as dot2x4 does for one row of x: one accumulator per
// q whose lane e holds the partial sum s_e; p products into s0; nb blocks
// of 16 (element e into s[e mod 8]); s0..3 += s4..7 if nb > 0; t4 groups
// of 4 into s0..3; t1 products into s0; then (s0+s1)+(s2+s3).
TEXT ·dot1x4(SB), NOSPLIT, $0-80
	MOVQ out+0(FP), DX
	MOVQ x+8(FP), SI
	MOVQ w0+16(FP), R8
	MOVQ w1+24(FP), R9
	MOVQ w2+32(FP), R10
	MOVQ w3+40(FP), R11
	XORQ AX, AX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	MOVQ p+48(FP), CX
	TESTQ CX, CX
	JZ d14_blocks
d14_prefix:
	STEP_SS(0)
	ADDQ $4, AX
	DECQ CX
	JNZ d14_prefix
d14_blocks:
	MOVQ nb+56(FP), CX
	TESTQ CX, CX
	JZ d14_tail4
d14_block:
	STEP_Y(0)
	STEP_Y(32)
	ADDQ $64, AX
	DECQ CX
	JNZ d14_block
	VEXTRACTF128 $1, Y0, X11
	VADDPS X11, X0, X0
	VEXTRACTF128 $1, Y1, X11
	VADDPS X11, X1, X1
	VEXTRACTF128 $1, Y2, X11
	VADDPS X11, X2, X2
	VEXTRACTF128 $1, Y3, X11
	VADDPS X11, X3, X3
d14_tail4:
	MOVQ t4+64(FP), CX
	TESTQ CX, CX
	JZ d14_tail1
d14_t4:
	STEP_X(0)
	ADDQ $16, AX
	DECQ CX
	JNZ d14_t4
d14_tail1:
	MOVQ t1+72(FP), CX
	TESTQ CX, CX
	JZ d14_sum
d14_t1:
	STEP_SS(0)
	ADDQ $4, AX
	DECQ CX
	JNZ d14_t1
d14_sum:
	VHADDPS X1, X0, X8
	VHADDPS X3, X2, X9
	VHADDPS X9, X8, X8
	VMOVUPS X8, (DX)
	VZEROUPPER
	RET
