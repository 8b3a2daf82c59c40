package kernel

// GAETokens4 is the argument block of the token-level GAE kernel over four
// rows of float32 storage whose tokens [0, N) are all valid: row q's
// element t is at byte offset Off[q] + 4·t from each pointer. The kernel
// runs the recursion of gae.Advantages,
//
//	a_t = ((r_t + γ·nv) − v_t) + γλ·na,  adv_t = F(a_t),  ret_t = F(a_t + v_t),
//
// from t = N−1 down to 0, the four rows in the four float64 lanes of one
// register, with the operations of the Go loop in its order (no fused
// multiply-add), so each row gets the Go loop's bits; the four independent
// chains of multiply-adds overlap instead of each waiting on its own. NV
// and NA hold each row's state (the value and advantage of the next valid
// token, 0 at a row's end) on entry and on return. Bad has bit q set if an
// output of row q is not finite. The assembly reads fields by offset:
// TestGAETokens4Layout pins them.
type GAETokens4 struct {
	R, V, Adv, Ret *float32
	Off            [4]int64 // byte offset of each row
	N              int64
	_              [3]int64
	G, GL          [4]float64 // γ and γλ in every lane
	NV, NA         [4]float64
	Bad            int64
}

// Run runs the kernel and reports whether it ran; without AVX2 it does
// nothing and returns false.
func (k *GAETokens4) Run() bool {
	if !HasAVX2 {
		return false
	}
	gaeTokens4AVX2(k)
	return true
}

// GAERows8 is the argument block of the token-level GAE kernel over eight
// lanes of float32 storage, each running GAETokens4's recursion on a row of
// its own in one float64 lane of an AVX-512 register, with the Go loop's
// operations in its order (so each row gets the Go loop's bits). It reads
// eight tokens of each lane's row at a time and transposes them in
// registers, so that the loads, stores and shuffles run beside the eight
// recursions instead of one float per row per instruction.
//
// Each lane works down its row in blocks of eight tokens, N blocks in all;
// lanes need not be at the same token. Off[q] is the byte offset from each
// pointer of the first token t0 of lane q's current block, and D[q] is
// Len − (t0 + 8), Len the number of valid tokens of the row (a prefix): a
// block with D < 0 holds tokens at or past Len, which the kernel neither
// reads nor leaves anything but +0 in adv and ret, and through which the
// lane's state must be 0 (a row starts there). Every block must lie inside
// its row. NV and NA hold each lane's state (the value and advantage of the
// next valid token) on entry and on return, Off and D the next block's on
// return. Bad has bit q set if an output of lane q in this call is not
// finite. Two lanes may run the same row at the same place: they compute
// and store the same bits. The assembly reads fields by offset:
// TestGAERows8Layout pins them.
type GAERows8 struct {
	R, V, Adv, Ret *float32
	Off            [8]int64
	D              [8]int32
	N              int64
	_              int64
	G, GL          float64 // γ and γλ
	NV, NA         [8]float64
	Bad            int64
}

// Run runs the kernel and reports whether it ran; without AVX-512 it does
// nothing and returns false.
func (k *GAERows8) Run() bool {
	if !HasAVX512 {
		return false
	}
	gaeRows8AVX512(k)
	return true
}

// BiLevelRows8 is the argument block of the Bi-Level GAE kernel over eight
// lanes of float32 storage, each running the recursion of gae.BiLevel on a
// row of its own in one float64 lane of an AVX-512 register. Per valid
// token (mask 1), with both branches computed in the Go loop's order and
// the turn end's chosen per lane,
//
//	token:    a = ((r + γ_tok·nv) − v) + γλ_tok·na
//	turn end: A = ((r + γ_turn·nvT) − v) + γλ_turn·naT,  nvT, naT = v, A,
//	          a = A + d·(γ_tok·nv − v)
//
// then nv, na = v, a and adv, ret = F(a), F(a + v); a masked token stores
// +0 and changes no state. The masks M and E (turn ends) must hold only 0
// and 1 (the caller checks; kernel.CountMask does it fast).
//
// Lanes move as in GAERows8: Off, D (Len − (t0 + 8), Len the tokens the
// kernel may treat as part of the row; the block's tokens at or past it
// count as masked) and N blocks; every block must lie inside its row. NV,
// NA, NVT, NAT and Seen (bit q: lane q has met a valid turn end) are each
// lane's state, on entry and on return. Bad has bit q set if lane q met,
// in this call, a turn end on a masked token, a valid token that is not a
// turn end with no turn end after it (the row's last valid token must be
// one), or an output that is not finite. The assembly reads fields by
// offset: TestBiLevelRows8Layout pins them.
type BiLevelRows8 struct {
	R, V, M, E, Adv, Ret *float32
	Off                  [8]int64
	D                    [8]int32
	N                    int64
	Seen                 int64
	GTok, GLTok          float64 // γ_tok, γ_tok·λ_tok
	GTurn, GLTurn        float64 // γ_turn, γ_turn·λ_turn
	Delta                float64 // d: 1 to add the turn end's token-level TD error, else 0
	_                    int64
	NV, NA, NVT, NAT     [8]float64
	Bad                  int64
}

// Run runs the kernel and reports whether it ran; without AVX-512 it does
// nothing and returns false.
func (k *BiLevelRows8) Run() bool {
	if !HasAVX512 {
		return false
	}
	biLevelRows8AVX512(k)
	return true
}
