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

// Float32 constants for the eight-lane kernel, each in eight lanes.
DATA flog2e<>+0(SB)/4, $0x3fb8aa3b
DATA flog2e<>+4(SB)/4, $0x3fb8aa3b
DATA flog2e<>+8(SB)/4, $0x3fb8aa3b
DATA flog2e<>+12(SB)/4, $0x3fb8aa3b
DATA flog2e<>+16(SB)/4, $0x3fb8aa3b
DATA flog2e<>+20(SB)/4, $0x3fb8aa3b
DATA flog2e<>+24(SB)/4, $0x3fb8aa3b
DATA flog2e<>+28(SB)/4, $0x3fb8aa3b
GLOBL flog2e<>(SB), RODATA|NOPTR, $32
DATA fmagic<>+0(SB)/4, $0x4b400000
DATA fmagic<>+4(SB)/4, $0x4b400000
DATA fmagic<>+8(SB)/4, $0x4b400000
DATA fmagic<>+12(SB)/4, $0x4b400000
DATA fmagic<>+16(SB)/4, $0x4b400000
DATA fmagic<>+20(SB)/4, $0x4b400000
DATA fmagic<>+24(SB)/4, $0x4b400000
DATA fmagic<>+28(SB)/4, $0x4b400000
GLOBL fmagic<>(SB), RODATA|NOPTR, $32
DATA fln2hi<>+0(SB)/4, $0x3f318000
DATA fln2hi<>+4(SB)/4, $0x3f318000
DATA fln2hi<>+8(SB)/4, $0x3f318000
DATA fln2hi<>+12(SB)/4, $0x3f318000
DATA fln2hi<>+16(SB)/4, $0x3f318000
DATA fln2hi<>+20(SB)/4, $0x3f318000
DATA fln2hi<>+24(SB)/4, $0x3f318000
DATA fln2hi<>+28(SB)/4, $0x3f318000
GLOBL fln2hi<>(SB), RODATA|NOPTR, $32
DATA fln2lo<>+0(SB)/4, $0xb95e8083
DATA fln2lo<>+4(SB)/4, $0xb95e8083
DATA fln2lo<>+8(SB)/4, $0xb95e8083
DATA fln2lo<>+12(SB)/4, $0xb95e8083
DATA fln2lo<>+16(SB)/4, $0xb95e8083
DATA fln2lo<>+20(SB)/4, $0xb95e8083
DATA fln2lo<>+24(SB)/4, $0xb95e8083
DATA fln2lo<>+28(SB)/4, $0xb95e8083
GLOBL fln2lo<>(SB), RODATA|NOPTR, $32
DATA fminarg<>+0(SB)/4, $0xc2b00000
DATA fminarg<>+4(SB)/4, $0xc2b00000
DATA fminarg<>+8(SB)/4, $0xc2b00000
DATA fminarg<>+12(SB)/4, $0xc2b00000
DATA fminarg<>+16(SB)/4, $0xc2b00000
DATA fminarg<>+20(SB)/4, $0xc2b00000
DATA fminarg<>+24(SB)/4, $0xc2b00000
DATA fminarg<>+28(SB)/4, $0xc2b00000
GLOBL fminarg<>(SB), RODATA|NOPTR, $32
DATA fmaxarg<>+0(SB)/4, $0x42b00000
DATA fmaxarg<>+4(SB)/4, $0x42b00000
DATA fmaxarg<>+8(SB)/4, $0x42b00000
DATA fmaxarg<>+12(SB)/4, $0x42b00000
DATA fmaxarg<>+16(SB)/4, $0x42b00000
DATA fmaxarg<>+20(SB)/4, $0x42b00000
DATA fmaxarg<>+24(SB)/4, $0x42b00000
DATA fmaxarg<>+28(SB)/4, $0x42b00000
GLOBL fmaxarg<>(SB), RODATA|NOPTR, $32
DATA fone<>+0(SB)/4, $0x3f800000
DATA fone<>+4(SB)/4, $0x3f800000
DATA fone<>+8(SB)/4, $0x3f800000
DATA fone<>+12(SB)/4, $0x3f800000
DATA fone<>+16(SB)/4, $0x3f800000
DATA fone<>+20(SB)/4, $0x3f800000
DATA fone<>+24(SB)/4, $0x3f800000
DATA fone<>+28(SB)/4, $0x3f800000
GLOBL fone<>(SB), RODATA|NOPTR, $32
DATA fhalf<>+0(SB)/4, $0x3f000000
DATA fhalf<>+4(SB)/4, $0x3f000000
DATA fhalf<>+8(SB)/4, $0x3f000000
DATA fhalf<>+12(SB)/4, $0x3f000000
DATA fhalf<>+16(SB)/4, $0x3f000000
DATA fhalf<>+20(SB)/4, $0x3f000000
DATA fhalf<>+24(SB)/4, $0x3f000000
DATA fhalf<>+28(SB)/4, $0x3f000000
GLOBL fhalf<>(SB), RODATA|NOPTR, $32
DATA fc3<>+0(SB)/4, $0x3e2aaaab
DATA fc3<>+4(SB)/4, $0x3e2aaaab
DATA fc3<>+8(SB)/4, $0x3e2aaaab
DATA fc3<>+12(SB)/4, $0x3e2aaaab
DATA fc3<>+16(SB)/4, $0x3e2aaaab
DATA fc3<>+20(SB)/4, $0x3e2aaaab
DATA fc3<>+24(SB)/4, $0x3e2aaaab
DATA fc3<>+28(SB)/4, $0x3e2aaaab
GLOBL fc3<>(SB), RODATA|NOPTR, $32
DATA fc4<>+0(SB)/4, $0x3d2aaaab
DATA fc4<>+4(SB)/4, $0x3d2aaaab
DATA fc4<>+8(SB)/4, $0x3d2aaaab
DATA fc4<>+12(SB)/4, $0x3d2aaaab
DATA fc4<>+16(SB)/4, $0x3d2aaaab
DATA fc4<>+20(SB)/4, $0x3d2aaaab
DATA fc4<>+24(SB)/4, $0x3d2aaaab
DATA fc4<>+28(SB)/4, $0x3d2aaaab
GLOBL fc4<>(SB), RODATA|NOPTR, $32
DATA fc5<>+0(SB)/4, $0x3c088889
DATA fc5<>+4(SB)/4, $0x3c088889
DATA fc5<>+8(SB)/4, $0x3c088889
DATA fc5<>+12(SB)/4, $0x3c088889
DATA fc5<>+16(SB)/4, $0x3c088889
DATA fc5<>+20(SB)/4, $0x3c088889
DATA fc5<>+24(SB)/4, $0x3c088889
DATA fc5<>+28(SB)/4, $0x3c088889
GLOBL fc5<>(SB), RODATA|NOPTR, $32
DATA fc6<>+0(SB)/4, $0x3ab60b61
DATA fc6<>+4(SB)/4, $0x3ab60b61
DATA fc6<>+8(SB)/4, $0x3ab60b61
DATA fc6<>+12(SB)/4, $0x3ab60b61
DATA fc6<>+16(SB)/4, $0x3ab60b61
DATA fc6<>+20(SB)/4, $0x3ab60b61
DATA fc6<>+24(SB)/4, $0x3ab60b61
DATA fc6<>+28(SB)/4, $0x3ab60b61
GLOBL fc6<>(SB), RODATA|NOPTR, $32
DATA fc7<>+0(SB)/4, $0x39500d01
DATA fc7<>+4(SB)/4, $0x39500d01
DATA fc7<>+8(SB)/4, $0x39500d01
DATA fc7<>+12(SB)/4, $0x39500d01
DATA fc7<>+16(SB)/4, $0x39500d01
DATA fc7<>+20(SB)/4, $0x39500d01
DATA fc7<>+24(SB)/4, $0x39500d01
DATA fc7<>+28(SB)/4, $0x39500d01
GLOBL fc7<>(SB), RODATA|NOPTR, $32
DATA fbias<>+0(SB)/4, $0xb4c0007f
DATA fbias<>+4(SB)/4, $0xb4c0007f
DATA fbias<>+8(SB)/4, $0xb4c0007f
DATA fbias<>+12(SB)/4, $0xb4c0007f
DATA fbias<>+16(SB)/4, $0xb4c0007f
DATA fbias<>+20(SB)/4, $0xb4c0007f
DATA fbias<>+24(SB)/4, $0xb4c0007f
DATA fbias<>+28(SB)/4, $0xb4c0007f
GLOBL fbias<>(SB), RODATA|NOPTR, $32

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

