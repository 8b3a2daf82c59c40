//go:build !purego

#include "textflag.h"

// The logarithm of the AVX-512 loops (log_amd64.go has the derivation and
// the table avxLog): x = 2^k·z with z ∈ [0.734375, 1.46875), found by
// VGETMANTPD and VGETEXPPD (which also take subnormals) and a halving of
// the z ≥ 1.46875 that VGETMANTPD's range [0.75, 1.5) leaves; z falls in
// one of 16 buckets whose 1/c and −log(1/c) sit in four registers, picked
// by VPERMI2PD (no gather, no memory access); log1p(r), r = z·(1/c) − 1,
// |r| ≤ 2⁻⁵, is its Taylor series through r¹⁰. Lanes whose input is 0 give
// 0 (0·log 0 = 0).

// CONSTS loads the constants of LOG8 into Z13–Z31 from the table at R8
// (avxLog's layout).
#define CONSTS \
	VXORPD Z13, Z13, Z13 \
	VBROADCASTSD 320(R8), Z14 \
	VBROADCASTSD 328(R8), Z15 \
	VBROADCASTSD 360(R8), Z16 \
	VBROADCASTSD 336(R8), Z17 \
	VBROADCASTSD 344(R8), Z18 \
	VBROADCASTSD 352(R8), Z19 \
	VMOVUPD 0(R8), Z20 \
	VMOVUPD 64(R8), Z21 \
	VMOVUPD 128(R8), Z22 \
	VMOVUPD 192(R8), Z23 \
	VBROADCASTSD 256(R8), Z24 \
	VBROADCASTSD 264(R8), Z25 \
	VBROADCASTSD 272(R8), Z26 \
	VBROADCASTSD 280(R8), Z27 \
	VBROADCASTSD 288(R8), Z28 \
	VBROADCASTSD 296(R8), Z29 \
	VBROADCASTSD 304(R8), Z30 \
	VBROADCASTSD 312(R8), Z31

// LOG8 writes log Z0 into Z9 lane by lane (0 where Z0 is 0); it uses
// Z1–Z8 and K2–K4. Z13 = 0, Z14 = 1, Z15 = ½, Z16 = the bits of the bottom
// of bucket 0, Z17 = 1.46875, Z18/Z19 = ln 2 in two parts, Z20/Z21 = 1/c,
// Z22/Z23 = −log(1/c), Z24–Z31 = the coefficients of r³ … r¹⁰.
#define LOG8 \
	VGETMANTPD $3, Z0, Z1 \
	VGETEXPPD Z0, Z2 \
	VCMPPD $1, Z14, Z1, K3 \
	VCMPPD $0x1d, Z17, Z1, K4 \
	KORW K3, K4, K3 \
	VADDPD Z14, Z2, K3, Z2 \
	VMULPD Z15, Z1, K4, Z1 \
	VPSUBQ Z16, Z1, Z3 \
	VPSRLQ $48, Z3, Z3 \
	VMOVDQA64 Z3, Z4 \
	VPERMI2PD Z21, Z20, Z4 \
	VPERMI2PD Z23, Z22, Z3 \
	VFMSUB213PD Z14, Z1, Z4 \
	VMULPD Z4, Z4, Z7 \
	VMOVAPD Z31, Z8 \
	VFMADD213PD Z30, Z4, Z8 \
	VFMADD213PD Z29, Z4, Z8 \
	VFMADD213PD Z28, Z4, Z8 \
	VFMADD213PD Z27, Z4, Z8 \
	VFMADD213PD Z26, Z4, Z8 \
	VFMADD213PD Z25, Z4, Z8 \
	VFMADD213PD Z24, Z4, Z8 \
	VFMSUB213PD Z15, Z4, Z8 \
	VFMADD213PD Z4, Z7, Z8 \
	VFMADD231PD Z18, Z2, Z3 \
	VFMADD231PD Z19, Z2, Z8 \
	VCMPPD $4, Z13, Z0, K2 \
	VADDPD.Z Z8, Z3, K2, Z9

