//go:build amd64 && !purego

#include "textflag.h"

// Batch-norm kernels of bnrelu.go, 8 columns per step, with the bits of
// the Go loops: every operation rounded on its own (no FMA), in the Go
// expression's order.

// func bnFwd8(xhat, y, x, mu, inv, gam, bt *float32, n, d8, ld int)
// For each of n rows (ld floats apart) and columns j < d8:
// h = (x−mu)·inv, xhat = h, y = max(0, g·h+bt) + 0 (VMAXPS returns its
// second source, the value, when it is NaN or both are zero; adding +0
// turns −0 into the +0 Go's max gives).
TEXT ·bnFwd8(SB), NOSPLIT, $0-80
	MOVQ xhat+0(FP), DI
	MOVQ y+8(FP), DX
	MOVQ x+16(FP), SI
	MOVQ mu+24(FP), R8
	MOVQ inv+32(FP), R9
	MOVQ gam+40(FP), R10
	MOVQ bt+48(FP), R11
	MOVQ n+56(FP), CX
	MOVQ d8+64(FP), R12
	MOVQ ld+72(FP), R13
	SHLQ $2, R13
	SHLQ $2, R12
	VXORPS Y15, Y15, Y15
bnfwd_row:
	XORQ AX, AX
bnfwd_col:
	VMOVUPS (SI)(AX*1), Y0
	VSUBPS (R8)(AX*1), Y0, Y0
	VMULPS (R9)(AX*1), Y0, Y0
	VMOVUPS Y0, (DI)(AX*1)
	VMULPS (R10)(AX*1), Y0, Y1
	VADDPS (R11)(AX*1), Y1, Y1
	VMAXPS Y1, Y15, Y1
	VADDPS Y15, Y1, Y1
	VMOVUPS Y1, (DX)(AX*1)
	ADDQ $32, AX
	CMPQ AX, R12
	JLT bnfwd_col
	ADDQ R13, SI
	ADDQ R13, DI
	ADDQ R13, DX
	DECQ CX
	JNZ bnfwd_row
	VZEROUPPER
	RET

// func reluMask8(dz, y, dy *float32, n int)
// dz = dy where the bits of y are not all zero, else +0; n a multiple of 8.
TEXT ·reluMask8(SB), NOSPLIT, $0-32
	MOVQ dz+0(FP), DI
	MOVQ y+8(FP), SI
	MOVQ dy+16(FP), DX
	MOVQ n+24(FP), CX
	SHRQ $3, CX
	VPXOR Y15, Y15, Y15
relumask_loop:
	VMOVDQU (SI), Y0
	VPCMPEQD Y15, Y0, Y0
	VPANDN (DX), Y0, Y1
	VMOVDQU Y1, (DI)
	ADDQ $32, SI
	ADDQ $32, DX
	ADDQ $32, DI
	DECQ CX
	JNZ relumask_loop
	VZEROUPPER
	RET

// func bnBwd8(dx, dz, xhat, gi, m, mx *float32, n, d8, ld int)
// dx = gi·((dz−m) − xhat·mx) for n rows (ld floats apart), columns j < d8.
TEXT ·bnBwd8(SB), NOSPLIT, $0-72
	MOVQ dx+0(FP), DI
	MOVQ dz+8(FP), SI
	MOVQ xhat+16(FP), DX
	MOVQ gi+24(FP), R8
	MOVQ m+32(FP), R9
	MOVQ mx+40(FP), R10
	MOVQ n+48(FP), CX
	MOVQ d8+56(FP), R12
	MOVQ ld+64(FP), R13
	SHLQ $2, R13
	SHLQ $2, R12
bnbwd_row:
	XORQ AX, AX
bnbwd_col:
	VMOVUPS (SI)(AX*1), Y0
	VSUBPS (R9)(AX*1), Y0, Y0
	VMOVUPS (DX)(AX*1), Y1
	VMULPS (R10)(AX*1), Y1, Y1
	VSUBPS Y1, Y0, Y0
	VMULPS (R8)(AX*1), Y0, Y0
	VMOVUPS Y0, (DI)(AX*1)
	ADDQ $32, AX
	CMPQ AX, R12
	JLT bnbwd_col
	ADDQ R13, SI
	ADDQ R13, DX
	ADDQ R13, DI
	DECQ CX
	JNZ bnbwd_row
	VZEROUPPER
	RET

// func scale8(y, x *float32, a float32, n int)
// y = a·x; n a multiple of 8.
TEXT ·scale8(SB), NOSPLIT, $0-32
	MOVQ y+0(FP), DI
	MOVQ x+8(FP), SI
	VBROADCASTSS a+16(FP), Y15
	MOVQ n+24(FP), CX
	SHRQ $3, CX
scale_loop:
	VMULPS (SI), Y15, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	DECQ CX
	JNZ scale_loop
	VZEROUPPER
	RET

// func rowSum64(y, x *float32, n, ld int)
// y[0:64] = Σ_{r<n} x[r·ld : r·ld+64], the rows added one after the other
// to +0 (the Go loop's order); n ≥ 1.
TEXT ·rowSum64(SB), NOSPLIT, $0-32
	MOVQ y+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
	MOVQ ld+24(FP), R9
	SHLQ $2, R9
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
rowsum_loop:
	VADDPS 0(SI), Y0, Y0
	VADDPS 32(SI), Y1, Y1
	VADDPS 64(SI), Y2, Y2
	VADDPS 96(SI), Y3, Y3
	VADDPS 128(SI), Y4, Y4
	VADDPS 160(SI), Y5, Y5
	VADDPS 192(SI), Y6, Y6
	VADDPS 224(SI), Y7, Y7
	ADDQ R9, SI
	DECQ CX
	JNZ rowsum_loop
	VMOVUPS Y0, 0(DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	VMOVUPS Y4, 128(DI)
	VMOVUPS Y5, 160(DI)
	VMOVUPS Y6, 192(DI)
	VMOVUPS Y7, 224(DI)
	VZEROUPPER
	RET