// EXPPS sets R = e^X in eight float32 lanes for X ≤ 88, leaving X
// unchanged and clobbering T1 and T2: x = n·ln2 + f (Cody–Waite in two
// float32 parts, n rounded by the 1.5·2^23 trick), e^f by Horner's rule on
// the Taylor series through f^7/7! with fused multiply-adds, 2^n built in
// the exponent field. X is first clamped to [−88, 88]: at −88, n = −127
// makes 2^n's bits zero, so lanes below about −87.7 give 0 exactly (e^x
// there is below float32's smallest normal); lanes above 88 are the
// caller's to flag, as float32 cannot hold e^x much beyond it.
#define EXPPS(X, R, T1, T2) \
	VMAXPS fminarg<>(SB), X, T1 \
	VMINPS fmaxarg<>(SB), T1, T1 \
	VMOVUPS fmagic<>(SB), T2 \
	VFMADD231PS flog2e<>(SB), T1, T2 \
	VSUBPS fmagic<>(SB), T2, R \
	VFNMADD231PS fln2hi<>(SB), R, T1 \
	VFNMADD231PS fln2lo<>(SB), R, T1 \
	VMOVUPS fc7<>(SB), R \
	VFMADD213PS fc6<>(SB), T1, R \
	VFMADD213PS fc5<>(SB), T1, R \
	VFMADD213PS fc4<>(SB), T1, R \
	VFMADD213PS fc3<>(SB), T1, R \
	VFMADD213PS fhalf<>(SB), T1, R \
	VFMADD213PS fone<>(SB), T1, R \
	VFMADD213PS fone<>(SB), T1, R \
	VPADDD fbias<>(SB), T2, T2 \
	VPSLLD $23, T2, T2 \
	VMULPS T2, R, R

