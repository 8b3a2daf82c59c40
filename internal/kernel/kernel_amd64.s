//go:build !purego

#include "textflag.h"

// Constants, each repeated in four lanes so that it can be a 256-bit memory
// operand.
DATA klog2e<>+0(SB)/8, $0x3ff71547652b82fe
DATA klog2e<>+8(SB)/8, $0x3ff71547652b82fe
DATA klog2e<>+16(SB)/8, $0x3ff71547652b82fe
DATA klog2e<>+24(SB)/8, $0x3ff71547652b82fe
GLOBL klog2e<>(SB), RODATA|NOPTR, $32
DATA kmagic<>+0(SB)/8, $0x4338000000000000
DATA kmagic<>+8(SB)/8, $0x4338000000000000
DATA kmagic<>+16(SB)/8, $0x4338000000000000
DATA kmagic<>+24(SB)/8, $0x4338000000000000
GLOBL kmagic<>(SB), RODATA|NOPTR, $32
DATA kln2hi<>+0(SB)/8, $0x3fe62e42fee00000
DATA kln2hi<>+8(SB)/8, $0x3fe62e42fee00000
DATA kln2hi<>+16(SB)/8, $0x3fe62e42fee00000
DATA kln2hi<>+24(SB)/8, $0x3fe62e42fee00000
GLOBL kln2hi<>(SB), RODATA|NOPTR, $32
DATA kln2lo<>+0(SB)/8, $0x3dea39ef35793c76
DATA kln2lo<>+8(SB)/8, $0x3dea39ef35793c76
DATA kln2lo<>+16(SB)/8, $0x3dea39ef35793c76
DATA kln2lo<>+24(SB)/8, $0x3dea39ef35793c76
GLOBL kln2lo<>(SB), RODATA|NOPTR, $32
DATA kminarg<>+0(SB)/8, $0xc086231eb851eb85
DATA kminarg<>+8(SB)/8, $0xc086231eb851eb85
DATA kminarg<>+16(SB)/8, $0xc086231eb851eb85
DATA kminarg<>+24(SB)/8, $0xc086231eb851eb85
GLOBL kminarg<>(SB), RODATA|NOPTR, $32
DATA kmaxarg<>+0(SB)/8, $0x40862e3d70a3d70a
DATA kmaxarg<>+8(SB)/8, $0x40862e3d70a3d70a
DATA kmaxarg<>+16(SB)/8, $0x40862e3d70a3d70a
DATA kmaxarg<>+24(SB)/8, $0x40862e3d70a3d70a
GLOBL kmaxarg<>(SB), RODATA|NOPTR, $32
DATA kinf<>+0(SB)/8, $0x7ff0000000000000
DATA kinf<>+8(SB)/8, $0x7ff0000000000000
DATA kinf<>+16(SB)/8, $0x7ff0000000000000
DATA kinf<>+24(SB)/8, $0x7ff0000000000000
GLOBL kinf<>(SB), RODATA|NOPTR, $32
DATA kone<>+0(SB)/8, $0x3ff0000000000000
DATA kone<>+8(SB)/8, $0x3ff0000000000000
DATA kone<>+16(SB)/8, $0x3ff0000000000000
DATA kone<>+24(SB)/8, $0x3ff0000000000000
GLOBL kone<>(SB), RODATA|NOPTR, $32
DATA kmaxf32<>+0(SB)/8, $0x47efffffe0000000
DATA kmaxf32<>+8(SB)/8, $0x47efffffe0000000
DATA kmaxf32<>+16(SB)/8, $0x47efffffe0000000
DATA kmaxf32<>+24(SB)/8, $0x47efffffe0000000
GLOBL kmaxf32<>(SB), RODATA|NOPTR, $32
DATA kc0<>+0(SB)/8, $0x3ff0000000000000
DATA kc0<>+8(SB)/8, $0x3ff0000000000000
DATA kc0<>+16(SB)/8, $0x3ff0000000000000
DATA kc0<>+24(SB)/8, $0x3ff0000000000000
GLOBL kc0<>(SB), RODATA|NOPTR, $32
DATA kc1<>+0(SB)/8, $0x3ff0000000000000
DATA kc1<>+8(SB)/8, $0x3ff0000000000000
DATA kc1<>+16(SB)/8, $0x3ff0000000000000
DATA kc1<>+24(SB)/8, $0x3ff0000000000000
GLOBL kc1<>(SB), RODATA|NOPTR, $32
DATA kc2<>+0(SB)/8, $0x3fe0000000000000
DATA kc2<>+8(SB)/8, $0x3fe0000000000000
DATA kc2<>+16(SB)/8, $0x3fe0000000000000
DATA kc2<>+24(SB)/8, $0x3fe0000000000000
GLOBL kc2<>(SB), RODATA|NOPTR, $32
DATA kc3<>+0(SB)/8, $0x3fc5555555555555
DATA kc3<>+8(SB)/8, $0x3fc5555555555555
DATA kc3<>+16(SB)/8, $0x3fc5555555555555
DATA kc3<>+24(SB)/8, $0x3fc5555555555555
GLOBL kc3<>(SB), RODATA|NOPTR, $32
DATA kc4<>+0(SB)/8, $0x3fa5555555555555
DATA kc4<>+8(SB)/8, $0x3fa5555555555555
DATA kc4<>+16(SB)/8, $0x3fa5555555555555
DATA kc4<>+24(SB)/8, $0x3fa5555555555555
GLOBL kc4<>(SB), RODATA|NOPTR, $32
DATA kc5<>+0(SB)/8, $0x3f81111111111111
DATA kc5<>+8(SB)/8, $0x3f81111111111111
DATA kc5<>+16(SB)/8, $0x3f81111111111111
DATA kc5<>+24(SB)/8, $0x3f81111111111111
GLOBL kc5<>(SB), RODATA|NOPTR, $32
DATA kc6<>+0(SB)/8, $0x3f56c16c16c16c17
DATA kc6<>+8(SB)/8, $0x3f56c16c16c16c17
DATA kc6<>+16(SB)/8, $0x3f56c16c16c16c17
DATA kc6<>+24(SB)/8, $0x3f56c16c16c16c17
GLOBL kc6<>(SB), RODATA|NOPTR, $32
DATA kc7<>+0(SB)/8, $0x3f2a01a01a01a01a
DATA kc7<>+8(SB)/8, $0x3f2a01a01a01a01a
DATA kc7<>+16(SB)/8, $0x3f2a01a01a01a01a
DATA kc7<>+24(SB)/8, $0x3f2a01a01a01a01a
GLOBL kc7<>(SB), RODATA|NOPTR, $32
DATA kc8<>+0(SB)/8, $0x3efa01a01a01a01a
DATA kc8<>+8(SB)/8, $0x3efa01a01a01a01a
DATA kc8<>+16(SB)/8, $0x3efa01a01a01a01a
DATA kc8<>+24(SB)/8, $0x3efa01a01a01a01a
GLOBL kc8<>(SB), RODATA|NOPTR, $32
DATA kbias<>+0(SB)/8, $0xbcc80000000003ff
DATA kbias<>+8(SB)/8, $0xbcc80000000003ff
DATA kbias<>+16(SB)/8, $0xbcc80000000003ff
DATA kbias<>+24(SB)/8, $0xbcc80000000003ff
GLOBL kbias<>(SB), RODATA|NOPTR, $32
DATA konef<>+0(SB)/4, $0x3f800000
GLOBL konef<>(SB), RODATA|NOPTR, $4
DATA kabs<>+0(SB)/8, $0x7fffffffffffffff
DATA kabs<>+8(SB)/8, $0x7fffffffffffffff
DATA kabs<>+16(SB)/8, $0x7fffffffffffffff
DATA kabs<>+24(SB)/8, $0x7fffffffffffffff
GLOBL kabs<>(SB), RODATA|NOPTR, $32

