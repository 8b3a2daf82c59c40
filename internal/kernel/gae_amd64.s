//go:build !purego

#include "textflag.h"

// The GAE kernels over eight rows at a time with AVX-512 (F, VL, DQ). They
// load eight tokens of each of the eight rows, transpose the 8×8 block of
// float32 in registers so that one register holds one token of all eight
// rows, run the backward recursion token by token in the eight float64
// lanes of a zmm register (lane q is row q), and transpose the outputs back
// before storing them. See GAERows8 and BiLevelRows8 in gae.go.

// Offsets into GAERows8; gae_test.go checks them against the Go struct.
#define r8R 0
#define r8V 8
#define r8Adv 16
#define r8Ret 24
#define r8Off 32
#define r8D 96
#define r8N 128
#define r8G 144
#define r8GL 152
#define r8NV 160
#define r8NA 224
#define r8Bad 288

// kjm8 holds, in eight int32 lanes each, j − 8 for j = 0..7: token t0 + j
// of a row is one of its first Len tokens when Len − (t0 + 8) > j − 8.
DATA kjm8<>+0(SB)/8, $0xfffffff8fffffff8
DATA kjm8<>+8(SB)/8, $0xfffffff8fffffff8
DATA kjm8<>+16(SB)/8, $0xfffffff8fffffff8
DATA kjm8<>+24(SB)/8, $0xfffffff8fffffff8
DATA kjm8<>+32(SB)/8, $0xfffffff9fffffff9
DATA kjm8<>+40(SB)/8, $0xfffffff9fffffff9
DATA kjm8<>+48(SB)/8, $0xfffffff9fffffff9
DATA kjm8<>+56(SB)/8, $0xfffffff9fffffff9
DATA kjm8<>+64(SB)/8, $0xfffffffafffffffa
DATA kjm8<>+72(SB)/8, $0xfffffffafffffffa
DATA kjm8<>+80(SB)/8, $0xfffffffafffffffa
DATA kjm8<>+88(SB)/8, $0xfffffffafffffffa
DATA kjm8<>+96(SB)/8, $0xfffffffbfffffffb
DATA kjm8<>+104(SB)/8, $0xfffffffbfffffffb
DATA kjm8<>+112(SB)/8, $0xfffffffbfffffffb
DATA kjm8<>+120(SB)/8, $0xfffffffbfffffffb
DATA kjm8<>+128(SB)/8, $0xfffffffcfffffffc
DATA kjm8<>+136(SB)/8, $0xfffffffcfffffffc
DATA kjm8<>+144(SB)/8, $0xfffffffcfffffffc
DATA kjm8<>+152(SB)/8, $0xfffffffcfffffffc
DATA kjm8<>+160(SB)/8, $0xfffffffdfffffffd
DATA kjm8<>+168(SB)/8, $0xfffffffdfffffffd
DATA kjm8<>+176(SB)/8, $0xfffffffdfffffffd
DATA kjm8<>+184(SB)/8, $0xfffffffdfffffffd
DATA kjm8<>+192(SB)/8, $0xfffffffefffffffe
DATA kjm8<>+200(SB)/8, $0xfffffffefffffffe
DATA kjm8<>+208(SB)/8, $0xfffffffefffffffe
DATA kjm8<>+216(SB)/8, $0xfffffffefffffffe
DATA kjm8<>+224(SB)/8, $0xffffffffffffffff
DATA kjm8<>+232(SB)/8, $0xffffffffffffffff
DATA kjm8<>+240(SB)/8, $0xffffffffffffffff
DATA kjm8<>+248(SB)/8, $0xffffffffffffffff
GLOBL kjm8<>(SB), RODATA|NOPTR, $256

// keight holds 8 in eight int32 lanes.
DATA keight<>+0(SB)/8, $0x0000000800000008
DATA keight<>+8(SB)/8, $0x0000000800000008
DATA keight<>+16(SB)/8, $0x0000000800000008
DATA keight<>+24(SB)/8, $0x0000000800000008
GLOBL keight<>(SB), RODATA|NOPTR, $32

