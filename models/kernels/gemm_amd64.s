//go:build amd64 && !purego

#include "textflag.h"

// Row kernels of the exact GEMM (gemm_amd64.go): c[0:W] += Σ_l a[l·astride]
// · b[l·ldb : l·ldb+W] for l = 0..k-1 in order, each term a product rounded
// to float32 and then added (VMULPS, VADDPS: no FMA), terms with a = ±0
// skipped. That is the order and rounding of gonum's Sgemm (AxpyUnitary per
// (row, l)), so results are bit-identical to it. W = 64 columns, or a
// tail of fewer (axpyRowTail);
// the row of c stays in registers over the whole k loop.

// func axpyRow64(c, a *float32, astride, k int, b *float32, ldb int, zero bool)
TEXT ·axpyRow64(SB), NOSPLIT, $0-49
	MOVQ c+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ astride+16(FP), R8
	MOVQ k+24(FP), CX
	MOVQ b+32(FP), DX
	MOVQ ldb+40(FP), R9
	SHLQ $2, R8 // strides in bytes
	SHLQ $2, R9
	MOVBLZX zero+48(FP), AX
	TESTL AX, AX
	JNZ axpyRow64_zero
	VMOVUPS 0(DI), Y1
	VMOVUPS 32(DI), Y2
	VMOVUPS 64(DI), Y3
	VMOVUPS 96(DI), Y4
	VMOVUPS 128(DI), Y5
	VMOVUPS 160(DI), Y6
	VMOVUPS 192(DI), Y7
	VMOVUPS 224(DI), Y8
	JMP axpyRow64_start
axpyRow64_zero: // C starts at +0, as gonum zeroes it for beta = 0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	VXORPS Y8, Y8, Y8
axpyRow64_start:
	TESTQ CX, CX
	JZ axpyRow64_store
axpyRow64_loop:
	MOVL (SI), AX
	ANDL $0x7fffffff, AX // a = ±0: no term (gonum skips it too)
	JZ axpyRow64_next
	VBROADCASTSS (SI), Y0
	VMULPS 0(DX), Y0, Y9
	VADDPS Y9, Y1, Y1
	VMULPS 32(DX), Y0, Y10
	VADDPS Y10, Y2, Y2
	VMULPS 64(DX), Y0, Y11
	VADDPS Y11, Y3, Y3
	VMULPS 96(DX), Y0, Y12
	VADDPS Y12, Y4, Y4
	VMULPS 128(DX), Y0, Y9
	VADDPS Y9, Y5, Y5
	VMULPS 160(DX), Y0, Y10
	VADDPS Y10, Y6, Y6
	VMULPS 192(DX), Y0, Y11
	VADDPS Y11, Y7, Y7
	VMULPS 224(DX), Y0, Y12
	VADDPS Y12, Y8, Y8
axpyRow64_next:
	ADDQ R8, SI
	ADDQ R9, DX
	DECQ CX
	JNZ axpyRow64_loop
axpyRow64_store:
	VMOVUPS Y1, 0(DI)
	VMOVUPS Y2, 32(DI)
	VMOVUPS Y3, 64(DI)
	VMOVUPS Y4, 96(DI)
	VMOVUPS Y5, 128(DI)
	VMOVUPS Y6, 160(DI)
	VMOVUPS Y7, 192(DI)
	VMOVUPS Y8, 224(DI)
	VZEROUPPER
	RET

// Block q (1-based) of axpyRowTail's 8-column blocks, at byte offset off
// and in register Y, when q ≤ n8 (R10): load it from c, add the term of
// one l to it, store it to c.
#define TAIL_LOAD(q, off, Y) CMPQ R10, $q; JB axpyRowTail_lm; VMOVUPS off(DI), Y
#define TAIL_STEP(q, off, Y) CMPQ R10, $q; JB axpyRowTail_next; VMULPS off(DX), Y0, Y9; VADDPS Y9, Y, Y
#define TAIL_STORE(q, off, Y) CMPQ R10, $q; JB axpyRowTail_done; VMOVUPS Y, off(DI)

// func axpyRowTail(c, a *float32, astride, k int, b *float32, ldb int, zero bool, n8 int, mask *uint32)
// The row kernel on the last 8·n8+r < 64 columns of a row (n8 ≤ 7, r < 8):
// n8 blocks of 8 columns in Y1..Y7 and a block of the r columns whose
// lanes of mask (8 values) are all ones bits in Y8, loaded and stored
// through VMASKMOVPS (its other lanes are neither read nor written).
TEXT ·axpyRowTail(SB), NOSPLIT, $0-72
	MOVQ c+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ astride+16(FP), R8
	MOVQ k+24(FP), CX
	MOVQ b+32(FP), DX
	MOVQ ldb+40(FP), R9
	SHLQ $2, R8 // strides in bytes
	SHLQ $2, R9
	MOVQ n8+56(FP), R10
	MOVQ mask+64(FP), R11
	VMOVUPS (R11), Y15
	MOVQ R10, R12
	SHLQ $5, R12 // byte offset of the masked block
	VXORPS Y1, Y1, Y1 // C starts at +0, as gonum zeroes it for beta = 0
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	VXORPS Y8, Y8, Y8
	MOVBLZX zero+48(FP), AX
	TESTL AX, AX
	JNZ axpyRowTail_start
	TAIL_LOAD(1, 0, Y1)
	TAIL_LOAD(2, 32, Y2)
	TAIL_LOAD(3, 64, Y3)
	TAIL_LOAD(4, 96, Y4)
	TAIL_LOAD(5, 128, Y5)
	TAIL_LOAD(6, 160, Y6)
	TAIL_LOAD(7, 192, Y7)