// EXPPD sets R = e^X in four lanes, leaving X unchanged and clobbering T1
// and T2. It is the algorithm of expGeneric: x = k·ln2 + r (Cody–Waite, k
// rounded by the 1.5·2^52 trick), e^r by Horner's rule on the Taylor series
// through r^8/8! with fused multiply-adds, 2^k built in the exponent field.
// Lanes outside [minarg, maxarg] are computed on the clamped value, then
// replaced: +Inf above, 0 below, NaN for NaN.
#define EXPPD(X, R, T1, T2) \
	VMAXPD kminarg<>(SB), X, T1 \
	VMINPD kmaxarg<>(SB), T1, T1 \
	VMOVUPD kmagic<>(SB), T2 \
	VFMADD231PD klog2e<>(SB), T1, T2 \
	VSUBPD kmagic<>(SB), T2, R \
	VFNMADD231PD kln2hi<>(SB), R, T1 \
	VFNMADD231PD kln2lo<>(SB), R, T1 \
	VMOVUPD kc8<>(SB), R \
	VFMADD213PD kc7<>(SB), T1, R \
	VFMADD213PD kc6<>(SB), T1, R \
	VFMADD213PD kc5<>(SB), T1, R \
	VFMADD213PD kc4<>(SB), T1, R \
	VFMADD213PD kc3<>(SB), T1, R \
	VFMADD213PD kc2<>(SB), T1, R \
	VFMADD213PD kc1<>(SB), T1, R \
	VFMADD213PD kc0<>(SB), T1, R \
	VPADDQ kbias<>(SB), T2, T2 \
	VPSLLQ $52, T2, T2 \
	VMULPD T2, R, R \
	VCMPPD $0x1e, kmaxarg<>(SB), X, T2 \
	VBLENDVPD T2, kinf<>(SB), R, R \
	VCMPPD $0x11, kminarg<>(SB), X, T2 \
	VXORPD T1, T1, T1 \
	VBLENDVPD T2, T1, R, R \
	VCMPPD $0x03, X, X, T2 \
	VBLENDVPD T2, X, R, R

