//go:build !purego

#include "textflag.h"

// The float32 constants of EXPPS (kernel_amd64.s), each in eight lanes, and
// the ±20 bound on rollout log-ratios. Assembly symbols are file-local, so
// they are repeated here.
DATA rflog2e<>+0(SB)/4, $0x3fb8aa3b
DATA rflog2e<>+4(SB)/4, $0x3fb8aa3b
DATA rflog2e<>+8(SB)/4, $0x3fb8aa3b
DATA rflog2e<>+12(SB)/4, $0x3fb8aa3b
DATA rflog2e<>+16(SB)/4, $0x3fb8aa3b
DATA rflog2e<>+20(SB)/4, $0x3fb8aa3b
DATA rflog2e<>+24(SB)/4, $0x3fb8aa3b
DATA rflog2e<>+28(SB)/4, $0x3fb8aa3b
GLOBL rflog2e<>(SB), RODATA|NOPTR, $32
DATA rfmagic<>+0(SB)/4, $0x4b400000
DATA rfmagic<>+4(SB)/4, $0x4b400000
DATA rfmagic<>+8(SB)/4, $0x4b400000
DATA rfmagic<>+12(SB)/4, $0x4b400000
DATA rfmagic<>+16(SB)/4, $0x4b400000
DATA rfmagic<>+20(SB)/4, $0x4b400000
DATA rfmagic<>+24(SB)/4, $0x4b400000
DATA rfmagic<>+28(SB)/4, $0x4b400000
GLOBL rfmagic<>(SB), RODATA|NOPTR, $32
DATA rfln2hi<>+0(SB)/4, $0x3f318000
DATA rfln2hi<>+4(SB)/4, $0x3f318000
DATA rfln2hi<>+8(SB)/4, $0x3f318000
DATA rfln2hi<>+12(SB)/4, $0x3f318000
DATA rfln2hi<>+16(SB)/4, $0x3f318000
DATA rfln2hi<>+20(SB)/4, $0x3f318000
DATA rfln2hi<>+24(SB)/4, $0x3f318000
DATA rfln2hi<>+28(SB)/4, $0x3f318000
GLOBL rfln2hi<>(SB), RODATA|NOPTR, $32
DATA rfln2lo<>+0(SB)/4, $0xb95e8083
DATA rfln2lo<>+4(SB)/4, $0xb95e8083
DATA rfln2lo<>+8(SB)/4, $0xb95e8083
DATA rfln2lo<>+12(SB)/4, $0xb95e8083
DATA rfln2lo<>+16(SB)/4, $0xb95e8083
DATA rfln2lo<>+20(SB)/4, $0xb95e8083
DATA rfln2lo<>+24(SB)/4, $0xb95e8083
DATA rfln2lo<>+28(SB)/4, $0xb95e8083
GLOBL rfln2lo<>(SB), RODATA|NOPTR, $32
DATA rfone<>+0(SB)/4, $0x3f800000
DATA rfone<>+4(SB)/4, $0x3f800000
DATA rfone<>+8(SB)/4, $0x3f800000
DATA rfone<>+12(SB)/4, $0x3f800000
DATA rfone<>+16(SB)/4, $0x3f800000
DATA rfone<>+20(SB)/4, $0x3f800000
DATA rfone<>+24(SB)/4, $0x3f800000
DATA rfone<>+28(SB)/4, $0x3f800000
GLOBL rfone<>(SB), RODATA|NOPTR, $32
DATA rfhalf<>+0(SB)/4, $0x3f000000
DATA rfhalf<>+4(SB)/4, $0x3f000000
DATA rfhalf<>+8(SB)/4, $0x3f000000
DATA rfhalf<>+12(SB)/4, $0x3f000000
DATA rfhalf<>+16(SB)/4, $0x3f000000
DATA rfhalf<>+20(SB)/4, $0x3f000000
DATA rfhalf<>+24(SB)/4, $0x3f000000
DATA rfhalf<>+28(SB)/4, $0x3f000000
GLOBL rfhalf<>(SB), RODATA|NOPTR, $32
DATA rfc3<>+0(SB)/4, $0x3e2aaaab
DATA rfc3<>+4(SB)/4, $0x3e2aaaab
DATA rfc3<>+8(SB)/4, $0x3e2aaaab
DATA rfc3<>+12(SB)/4, $0x3e2aaaab
DATA rfc3<>+16(SB)/4, $0x3e2aaaab
DATA rfc3<>+20(SB)/4, $0x3e2aaaab
DATA rfc3<>+24(SB)/4, $0x3e2aaaab
DATA rfc3<>+28(SB)/4, $0x3e2aaaab
GLOBL rfc3<>(SB), RODATA|NOPTR, $32
DATA rfc4<>+0(SB)/4, $0x3d2aaaab
DATA rfc4<>+4(SB)/4, $0x3d2aaaab
DATA rfc4<>+8(SB)/4, $0x3d2aaaab
DATA rfc4<>+12(SB)/4, $0x3d2aaaab
DATA rfc4<>+16(SB)/4, $0x3d2aaaab
DATA rfc4<>+20(SB)/4, $0x3d2aaaab
DATA rfc4<>+24(SB)/4, $0x3d2aaaab
DATA rfc4<>+28(SB)/4, $0x3d2aaaab
GLOBL rfc4<>(SB), RODATA|NOPTR, $32
DATA rfc5<>+0(SB)/4, $0x3c088889
DATA rfc5<>+4(SB)/4, $0x3c088889
DATA rfc5<>+8(SB)/4, $0x3c088889
DATA rfc5<>+12(SB)/4, $0x3c088889
DATA rfc5<>+16(SB)/4, $0x3c088889
DATA rfc5<>+20(SB)/4, $0x3c088889
DATA rfc5<>+24(SB)/4, $0x3c088889
DATA rfc5<>+28(SB)/4, $0x3c088889
GLOBL rfc5<>(SB), RODATA|NOPTR, $32
DATA rfc6<>+0(SB)/4, $0x3ab60b61
DATA rfc6<>+4(SB)/4, $0x3ab60b61
DATA rfc6<>+8(SB)/4, $0x3ab60b61
DATA rfc6<>+12(SB)/4, $0x3ab60b61
DATA rfc6<>+16(SB)/4, $0x3ab60b61
DATA rfc6<>+20(SB)/4, $0x3ab60b61
DATA rfc6<>+24(SB)/4, $0x3ab60b61
DATA rfc6<>+28(SB)/4, $0x3ab60b61
GLOBL rfc6<>(SB), RODATA|NOPTR, $32
DATA rfc7<>+0(SB)/4, $0x39500d01
DATA rfc7<>+4(SB)/4, $0x39500d01
DATA rfc7<>+8(SB)/4, $0x39500d01
DATA rfc7<>+12(SB)/4, $0x39500d01
DATA rfc7<>+16(SB)/4, $0x39500d01
DATA rfc7<>+20(SB)/4, $0x39500d01
DATA rfc7<>+24(SB)/4, $0x39500d01
DATA rfc7<>+28(SB)/4, $0x39500d01
GLOBL rfc7<>(SB), RODATA|NOPTR, $32
DATA rfbias<>+0(SB)/4, $0xb4c0007f
DATA rfbias<>+4(SB)/4, $0xb4c0007f
DATA rfbias<>+8(SB)/4, $0xb4c0007f
DATA rfbias<>+12(SB)/4, $0xb4c0007f
DATA rfbias<>+16(SB)/4, $0xb4c0007f
DATA rfbias<>+20(SB)/4, $0xb4c0007f
DATA rfbias<>+24(SB)/4, $0xb4c0007f
DATA rfbias<>+28(SB)/4, $0xb4c0007f
GLOBL rfbias<>(SB), RODATA|NOPTR, $32
DATA rfbound<>+0(SB)/4, $0x41a00000
DATA rfbound<>+4(SB)/4, $0x41a00000
DATA rfbound<>+8(SB)/4, $0x41a00000
DATA rfbound<>+12(SB)/4, $0x41a00000
DATA rfbound<>+16(SB)/4, $0x41a00000
DATA rfbound<>+20(SB)/4, $0x41a00000
DATA rfbound<>+24(SB)/4, $0x41a00000
DATA rfbound<>+28(SB)/4, $0x41a00000
GLOBL rfbound<>(SB), RODATA|NOPTR, $32
DATA rfnbound<>+0(SB)/4, $0xc1a00000
DATA rfnbound<>+4(SB)/4, $0xc1a00000
DATA rfnbound<>+8(SB)/4, $0xc1a00000
DATA rfnbound<>+12(SB)/4, $0xc1a00000
DATA rfnbound<>+16(SB)/4, $0xc1a00000
DATA rfnbound<>+20(SB)/4, $0xc1a00000
DATA rfnbound<>+24(SB)/4, $0xc1a00000
DATA rfnbound<>+28(SB)/4, $0xc1a00000
GLOBL rfnbound<>(SB), RODATA|NOPTR, $32
DATA rfzero<>+0(SB)/8, $0
DATA rfzero<>+8(SB)/8, $0
DATA rfzero<>+16(SB)/8, $0
DATA rfzero<>+24(SB)/8, $0
GLOBL rfzero<>(SB), RODATA|NOPTR, $32