// Lane q's block is addressed as (P)(Rq*1), P an array's base and Rq the
// byte offset of the block's first token t0 in the lane's row: lanes 0–7
// are R8, R9, R10, R11, R12, R13, R14, R15. Each lane has its own t0.

// LOADROWS, BACKROWS and SAVEROWS keep the eight lanes' row offsets (the
// int64s at O+0 … O+56 of the argument struct at DI) in R8–R15, and step
// them back one block of eight float32 tokens; both eight-lane kernels
// use them.
#define LOADROWS(O) \
	MOVQ O+0(DI), R8 \
	MOVQ O+8(DI), R9 \
	MOVQ O+16(DI), R10 \
	MOVQ O+24(DI), R11 \
	MOVQ O+32(DI), R12 \
	MOVQ O+40(DI), R13 \
	MOVQ O+48(DI), R14 \
	MOVQ O+56(DI), R15

#define BACKROWS \
	SUBQ $32, R8 \
	SUBQ $32, R9 \
	SUBQ $32, R10 \
	SUBQ $32, R11 \
	SUBQ $32, R12 \
	SUBQ $32, R13 \
	SUBQ $32, R14 \
	SUBQ $32, R15

#define SAVEROWS(O) \
	MOVQ R8, O+0(DI) \
	MOVQ R9, O+8(DI) \
	MOVQ R10, O+16(DI) \
	MOVQ R11, O+24(DI) \
	MOVQ R12, O+32(DI) \
	MOVQ R13, O+40(DI) \
	MOVQ R14, O+48(DI) \
	MOVQ R15, O+56(DI)

// LOADT loads tokens t0..t0+7 of the eight rows of the array at P and
// leaves token t0 + j of every row (lane q = row q) in Oj. Rows q and q + 4
// share a register from the load on (VINSERTF128), so two in-lane 4×4
// transposes finish the 8×8 one. Y0–Y15 are clobbered.
#define LOADT(P, O0, O1, O2, O3, O4, O5, O6, O7) \
	VMOVUPS (P)(R8*1), X0 \
	VINSERTF128 $1, (P)(R12*1), Y0, Y0 \
	VMOVUPS (P)(R9*1), X1 \
	VINSERTF128 $1, (P)(R13*1), Y1, Y1 \
	VMOVUPS (P)(R10*1), X2 \
	VINSERTF128 $1, (P)(R14*1), Y2, Y2 \
	VMOVUPS (P)(R11*1), X3 \
	VINSERTF128 $1, (P)(R15*1), Y3, Y3 \
	VMOVUPS 16(P)(R8*1), X4 \
	VINSERTF128 $1, 16(P)(R12*1), Y4, Y4 \
	VMOVUPS 16(P)(R9*1), X5 \
	VINSERTF128 $1, 16(P)(R13*1), Y5, Y5 \
	VMOVUPS 16(P)(R10*1), X6 \
	VINSERTF128 $1, 16(P)(R14*1), Y6, Y6 \
	VMOVUPS 16(P)(R11*1), X7 \
	VINSERTF128 $1, 16(P)(R15*1), Y7, Y7 \
	TR4(Y0, Y1, Y2, Y3, Y8, Y9, Y10, Y11, O0, O1, O2, O3) \
	TR4(Y4, Y5, Y6, Y7, Y12, Y13, Y14, Y15, O4, O5, O6, O7)

// TR4 transposes the 4×4 blocks in each 128-bit half of A0–A3 into O0–O3
// (T0–T3 are scratch): Oj holds element j of A0, A1, A2, A3 in each half.
#define TR4(A0, A1, A2, A3, T0, T1, T2, T3, O0, O1, O2, O3) \
	VUNPCKLPS A1, A0, T0 \
	VUNPCKHPS A1, A0, T1 \
	VUNPCKLPS A3, A2, T2 \
	VUNPCKHPS A3, A2, T3 \
	VSHUFPS $0x44, T2, T0, O0 \
	VSHUFPS $0xee, T2, T0, O1 \
	VSHUFPS $0x44, T3, T1, O2 \
	VSHUFPS $0xee, T3, T1, O3

