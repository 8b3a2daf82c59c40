package kernel

import (
	"testing"
	"unsafe"
)

// TestPolicyTokensLayout pins the offsets the assembly reads.
func TestPolicyTokensLayout(t *testing.T) {
	var k PolicyTokens
	for _, f := range []struct {
		name string
		got  uintptr
		want uintptr
	}{
		{"Logp", unsafe.Offsetof(k.Logp), 0}, {"Grad", unsafe.Offsetof(k.Grad), 56},
		{"N", unsafe.Offsetof(k.N), 64}, {"HasProx", unsafe.Offsetof(k.HasProx), 72},
		{"HasRef", unsafe.Offsetof(k.HasRef), 80}, {"HasTW", unsafe.Offsetof(k.HasTW), 88},
		{"KL", unsafe.Offsetof(k.KL), 96}, {"Lo", unsafe.Offsetof(k.Lo), 128},
		{"Hi", unsafe.Offsetof(k.Hi), 160}, {"Dual", unsafe.Offsetof(k.Dual), 192},
		{"Clamp", unsafe.Offsetof(k.Clamp), 224}, {"NegClamp", unsafe.Offsetof(k.NegClamp), 256},
		{"Beta", unsafe.Offsetof(k.Beta), 288}, {"Coef", unsafe.Offsetof(k.Coef), 320},
		{"KLClamp", unsafe.Offsetof(k.KLClamp), 352}, {"CapAt", unsafe.Offsetof(k.CapAt), 384},
		{"CapTo", unsafe.Offsetof(k.CapTo), 416}, {"Policy", unsafe.Offsetof(k.Policy), 448},
		{"KLSum", unsafe.Offsetof(k.KLSum), 480}, {"NegDelta", unsafe.Offsetof(k.NegDelta), 512},
		{"Ratio", unsafe.Offsetof(k.Ratio), 544}, {"Behave", unsafe.Offsetof(k.Behave), 576},
		{"BehaveMax", unsafe.Offsetof(k.BehaveMax), 608}, {"High", unsafe.Offsetof(k.High), 640},
		{"Low", unsafe.Offsetof(k.Low), 672}, {"DualN", unsafe.Offsetof(k.DualN), 704},
		{"Capped", unsafe.Offsetof(k.Capped), 736}, {"Bad", unsafe.Offsetof(k.Bad), 768},
	} {
		if f.got != f.want {
			t.Errorf("offset of %s = %d, the assembly reads %d", f.name, f.got, f.want)
		}
	}
}