// Offsets into RolloutTokens; rollout_test.go checks them against the Go
// struct.
#define roOld 0
#define roRoll 8
#define roMask 16
#define roTW 24
#define roEMask 32
#define roEW 40
#define roN 48
#define roFlags 56
#define roISCut 64
#define roISMax 96
#define roLower 128
#define roUpper 160
#define roLogRatio 192
#define roOldSum 224
#define roK3 256
#define roWeights 288
#define roValid 320
#define roNonZero 352
#define roTruncated 384
#define roRejected 416

// Bits of Flags (RolloutTW, …).
#define fTW 1
#define fIS 2
#define fRS 4
#define fEW 8
#define fEM 16

// WIDEN adds the eight float32 lanes of Y (X is its low half) to the
// four-lane float64 accumulator at OFF: lanes i and i+4 are widened and
// added first, then the pair to lane i of the accumulator, the same order
// on every run. It then zeroes Y, and clobbers T.
#define WIDEN(OFF, Y, X, T) \
	VCVTPS2PD X, T \
	VEXTRACTF128 $1, Y, X \
	VCVTPS2PD X, Y \
	VADDPD Y, T, T \
	VADDPD OFF(R8), T, T \
	VMOVUPD T, OFF(R8) \
	VXORPS Y, Y, Y