// STORET is LOADT backwards: token t0 + j of every row in Ij is stored to
// the array at P. Y8–Y15 are clobbered.
#define STORET(P, I0, I1, I2, I3, I4, I5, I6, I7) \
	TR4(I0, I1, I2, I3, Y8, Y9, Y10, Y11, Y12, Y13, Y14, Y15) \
	VMOVUPS X12, (P)(R8*1) \
	VEXTRACTF128 $1, Y12, (P)(R12*1) \
	VMOVUPS X13, (P)(R9*1) \
	VEXTRACTF128 $1, Y13, (P)(R13*1) \
	VMOVUPS X14, (P)(R10*1) \
	VEXTRACTF128 $1, Y14, (P)(R14*1) \
	VMOVUPS X15, (P)(R11*1) \
	VEXTRACTF128 $1, Y15, (P)(R15*1) \
	TR4(I4, I5, I6, I7, Y8, Y9, Y10, Y11, Y12, Y13, Y14, Y15) \
	VMOVUPS X12, 16(P)(R8*1) \
	VEXTRACTF128 $1, Y12, 16(P)(R12*1) \
	VMOVUPS X13, 16(P)(R9*1) \
	VEXTRACTF128 $1, Y13, 16(P)(R13*1) \
	VMOVUPS X14, 16(P)(R10*1) \
	VEXTRACTF128 $1, Y14, 16(P)(R14*1) \
	VMOVUPS X15, 16(P)(R11*1) \
	VEXTRACTF128 $1, Y15, 16(P)(R15*1)

// ZEROLANE zeroes the lanes of the token registers R and V (token t0 + j
// of each lane; J = 32·j is the offset of j − 8 in kjm8) of the rows whose
// length it is past; Y9 holds D = Len − (t0 + 8) per lane.
#define ZEROLANE(J, R, V) \
	VPCMPGTD kjm8<>+J(SB), Y9, Y10 \
	VPANDD Y10, R, R \
	VPAND Y10, V, V

// TOKSTEP is one token of GAERows8 in the eight lanes: r and v (float32,
// one token of every row) in R and V become adv and ret. Z28 γ, Z29 γλ,
// Z30 nv, Z31 na; Y27 collects x − x over the outputs (0 while all are
// finite). The operations and their order are the Go loop's:
// a = ((r + γ·nv) − v) + γλ·na.
#define TOKSTEP(R, V) \
	VCVTPS2PD R, Z8 \
	VCVTPS2PD V, Z9 \
	VMULPD Z30, Z28, Z10 \
	VADDPD Z10, Z8, Z10 \
	VSUBPD Z9, Z10, Z10 \
	VMULPD Z31, Z29, Z11 \
	VADDPD Z11, Z10, Z31 \
	VMOVAPD Z9, Z30 \
	VADDPD Z9, Z31, Z12 \
	VCVTPD2PS Z31, R \
	VCVTPD2PS Z12, V \
	VSUBPS R, R, Y13 \
	VPORD Y13, Y27, Y27 \
	VSUBPS V, V, Y13 \
	VPORD Y13, Y27, Y27

// func gaeRows8AVX512(k *GAERows8)
//
// Registers: AX, BX, CX, DX the arrays r, v, adv, ret; SI the blocks left;
// DI k; R8–R15 the lanes. Token j of the block: r in Y16+j, v in Yj (adv
// and ret after TOKSTEP).
TEXT ·gaeRows8AVX512(SB), NOSPLIT, $0-8
	MOVQ k+0(FP), DI
	MOVQ r8R(DI), AX
	MOVQ r8V(DI), BX
	MOVQ r8Adv(DI), CX
	MOVQ r8Ret(DI), DX
	MOVQ r8N(DI), SI
	VBROADCASTSD r8G(DI), Z28
	VBROADCASTSD r8GL(DI), Z29
	VMOVUPD r8NV(DI), Z30
	VMOVUPD r8NA(DI), Z31
	VPXORD Y27, Y27, Y27
	TESTQ SI, SI
	JZ    g8done
	LOADROWS(r8Off)