axpyRowTail_lm:
	VMASKMOVPS (DI)(R12*1), Y15, Y8
axpyRowTail_start:
	TESTQ CX, CX
	JZ axpyRowTail_store
axpyRowTail_loop:
	MOVL (SI), AX
	ANDL $0x7fffffff, AX // a = ±0: no term (gonum skips it too)
	JZ axpyRowTail_next
	VBROADCASTSS (SI), Y0
	VMASKMOVPS (DX)(R12*1), Y15, Y9
	VMULPS Y9, Y0, Y9
	VADDPS Y9, Y8, Y8
	TAIL_STEP(1, 0, Y1)
	TAIL_STEP(2, 32, Y2)
	TAIL_STEP(3, 64, Y3)
	TAIL_STEP(4, 96, Y4)
	TAIL_STEP(5, 128, Y5)
	TAIL_STEP(6, 160, Y6)
	TAIL_STEP(7, 192, Y7)
axpyRowTail_next:
	ADDQ R8, SI
	ADDQ R9, DX
	DECQ CX
	JNZ axpyRowTail_loop
axpyRowTail_store:
	VMASKMOVPS Y8, Y15, (DI)(R12*1)
	TAIL_STORE(1, 0, Y1)
	TAIL_STORE(2, 32, Y2)
	TAIL_STORE(3, 64, Y3)
	TAIL_STORE(4, 96, Y4)
	TAIL_STORE(5, 128, Y5)
	TAIL_STORE(6, 160, Y6)
	TAIL_STORE(7, 192, Y7)
axpyRowTail_done:
	VZEROUPPER
	RET

// One step of dot2x4 at byte offset off from AX: the values of x's two
// rows (X8/Y8 and X9/Y9) times each w_q's (X10/Y10), rounded, added to
// accumulators q and q+4. STEP2_SS takes one value per row, STEP2_X four
// (a group of 4), STEP2_Y eight (half a block of 16).
#define STEP2_SS(off) \
	VMOVSS off(SI)(AX*1), X8; \
	VMOVSS off(DI)(AX*1), X9; \
	VMOVSS off(R8)(AX*1), X10; VMULSS X10, X8, X11; VADDSS X11, X0, X0; VMULSS X10, X9, X12; VADDSS X12, X4, X4; \
	VMOVSS off(R9)(AX*1), X10; VMULSS X10, X8, X11; VADDSS X11, X1, X1; VMULSS X10, X9, X12; VADDSS X12, X5, X5; \
	VMOVSS off(R10)(AX*1), X10; VMULSS X10, X8, X11; VADDSS X11, X2, X2; VMULSS X10, X9, X12; VADDSS X12, X6, X6; \
	VMOVSS off(R11)(AX*1), X10; VMULSS X10, X8, X11; VADDSS X11, X3, X3; VMULSS X10, X9, X12; VADDSS X12, X7, X7

#define STEP2_X(off) \
	VMOVUPS off(SI)(AX*1), X8; \
	VMOVUPS off(DI)(AX*1), X9; \
	VMOVUPS off(R8)(AX*1), X10; VMULPS X10, X8, X11; VADDPS X11, X0, X0; VMULPS X10, X9, X12; VADDPS X12, X4, X4; \
	VMOVUPS off(R9)(AX*1), X10; VMULPS X10, X8, X11; VADDPS X11, X1, X1; VMULPS X10, X9, X12; VADDPS X12, X5, X5; \
	VMOVUPS off(R10)(AX*1), X10; VMULPS X10, X8, X11; VADDPS X11, X2, X2; VMULPS X10, X9, X12; VADDPS X12, X6, X6; \
	VMOVUPS off(R11)(AX*1), X10; VMULPS X10, X8, X11; VADDPS X11, X3, X3; VMULPS X10, X9, X12; VADDPS X12, X7, X7