// FLUSH widens the four partial sums (Y8, Y9, Y11, Y12) into their
// accumulators.
#define FLUSH \
	WIDEN(roLogRatio, Y8, X8, Y0) \
	WIDEN(roOldSum, Y9, X9, Y0) \
	WIDEN(roK3, Y11, X11, Y0) \
	WIDEN(roWeights, Y12, X12, Y0)

// The partial sums cover 16 iterations (128 tokens) before they widen:
// each lane adds 16 float32 terms, at most 16 roundings of its running
// partial sum, so a float64 sum's relative error stays near 1e-6 at worst.
#define BLOCK 16

// func rolloutTokensAVX2(k *RolloutTokens)
//
// The token-level rollout correction of package ppo for float32 storage,
// eight float32 lanes per iteration; see RolloutTokens for the contract.
// Registers in the loop: Y3 the valid lanes, Y4 ℓc, Y5 e, Y8, Y9, Y11, Y12
// the float32 partial sums of ℓ, old, k3 and e over the current block, Y7,
// Y10, Y13, Y14 the truncated, rejected, valid and nonzero counts, Y15
// ones; Y0–Y2 and Y6 are scratch. R12 holds the flags, R13 counts down the
// iterations left before a flush.
TEXT ·rolloutTokensAVX2(SB), NOSPLIT, $0-8
	MOVQ k+0(FP), R8
	MOVQ roOld(R8), SI
	MOVQ roRoll(R8), DI
	MOVQ roMask(R8), DX
	MOVQ roTW(R8), BX
	MOVQ roEMask(R8), R9
	MOVQ roEW(R8), R10
	MOVQ roFlags(R8), R12
	MOVQ roN(R8), CX
	ANDQ $-8, CX
	SHLQ $2, CX                    // bytes of the tokens handled
	XORQ R11, R11
	MOVQ $BLOCK, R13
	VXORPS  Y8, Y8, Y8
	VXORPS  Y9, Y9, Y9
	VXORPS  Y11, Y11, Y11
	VXORPS  Y12, Y12, Y12
	VMOVDQU roTruncated(R8), Y7
	VMOVDQU roRejected(R8), Y10
	VMOVDQU roValid(R8), Y13
	VMOVDQU roNonZero(R8), Y14
	VMOVUPS rfone<>(SB), Y15
	TESTQ CX, CX
	JZ    rodone

