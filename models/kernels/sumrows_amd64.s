//go:build amd64 && !purego

#include "textflag.h"

// Row-sum kernels of sumRows (cpu.go), W = 64 or 8 columns: s[0:W] =
// Σ_{v ∈ rows} x[v·ld : v·ld+W] in sumRows' order: rows four at a time as
// s += (x0+x1) + (x2+x3), then one at a time, from s = 0. Each column is
// one lane, so the bits are those of the Go loop; s stays in registers.

// Building blocks: ADDR4 points R10..R13 at the rows x[v·ld] of the next
// four indices at BX; SUM4(off, acc) adds (x0+x1)+(x2+x3) at byte offset
// off to acc; QUAD64/QUAD8 do that for 64/8 columns (Y1..Y8 / Y1);
// SINGLE64 adds the row at R10 to Y1..Y8; ZERO8 and STORE8 clear Y1..Y8
// and store them at DI.
#define ADDR4 \
	MOVLQSX 0(BX), AX; \
	IMULQ R9, AX; \
	LEAQ (SI)(AX*1), R10; \
	MOVLQSX 4(BX), AX; \
	IMULQ R9, AX; \
	LEAQ (SI)(AX*1), R11; \
	MOVLQSX 8(BX), AX; \
	IMULQ R9, AX; \
	LEAQ (SI)(AX*1), R12; \
	MOVLQSX 12(BX), AX; \
	IMULQ R9, AX; \
	LEAQ (SI)(AX*1), R13

#define SUM4(off, acc) \
	VMOVUPS off(R10), Y9; \
	VADDPS off(R11), Y9, Y9; \
	VMOVUPS off(R12), Y10; \
	VADDPS off(R13), Y10, Y10; \
	VADDPS Y10, Y9, Y9; \
	VADDPS Y9, acc, acc

#define QUAD64 \
	ADDR4; \
	SUM4(0, Y1); \
	SUM4(32, Y2); \
	SUM4(64, Y3); \
	SUM4(96, Y4); \
	SUM4(128, Y5); \
	SUM4(160, Y6); \
	SUM4(192, Y7); \
	SUM4(224, Y8)

#define QUAD8 \
	ADDR4; \
	SUM4(0, Y1)

#define SINGLE64 \
	VADDPS 0(R10), Y1, Y1; \
	VADDPS 32(R10), Y2, Y2; \
	VADDPS 64(R10), Y3, Y3; \
	VADDPS 96(R10), Y4, Y4; \
	VADDPS 128(R10), Y5, Y5; \
	VADDPS 160(R10), Y6, Y6; \
	VADDPS 192(R10), Y7, Y7; \
	VADDPS 224(R10), Y8, Y8

#define ZERO8 \
	VXORPS Y1, Y1, Y1; \
	VXORPS Y2, Y2, Y2; \
	VXORPS Y3, Y3, Y3; \
	VXORPS Y4, Y4, Y4; \
	VXORPS Y5, Y5, Y5; \
	VXORPS Y6, Y6, Y6; \
	VXORPS Y7, Y7, Y7; \
	VXORPS Y8, Y8, Y8

#define STORE8 \
	VMOVUPS Y1, 0(DI); \
	VMOVUPS Y2, 32(DI); \
	VMOVUPS Y3, 64(DI); \
	VMOVUPS Y4, 96(DI); \
	VMOVUPS Y5, 128(DI); \
	VMOVUPS Y6, 160(DI); \
	VMOVUPS Y7, 192(DI); \
	VMOVUPS Y8, 224(DI)

// func sumRows64(s, x *float32, rows *int32, n, ld int)
TEXT ·sumRows64(SB), NOSPLIT, $0-40
	MOVQ s+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ rows+16(FP), BX
	MOVQ n+24(FP), CX
	MOVQ ld+32(FP), R9
	SHLQ $2, R9 // row stride in bytes
	ZERO8
sumRows64_quad:
	CMPQ CX, $4
	JLT sumRows64_single
	QUAD64
	ADDQ $16, BX
	SUBQ $4, CX
	JMP sumRows64_quad
sumRows64_single:
	TESTQ CX, CX
	JZ sumRows64_store
	MOVLQSX (BX), AX
	IMULQ R9, AX
	LEAQ (SI)(AX*1), R10
	SINGLE64
	ADDQ $4, BX
	DECQ CX
	JMP sumRows64_single
sumRows64_store:
	STORE8
	VZEROUPPER
	RET

// func sumRowsCSR64(s, x *float32, ptr, idx *int32, nrows, ld int)
// For each of nrows rows u: s[u·ld : u·ld+64] = Σ_{v ∈ idx[ptr[u]:ptr[u+1]]}
// x[v·ld : v·ld+64], in sumRows64's order (one call for a chunk of rows).
TEXT ·sumRowsCSR64(SB), NOSPLIT, $0-48
	MOVQ s+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ ptr+16(FP), DX
	MOVQ idx+24(FP), R8
	MOVQ ld+40(FP), R9
	SHLQ $2, R9 // row stride in bytes
csr64_row:
	MOVLQSX 0(DX), AX
	MOVLQSX 4(DX), CX
	SUBQ AX, CX // rows of u
	LEAQ (R8)(AX*4), BX
	ZERO8
csr64_quad:
	CMPQ CX, $4
	JLT csr64_single
	QUAD64
	ADDQ $16, BX
	SUBQ $4, CX
	JMP csr64_quad
csr64_single:
	TESTQ CX, CX
	JZ csr64_store
	MOVLQSX (BX), AX
	IMULQ R9, AX
	LEAQ (SI)(AX*1), R10
	SINGLE64
	ADDQ $4, BX
	DECQ CX
	JMP csr64_single
csr64_store:
	STORE8
	ADDQ R9, DI
	ADDQ $4, DX
	DECQ nrows+32(FP)
	JNZ csr64_row
	VZEROUPPER
	RET

// func sumRows8(s, x *float32, rows *int32, n, ld int)
TEXT ·sumRows8(SB), NOSPLIT, $0-40
	MOVQ s+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ rows+16(FP), BX
	MOVQ n+24(FP), CX
	MOVQ ld+32(FP), R9
	SHLQ $2, R9 // row stride in bytes
	VXORPS Y1, Y1, Y1
sumRows8_quad:
	CMPQ CX, $4
	JLT sumRows8_single
	QUAD8
	ADDQ $16, BX
	SUBQ $4, CX
	JMP sumRows8_quad
sumRows8_single:
	TESTQ CX, CX
	JZ sumRows8_store
	MOVLQSX (BX), AX
	IMULQ R9, AX
	LEAQ (SI)(AX*1), R10
	VADDPS 0(R10), Y1, Y1
	ADDQ $4, BX
	DECQ CX
	JMP sumRows8_single
sumRows8_store:
	VMOVUPS Y1, 0(DI)
	VZEROUPPER
	RET