// SUM8 leaves the sum of the eight lanes of Z in the low lane of X, in a
// fixed order; it uses Y1 and X1.
#define SUM8(Z, Y, X) \
	VEXTRACTF64X4 $1, Z, Y1 \
	VADDPD Y1, Y, Y \
	VEXTRACTF128 $1, Y, X1 \
	VADDPD X1, X, X \
	VPERMILPD $1, X, X1 \
	VADDSD X1, X, X

// MIN8 leaves the least of the eight lanes of Z in the low lane of X; it
// uses Y1 and X1.
#define MIN8(Z, Y, X) \
	VEXTRACTF64X4 $1, Z, Y1 \
	VMINPD Y1, Y, Y \
	VEXTRACTF128 $1, Y, X1 \
	VMINPD X1, X, X \
	VPERMILPD $1, X, X1 \
	VMINSD X1, X, X

// func plogp32AVX512(x *float32, n int, next *float32, tab *float64) (s, sum, least float64)
//
// s = Σ x·log x, sum = Σ x and least = min(0, min x) over n = 8m floats.
// A NaN or infinite x makes sum NaN or infinite; a negative one makes
// least negative. The n floats at next, the caller's next block, are
// prefetched meanwhile: the blocks are short, too short for the
// processor's own prefetcher to find them in time.
TEXT ·plogp32AVX512(SB), NOSPLIT, $0-56
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	MOVQ next+16(FP), R10
	MOVQ tab+24(FP), R8
	CONSTS
	VXORPD Z10, Z10, Z10
	VXORPD Z11, Z11, Z11
	VXORPD Z12, Z12, Z12
	TESTQ CX, CX
	JZ plogpdone

plogploop:
	PREFETCHT0 (R10)
	ADDQ $32, R10
	VCVTPS2PD (SI), Z0
	VADDPD Z0, Z11, Z11
	VMINPD Z0, Z12, Z12
	LOG8
	VFMADD231PD Z9, Z0, Z10
	ADDQ $32, SI
	SUBQ $8, CX
	JNZ plogploop

plogpdone:
	SUM8(Z10, Y10, X10)
	SUM8(Z11, Y11, X11)
	MIN8(Z12, Y12, X12)
	VZEROUPPER
	MOVSD X10, s+32(FP)
	MOVSD X11, sum+40(FP)
	MOVSD X12, least+48(FP)
	RET

// func sum32AVX512(x *float32, n int, next *float32) (sum, least float64)
//
// sum = Σ x and least = min(0, min x) over n = 8m floats, as
// plogp32AVX512 has them, prefetching the n floats at next like it.
TEXT ·sum32AVX512(SB), NOSPLIT, $0-40
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	MOVQ next+16(FP), R10
	VXORPD Z11, Z11, Z11
	VXORPD Z12, Z12, Z12
	TESTQ CX, CX
	JZ sumdone

sumloop:
	PREFETCHT0 (R10)
	ADDQ $32, R10
	VCVTPS2PD (SI), Z0
	VADDPD Z0, Z11, Z11
	VMINPD Z0, Z12, Z12
	ADDQ $32, SI
	SUBQ $8, CX
	JNZ sumloop

sumdone:
	SUM8(Z11, Y11, X11)
	MIN8(Z12, Y12, X12)
	VZEROUPPER
	MOVSD X11, sum+24(FP)
	MOVSD X12, least+32(FP)
	RET

