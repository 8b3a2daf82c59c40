//go:build !purego

#include "textflag.h"

// The logarithm of logs (log.go) in eight float64 lanes of AVX-512F: the
// same reduction to z·2^k with z ∈ [0.75, 1.5), found here by VGETMANTPD
// and VGETEXPPD (which also take subnormals), the same 128-bucket tables,
// gathered, and the same degree-7 series of log1p(r), |r| < 2⁻⁷. Lanes
// whose input is 0 give 0 (0·log 0 = 0).

// CONSTS broadcasts the constants of LOG8 into Z16–Z26; R8 and R9 must
// hold the tables 1/c and −log(1/c).
#define CONSTS \
	MOVQ $0x3ff0000000000000, AX \
	VPBROADCASTQ AX, Z16 \
	MOVQ $0x3fc2492492492492, AX \
	VPBROADCASTQ AX, Z17 \
	MOVQ $0xbfc5555555555555, AX \
	VPBROADCASTQ AX, Z18 \
	MOVQ $0x3fc999999999999a, AX \
	VPBROADCASTQ AX, Z19 \
	MOVQ $0xbfd0000000000000, AX \
	VPBROADCASTQ AX, Z20 \
	MOVQ $0x3fd5555555555555, AX \
	VPBROADCASTQ AX, Z21 \
	MOVQ $0xbfe0000000000000, AX \
	VPBROADCASTQ AX, Z22 \
	MOVQ $0x3fe62e42fee00000, AX \
	VPBROADCASTQ AX, Z23 \
	MOVQ $0x3dea39ef35793c76, AX \
	VPBROADCASTQ AX, Z24 \
	MOVQ $0x3fe8000000000000, AX \
	VPBROADCASTQ AX, Z25 \
	VXORPD Z26, Z26, Z26

// LOG8 writes log Z0 into Z9 lane by lane (0 where Z0 is 0); it uses
// Z1–Z8 and K1–K3.
#define LOG8 \
	VGETMANTPD $3, Z0, Z1 \
	VGETEXPPD Z0, Z2 \
	VCMPPD $1, Z16, Z1, K3 \
	VADDPD Z16, Z2, K3, Z2 \
	VPSUBQ Z25, Z1, Z4 \
	VPSRLQ $45, Z4, Z4 \
	KXNORW K1, K1, K1 \
	VGATHERQPD (R8)(Z4*8), K1, Z5 \
	KXNORW K1, K1, K1 \
	VGATHERQPD (R9)(Z4*8), K1, Z6 \
	VFMSUB213PD Z16, Z1, Z5 \
	VMULPD Z5, Z5, Z7 \
	VMOVAPD Z17, Z8 \
	VFMADD213PD Z18, Z5, Z8 \
	VFMADD213PD Z19, Z5, Z8 \
	VFMADD213PD Z20, Z5, Z8 \
	VFMADD213PD Z21, Z5, Z8 \
	VFMADD213PD Z22, Z5, Z8 \
	VFMADD213PD Z5, Z7, Z8 \
	VFMADD231PD Z23, Z2, Z6 \
	VFMADD231PD Z24, Z2, Z8 \
	VADDPD Z8, Z6, Z6 \
	VCMPPD $4, Z26, Z0, K2 \
	VXORPD Z9, Z9, Z9 \
	VMOVAPD Z6, K2, Z9

// func plogp32AVX512(x *float32, n int, inv, lg *float64) (s, sum float64, ok bool)
//
// s = Σ x·log x, sum = Σ x, and ok whether every x is finite and ≥ 0.
TEXT ·plogp32AVX512(SB), NOSPLIT, $0-49
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	MOVQ inv+16(FP), R8
	MOVQ lg+24(FP), R9
	CONSTS
	MOVQ $0x7ff0000000000000, AX
	VPBROADCASTQ AX, Z27
	VXORPD Z10, Z10, Z10
	VXORPD Z11, Z11, Z11
	KXNORW K6, K6, K6
	TESTQ CX, CX
	JZ plogpdone

plogploop:
	VCVTPS2PD (SI), Z0
	VCMPPD $0x1d, Z26, Z0, K4
	VCMPPD $0x11, Z27, Z0, K5
	KANDW K4, K5, K4
	KANDW K4, K6, K6
	VADDPD Z0, Z11, Z11
	LOG8
	VFMADD231PD Z9, Z0, Z10
	ADDQ $32, SI
	SUBQ $8, CX
	JNZ plogploop

plogpdone:
	VEXTRACTF64X4 $1, Z10, Y1
	VADDPD Y1, Y10, Y10
	VEXTRACTF128 $1, Y10, X1
	VADDPD X1, X10, X10
	VPERMILPD $1, X10, X1
	VADDSD X1, X10, X10
	VEXTRACTF64X4 $1, Z11, Y1
	VADDPD Y1, Y11, Y11
	VEXTRACTF128 $1, Y11, X1
	VADDPD X1, X11, X11
	VPERMILPD $1, X11, X1
	VADDSD X1, X11, X11
	VZEROUPPER
	MOVSD X10, s+32(FP)
	MOVSD X11, sum+40(FP)
	KMOVW K6, AX
	CMPW AX, $0xff
	SETEQ ok+48(FP)
	RET

// func logs64AVX512(dst, x *float64, n int, scale float64, inv, lg *float64)
TEXT ·logs64AVX512(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
	VBROADCASTSD scale+24(FP), Z12
	MOVQ inv+32(FP), R8
	MOVQ lg+40(FP), R9
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

// func dot32AVX512(x *float32, y *float64, n int) float64
TEXT ·dot32AVX512(SB), NOSPLIT, $0-32
	MOVQ x+0(FP), SI
	MOVQ y+8(FP), DI
	MOVQ n+16(FP), CX
	VXORPD Z10, Z10, Z10
	VXORPD Z11, Z11, Z11
	TESTQ CX, CX
	JZ dotdone

dotloop:
	VCVTPS2PD (SI), Z0
	VFMADD231PD (DI), Z0, Z10
	ADDQ $32, SI
	ADDQ $64, DI
	SUBQ $8, CX
	JNZ dotloop

dotdone:
	VEXTRACTF64X4 $1, Z10, Y1
	VADDPD Y1, Y10, Y10
	VEXTRACTF128 $1, Y10, X1
	VADDPD X1, X10, X10
	VPERMILPD $1, X10, X1
	VADDSD X1, X10, X10
	VZEROUPPER
	MOVSD X10, ret+24(FP)
	RET

// func add32AVX512(dst *float64, x *float32, n int)
TEXT ·add32AVX512(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
	TESTQ CX, CX
	JZ adddone

addloop:
	VCVTPS2PD (SI), Z0
	VADDPD (DI), Z0, Z0
	VMOVUPD Z0, (DI)
	ADDQ $32, SI
	ADDQ $64, DI
	SUBQ $8, CX
	JNZ addloop

adddone:
	VZEROUPPER
	RET
