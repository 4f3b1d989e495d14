//go:build amd64 && !purego && !(openblas && cgo)

#include "textflag.h"

// Row kernels of the exact GEMM (gemm_amd64.go): c[0:W] += Σ_l a[l·astride]
// · b[l·ldb : l·ldb+W] for l = 0..k-1 in order, each term a product rounded
// to float32 and then added (VMULPS, VADDPS: no FMA), terms with a = ±0
// skipped. That is the order and rounding of gonum's Sgemm (AxpyUnitary per
// (row, l)), so results are bit-identical to it. W = 64, 32 or 8 columns;
// the row of c stays in registers over the whole k loop.

// func axpyRow64(c, a *float32, astride, k int, b *float32, ldb int)
TEXT ·axpyRow64(SB), NOSPLIT, $0-48
	MOVQ c+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ astride+16(FP), R8
	MOVQ k+24(FP), CX
	MOVQ b+32(FP), DX
	MOVQ ldb+40(FP), R9
	SHLQ $2, R8 // strides in bytes
	SHLQ $2, R9
	VMOVUPS 0(DI), Y1
	VMOVUPS 32(DI), Y2
	VMOVUPS 64(DI), Y3
	VMOVUPS 96(DI), Y4
	VMOVUPS 128(DI), Y5
	VMOVUPS 160(DI), Y6
	VMOVUPS 192(DI), Y7
	VMOVUPS 224(DI), Y8
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

// func axpyRow32(c, a *float32, astride, k int, b *float32, ldb int)
TEXT ·axpyRow32(SB), NOSPLIT, $0-48
	MOVQ c+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ astride+16(FP), R8
	MOVQ k+24(FP), CX
	MOVQ b+32(FP), DX
	MOVQ ldb+40(FP), R9
	SHLQ $2, R8 // strides in bytes
	SHLQ $2, R9
	VMOVUPS 0(DI), Y1
	VMOVUPS 32(DI), Y2
	VMOVUPS 64(DI), Y3
	VMOVUPS 96(DI), Y4
	TESTQ CX, CX
	JZ axpyRow32_store
axpyRow32_loop:
	MOVL (SI), AX
	ANDL $0x7fffffff, AX // a = ±0: no term (gonum skips it too)
	JZ axpyRow32_next
	VBROADCASTSS (SI), Y0
	VMULPS 0(DX), Y0, Y9
	VADDPS Y9, Y1, Y1
	VMULPS 32(DX), Y0, Y10
	VADDPS Y10, Y2, Y2
	VMULPS 64(DX), Y0, Y11
	VADDPS Y11, Y3, Y3
	VMULPS 96(DX), Y0, Y12
	VADDPS Y12, Y4, Y4
axpyRow32_next:
	ADDQ R8, SI
	ADDQ R9, DX
	DECQ CX
	JNZ axpyRow32_loop
axpyRow32_store:
	VMOVUPS Y1, 0(DI)
	VMOVUPS Y2, 32(DI)
	VMOVUPS Y3, 64(DI)
	VMOVUPS Y4, 96(DI)
	VZEROUPPER
	RET

// func axpyRow8(c, a *float32, astride, k int, b *float32, ldb int)
TEXT ·axpyRow8(SB), NOSPLIT, $0-48
	MOVQ c+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ astride+16(FP), R8
	MOVQ k+24(FP), CX
	MOVQ b+32(FP), DX
	MOVQ ldb+40(FP), R9
	SHLQ $2, R8 // strides in bytes
	SHLQ $2, R9
	VMOVUPS 0(DI), Y1
	TESTQ CX, CX
	JZ axpyRow8_store
axpyRow8_loop:
	MOVL (SI), AX
	ANDL $0x7fffffff, AX // a = ±0: no term (gonum skips it too)
	JZ axpyRow8_next
	VBROADCASTSS (SI), Y0
	VMULPS 0(DX), Y0, Y9
	VADDPS Y9, Y1, Y1
axpyRow8_next:
	ADDQ R8, SI
	ADDQ R9, DX
	DECQ CX
	JNZ axpyRow8_loop
axpyRow8_store:
	VMOVUPS Y1, 0(DI)
	VZEROUPPER
	RET

// func dotRow8(c, x, wt *float32, ldw, p, nb, t4, t1 int)
//
// c[0:8] += the eight dot products of x[0:len] with the rows j = 0..7 of
// W, where wt holds Wᵀ (wt[t·ldw + j] = W[j,t]), computed in the order and
// with the roundings of gonum's DotUnitary (SSE) for a row of W whose
// first p elements precede 16-byte alignment: len = p + 16·nb + 4·t4 + t1,
// partial sums s0..s3 (SUM) and s4..s7 (P_SUM) per column j in Y1..Y8;
// the p unaligned products go to s0 first; then nb blocks of 16 (sum q
// gets element q mod 8); s0..3 += s4..7 if nb > 0; t4 groups of 4 into
// s0..3; t1 single products into s0; the result (s0+s1)+(s2+s3) (HADDPS
// twice) is added to c.
TEXT ·dotRow8(SB), NOSPLIT, $0-64
	MOVQ c+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ wt+16(FP), DX
	MOVQ ldw+24(FP), R9
	SHLQ $2, R9
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	VXORPS Y8, Y8, Y8
	MOVQ p+32(FP), CX
	TESTQ CX, CX
	JZ dot_blocks