// func logs64AVX512(dst, x *float64, n int, scale float64, tab *float64)
//
// dst = log(x·scale) over n = 8m values, 0 where x is 0.
TEXT ·logs64AVX512(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
	VBROADCASTSD scale+24(FP), Z12
	MOVQ tab+32(FP), R8
	CONSTS
	TESTQ CX, CX
	JZ logsdone

logsloop:
	VMULPD (SI), Z12, Z0
	LOG8
	VMOVUPD Z9, (DI)
	ADDQ $64, SI
	ADDQ $64, DI
	SUBQ $8, CX
	JNZ logsloop

logsdone:
	VZEROUPPER
	RET

// func slot32AVX512(rows *[]float32, m, off, n int, acc *float64, scale float64, out *float64, tab *float64, next *[]float32, nextM int)
//
// One slot on one block of the vocabulary: with p_e = rows[e][off:off+n]
// for the m ≥ 1 members e and n = 8j, acc = log(scale·Σ_e p_e) (0 where
// the sum is 0), then out[e] += Σ p_e·acc. The members' blocks are read
// twice, the second time from the first-level cache; meanwhile the same
// block of the next slot's first min(m, nextM) members, next[e][off:off+n],
// is prefetched.
TEXT ·slot32AVX512(SB), NOSPLIT, $0-80
	MOVQ rows+0(FP), BX
	MOVQ m+8(FP), R9
	MOVQ off+16(FP), DX
	SHLQ $2, DX
	MOVQ n+24(FP), CX
	MOVQ acc+32(FP), DI
	VBROADCASTSD scale+40(FP), Z12
	MOVQ tab+56(FP), R8
	CONSTS
	TESTQ CX, CX
	JZ slotdone

	// acc = log(scale · Σ_e p_e), eight words at a time, four members
	// at a time.
meanloop:
	VXORPD Z0, Z0, Z0
	MOVQ BX, R11
	MOVQ R9, R12
	CMPQ R12, $4
	JLT memberone

memberfour:
	MOVQ (R11), R10
	VCVTPS2PD (R10)(DX*1), Z1
	MOVQ 24(R11), R10
	VCVTPS2PD (R10)(DX*1), Z2
	MOVQ 48(R11), R10
	VCVTPS2PD (R10)(DX*1), Z3
	MOVQ 72(R11), R10
	VCVTPS2PD (R10)(DX*1), Z4
	VADDPD Z2, Z1, Z1
	VADDPD Z4, Z3, Z3
	VADDPD Z3, Z1, Z1
	VADDPD Z1, Z0, Z0
	ADDQ $96, R11
	SUBQ $4, R12
	CMPQ R12, $4
	JGE memberfour

memberone:
	TESTQ R12, R12
	JZ meandone
	MOVQ (R11), R10
	VCVTPS2PD (R10)(DX*1), Z1
	VADDPD Z1, Z0, Z0
	ADDQ $24, R11
	DECQ R12
	JMP memberone

meandone:
	VMULPD Z12, Z0, Z0
	LOG8
	VMOVUPD Z9, (DI)
	ADDQ $64, DI
	ADDQ $32, DX
	SUBQ $8, CX
	JNZ meanloop

	// out[e] += Σ p_e·acc, member by member, in two accumulators, with
	// R12 walking the next slot's member e (or this one's, past its
	// members).
	MOVQ off+16(FP), DX
	SHLQ $2, DX
	MOVQ out+48(FP), AX
	MOVQ next+64(FP), R11
	MOVQ nextM+72(FP), R13

dotmember:
	MOVQ (BX), SI
	ADDQ DX, SI
	MOVQ SI, R12
	TESTQ R13, R13
	JZ dotstart
	MOVQ (R11), R12
	ADDQ DX, R12
	ADDQ $24, R11
	DECQ R13

dotstart:
	MOVQ acc+32(FP), DI
	MOVQ n+24(FP), CX
	VXORPD Z10, Z10, Z10
	VXORPD Z11, Z11, Z11
	CMPQ CX, $16
	JLT dottail

dotloop:
	PREFETCHT0 (R12)
	ADDQ $64, R12
	VCVTPS2PD (SI), Z0
	VCVTPS2PD 32(SI), Z1
	VFMADD231PD (DI), Z0, Z10
	VFMADD231PD 64(DI), Z1, Z11
	ADDQ $64, SI
	ADDQ $128, DI
	SUBQ $16, CX
	CMPQ CX, $16
	JGE dotloop

dottail:
	TESTQ CX, CX
	JZ dotsum
	VCVTPS2PD (SI), Z0
	VFMADD231PD (DI), Z0, Z10

dotsum:
	VADDPD Z11, Z10, Z10
	SUM8(Z10, Y10, X10)
	VADDSD (AX), X10, X10
	VMOVSD X10, (AX)
	ADDQ $8, AX
	ADDQ $24, BX
	DECQ R9
	JNZ dotmember

slotdone:
	VZEROUPPER
	RET