// func exp32AVX2(dst, src []float32)
//
// EXPPS over a slice, for the accuracy test; len(src) must be a multiple
// of 8 and len(dst) ≥ len(src). Lanes above 88 give e^88.
TEXT ·exp32AVX2(SB), NOSPLIT, $0-48
	MOVQ dst_base+0(FP), DI
	MOVQ src_base+24(FP), SI
	MOVQ src_len+32(FP), CX
	SHRQ $3, CX
	JZ   exp32done

exp32loop:
	VMOVUPS (SI), Y0
	EXPPS(Y0, Y4, Y1, Y2)
	VMOVUPS Y4, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	DECQ    CX
	JNZ     exp32loop

exp32done:
	VZEROUPPER
	RET

#include "policytokens_amd64.h"

// ACC adds the eight float32 lanes of Y (X is its low half) to the
// four-lane float64 accumulator at offset OFF of the argument block:
// lanes i and i+4 are widened and added first, then the pair to lane i of
// the accumulator, the same order on every run. It clobbers Y and T.
#define ACC(OFF, Y, X, T) \
	VCVTPS2PD X, T \
	VEXTRACTF128 $1, Y, X \
	VCVTPS2PD X, Y \
	VADDPD Y, T, T \
	VADDPD OFF(R8), T, T \
	VMOVUPD T, OFF(R8)

// COUNT adds the all-ones lanes of mask M, as −1, to the eight int32
// counters at OFF, using T as scratch; the caller negates the sum.
#define COUNT(OFF, M, T) \
	VPADDD OFF(R8), M, T \
	VMOVDQU T, OFF(R8)

// FLAG marks as bad the lanes of Y greater than 88, whose exponential the
// kernel cannot hold in float32 (the caller redoes the row in float64),
// using T as scratch.
#define FLAG(Y, T) \
	VCMPPS $0x1e, fmaxarg<>(SB), Y, T \
	VORPS  T, Y14, Y14

// func policyTokensAVX2(k *PolicyTokens)
//
// The token-level policy loss of ppo.PolicyLoss for float32 storage, eight
// float32 lanes per iteration with sums in float64; see PolicyTokens for
// the contract. Register use in the loop: Y0 valid lanes, Y1 logp, Y2 base
// log-prob, Y3 advantage, Y8 zero, Y9 the behaviour log-ratio, Y10 the
// token weight, Y11 the ratio, Y14 the lanes found bad, Y15 the KL
// log-ratio x.
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
	SHRQ $3, R11
	XORQ R12, R12
	VXORPS Y14, Y14, Y14
	TESTQ R11, R11
	JZ   done