// func expAVX2(dst, src []float64)
TEXT ·expAVX2(SB), NOSPLIT, $0-48
	MOVQ dst_base+0(FP), DI
	MOVQ src_base+24(FP), SI
	MOVQ src_len+32(FP), CX
	SHRQ $2, CX
	JZ   expdone

exploop:
	VMOVUPD (SI), Y0
	EXPPD(Y0, Y4, Y1, Y2)
	VMOVUPD Y4, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	DECQ    CX
	JNZ     exploop

expdone:
	VZEROUPPER
	RET

// Offsets into PolicyTokens; policy_test.go checks them against the Go
// struct.
#define pLogp 0
#define pOld 8
#define pAdv 16
#define pMask 24
#define pProx 32
#define pRef 40
#define pTW 48
#define pGrad 56
#define pN 64
#define pHasProx 72
#define pHasRef 80
#define pHasTW 88
#define pKL 96
#define pLo 128
#define pHi 160
#define pDual 192
#define pClamp 224
#define pNegClamp 256
#define pBeta 288
#define pCoef 320
#define pKLClamp 352
#define pCapAt 384
#define pCapTo 416
#define pPolicy 448
#define pKLSum 480
#define pNegDelta 512
#define pRatio 544
#define pBehave 576
#define pBehaveMax 608
#define pHigh 640
#define pLow 672
#define pDualN 704
#define pCapped 736
#define pBad 768

// ACC adds Y to the four-lane accumulator at offset OFF of the argument
// block, using T as scratch.
#define ACC(OFF, Y, T) \
	VADDPD OFF(R8), Y, T \
	VMOVUPD T, OFF(R8)

// COUNT adds 1 to the lanes of the accumulator at OFF where mask M is set.
#define COUNT(OFF, M, T) \
	VANDPD kone<>(SB), M, T \
	ACC(OFF, T, T)

// func policyTokensAVX2(k *PolicyTokens)
//
// The token-level policy loss of ppo.PolicyLoss for float32 storage, four
// tokens per iteration; see PolicyTokens for the contract. Register use in
// the loop: Y0 valid lanes, Y1 logp, Y2 base log-prob, Y3 advantage, Y15 the
// KL log-ratio x, Y10 the token weight, Y14 the lanes found bad.
TEXT ·policyTokensAVX2(SB), NOSPLIT, $0-8
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
	SHRQ $2, R11
	XORQ R12, R12
	VXORPD Y14, Y14, Y14
	TESTQ R11, R11
	JZ   done