dot_prefix:
	VBROADCASTSS (SI), Y0
	VMULPS (DX), Y0, Y9
	VADDPS Y9, Y1, Y1
	ADDQ $4, SI
	ADDQ R9, DX
	DECQ CX
	JNZ dot_prefix
dot_blocks:
	MOVQ nb+40(FP), CX
	TESTQ CX, CX
	JZ dot_tail4
dot_block:
	VBROADCASTSS 0(SI), Y0
	VMULPS (DX), Y0, Y9
	VADDPS Y9, Y1, Y1
	ADDQ R9, DX
	VBROADCASTSS 4(SI), Y0
	VMULPS (DX), Y0, Y10
	VADDPS Y10, Y2, Y2
	ADDQ R9, DX
	VBROADCASTSS 8(SI), Y0
	VMULPS (DX), Y0, Y11
	VADDPS Y11, Y3, Y3
	ADDQ R9, DX
	VBROADCASTSS 12(SI), Y0
	VMULPS (DX), Y0, Y12
	VADDPS Y12, Y4, Y4
	ADDQ R9, DX
	VBROADCASTSS 16(SI), Y0
	VMULPS (DX), Y0, Y9
	VADDPS Y9, Y5, Y5
	ADDQ R9, DX
	VBROADCASTSS 20(SI), Y0
	VMULPS (DX), Y0, Y10
	VADDPS Y10, Y6, Y6
	ADDQ R9, DX
	VBROADCASTSS 24(SI), Y0
	VMULPS (DX), Y0, Y11
	VADDPS Y11, Y7, Y7
	ADDQ R9, DX
	VBROADCASTSS 28(SI), Y0
	VMULPS (DX), Y0, Y12
	VADDPS Y12, Y8, Y8
	ADDQ R9, DX
	VBROADCASTSS 32(SI), Y0
	VMULPS (DX), Y0, Y9
	VADDPS Y9, Y1, Y1
	ADDQ R9, DX
	VBROADCASTSS 36(SI), Y0
	VMULPS (DX), Y0, Y10
	VADDPS Y10, Y2, Y2
	ADDQ R9, DX
	VBROADCASTSS 40(SI), Y0
	VMULPS (DX), Y0, Y11
	VADDPS Y11, Y3, Y3
	ADDQ R9, DX
	VBROADCASTSS 44(SI), Y0
	VMULPS (DX), Y0, Y12
	VADDPS Y12, Y4, Y4
	ADDQ R9, DX
	VBROADCASTSS 48(SI), Y0
	VMULPS (DX), Y0, Y9
	VADDPS Y9, Y5, Y5
	ADDQ R9, DX
	VBROADCASTSS 52(SI), Y0
	VMULPS (DX), Y0, Y10
	VADDPS Y10, Y6, Y6
	ADDQ R9, DX
	VBROADCASTSS 56(SI), Y0
	VMULPS (DX), Y0, Y11
	VADDPS Y11, Y7, Y7
	ADDQ R9, DX
	VBROADCASTSS 60(SI), Y0
	VMULPS (DX), Y0, Y12
	VADDPS Y12, Y8, Y8
	ADDQ R9, DX
	ADDQ $64, SI
	DECQ CX
	JNZ dot_block
	VADDPS Y5, Y1, Y1
	VADDPS Y6, Y2, Y2
	VADDPS Y7, Y3, Y3
	VADDPS Y8, Y4, Y4
dot_tail4:
	MOVQ t4+48(FP), CX
	TESTQ CX, CX
	JZ dot_tail1
dot_group:
	VBROADCASTSS 0(SI), Y0
	VMULPS (DX), Y0, Y9
	VADDPS Y9, Y1, Y1
	ADDQ R9, DX
	VBROADCASTSS 4(SI), Y0
	VMULPS (DX), Y0, Y10
	VADDPS Y10, Y2, Y2
	ADDQ R9, DX
	VBROADCASTSS 8(SI), Y0
	VMULPS (DX), Y0, Y11
	VADDPS Y11, Y3, Y3
	ADDQ R9, DX
	VBROADCASTSS 12(SI), Y0
	VMULPS (DX), Y0, Y12
	VADDPS Y12, Y4, Y4
	ADDQ R9, DX
	ADDQ $16, SI
	DECQ CX
	JNZ dot_group
dot_tail1:
	MOVQ t1+56(FP), CX
	TESTQ CX, CX
	JZ dot_sum
dot_single:
	VBROADCASTSS (SI), Y0
	VMULPS (DX), Y0, Y9
	VADDPS Y9, Y1, Y1
	ADDQ $4, SI
	ADDQ R9, DX
	DECQ CX
	JNZ dot_single
dot_sum:
	VADDPS Y2, Y1, Y1
	VADDPS Y4, Y3, Y3
	VADDPS Y3, Y1, Y1
	VMOVUPS (DI), Y0
	VADDPS Y1, Y0, Y0
	VMOVUPS Y0, (DI)
	VZEROUPPER
	RET