loop:
	VMOVUPS (DX)(R12*1), Y0
	VCMPPS $0x00, fone<>(SB), Y0, Y0 // valid = (mask == 1)
	VMOVMSKPS Y0, R13
	TESTQ R13, R13
	JZ   skip

	// Inputs, zeroed on masked lanes (whatever they hold) once their
	// sum has been taken: a float32 sum is finite only if each input is,
	// and one that overflows from finite inputs only sends the row to
	// the float64 loop.
	VXORPS Y8, Y8, Y8
	VMOVUPS (AX)(R12*1), Y1    // l
	VMOVUPS (BX)(R12*1), Y2    // old
	VMOVUPS (CX)(R12*1), Y3    // a
	VADDPS Y1, Y2, Y6          // check = l + old + a (+ each optional input)
	VADDPS Y3, Y6, Y6
	VANDPS Y0, Y1, Y1
	VANDPS Y0, Y2, Y2
	VANDPS Y0, Y3, Y3
	VANDPS fone<>(SB), Y0, Y10 // token weight

	CMPQ pHasProx(R8), $0
	JEQ  noprox
	VMOVUPS (SI)(R12*1), Y7    // p
	VADDPS Y7, Y6, Y6
	VANDPS Y0, Y7, Y7
	VSUBPS Y2, Y7, Y9          // behaviour log-ratio p − old
	VMOVAPS Y7, Y2             // the ratio is taken against p

noprox:
	CMPQ pHasRef(R8), $0
	JEQ  noref
	VMOVUPS (DI)(R12*1), Y7    // ref
	VADDPS Y7, Y6, Y6
	VANDPS Y0, Y7, Y7
	VSUBPS Y7, Y1, Y15         // x = l − ref

noref:
	CMPQ pHasTW(R8), $0
	JEQ  notw
	VMOVUPS (R9)(R12*1), Y10   // token weight
	VADDPS Y10, Y6, Y6
	VANDPS Y0, Y10, Y10
	VCMPPS $0x11, Y8, Y10, Y7  // weight < 0
	VORPS  Y7, Y14, Y14

notw:
	VSUBPS Y6, Y6, Y6          // check − check is 0 exactly when finite
	VCMPPS $0x04, Y8, Y6, Y6   // ≠ 0 or NaN
	VANDPS Y0, Y6, Y6
	VORPS  Y6, Y14, Y14

	VSUBPS Y2, Y1, Y4          // d = l − base
	VSUBPS Y1, Y2, Y6          // −d
	ACC(pNegDelta, Y6, X6, Y7)
	VMAXPS pNegClamp(R8), Y4, Y5
	VMINPS pClamp(R8), Y5, Y5  // dc = clamp(d)
	VCMPPS $0x00, Y5, Y4, Y7   // live = (d == dc)
	FLAG(Y5, Y12)
	EXPPS(Y5, Y11, Y12, Y13)   // r = e^dc
	VANDPS Y0, Y11, Y12
	ACC(pRatio, Y12, X12, Y13)

	// The surrogate: which bound is active, the effective ratio reff
	// (loss = −a·reff) and the lanes with no gradient.
	VCMPPS $0x1e, Y8, Y3, Y12  // a > 0
	VCMPPS $0x1e, pHi(R8), Y11, Y13
	VANDPS Y13, Y12, Y12       // high = a > 0 && r > hi
	COUNT(pHigh, Y12, Y13)
	VBLENDVPS Y12, pHi(R8), Y11, Y5
	VMOVAPS Y12, Y6            // no gradient
	VCMPPS $0x11, Y8, Y3, Y12  // a < 0
	VCMPPS $0x11, pLo(R8), Y11, Y13
	VANDPS Y12, Y13, Y13       // low = a < 0 && r < lo
	VORPS  Y13, Y6, Y6
	VBLENDVPS Y13, pLo(R8), Y5, Y5
	COUNT(pLow, Y13, Y13)
	VCMPPS $0x1e, pDual(R8), Y11, Y13
	VANDPS Y12, Y13, Y13       // dual = a < 0 && r > c
	VORPS  Y13, Y6, Y6
	VBLENDVPS Y13, pDual(R8), Y5, Y5
	COUNT(pDualN, Y13, Y13)
	VMULPS Y3, Y5, Y5          // a·reff = −loss
	VANDNPS Y7, Y6, Y7         // g = live && no bound active
	VMULPS Y3, Y11, Y6
	VANDPS Y7, Y6, Y6          // a·r·g = −dLoss/dlogp of the surrogate

	CMPQ pHasProx(R8), $0
	JEQ  weighted
	FLAG(Y9, Y12)
	EXPPS(Y9, Y12, Y7, Y13)    // behaviour weight
	VCMPPS $0x1e, pCapAt(R8), Y12, Y13
	VANDPS Y0, Y13, Y7
	COUNT(pCapped, Y7, Y7)
	VBLENDVPS Y13, pCapTo(R8), Y12, Y12
	VANDPS Y0, Y12, Y12
	VMAXPS pBehaveMax(R8), Y12, Y13
	VMOVUPS Y13, pBehaveMax(R8)
	VMULPS Y12, Y10, Y10
	ACC(pBehave, Y12, X12, Y13)

