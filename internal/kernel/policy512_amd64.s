//go:build !purego

#include "textflag.h"
#include "policytokens_amd64.h"

// The sixteen-lane (AVX-512) policy kernel. It performs, lane for lane, the
// float32 operations of policyTokensAVX2 in kernel_amd64.s, with the same
// exponential (the polynomial and constants of EXPPS, repeated here as
// single float32 values that the instructions broadcast), and adds its
// per-token terms to the float64 sums in the order that kernel does, so
// the two give the same bits: see policyTokensAVX512 below.

DATA zlog2e<>+0(SB)/4, $0x3fb8aa3b
GLOBL zlog2e<>(SB), RODATA|NOPTR, $4
DATA zmagic<>+0(SB)/4, $0x4b400000
GLOBL zmagic<>(SB), RODATA|NOPTR, $4
DATA zln2hi<>+0(SB)/4, $0x3f318000
GLOBL zln2hi<>(SB), RODATA|NOPTR, $4
DATA zln2lo<>+0(SB)/4, $0xb95e8083
GLOBL zln2lo<>(SB), RODATA|NOPTR, $4
DATA zminarg<>+0(SB)/4, $0xc2b00000
GLOBL zminarg<>(SB), RODATA|NOPTR, $4
DATA zmaxarg<>+0(SB)/4, $0x42b00000
GLOBL zmaxarg<>(SB), RODATA|NOPTR, $4
DATA zone<>+0(SB)/4, $0x3f800000
GLOBL zone<>(SB), RODATA|NOPTR, $4
DATA zhalf<>+0(SB)/4, $0x3f000000
GLOBL zhalf<>(SB), RODATA|NOPTR, $4
DATA zc3<>+0(SB)/4, $0x3e2aaaab
GLOBL zc3<>(SB), RODATA|NOPTR, $4
DATA zc4<>+0(SB)/4, $0x3d2aaaab
GLOBL zc4<>(SB), RODATA|NOPTR, $4
DATA zc5<>+0(SB)/4, $0x3c088889
GLOBL zc5<>(SB), RODATA|NOPTR, $4
DATA zc6<>+0(SB)/4, $0x3ab60b61
GLOBL zc6<>(SB), RODATA|NOPTR, $4
DATA zc7<>+0(SB)/4, $0x39500d01
GLOBL zc7<>(SB), RODATA|NOPTR, $4
DATA zbias<>+0(SB)/4, $0xb4c0007f
GLOBL zbias<>(SB), RODATA|NOPTR, $4
DATA zpairs<>+0(SB)/4, $0
DATA zpairs<>+4(SB)/4, $1
DATA zpairs<>+8(SB)/4, $2
DATA zpairs<>+12(SB)/4, $3
DATA zpairs<>+16(SB)/4, $8
DATA zpairs<>+20(SB)/4, $9
DATA zpairs<>+24(SB)/4, $10
DATA zpairs<>+28(SB)/4, $11
DATA zpairs<>+32(SB)/4, $4
DATA zpairs<>+36(SB)/4, $5
DATA zpairs<>+40(SB)/4, $6
DATA zpairs<>+44(SB)/4, $7
DATA zpairs<>+48(SB)/4, $12
DATA zpairs<>+52(SB)/4, $13
DATA zpairs<>+56(SB)/4, $14
DATA zpairs<>+60(SB)/4, $15
GLOBL zpairs<>(SB), RODATA|NOPTR, $64
DATA khalf<>+0(SB)/2, $0x00ff
GLOBL khalf<>(SB), RODATA|NOPTR, $2

// EXPPS16 sets R = e^X in sixteen float32 lanes for X ≤ 88, leaving X
// unchanged and clobbering T1 and T2. It is EXPPS of kernel_amd64.s, the
// same instructions on wider registers: Cody–Waite reduction in two float32
// parts, Horner's rule on the Taylor series through f^7/7!, 2^n built in
// the exponent field; X is clamped to [−88, 88] first. Z27 holds the 1.5·2^23
// rounding constant, Z28 log2(e), Z29 88 and Z26 1.0 in every lane.
#define EXPPS16(X, R, T1, T2) \
	VMAXPS.BCST zminarg<>(SB), X, T1 \
	VMINPS Z29, T1, T1 \
	VMOVAPS Z27, T2 \
	VFMADD231PS Z28, T1, T2 \
	VSUBPS Z27, T2, R \
	VFNMADD231PS.BCST zln2hi<>(SB), R, T1 \
	VFNMADD231PS.BCST zln2lo<>(SB), R, T1 \
	VBROADCASTSS zc7<>(SB), R \
	VFMADD213PS.BCST zc6<>(SB), T1, R \
	VFMADD213PS.BCST zc5<>(SB), T1, R \
	VFMADD213PS.BCST zc4<>(SB), T1, R \
	VFMADD213PS.BCST zc3<>(SB), T1, R \
	VFMADD213PS.BCST zhalf<>(SB), T1, R \
	VFMADD213PS Z26, T1, R \
	VFMADD213PS Z26, T1, R \
	VPADDD.BCST zbias<>(SB), T2, T2 \
	VPSLLD $23, T2, T2 \
	VMULPS T2, R, R