loop:
	VCVTPS2PD (DX)(R12*1), Y0
	VCMPPD $0x00, kone<>(SB), Y0, Y0 // valid = (mask == 1)
	VMOVMSKPD Y0, R13
	TESTQ R13, R13
	JZ   skip

	VCVTPS2PD (AX)(R12*1), Y1  // l
	VCVTPS2PD (BX)(R12*1), Y2  // old
	VCVTPS2PD (CX)(R12*1), Y3  // a
	VADDPD Y1, Y2, Y6          // check = l + old + a (+ each optional input)
	VADDPD Y3, Y6, Y6
	VANDPD Y0, Y3, Y3          // a = 0 on masked lanes
	VMOVUPD kone<>(SB), Y10    // token weight

	CMPQ pHasProx(R8), $0
	JEQ  noprox
	VCVTPS2PD (SI)(R12*1), Y7  // p
	VADDPD Y7, Y6, Y6
	VSUBPD Y2, Y7, Y9          // behaviour log-ratio p − old
	VANDPD Y0, Y9, Y9
	VMOVAPD Y7, Y2             // the ratio is taken against p

noprox:
	CMPQ pHasRef(R8), $0
	JEQ  noref
	VCVTPS2PD (DI)(R12*1), Y7  // ref
	VADDPD Y7, Y6, Y6
	VSUBPD Y7, Y1, Y15         // x = l − ref
	VANDPD Y0, Y15, Y15

noref:
	CMPQ pHasTW(R8), $0
	JEQ  notw
	VCVTPS2PD (R9)(R12*1), Y10 // token weight
	VADDPD Y10, Y6, Y6
	VXORPD Y7, Y7, Y7
	VCMPPD $0x11, Y7, Y10, Y7  // weight < 0
	VANDPD Y0, Y7, Y7
	VORPD  Y7, Y14, Y14

notw:
	VSUBPD Y6, Y6, Y6          // check − check is 0 exactly when finite
	VXORPD Y7, Y7, Y7
	VCMPPD $0x04, Y7, Y6, Y6   // ≠ 0 or NaN
	VANDPD Y0, Y6, Y6
	VORPD  Y6, Y14, Y14
	VANDPD Y0, Y10, Y10        // weight 0 on masked lanes, whatever they hold

	VSUBPD Y2, Y1, Y4          // d = l − base
	VANDPD Y0, Y4, Y4
	VMOVUPD pNegDelta(R8), Y6
	VSUBPD Y4, Y6, Y6
	VMOVUPD Y6, pNegDelta(R8)
	VMAXPD pNegClamp(R8), Y4, Y5
	VMINPD pClamp(R8), Y5, Y5  // dc = clamp(d)
	VCMPPD $0x00, Y5, Y4, Y7   // live = (d == dc)
	EXPPD(Y5, Y11, Y12, Y13)   // r = e^dc
	VANDPD Y0, Y11, Y12
	ACC(pRatio, Y12, Y12)

	// The surrogate: which bound is active, the effective ratio reff
	// (loss = −a·reff) and the lanes with no gradient.
	VXORPD Y8, Y8, Y8
	VCMPPD $0x1e, Y8, Y3, Y12  // a > 0
	VCMPPD $0x1e, pHi(R8), Y11, Y13
	VANDPD Y13, Y12, Y12       // high = a > 0 && r > hi
	COUNT(pHigh, Y12, Y13)
	VBLENDVPD Y12, pHi(R8), Y11, Y5
	VMOVAPD Y12, Y6            // no gradient
	VCMPPD $0x11, Y8, Y3, Y12  // a < 0
	VCMPPD $0x11, pLo(R8), Y11, Y13
	VANDPD Y12, Y13, Y13       // low = a < 0 && r < lo
	VORPD  Y13, Y6, Y6
	VBLENDVPD Y13, pLo(R8), Y5, Y5
	COUNT(pLow, Y13, Y13)
	VCMPPD $0x1e, pDual(R8), Y11, Y13
	VANDPD Y12, Y13, Y13       // dual = a < 0 && r > c
	VORPD  Y13, Y6, Y6
	VBLENDVPD Y13, pDual(R8), Y5, Y5
	COUNT(pDualN, Y13, Y13)
	VMULPD Y3, Y5, Y5          // a·reff = −loss
	VANDNPD Y7, Y6, Y7         // g = live && no bound active
	VMULPD Y3, Y11, Y6
	VANDPD Y7, Y6, Y6          // a·r·g = −dLoss/dlogp of the surrogate

	CMPQ pHasProx(R8), $0
	JEQ  weighted
	EXPPD(Y9, Y12, Y7, Y13)    // behaviour weight
	VCMPPD $0x1e, pCapAt(R8), Y12, Y13
	VANDPD Y0, Y13, Y7
	COUNT(pCapped, Y7, Y7)
	VBLENDVPD Y13, pCapTo(R8), Y12, Y12
	VCMPPD $0x00, kinf<>(SB), Y12, Y13
	VANDNPD Y12, Y13, Y12      // an infinite weight (no cap) counts 0
	VANDPD Y0, Y12, Y12
	VMAXPD pBehaveMax(R8), Y12, Y13
	VMOVUPD Y13, pBehaveMax(R8)
	ACC(pBehave, Y12, Y13)
	VMULPD Y12, Y10, Y10

