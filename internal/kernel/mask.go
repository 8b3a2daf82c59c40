package kernel

// CountMask returns the number of entries of m equal to 1, or −1 if an entry
// is neither 0 nor 1 (NaN included). It validates and measures a mask row in
// one pass, sixteen entries per instruction with AVX-512, eight with AVX2.
func CountMask(m []float32) int {
	n := 0
	switch {
	case HasAVX512:
		head := len(m) &^ 15
		if n = countMaskAVX512(m[:head]); n < 0 {
			return -1
		}
		m = m[head:]
	case HasAVX2:
		head := len(m) &^ 7
		if n = countMaskAVX2(m[:head]); n < 0 {
			return -1
		}
		m = m[head:]
	}
	rest := CountMaskGo(m)
	if rest < 0 {
		return -1
	}
	return n + rest
}

// CountMaskGo is CountMask as a plain loop, for any float storage.
func CountMaskGo[F ~float32 | ~float64](m []F) int {
	n := 0
	for _, v := range m {
		if v == 1 {
			n++
		} else if v != 0 {
			return -1
		}
	}
	return n
}
