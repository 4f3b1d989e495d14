//go:build amd64 && !purego

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