weighted:
	VMULPS Y10, Y5, Y5
	VSUBPS Y5, Y8, Y5          // loss = −a·reff·w
	ACC(pPolicy, Y5, X5, Y7)
	VMULPS Y10, Y6, Y6         // u = a·r·g·w

	MOVQ pKL(R8), R13
	TESTQ R13, R13
	JZ   nokl
	CMPQ R13, $1
	JNE  k2
	VANDPS fone<>(SB), Y0, Y13 // k1: k = x, dk = 1
	VMOVAPS Y15, Y12
	JMP  klsum

k2:
	CMPQ R13, $2
	JNE  k3
	VMULPS Y15, Y15, Y12       // k2: k = x²/2, dk = x
	VMULPS fhalf<>(SB), Y12, Y12
	VMOVAPS Y15, Y13
	JMP  klsum

k3:
	// k3: k = e^y − 1 − y and dk = 1 − e^y for y = −x. With y = n·ln2 + f
	// and e^f = 1 + f + q, q = f²·(1/2 + f/6 + … + f^5/7!), a lane with
	// n = 0 has f = y exactly, so k = q and dk = −(f + q) keep their
	// relative precision for small x; other lanes take e − 1 from
	// e = 2^n·(1 + f + q).
	VSUBPS Y15, Y8, Y7         // y = −x
	FLAG(Y7, Y1)
	VMAXPS fminarg<>(SB), Y7, Y1
	VMINPS fmaxarg<>(SB), Y1, Y1
	VMOVUPS fmagic<>(SB), Y2
	VFMADD231PS flog2e<>(SB), Y1, Y2
	VSUBPS fmagic<>(SB), Y2, Y3 // n
	VFNMADD231PS fln2hi<>(SB), Y3, Y1
	VFNMADD231PS fln2lo<>(SB), Y3, Y1 // f
	VMOVUPS fc7<>(SB), Y4
	VFMADD213PS fc6<>(SB), Y1, Y4
	VFMADD213PS fc5<>(SB), Y1, Y4
	VFMADD213PS fc4<>(SB), Y1, Y4
	VFMADD213PS fc3<>(SB), Y1, Y4
	VFMADD213PS fhalf<>(SB), Y1, Y4
	VMULPS Y1, Y1, Y5
	VMULPS Y5, Y4, Y4          // q
	VADDPS Y4, Y1, Y5          // f + q
	VADDPS fone<>(SB), Y5, Y9
	VPADDD fbias<>(SB), Y2, Y2
	VPSLLD $23, Y2, Y2
	VMULPS Y2, Y9, Y9          // e = e^y
	VSUBPS fone<>(SB), Y9, Y9
	VCMPPS $0x00, Y8, Y3, Y7   // n == 0
	VBLENDVPS Y7, Y5, Y9, Y9   // e − 1
	VADDPS Y15, Y9, Y12
	VBLENDVPS Y7, Y4, Y12, Y12 // k = e − 1 + x
	VSUBPS Y9, Y8, Y13         // dk = 1 − e
	VCMPPS $0x1e, pKLClamp(R8), Y12, Y7
	VBLENDVPS Y7, pKLClamp(R8), Y12, Y12
	VANDNPS Y13, Y7, Y13
	VANDPS Y0, Y13, Y13

klsum:
	ACC(pKLSum, Y12, X12, Y7)
	VFMSUB231PS pBeta(R8), Y13, Y6 // β·dk − u
	JMP  grad

nokl:
	VSUBPS Y6, Y8, Y6          // −u