g8loop:
	LOADT(AX, Y16, Y17, Y18, Y19, Y20, Y21, Y22, Y23)
	LOADT(BX, Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7)
	VMOVDQU r8D(DI), Y9
	VTESTPS Y9, Y9
	JEQ     g8full   // D ≥ 0 in every lane: the block is inside every row
	// Some row ends inside the block: zero its r and v past its end, so
	// that its lane computes +0 there (its state is 0 until its last token)
	// and stores +0, the output of a masked token.
	ZEROLANE(0, Y16, Y0)
	ZEROLANE(32, Y17, Y1)
	ZEROLANE(64, Y18, Y2)
	ZEROLANE(96, Y19, Y3)
	ZEROLANE(128, Y20, Y4)
	ZEROLANE(160, Y21, Y5)
	ZEROLANE(192, Y22, Y6)
	ZEROLANE(224, Y23, Y7)

g8full:
	VPADDD  keight<>(SB), Y9, Y9
	VMOVDQU Y9, r8D(DI)
	TOKSTEP(Y23, Y7)
	TOKSTEP(Y22, Y6)
	TOKSTEP(Y21, Y5)
	TOKSTEP(Y20, Y4)
	TOKSTEP(Y19, Y3)
	TOKSTEP(Y18, Y2)
	TOKSTEP(Y17, Y1)
	TOKSTEP(Y16, Y0)
	STORET(CX, Y16, Y17, Y18, Y19, Y20, Y21, Y22, Y23)
	STORET(DX, Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7)
	BACKROWS
	DECQ SI
	JNZ  g8loop
	SAVEROWS(r8Off)

g8done:
	VMOVUPD   Z30, r8NV(DI)
	VMOVUPD   Z31, r8NA(DI)
	VMOVDQU32 Y27, Y11
	VXORPS    X7, X7, X7
	VCMPPS    $0x04, Y7, Y11, Y7 // ≠ 0 or NaN
	VMOVMSKPS Y7, R10
	MOVQ      R10, r8Bad(DI)
	VZEROUPPER
	RET

// Offsets into BiLevelRows8; gae_test.go checks them against the Go struct.
#define b8R 0
#define b8V 8
#define b8M 16
#define b8E 24
#define b8Adv 32
#define b8Ret 40
#define b8Off 48
#define b8D 112
#define b8N 144
#define b8Seen 152
#define b8GTok 160
#define b8GLTok 168
#define b8GTurn 176
#define b8GLTurn 184
#define b8Delta 192
#define b8NV 208
#define b8NA 272
#define b8NVT 336
#define b8NAT 400
#define b8Bad 464

// The codes 2·m + e of a token (m and e each 0 or 1): 0 masked, 1 a turn
// end on a masked token (an error), 2 valid, 3 a valid turn end.
DATA kone32<>+0(SB)/4, $0x3f800000
GLOBL kone32<>(SB), RODATA|NOPTR, $4
DATA ktwo32<>+0(SB)/4, $0x40000000
GLOBL ktwo32<>(SB), RODATA|NOPTR, $4
DATA kthree32<>+0(SB)/4, $0x40400000
GLOBL kthree32<>(SB), RODATA|NOPTR, $4

// LOADH loads the half block of four tokens at byte H of each lane's block
// of the array at P into A0–A3 (rows q and q + 4 in Aq), untransposed.
#define LOADH(P, H, A0, A1, A2, A3) \
	VMOVUPS H(P)(R8*1), A0 \
	VINSERTF128 $1, H(P)(R12*1), A0, A0 \
	VMOVUPS H(P)(R9*1), A1 \
	VINSERTF128 $1, H(P)(R13*1), A1, A1 \
	VMOVUPS H(P)(R10*1), A2 \
	VINSERTF128 $1, H(P)(R14*1), A2, A2 \
	VMOVUPS H(P)(R11*1), A3 \
	VINSERTF128 $1, H(P)(R15*1), A3, A3