#define STEP2_Y(off) \
	VMOVUPS off(SI)(AX*1), Y8; \
	VMOVUPS off(DI)(AX*1), Y9; \
	VMOVUPS off(R8)(AX*1), Y10; VMULPS Y10, Y8, Y11; VADDPS Y11, Y0, Y0; VMULPS Y10, Y9, Y12; VADDPS Y12, Y4, Y4; \
	VMOVUPS off(R9)(AX*1), Y10; VMULPS Y10, Y8, Y11; VADDPS Y11, Y1, Y1; VMULPS Y10, Y9, Y12; VADDPS Y12, Y5, Y5; \
	VMOVUPS off(R10)(AX*1), Y10; VMULPS Y10, Y8, Y11; VADDPS Y11, Y2, Y2; VMULPS Y10, Y9, Y12; VADDPS Y12, Y6, Y6; \
	VMOVUPS off(R11)(AX*1), Y10; VMULPS Y10, Y8, Y11; VADDPS Y11, Y3, Y3; VMULPS Y10, Y9, Y12; VADDPS Y12, Y7, Y7

// func dot2x4(c *float32, ldc int, x *float32, lda int, w *float32, ldb int, p, nb, t4, t1, nq int)
// Adds to c[r][q] (rows r < 2, ldc floats apart; q < 4) the dot product of
// row r of x (lda floats apart) with row q of w (ldb floats apart), each in
// gonum's DotUnitary order for rows of w with p elements before 16-byte
// alignment (len = p+16·nb+4·t4+t1): one accumulator per (r, q) whose lane
// e holds the partial sum s_e; p products into s0; nb blocks of 16 (element
// e of a block into s[e mod 8]: two 8-lane steps); s0..3 += s4..7 if
// nb > 0; t4 groups of 4 into s0..3; t1 products into s0; then
// (s0+s1)+(s2+s3) by HADDPS twice, added to c. It does this for nq
// blocks of four columns (c and w advance by 4 columns, 4 rows).
TEXT ·dot2x4(SB), NOSPLIT, $0-88
	MOVQ c+0(FP), DX
	MOVQ ldc+8(FP), R12
	SHLQ $2, R12
	MOVQ x+16(FP), SI
	MOVQ lda+24(FP), DI
	SHLQ $2, DI
	ADDQ SI, DI
	MOVQ w+32(FP), R8
	MOVQ ldb+40(FP), R13
	SHLQ $2, R13
	LEAQ (R8)(R13*1), R9
	LEAQ (R9)(R13*1), R10
	LEAQ (R10)(R13*1), R11
	MOVQ nq+80(FP), BX
d24_quad:
	XORQ AX, AX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	MOVQ p+48(FP), CX
	TESTQ CX, CX
	JZ d24_blocks
d24_prefix:
	STEP2_SS(0)
	ADDQ $4, AX
	DECQ CX
	JNZ d24_prefix
d24_blocks:
	MOVQ nb+56(FP), CX
	TESTQ CX, CX
	JZ d24_tail4
d24_block:
	STEP2_Y(0)
	STEP2_Y(32)
	ADDQ $64, AX
	DECQ CX
	JNZ d24_block
	VEXTRACTF128 $1, Y0, X11
	VADDPS X11, X0, X0
	VEXTRACTF128 $1, Y1, X11
	VADDPS X11, X1, X1
	VEXTRACTF128 $1, Y2, X11
	VADDPS X11, X2, X2
	VEXTRACTF128 $1, Y3, X11
	VADDPS X11, X3, X3
	VEXTRACTF128 $1, Y4, X11
	VADDPS X11, X4, X4
	VEXTRACTF128 $1, Y5, X11
	VADDPS X11, X5, X5
	VEXTRACTF128 $1, Y6, X11
	VADDPS X11, X6, X6
	VEXTRACTF128 $1, Y7, X11
	VADDPS X11, X7, X7
d24_tail4:
	MOVQ t4+64(FP), CX
	TESTQ CX, CX
	JZ d24_tail1
d24_t4:
	STEP2_X(0)
	ADDQ $16, AX
	DECQ CX
	JNZ d24_t4
d24_tail1:
	MOVQ t1+72(FP), CX
	TESTQ CX, CX
	JZ d24_sum
d24_t1:
	STEP2_SS(0)
	ADDQ $4, AX
	DECQ CX
	JNZ d24_t1
d24_sum:
	VHADDPS X1, X0, X8
	VHADDPS X3, X2, X9
	VHADDPS X9, X8, X8
	VMOVUPS (DX), X10
	VADDPS X8, X10, X10
	VMOVUPS X10, (DX)
	VHADDPS X5, X4, X8
	VHADDPS X7, X6, X9
	VHADDPS X9, X8, X8
	VMOVUPS (DX)(R12*1), X10
	VADDPS X8, X10, X10
	VMOVUPS X10, (DX)(R12*1)
	ADDQ $16, DX
	LEAQ (R11)(R13*1), R8
	LEAQ (R8)(R13*1), R9
	LEAQ (R9)(R13*1), R10
	LEAQ (R10)(R13*1), R11
	DECQ BX
	JNZ d24_quad
	VZEROUPPER
	RET