// CONSTS16 loads the registers EXPPS16 and the policy kernel keep
// constant: Z8 0, Z26 1.0, Z27 the rounding constant, Z28 log2(e), Z29 88,
// Z30 the ACC16 permutation, Z31 −1 in every int32 lane.
#define CONSTS16 \
	VPXORD Z8, Z8, Z8 \
	VBROADCASTSS zone<>(SB), Z26 \
	VBROADCASTSS zmagic<>(SB), Z27 \
	VBROADCASTSS zlog2e<>(SB), Z28 \
	VBROADCASTSS zmaxarg<>(SB), Z29 \
	VMOVDQU32 zpairs<>(SB), Z30 \
	VPTERNLOGD $0xff, Z31, Z31, Z31

// func exp32AVX512(dst, src []float32)
//
// EXPPS16 over a slice, for the tests; len(src) must be a multiple of 16
// and len(dst) ≥ len(src). Lanes above 88 give e^88.
TEXT ·exp32AVX512(SB), NOSPLIT, $0-48
	MOVQ dst_base+0(FP), DI
	MOVQ src_base+24(FP), SI
	MOVQ src_len+32(FP), CX
	SHRQ $4, CX
	JZ   exp32done
	CONSTS16

exp32loop:
	VMOVUPS (SI), Z0
	EXPPS16(Z0, Z4, Z1, Z2)
	VMOVUPS Z4, (DI)
	ADDQ    $64, SI
	ADDQ    $64, DI
	DECQ    CX
	JNZ     exp32loop

exp32done:
	VZEROUPPER
	RET

// ACC16 adds the sixteen float32 lanes t0…t15 of Z (Y is its low half) to
// the four-lane float64 accumulator A in the order of policyTokensAVX2's
// ACC over the same sixteen tokens as two blocks of eight: lane i of A
// takes t_i + t_{i+4} (each widened), then t_{8+i} + t_{12+i}. Z30 orders
// the lanes t0…3, t8…11, t4…7, t12…15 so that one widening add forms
// all eight pairs. It clobbers Z and T (TY is its low half).
#define ACC16(A, Z, Y, T, TY) \
	VPERMPS Z, Z30, Z \
	VCVTPS2PD Y, T \
	VEXTRACTF64X4 $1, Z, Y \
	VCVTPS2PD Y, Z \
	VADDPD Z, T, T \
	VADDPD TY, A, A \
	VEXTRACTF64X4 $1, T, TY \
	VADDPD TY, A, A

// COUNT16 adds −1 to the int32 counter C in the lanes of mask K; the
// caller negates the sum.
#define COUNT16(C, K) \
	VPADDD Z31, C, K, C

// FLAG16 marks as bad (K6) the lanes of Z greater than 88, whose
// exponential the kernel cannot hold in float32, using K as scratch.
#define FLAG16(Z, K) \
	VCMPPS $0x1e, Z29, Z, K \
	KORW   K, K6, K6

// Scratch of policyTokensAVX512, per step of sixteen tokens of a block of
// 128: the ratio, the KL derivative, the uncapped behaviour weight, the
// lanes the log-ratio clamp left live (a 16-bit mask), each at its own
// 512-byte array on the stack.
#define sR 0
#define sDK 512
#define sW 1024
#define sLive 1536

// STEPMASK sets K7 to the lanes in range of a step given the number of
// blocks of eight left, N: all sixteen, or the lower eight when N is 1.
#define STEPMASK(N, L) \
	KXNORW K7, K7, K7 \
	CMPQ N, $1 \
	JNE  L \
	KMOVW khalf<>(SB), K7 \