// STOREH stores the four tokens in I0–I3 (lane q = row q) to the half
// block at byte H of each lane's block of the array at P. Y8–Y15 are
// clobbered.
#define STOREH(P, H, I0, I1, I2, I3) \
	TR4(I0, I1, I2, I3, Y8, Y9, Y10, Y11, Y12, Y13, Y14, Y15) \
	VMOVUPS X12, H(P)(R8*1) \
	VEXTRACTF128 $1, Y12, H(P)(R12*1) \
	VMOVUPS X13, H(P)(R9*1) \
	VEXTRACTF128 $1, Y13, H(P)(R13*1) \
	VMOVUPS X14, H(P)(R10*1) \
	VEXTRACTF128 $1, Y14, H(P)(R14*1) \
	VMOVUPS X15, H(P)(R11*1) \
	VEXTRACTF128 $1, Y15, H(P)(R15*1)

// BIZERO sets the code C of token t0 + j (J = 32·j) to 0, masked, in the
// lanes whose row it is past; Y24 holds D = Len − (t0 + 8) per lane.
#define BIZERO(J, C) \
	VPCMPGTD    kjm8<>+J(SB), Y24, K4 \
	VMOVDQA32.Z C, K4, C

// BISTEP is one token of BiLevelRows8 in the eight lanes: r, v (float32)
// and the code c of one token of every row in R, V and C; r and v become
// adv and ret. Z28 nv, Z29 na (next valid token), Z30 nvT, Z31 naT (next
// turn end), K5 the lanes that have met a turn end, K7 the lanes with an
// error, Y27 x − x over the outputs. The arithmetic is the Go loop's, in
// its order, computed for both branches and blended:
//
//	token:    a = ((r + γ_tok·nv) − v) + γλ_tok·na
//	turn end: A = ((r + γ_turn·nvT) − v) + γλ_turn·naT;  a = A + d·(γ_tok·nv − v)
//
// A masked token changes no state and stores +0. The new na is written
// under the lane masks: the token branch's a in valid lanes, then the turn
// end's in valid turn-end lanes; masked lanes keep theirs.
#define BISTEP(R, V, C) \
	VCMPPS.BCST $0x0d, ktwo32<>(SB), C, K1 \
	VCMPPS.BCST $0x00, kthree32<>(SB), C, K2 \
	VCMPPS.BCST $0x00, kone32<>(SB), C, K3 \
	KORW        K2, K5, K5 \
	KANDNW      K1, K5, K6 \
	KORW        K6, K7, K7 \
	KORW        K3, K7, K7 \
	VCVTPS2PD   R, Z8 \
	VCVTPS2PD   V, Z9 \
	VMULPD.BCST b8GTok(DI), Z28, Z10 \
	VADDPD      Z10, Z8, Z11 \
	VSUBPD      Z9, Z11, Z11 \
	VMULPD.BCST b8GLTok(DI), Z29, Z12 \
	VMULPD.BCST b8GTurn(DI), Z30, Z13 \
	VADDPD      Z13, Z8, Z13 \
	VSUBPD      Z9, Z13, Z13 \
	VMULPD.BCST b8GLTurn(DI), Z31, Z14 \
	VADDPD      Z14, Z13, Z13 \
	VSUBPD      Z9, Z10, Z14 \
	VMULPD.BCST b8Delta(DI), Z14, Z14 \
	VADDPD      Z12, Z11, K1, Z29 \
	VADDPD      Z14, Z13, K2, Z29 \
	VMOVAPD     Z13, K2, Z31 \
	VMOVAPD     Z9, K2, Z30 \
	VMOVAPD     Z9, K1, Z28 \
	VADDPD      Z9, Z29, Z14 \
	VCVTPD2PS.Z Z29, K1, R \
	VCVTPD2PS.Z Z14, K1, V \
	VSUBPS      R, R, Y15 \
	VPORD       Y15, Y27, Y27 \
	VSUBPS      V, V, Y15 \
	VPORD       Y15, Y27, Y27