weighted:
	VMULPD Y10, Y5, Y5
	VMOVUPD pPolicy(R8), Y7
	VSUBPD Y5, Y7, Y7          // Σ loss = −Σ a·reff·w
	VMOVUPD Y7, pPolicy(R8)
	VMULPD Y10, Y6, Y6

	MOVQ pKL(R8), R13
	TESTQ R13, R13
	JZ   grad
	CMPQ R13, $1
	JNE  k2
	VANDPD kone<>(SB), Y0, Y13 // k1: k = x, dk = 1
	VMOVAPD Y15, Y12
	JMP  klsum

k2:
	CMPQ R13, $2
	JNE  k3
	VMULPD Y15, Y15, Y12       // k2: k = x²/2, dk = x
	VMULPD kc2<>(SB), Y12, Y12
	VMOVAPD Y15, Y13
	JMP  klsum

k3:
	VXORPD Y7, Y7, Y7
	VSUBPD Y15, Y7, Y7         // −x
	EXPPD(Y7, Y13, Y12, Y9)    // e = e^−x
	VADDPD Y13, Y15, Y12
	VSUBPD kone<>(SB), Y12, Y12 // k = e + x − 1
	VMOVUPD kone<>(SB), Y7
	VSUBPD Y13, Y7, Y13         // dk = 1 − e
	VCMPPD $0x1e, pKLClamp(R8), Y12, Y7
	VBLENDVPD Y7, pKLClamp(R8), Y12, Y12
	VANDNPD Y13, Y7, Y13
	VANDPD Y0, Y13, Y13

klsum:
	ACC(pKLSum, Y12, Y12)
	VFNMADD231PD pBeta(R8), Y13, Y6 // a·r·g·w − β·dk

grad:
	VMULPD pCoef(R8), Y6, Y6
	VXORPD Y7, Y7, Y7
	VSUBPD Y6, Y7, Y6          // dLoss/dlogp = −coef·(a·r·g·w − β·dk)
	VANDPD kabs<>(SB), Y6, Y7
	VCMPPD $0x06, kmaxf32<>(SB), Y7, Y7 // not ≤ float32's largest: overflow or NaN
	VANDPD Y0, Y7, Y7
	VORPD  Y7, Y14, Y14
	VCVTPD2PSY Y6, X6
	VMOVUPS X6, (R10)(R12*1)
	ADDQ $16, R12
	DECQ R11
	JNZ  loop
	JMP  done

skip:
	VXORPS X6, X6, X6
	VMOVUPS X6, (R10)(R12*1)
	ADDQ $16, R12
	DECQ R11
	JNZ  loop

done:
	VMOVMSKPD Y14, R13
	MOVQ R13, pBad(R8)
	VZEROUPPER
	RET

// func countMaskAVX2(m []float32) int
//
// Counts the entries equal to 1 in eight-lane steps and returns −1 as soon
// as an entry is neither 0 nor 1 (NaN included); len(m) must be a multiple
// of 8.
TEXT ·countMaskAVX2(SB), NOSPLIT, $0-32
	MOVQ m_base+0(FP), SI
	MOVQ m_len+8(FP), CX
	SHRQ $3, CX
	XORQ AX, AX
	VBROADCASTSS konef<>(SB), Y1
	VXORPS Y2, Y2, Y2
	TESTQ CX, CX
	JZ   countdone

countloop:
	VMOVUPS (SI), Y0
	VCMPPS $0x00, Y1, Y0, Y3 // == 1
	VCMPPS $0x00, Y2, Y0, Y4 // == 0
	VORPS  Y3, Y4, Y4
	VMOVMSKPS Y4, DX
	CMPQ DX, $0xff
	JNE  countbad
	VMOVMSKPS Y3, DX
	POPCNTQ DX, DX
	ADDQ DX, AX
	ADDQ $32, SI
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