L:

// func policyTokensAVX512(k *PolicyTokens)
//
// policyTokensAVX2 in sixteen lanes; see PolicyTokens for the contract. It
// takes the first N&^7 tokens sixteen at a time and, if N&^7 is an odd
// number of eights, the last eight as a sixteen-lane step whose upper lanes
// K7 switches off (their loads read nothing and their stores write
// nothing).
//
// It works through blocks of 128 tokens in two passes. The first checks
// the inputs and evaluates the exponentials — the ratio, the behaviour
// weight, the KL estimate — with the sums that need nothing else; the
// second forms the surrogate, the weights and the gradient from what the
// first left in scratch. One pass per token would put each exponential's
// chain of dependent instructions (about fifty cycles) in the way of the
// next token's work: the loop ran at about half the speed the instruction
// count allows.
//
// Same bits as policyTokensAVX2: every lane performs the same float32
// operations in the same order; masked-off lanes give terms of ±0; ACC16
// adds the terms to the float64 sums in the order the eight-lane kernel
// does (each sum is taken in one pass, so in token order), and a sum that
// starts at +0 never becomes −0, so the ±0 of a switched-off lane (or of a
// block of eight the eight-lane kernel skips for having no valid token)
// leaves it unchanged. The counters and the largest behaviour weight are
// kept in sixteen lanes and folded into eight at the end (integer sums and
// maxima do not depend on order); Bad gets one bit for each of the
// sixteen lanes.
//
// Registers: K7 lanes in range, K1 valid lanes (in range, mask == 1), K6
// the lanes found bad, K2 the lanes the clamp left live; Z1 logp, Z2 base
// log-prob, Z3 advantage, Z9 the behaviour log-ratio, Z10 the token
// weight, Z11 the ratio, Z15 the KL log-ratio x; Y16–Y20 the float64 sums
// of Policy, KLSum, NegDelta, Ratio, Behave; Z21–Z24 the counters High,
// Low, DualN, Capped; Z25 the largest behaviour weight; Z8 and Z26–Z31 the
// constants of CONSTS16. R12 is the byte offset of the step in the arrays,
// R14 in the block's scratch; R11 counts the blocks of eight left (R13 in
// the first pass).
TEXT ·policyTokensAVX512(SB), 0, $2048-8
	MOVQ k+0(FP), R8
	MOVQ pLogp(R8), AX
	MOVQ pOld(R8), BX
	MOVQ pAdv(R8), CX
	MOVQ pMask(R8), DX
	MOVQ pProx(R8), SI
	MOVQ pRef(R8), DI
	MOVQ pTW(R8), R9
	MOVQ pGrad(R8), R10
	MOVQ pN(R8), R11
	SHRQ $3, R11 // blocks of eight
	XORQ R12, R12
	KXORW K6, K6, K6
	TESTQ R11, R11
	JZ   empty
	CONSTS16
	VMOVUPD pPolicy(R8), Y16
	VMOVUPD pKLSum(R8), Y17
	VMOVUPD pNegDelta(R8), Y18
	VMOVUPD pRatio(R8), Y19
	VMOVUPD pBehave(R8), Y20
	VPXORD Z21, Z21, Z21
	VPXORD Z22, Z22, Z22
	VPXORD Z23, Z23, Z23
	VPXORD Z24, Z24, Z24
	VBROADCASTF64X4 pBehaveMax(R8), Z25

block:
	MOVQ R11, R13
	XORQ R14, R14

	// First pass: inputs, the log-ratio and its clamp, the exponentials,
	// the KL estimate; the sums NegDelta, Ratio, KLSum.
p1:
	STEPMASK(R13, p1range)
	VMOVUPS.Z (DX)(R12*1), K7, Z0
	VCMPPS $0x00, Z26, Z0, K7, K1 // valid = in range && mask == 1
	KORTESTW K1, K1
	JZ   p1next                   // the second pass skips the step too

	// Inputs, loaded as 0 on invalid lanes: the finiteness check sums
	// them as policyTokensAVX2 does and finds those lanes finite, as that
	// kernel's masking does.
	VMOVUPS.Z (AX)(R12*1), K1, Z1 // l
	VMOVUPS.Z (BX)(R12*1), K1, Z2 // old
	VMOVUPS.Z (CX)(R12*1), K1, Z3 // a
	VADDPS Z1, Z2, Z6             // check = l + old + a (+ each optional input)
	VADDPS Z3, Z6, Z6

	CMPQ pHasProx(R8), $0
	JEQ  p1noprox
	VMOVUPS.Z (SI)(R12*1), K1, Z7 // p
	VADDPS Z7, Z6, Z6
	VSUBPS Z2, Z7, Z9             // behaviour log-ratio p − old
	VMOVAPS Z7, Z2                // the ratio is taken against p

