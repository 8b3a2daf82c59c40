package replay

import (
	"fmt"
	"math"

	"github.com/rlpost/rlpost/tensor"
)

// Tier is a difficulty stratum of the buffer (AVATAR §4.1).
type Tier uint8

const (
	// Easy holds experiences of prompts in the top 25 % of R̄.
	Easy Tier = iota
	// Medium holds the next 35 %.
	Medium
	// Hard holds the bottom 40 %: the prompts the policy fails most.
	Hard
)

// NumTiers is the number of tiers.
const NumTiers = 3

var tierNames = [NumTiers]string{"easy", "medium", "hard"}

func (t Tier) String() string {
	if int(t) < NumTiers {
		return tierNames[t]
	}
	return fmt.Sprintf("Tier(%d)", int(t))
}

// TierWeights holds one non-negative number per tier, indexed by Tier:
// the shares of Config and the sampling weights of SampleOptions.
type TierWeights [NumTiers]float64

// Validate reports the first weight that is negative or not finite.
func (w TierWeights) Validate() error {
	for t, x := range w {
		if !(x >= 0) || math.IsInf(x, 1) {
			return tensor.Errorf(tensor.ErrRange, "weights", tensor.At(t), "%s weight %v, want a finite number ≥ 0", Tier(t), x)
		}
	}
	return nil
}

func (w TierWeights) sum() float64 { return w[Easy] + w[Medium] + w[Hard] }

// Config configures a Buffer. The defaults are AVATAR's (§4.1, §4.4).
type Config struct {
	// Capacity is the number of experiences held: 10 000, where AVATAR's
	// buffer-size ablation (Fig. 11) peaks.
	Capacity int
	// Shares split both the capacity and the R̄ distribution among the
	// tiers: Easy 0.25, Medium 0.35, Hard 0.40. Each is > 0 and they sum
	// to 1. A tier holds share·Capacity experiences, rounded so that the
	// tiers add up to Capacity. An experience goes to Hard when its
	// prompt's position in the R̄ distribution (VCRS.Position) is below
	// Shares[Hard], to Medium below Shares[Hard] + Shares[Medium], else
	// to Easy.
	Shares TierWeights
	// Window is W of R̄(q): 20.
	Window int
	// MaxPrompts bounds the prompts the VCRS tracks (DefaultMaxPrompts);
	// the least recently updated is forgotten when a new one arrives.
	MaxPrompts int
	// MaxStaleness is η of AReaL's staleness control (AReaL, arXiv 2505.24298; 4 there):
	// an experience generated more than η policy versions before the
	// current one (Version < current − η) is dropped, on arrival or when
	// SetVersion moves on. 0, the default, turns the guard off (η = 0
	// would keep only the current policy's experiences: no replay at all).
	MaxStaleness int64
}

// DefaultConfig returns AVATAR's buffer: 10 000 experiences, Easy 25 %,
// Medium 35 %, Hard 40 %, W = 20, no staleness guard.
func DefaultConfig() Config {
	return Config{
		Capacity:   10000,
		Shares:     TierWeights{Easy: 0.25, Medium: 0.35, Hard: 0.40},
		Window:     DefaultWindow,
		MaxPrompts: DefaultMaxPrompts,
	}
}

// maxCapacity keeps snapshot sizes and ring indexes far from overflow.
const maxCapacity = 1 << 30

// Validate reports the first field of c that is out of its domain.
func (c Config) Validate() error {
	switch {
	case c == Config{}:
		return tensor.Errorf(tensor.ErrRange, "Config", nil, "the zero value (capacity 0); start from replay.DefaultConfig()")
	case c.Capacity < NumTiers || c.Capacity > maxCapacity:
		return tensor.Errorf(tensor.ErrRange, "Config.Capacity", nil, "%d, want %d..%d", c.Capacity, NumTiers, maxCapacity)
	case c.Window < 1 || c.Window > MaxWindow:
		return tensor.Errorf(tensor.ErrRange, "Config.Window", nil, "%d, want 1..%d", c.Window, MaxWindow)
	case c.MaxPrompts < 1 || c.MaxPrompts > math.MaxInt32:
		return tensor.Errorf(tensor.ErrRange, "Config.MaxPrompts", nil, "%d, want 1..%d", c.MaxPrompts, math.MaxInt32)
	case c.MaxStaleness < 0:
		return tensor.Errorf(tensor.ErrRange, "Config.MaxStaleness", nil, "%d, want ≥ 0 (0 is off)", c.MaxStaleness)
	}
	for t, s := range c.Shares {
		if !(s > 0 && s < 1) {
			return tensor.Errorf(tensor.ErrRange, "Config.Shares", tensor.At(t), "%s share %v, want a number in (0, 1)", Tier(t), s)
		}
	}
	if s := c.Shares.sum(); math.Abs(s-1) > 1e-12 {
		return tensor.Errorf(tensor.ErrRange, "Config.Shares", nil, "sum to %v, want 1", s)
	}
	for t, n := range c.capacities() {
		if n < 1 {
			return tensor.Errorf(tensor.ErrRange, "Config.Shares", tensor.At(t), "%s share %v of capacity %d holds no experience", Tier(t), c.Shares[t], c.Capacity)
		}
	}
	return nil
}

// capacities returns the size of each tier: share·Capacity rounded by the
// largest-remainder method, so that the sizes add up to Capacity, with ties
// going to the harder tier.
func (c Config) capacities() [NumTiers]int {
	var n [NumTiers]int
	var frac [NumTiers]float64
	left := c.Capacity
	for t, s := range c.Shares {
		x := s * float64(c.Capacity)
		n[t] = int(x)
		frac[t] = x - float64(n[t])
		left -= n[t]
	}
	for ; left > 0; left-- {
		best := Hard
		for _, t := range [...]Tier{Medium, Easy} {
			if frac[t] > frac[best] {
				best = t
			}
		}
		n[best]++
		frac[best] = -1
	}
	return n
}

// tier maps a position in the R̄ distribution to a tier.
func (c Config) tier(p float64) Tier {
	switch {
	case p < c.Shares[Hard]:
		return Hard
	case p < c.Shares[Hard]+c.Shares[Medium]:
		return Medium
	}
	return Easy
}