roloop:
	// The mask: valid lanes (== 1) and nonzero ones, counted.
	VMOVUPS (DX)(R11*1), Y2
	VCMPPS  $0x00, Y15, Y2, Y3
	VPADDD  Y3, Y13, Y13
	VCMPPS  $0x04, rfzero<>(SB), Y2, Y2 // ≠ 0 (or NaN)
	VPADDD  Y2, Y14, Y14

	// ℓ = old − rollout, and old, zeroed on the other lanes whatever
	// they hold; a non-finite input on a valid lane makes the sum of ℓ
	// non-finite.
	VMOVUPS (SI)(R11*1), Y0
	VSUBPS  (DI)(R11*1), Y0, Y4
	VANDPS  Y3, Y0, Y0
	VANDPS  Y3, Y4, Y4
	VADDPS  Y4, Y8, Y8
	VADDPS  Y0, Y9, Y9
	VMAXPS  rfnbound<>(SB), Y4, Y4
	VMINPS  rfbound<>(SB), Y4, Y4  // ℓc

	// e = e^ℓc: EXPPS of kernel_amd64.s, step for step (|ℓc| ≤ 20 needs
	// no clamp), keeping f (Y0), q(f) (Y2) and 2^n (Y1) for k3.
	VMOVUPS      rfmagic<>(SB), Y1
	VFMADD231PS  rflog2e<>(SB), Y4, Y1
	VSUBPS       rfmagic<>(SB), Y1, Y5
	VMOVAPS      Y4, Y0
	VFNMADD231PS rfln2hi<>(SB), Y5, Y0
	VFNMADD231PS rfln2lo<>(SB), Y5, Y0
	VMOVUPS      rfc7<>(SB), Y5
	VFMADD213PS  rfc6<>(SB), Y0, Y5
	VFMADD213PS  rfc5<>(SB), Y0, Y5
	VFMADD213PS  rfc4<>(SB), Y0, Y5
	VFMADD213PS  rfc3<>(SB), Y0, Y5
	VFMADD213PS  rfhalf<>(SB), Y0, Y5
	VMOVAPS      Y5, Y2            // q(f) = ½ + f/6 + …
	VFMADD213PS  rfone<>(SB), Y0, Y5
	VFMADD213PS  rfone<>(SB), Y0, Y5
	VPADDD       rfbias<>(SB), Y1, Y1
	VPSLLD       $23, Y1, Y1       // 2^n
	VMULPS       Y1, Y5, Y5        // e

	// k3 = e − ℓc − 1 = (2^n − 1 − ℓc + 2^n·f) + 2^n·f²·q: for n = 0 the
	// bracket is 0 exactly, and k3 = f²·q keeps its precision however
	// small ℓ is; 0 on the other lanes (ℓc = 0).
	VSUBPS      Y15, Y1, Y6
	VSUBPS      Y4, Y6, Y6
	VFMADD231PS Y1, Y0, Y6
	VMULPS      Y0, Y0, Y0
	VMULPS      Y2, Y0, Y0
	VFMADD231PS Y1, Y0, Y6
	VADDPS      Y6, Y11, Y11

	// Token weights.
	TESTQ $fIS, R12
	JZ    roplain
	VANDPS    Y3, Y5, Y0
	VADDPS    Y0, Y12, Y12         // Σ e, before truncation
	VCMPPS    $0x1e, roISCut(R8), Y5, Y0 // e > threshold
	VANDPS    Y3, Y0, Y0
	VPADDD    Y0, Y7, Y7
	VMINPS    roISMax(R8), Y5, Y0
	VBLENDVPS Y3, Y0, Y15, Y0      // min(e, threshold) on valid lanes, 1 elsewhere
	JMP       rotw

roplain:
	VMOVAPS Y15, Y0

rotw:
	TESTQ $fEW, R12
	JZ    romask
	TESTQ $fTW, R12
	JZ    roew
	VMULPS (BX)(R11*1), Y0, Y0

roew:
	VMOVUPS Y0, (R10)(R11*1)

	// Rejection: valid lanes with e outside [Lower, Upper] leave the mask.
romask:
	TESTQ $fRS, R12
	JZ    rocopy
	VCMPPS  $0x1d, roLower(R8), Y5, Y0 // e ≥ Lower
	VCMPPS  $0x12, roUpper(R8), Y5, Y1 // e ≤ Upper
	VANDPS  Y1, Y0, Y0
	VANDNPS Y3, Y0, Y0                 // rejected = valid and not kept
	VPADDD  Y0, Y10, Y10
	VANDNPS (DX)(R11*1), Y0, Y0
	VMOVUPS Y0, (R9)(R11*1)
	JMP     ronext

rocopy:
	TESTQ   $fEM, R12
	JZ      ronext
	VMOVUPS (DX)(R11*1), Y0
	VMOVUPS Y0, (R9)(R11*1)

ronext:
	ADDQ $32, R11
	DECQ R13
	JNZ  rotest
	FLUSH
	MOVQ $BLOCK, R13

rotest:
	CMPQ R11, CX
	JB   roloop

rodone:
	FLUSH
	VMOVDQU Y7, roTruncated(R8)
	VMOVDQU Y10, roRejected(R8)
	VMOVDQU Y13, roValid(R8)
	VMOVDQU Y14, roNonZero(R8)
	VZEROUPPER
	RET