p1noprox:
	CMPQ pHasRef(R8), $0
	JEQ  p1noref
	VMOVUPS.Z (DI)(R12*1), K1, Z7 // ref
	VADDPS Z7, Z6, Z6
	VSUBPS Z7, Z1, Z15            // x = l − ref

p1noref:
	CMPQ pHasTW(R8), $0
	JEQ  p1notw
	VMOVUPS.Z (R9)(R12*1), K1, Z10 // token weight
	VADDPS Z10, Z6, Z6
	VCMPPS $0x11, Z8, Z10, K2      // weight < 0
	KORW K2, K6, K6

p1notw:
	VSUBPS Z6, Z6, Z6              // check − check is 0 exactly when finite
	VCMPPS $0x04, Z8, Z6, K2       // ≠ 0 or NaN
	KORW K2, K6, K6

	VSUBPS Z2, Z1, Z4              // d = l − base
	VSUBPS Z1, Z2, Z6              // −d
	ACC16(Y18, Z6, Y6, Z7, Y7)
	VMAXPS.BCST pNegClamp(R8), Z4, Z5
	VMINPS.BCST pClamp(R8), Z5, Z5 // dc = clamp(d)
	VCMPPS $0x00, Z5, Z4, K2       // live = (d == dc)
	KMOVW K2, sLive(SP)(R14*1)
	FLAG16(Z5, K3)
	EXPPS16(Z5, Z11, Z12, Z13)     // r = e^dc
	VMOVUPS Z11, sR(SP)(R14*1)
	VMOVAPS.Z Z11, K1, Z12
	ACC16(Y19, Z12, Y12, Z13, Y13)

	CMPQ pHasProx(R8), $0
	JEQ  p1kl
	FLAG16(Z9, K3)
	EXPPS16(Z9, Z12, Z7, Z13)      // behaviour weight, before the cap
	VMOVUPS Z12, sW(SP)(R14*1)

p1kl:
	CMPQ pKL(R8), $0
	JEQ  p1next
	CMPQ pKL(R8), $1
	JNE  p1k2
	VMOVAPS.Z Z26, K1, Z13         // k1: k = x, dk = 1
	VMOVAPS Z15, Z12
	JMP  p1klsum

p1k2:
	CMPQ pKL(R8), $2
	JNE  p1k3
	VMULPS Z15, Z15, Z12           // k2: k = x²/2, dk = x
	VMULPS.BCST zhalf<>(SB), Z12, Z12
	VMOVAPS Z15, Z13
	JMP  p1klsum

p1k3:
	// k3 as policyTokensAVX2 computes it: y = −x = n·ln2 + f, e^f = 1 + f
	// + q; k = q and dk = −(f + q) where n = 0, else from e = 2^n·(1 + f
	// + q).
	VSUBPS Z15, Z8, Z7             // y = −x
	FLAG16(Z7, K3)
	VMAXPS.BCST zminarg<>(SB), Z7, Z1
	VMINPS Z29, Z1, Z1
	VMOVAPS Z27, Z2
	VFMADD231PS Z28, Z1, Z2
	VSUBPS Z27, Z2, Z3             // n
	VFNMADD231PS.BCST zln2hi<>(SB), Z3, Z1
	VFNMADD231PS.BCST zln2lo<>(SB), Z3, Z1 // f
	VBROADCASTSS zc7<>(SB), Z4
	VFMADD213PS.BCST zc6<>(SB), Z1, Z4
	VFMADD213PS.BCST zc5<>(SB), Z1, Z4
	VFMADD213PS.BCST zc4<>(SB), Z1, Z4
	VFMADD213PS.BCST zc3<>(SB), Z1, Z4
	VFMADD213PS.BCST zhalf<>(SB), Z1, Z4
	VMULPS Z1, Z1, Z5
	VMULPS Z5, Z4, Z4              // q
	VADDPS Z4, Z1, Z5              // f + q
	VADDPS Z26, Z5, Z9
	VPADDD.BCST zbias<>(SB), Z2, Z2
	VPSLLD $23, Z2, Z2
	VMULPS Z2, Z9, Z9              // e = e^y
	VSUBPS Z26, Z9, Z9
	VCMPPS $0x00, Z8, Z3, K3       // n == 0
	VBLENDMPS Z5, Z9, K3, Z9       // e − 1
	VADDPS Z15, Z9, Z12
	VBLENDMPS Z4, Z12, K3, Z12     // k = e − 1 + x
	VSUBPS Z9, Z8, Z13             // dk = 1 − e
	VCMPPS.BCST $0x1e, pKLClamp(R8), Z12, K3
	VBLENDMPS.BCST pKLClamp(R8), Z12, K3, Z12
	KANDNW K1, K3, K4              // valid and k not clamped
	VMOVAPS.Z Z13, K4, Z13

