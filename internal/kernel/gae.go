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