// BIHALF runs the half block at byte H (tokens t0 + J0 .. t0 + J0 + 3,
// J0 = 32·j0 the offset of the first in kjm8) of every lane.
#define BIHALF(H, J0, J1, J2, J3) \
	MOVQ b8M(DI), CX \
	MOVQ b8E(DI), DX \
	LOADH(AX, H, Y0, Y1, Y2, Y3) \
	TR4(Y0, Y1, Y2, Y3, Y8, Y9, Y10, Y11, Y16, Y17, Y18, Y19) \
	LOADH(BX, H, Y0, Y1, Y2, Y3) \
	TR4(Y0, Y1, Y2, Y3, Y8, Y9, Y10, Y11, Y20, Y21, Y22, Y23) \
	LOADH(CX, H, Y0, Y1, Y2, Y3) \
	LOADH(DX, H, Y4, Y5, Y6, Y7) \
	VADDPS Y0, Y0, Y0 \
	VADDPS Y4, Y0, Y0 \
	VADDPS Y1, Y1, Y1 \
	VADDPS Y5, Y1, Y1 \
	VADDPS Y2, Y2, Y2 \
	VADDPS Y6, Y2, Y2 \
	VADDPS Y3, Y3, Y3 \
	VADDPS Y7, Y3, Y3 \
	TR4(Y0, Y1, Y2, Y3, Y8, Y9, Y10, Y11, Y4, Y5, Y6, Y7) \
	VPMOVD2M Y24, K4 \
	KORTESTW K4, K4 \
	JEQ      9(PC) \
	BIZERO(J0, Y4) \
	BIZERO(J1, Y5) \
	BIZERO(J2, Y6) \
	BIZERO(J3, Y7) \
	BISTEP(Y19, Y23, Y7) \
	BISTEP(Y18, Y22, Y6) \
	BISTEP(Y17, Y21, Y5) \
	BISTEP(Y16, Y20, Y4) \
	MOVQ b8Adv(DI), CX \
	MOVQ b8Ret(DI), DX \
	STOREH(CX, H, Y16, Y17, Y18, Y19) \
	STOREH(DX, H, Y20, Y21, Y22, Y23)

// func biLevelRows8AVX512(k *BiLevelRows8)
//
// Registers: AX, BX the arrays r and v; CX, DX m and e while loading, adv
// and ret while storing; SI the blocks left; DI k; R8–R15 the lanes; Y24
// D per lane.
TEXT ·biLevelRows8AVX512(SB), NOSPLIT, $0-8
	MOVQ      k+0(FP), DI
	MOVQ      b8R(DI), AX
	MOVQ      b8V(DI), BX
	MOVQ      b8N(DI), SI
	VMOVUPD   b8NV(DI), Z28
	VMOVUPD   b8NA(DI), Z29
	VMOVUPD   b8NVT(DI), Z30
	VMOVUPD   b8NAT(DI), Z31
	VMOVDQU32 b8D(DI), Y24
	KMOVW     b8Seen(DI), K5
	KXORW     K7, K7, K7
	VPXORD    Y27, Y27, Y27
	TESTQ     SI, SI
	JZ        b8done
	LOADROWS(b8Off)

b8loop:
	BIHALF(16, 128, 160, 192, 224)
	BIHALF(0, 0, 32, 64, 96)
	VPADDD keight<>(SB), Y24, Y24
	BACKROWS
	DECQ   SI
	JNZ    b8loop
	SAVEROWS(b8Off)

b8done:
	VMOVUPD   Z28, b8NV(DI)
	VMOVUPD   Z29, b8NA(DI)
	VMOVUPD   Z30, b8NVT(DI)
	VMOVUPD   Z31, b8NAT(DI)
	VMOVDQU32 Y24, b8D(DI)
	KMOVW     K5, AX
	MOVQ      AX, b8Seen(DI)
	VMOVDQU32 Y27, Y11
	VXORPS    X7, X7, X7
	VCMPPS    $0x04, Y7, Y11, Y7 // ≠ 0 or NaN
	VMOVMSKPS Y7, R10
	KMOVW     K7, AX
	ORQ       AX, R10
	ANDQ      $0xff, R10
	MOVQ      R10, b8Bad(DI)
	VZEROUPPER
	RET