p1klsum:
	ACC16(Y17, Z12, Y12, Z7, Y7)
	VMOVUPS Z13, sDK(SP)(R14*1)

p1next:
	ADDQ $64, R12
	ADDQ $64, R14
	SUBQ $2, R13
	JLE  p1done
	CMPQ R14, $512
	JLT  p1

p1done:
	SUBQ R14, R12 // back to the block's first step
	XORQ R14, R14

	// Second pass: the surrogate, the weights, the loss and the gradient;
	// the sums Policy and Behave, the counters.
p2:
	STEPMASK(R11, p2range)
	VMOVUPS.Z (DX)(R12*1), K7, Z0
	VCMPPS $0x00, Z26, Z0, K7, K1 // valid
	KORTESTW K1, K1
	JZ   skip
	VMOVUPS.Z (CX)(R12*1), K1, Z3 // a
	VMOVAPS.Z Z26, K1, Z10        // token weight
	CMPQ pHasTW(R8), $0
	JEQ  p2notw
	VMOVUPS.Z (R9)(R12*1), K1, Z10

p2notw:
	VMOVUPS sR(SP)(R14*1), Z11    // r
	KMOVW sLive(SP)(R14*1), K2    // live

	// The surrogate: which bound is active, the effective ratio reff
	// (loss = −a·reff) and the lanes with no gradient (K5).
	VCMPPS $0x1e, Z8, Z3, K3                  // a > 0
	VCMPPS.BCST $0x1e, pHi(R8), Z11, K3, K4   // high = a > 0 && r > hi
	COUNT16(Z21, K4)
	VBLENDMPS.BCST pHi(R8), Z11, K4, Z5
	KMOVW K4, K5
	VCMPPS $0x11, Z8, Z3, K3                  // a < 0
	VCMPPS.BCST $0x11, pLo(R8), Z11, K3, K4   // low = a < 0 && r < lo
	KORW K4, K5, K5
	VBLENDMPS.BCST pLo(R8), Z5, K4, Z5
	COUNT16(Z22, K4)
	VCMPPS.BCST $0x1e, pDual(R8), Z11, K3, K4 // dual = a < 0 && r > c
	KORW K4, K5, K5
	VBLENDMPS.BCST pDual(R8), Z5, K4, Z5
	COUNT16(Z23, K4)
	VMULPS Z3, Z5, Z5                         // a·reff = −loss
	KANDNW K2, K5, K2                         // g = live && no bound active
	VMULPS.Z Z3, Z11, K2, Z6                  // a·r·g = −dLoss/dlogp of the surrogate

	CMPQ pHasProx(R8), $0
	JEQ  weighted
	VMOVUPS sW(SP)(R14*1), Z12                // behaviour weight
	VCMPPS.BCST $0x1e, pCapAt(R8), Z12, K3
	KANDW K1, K3, K4
	COUNT16(Z24, K4)
	VBLENDMPS.BCST pCapTo(R8), Z12, K3, Z12
	VMOVAPS.Z Z12, K1, Z12
	VMAXPS Z25, Z12, Z25
	VMULPS Z12, Z10, Z10
	ACC16(Y20, Z12, Y12, Z13, Y13)

weighted:
	VMULPS Z10, Z5, Z5
	VSUBPS Z5, Z8, Z5              // loss = −a·reff·w
	ACC16(Y16, Z5, Y5, Z7, Y7)
	VMULPS Z10, Z6, Z6             // u = a·r·g·w
	CMPQ pKL(R8), $0
	JEQ  nokl
	VMOVUPS sDK(SP)(R14*1), Z13    // dk
	VFMSUB231PS.BCST pBeta(R8), Z13, Z6 // β·dk − u
	JMP  grad