grad:
	VMULPS pCoef(R8), Y6, Y6   // dLoss/dlogp = coef·(β·dk − u)
	VADDPS Y8, Y6, Y6          // + 0 turns −0 into +0, as the Go loop does
	VSUBPS Y6, Y6, Y7
	VCMPPS $0x04, Y8, Y7, Y7   // overflow or NaN
	VANDPS Y0, Y7, Y7
	VORPS  Y7, Y14, Y14
	VMOVUPS Y6, (R10)(R12*1)
	ADDQ $32, R12
	DECQ R11
	JNZ  loop
	JMP  done

skip:
	VXORPS Y6, Y6, Y6
	VMOVUPS Y6, (R10)(R12*1)
	ADDQ $32, R12
	DECQ R11
	JNZ  loop

done:
	VMOVMSKPS Y14, R13
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

// Offsets into GAETokens4; gae_test.go checks them against the Go struct.
#define gR 0
#define gV 8
#define gAdv 16
#define gRet 24
#define gOff 32
#define gN 64
#define gG 96
#define gGL 128
#define gNV 160
#define gNA 192
#define gBad 224

// LOAD4 gathers element t of the four rows at P (row offsets R11–R14)
// into the four float32 lanes of X.
#define LOAD4(P, X) \
	VMOVSS (P)(R11*1), X \
	VINSERTPS $0x10, (P)(R12*1), X, X \
	VINSERTPS $0x20, (P)(R13*1), X, X \
	VINSERTPS $0x30, (P)(R14*1), X, X

// STORE4 scatters the four float32 lanes of X to element t of the rows at P.
#define STORE4(X, P) \
	VMOVSS X, (P)(R11*1) \
	VEXTRACTPS $1, X, (P)(R12*1) \
	VEXTRACTPS $2, X, (P)(R13*1) \
	VEXTRACTPS $3, X, (P)(R14*1)

// func gaeTokens4AVX2(k *GAETokens4)
//
// See GAETokens4. Register use in the loop: Y10 γ, Y11 γλ, Y12 nv, Y13 na,
// X14 the OR of x − x over every output (0 while all are finite).
TEXT ·gaeTokens4AVX2(SB), NOSPLIT, $0-8
	MOVQ k+0(FP), R8
	MOVQ gR(R8), AX
	MOVQ gV(R8), BX
	MOVQ gAdv(R8), CX
	MOVQ gRet(R8), DX
	MOVQ gOff+0(R8), R11
	MOVQ gOff+8(R8), R12
	MOVQ gOff+16(R8), R13
	MOVQ gOff+24(R8), R14
	MOVQ gN(R8), R9
	VMOVUPD gG(R8), Y10
	VMOVUPD gGL(R8), Y11
	VMOVUPD gNV(R8), Y12
	VMOVUPD gNA(R8), Y13
	VXORPS X14, X14, X14
	TESTQ R9, R9
	JZ   gaedone
	LEAQ -4(R9*4), R10 // byte offset of token N−1
	ADDQ R10, AX
	ADDQ R10, BX
	ADDQ R10, CX
	ADDQ R10, DX

gaeloop:
	LOAD4(AX, X0)
	LOAD4(BX, X1)
	VCVTPS2PD X0, Y0      // r
	VCVTPS2PD X1, Y1      // v
	VMULPD Y10, Y12, Y2   // γ·nv
	VADDPD Y2, Y0, Y2     // r + γ·nv
	VSUBPD Y1, Y2, Y2     // − v
	VMULPD Y11, Y13, Y3   // γλ·na
	VADDPD Y3, Y2, Y13    // a, the next token's na
	VMOVAPD Y1, Y12       // nv = v
	VADDPD Y1, Y13, Y4    // a + v
	VCVTPD2PSY Y13, X5
	VCVTPD2PSY Y4, X6
	VSUBPS X5, X5, X7
	VORPS  X7, X14, X14
	VSUBPS X6, X6, X7
	VORPS  X7, X14, X14
	STORE4(X5, CX)
	STORE4(X6, DX)
	SUBQ $4, AX
	SUBQ $4, BX
	SUBQ $4, CX
	SUBQ $4, DX
	DECQ R9
	JNZ  gaeloop

gaedone:
	VMOVUPD Y12, gNV(R8)
	VMOVUPD Y13, gNA(R8)
	VXORPS X7, X7, X7
	VCMPPS $0x04, X7, X14, X7 // ≠ 0 or NaN
	VMOVMSKPS X7, R10
	MOVQ R10, gBad(R8)
	VZEROUPPER
	RET