nokl:
	VSUBPS Z6, Z8, Z6              // −u

grad:
	VMULPS.BCST pCoef(R8), Z6, Z6  // dLoss/dlogp = coef·(β·dk − u)
	VADDPS Z8, Z6, Z6              // + 0 turns −0 into +0, as the Go loop does
	VSUBPS Z6, Z6, Z7
	VCMPPS $0x04, Z8, Z7, K1, K3   // overflow or NaN on a valid lane
	KORW K3, K6, K6
	VMOVUPS Z6, K7, (R10)(R12*1)
	JMP  next

skip:
	VMOVUPS Z8, K7, (R10)(R12*1)

next:
	ADDQ $64, R12
	ADDQ $64, R14
	SUBQ $2, R11
	JLE  done
	CMPQ R14, $512
	JLT  p2
	JMP  block

done:
	VMOVUPD Y16, pPolicy(R8)
	VMOVUPD Y17, pKLSum(R8)
	VMOVUPD Y18, pNegDelta(R8)
	VMOVUPD Y19, pRatio(R8)
	VMOVUPD Y20, pBehave(R8)
	VEXTRACTI64X4 $1, Z21, Y0
	VPADDD Y0, Y21, Y21
	VPADDD pHigh(R8), Y21, Y21
	VMOVDQU32 Y21, pHigh(R8)
	VEXTRACTI64X4 $1, Z22, Y0
	VPADDD Y0, Y22, Y22
	VPADDD pLow(R8), Y22, Y22
	VMOVDQU32 Y22, pLow(R8)
	VEXTRACTI64X4 $1, Z23, Y0
	VPADDD Y0, Y23, Y23
	VPADDD pDualN(R8), Y23, Y23
	VMOVDQU32 Y23, pDualN(R8)
	VEXTRACTI64X4 $1, Z24, Y0
	VPADDD Y0, Y24, Y24
	VPADDD pCapped(R8), Y24, Y24
	VMOVDQU32 Y24, pCapped(R8)
	VEXTRACTF64X4 $1, Z25, Y0
	VMAXPS Y0, Y25, Y25
	VMOVUPS Y25, pBehaveMax(R8)

empty:
	KMOVW K6, R13
	MOVQ R13, pBad(R8)
	VZEROUPPER
	RET

// func countMaskAVX512(m []float32) int
//
// countMaskAVX2 sixteen entries at a time, two blocks per iteration: the
// number of entries equal to 1, or −1 as soon as an entry is neither 0 nor
// 1 (NaN included); len(m) must be a multiple of 16.
TEXT ·countMaskAVX512(SB), NOSPLIT, $0-32
	MOVQ m_base+0(FP), SI
	MOVQ m_len+8(FP), CX
	SHRQ $4, CX
	XORQ AX, AX
	XORQ BX, BX
	VBROADCASTSS zone<>(SB), Z1
	VPXORD Z2, Z2, Z2
	TESTQ $1, CX
	JZ   count2

	VMOVUPS (SI), Z0
	VCMPPS $0x00, Z1, Z0, K1 // == 1
	VCMPPS $0x00, Z2, Z0, K2 // == 0
	KORTESTW K2, K1          // CF: every entry is 0 or 1
	JCC  countbad
	KMOVW K1, DX
	POPCNTL DX, AX
	ADDQ $64, SI

count2:
	SHRQ $1, CX
	JZ   countdone

countloop:
	VMOVUPS (SI), Z0
	VMOVUPS 64(SI), Z3
	VCMPPS $0x00, Z1, Z0, K1
	VCMPPS $0x00, Z2, Z0, K2
	VCMPPS $0x00, Z1, Z3, K3
	VCMPPS $0x00, Z2, Z3, K4
	KORTESTW K2, K1
	JCC  countbad
	KORTESTW K4, K3
	JCC  countbad
	KUNPCKWD K1, K3, K1 // the 32 lanes of both blocks
	KMOVD K1, DX
	POPCNTL DX, DX
	ADDQ DX, AX
	ADDQ $128, SI
	DECQ CX
	JNZ  countloop

countdone:
	VZEROUPPER
	MOVQ AX, ret+24(FP)
	RET

countbad:
	VZEROUPPER
	MOVQ $-1, ret+24(FP)
	RET
