package main

import (
	"fmt"
	"math/rand/v2"

	"github.com/rlpost/rlpost/examples/internal/policy"
	"github.com/rlpost/rlpost/gae"
	"github.com/rlpost/rlpost/ppo"
	"github.com/rlpost/rlpost/rewards"
	"github.com/rlpost/rlpost/tensor"
)

// config is one experiment: the task, the networks and PPO.
type config struct {
	// Seed drives the initial weights, the warm start and the sampling of
	// both runs.
	Seed uint64
	// Seeds is the number of repetitions, with seeds Seed, Seed+1, …: the
	// curves printed are their means.
	Seeds int
	// MapSeed draws the training and evaluation maps, kept apart from
	// Seed so that runs with different seeds play the same maps.
	MapSeed uint64
	Maps    mapConfig
	// TrainMaps and EvalMaps are the sizes of the two fixed map sets, drawn
	// one after the other; no evaluation map is also a training map.
	TrainMaps, EvalMaps int
	// MaxTurns ends an episode; MaxTokens bounds one response.
	MaxTurns, MaxTokens int
	Hidden              int
	// WarmSteps of supervised training teach the response format with
	// random grounding words and actions, before either run starts.
	WarmSteps int
	// Updates PPO updates, each on Batch fresh episodes with Epochs passes
	// over them; the evaluation maps are played every EvalEvery updates.
	Updates, Batch, Epochs, EvalEvery int
	PolicyLR, CriticLR                float64
	// Sparse makes the reward terminal: +10 on the turn that reaches the
	// goal and nothing else — no format, grounding or step reward — so
	// that every turn of a winning episode gets its credit only from the
	// end. False gives VAGEN's dense turn reward (Turn and the −0.1 step).
	Sparse bool
	// KLCoef is β of the per-token KL penalty folded into the rewards.
	KLCoef  float64
	Token   gae.Config
	BiLevel gae.BiLevelConfig
	PPO     ppo.Config
	Value   ppo.ValueConfig
	Turn    rewards.TurnConfig
}

// defaultConfig is the run of `go run ./examples/agent`.
func defaultConfig() config {
	c := config{
		Seed: 1, MapSeed: 1,
		Maps:      mapConfig{Size: 4, HoleProb: 0.2, MinPath: 3},
		TrainMaps: 200, EvalMaps: 100,
		MaxTurns: 8, MaxTokens: 8,
		Hidden:    64,
		WarmSteps: 300,
		Seeds:     5,
		Updates:   400, Batch: 32, Epochs: 4, EvalEvery: 20,
		PolicyLR: 3e-3, CriticLR: 3e-3,
		KLCoef:  gae.DefaultKLCoef,
		Token:   gae.DefaultConfig(),
		BiLevel: gae.DefaultBiLevelConfig(),
		PPO:     ppo.DefaultConfig(),
		Value:   ppo.DefaultValueConfig(),
		Turn:    rewards.VAGENTurnConfig(),
	}
	// verl whitens GAE advantages over the batch (masked_whiten), so the
	// size of a PPO step does not follow the size of the rewards (+10 at
	// the goal).
	c.Token.Whiten = true
	c.BiLevel.Whiten = true
	// The comparison: a terminal reward, and both estimators discounting
	// (γ, λ < 1). Token GAE takes PPO's usual γ = 0.99, λ = 0.95 per
	// token; Bi-Level GAE VAGEN-Full's γ_turn = 0.95 with λ_turn = 0.95
	// to match, and γ_token = λ_token = 1 within a turn.
	c.Sparse = true
	c.Token.Gamma, c.Token.Lambda = 0.99, 0.95
	c.BiLevel.LambdaTurn = 0.95
	// VAGEN's turn reward has β_w·I_w too; responses here carry no
	// prediction, so I_w = 0 and the coefficient is moot.
	return c
}

// Validate reports a setting out of its domain.
func (c config) Validate() error {
	switch {
	case c.Seeds < 1:
		return fmt.Errorf("seeds %d, want ≥ 1", c.Seeds)
	case c.Maps.Size < 2 || c.Maps.Size > 16:
		return fmt.Errorf("map size %d, want 2 to 16", c.Maps.Size)
	case !(c.Maps.HoleProb >= 0 && c.Maps.HoleProb < 0.5):
		return fmt.Errorf("hole probability %v, want in [0, 0.5)", c.Maps.HoleProb)
	case c.Maps.MinPath < 1 || c.Maps.MinPath > 2*(c.Maps.Size-1):
		return fmt.Errorf("minimum path %d, want 1 to %d", c.Maps.MinPath, 2*(c.Maps.Size-1))
	case c.TrainMaps < 1 || c.EvalMaps < 1:
		return fmt.Errorf("map sets of %d and %d, want ≥ 1", c.TrainMaps, c.EvalMaps)
	case c.MaxTurns < 1 || c.MaxTokens < 6:
		return fmt.Errorf("%d turns of %d tokens, want ≥ 1 turn of ≥ 6 tokens (a well-formed response)", c.MaxTurns, c.MaxTokens)
	case c.Hidden < 1 || c.Batch < 1 || c.Epochs < 1 || c.EvalEvery < 1 || c.Updates < 0 || c.WarmSteps < 0:
		return fmt.Errorf("hidden %d, batch %d, epochs %d, eval every %d, updates %d, warm steps %d: want positive sizes",
			c.Hidden, c.Batch, c.Epochs, c.EvalEvery, c.Updates, c.WarmSteps)
	case !(c.PolicyLR > 0) || !(c.CriticLR > 0) || !(c.KLCoef >= 0):
		return fmt.Errorf("learning rates %v, %v and KL coefficient %v, want > 0, > 0, ≥ 0", c.PolicyLR, c.CriticLR, c.KLCoef)
	}
	for _, err := range []error{c.Token.Validate(), c.BiLevel.Validate(), c.PPO.Validate(), c.Value.Validate(), c.Turn.Validate()} {
		if err != nil {
			return err
		}
	}
	return nil
}

// quickConfig is -quick: the same task with fewer updates.
func quickConfig() config {
	c := defaultConfig()
	c.Updates, c.EvalEvery, c.Seeds = 100, 10, 1
	return c
}

// estimator names the advantage estimator of a run.
type estimator int

const (
	// tokenGAE is token-level GAE over the multi-turn mask (VAGEN-Base's
	// masked GAE): gae.Advantages.
	tokenGAE estimator = iota
	// biLevelGAE is VAGEN-Full's Bi-Level GAE: gae.BiLevel.
	biLevelGAE
)

func (e estimator) String() string { return [...]string{"token_gae", "bilevel_gae"}[e] }

// agent is a policy, its critic and their optimisers.
type agent struct {
	cfg            config
	feats          features
	Policy, Critic *policy.Model
	// Ref is the frozen policy of the KL penalty (the warm-started one).
	Ref                *policy.Model
	polOpt, critOpt    *policy.Adam
	polGrad, critGrad  *policy.Grads
	pass, refPass      *policy.Pass
	critPass           *policy.Pass
	polPasses, vPasses []*policy.Pass
	scratch            []float64
	buf, fbuf          []int
}

// newAgent returns an agent training copies of pol and critic.
func newAgent(cfg config, pol, critic, ref *policy.Model) *agent {
	a := &agent{
		cfg:     cfg,
		feats:   newFeatures(cfg.Maps.Size, cfg.MaxTokens, cfg.MaxTurns),
		Policy:  pol.Clone(),
		Critic:  critic.Clone(),
		Ref:     ref,
		scratch: make([]float64, vocabSize),
	}
	a.polOpt, a.critOpt = policy.NewAdam(a.Policy, cfg.PolicyLR), policy.NewAdam(a.Critic, cfg.CriticLR)
	a.polGrad, a.critGrad = a.Policy.NewGrads(), a.Critic.NewGrads()
	a.pass, a.refPass, a.critPass = a.Policy.NewPass(), a.Ref.NewPass(), a.Critic.NewPass()
	return a
}

// rollouts is one batch of trajectories in the [B, T] layout of package
// gae: the first observation, then for each turn the generated response
// (mask 1) followed by the next observation (mask 0), padded with mask 0.
type rollouts struct {
	T      int
	Tokens []int // B·T
	Feats  []int // B·T·numFeats, at generated tokens
	// Mask, TurnEnd, Rewards, Values, OldLogp, RefLogp are [B, T].
	Mask, TurnEnd, Rewards, Values, OldLogp, RefLogp tensor.Batch[float64]
	// TurnRewards[b][k] is r_k of turn k of episode b
	// (rewards.TurnRewards).
	TurnRewards [][]float64
	// Won counts the episodes that reached the goal; Return sums their
	// turn rewards.
	Won    int
	Return float64
}

// rowLen is T for cfg: every turn's response and observation, the last
// observation being the prompt at the front instead.
func rowLen(cfg config) int {
	return cfg.MaxTurns * (cfg.MaxTokens + cfg.Maps.Size*cfg.Maps.Size)
}

// newRollouts allocates a batch for cfg.
func newRollouts(cfg config) *rollouts {
	b, t := cfg.Batch, rowLen(cfg)
	return &rollouts{
		T: t, Tokens: make([]int, b*t), Feats: make([]int, b*t*numFeats),
		Mask: tensor.MustNew[float64](b, t), TurnEnd: tensor.MustNew[float64](b, t),
		Rewards: tensor.MustNew[float64](b, t), Values: tensor.MustNew[float64](b, t),
		OldLogp: tensor.MustNew[float64](b, t), RefLogp: tensor.MustNew[float64](b, t),
		TurnRewards: make([][]float64, b),
	}
}

// respond generates one turn's response in state e, sampling from rng,
// or greedily when rng is nil. After each token it calls emit (if not nil)
// with the token and its features, while a.pass still holds the forward
// pass that produced it.
func (a *agent) respond(e *episode, turn int, rng *rand.Rand, emit func(tok int, feats []int)) []int {
	resp := a.buf[:0]
	prev := -1
	for pos := range a.cfg.MaxTokens {
		a.fbuf = a.feats.Append(a.fbuf[:0], e, prev, pos, turn)
		feats := a.fbuf
		a.Policy.Forward(a.pass, feats)
		tok := a.pass.Argmax()
		if rng != nil {
			tok = a.pass.Sample(rng)
		}
		if emit != nil {
			emit(tok, feats)
		}
		resp = append(resp, tok)
		prev = tok
		if tok == tokAnswerEnd {
			break
		}
	}
	a.buf = resp
	return resp
}

// Collect plays cfg.Batch episodes on maps drawn from train with rng and
// lays them out in r, with the old policy's and the reference policy's
// log-probabilities and the critic's values at every generated token.
func (a *agent) Collect(r *rollouts, train []*board, rng *rand.Rand) error {
	cfg := a.cfg
	for _, x := range []tensor.Batch[float64]{r.Mask, r.TurnEnd, r.Rewards, r.Values, r.OldLogp, r.RefLogp} {
		clear(x.Data)
	}
	clear(r.Tokens)
	r.Won, r.Return = 0, 0
	var env episode
	turns := make([]rewards.Turn, 0, cfg.MaxTurns)
	for b := range cfg.Batch {
		env.Reset(train[rng.IntN(len(train))])
		row := b * r.T
		t := 0
		place := func(tok int) {
			r.Tokens[row+t] = tok
			t++
		}
		for _, tok := range observationTokens(nil, &env) {
			place(tok)
		}
		turns = turns[:0]
		for turn := 0; turn < cfg.MaxTurns && !env.Done; turn++ {
			resp := a.respond(&env, turn, rng, func(tok int, feats []int) {
				i := row + t
				copy(r.Feats[i*numFeats:], feats)
				r.Mask.Data[i] = 1
				r.OldLogp.Data[i] = a.pass.LogProb(tok)
				a.Ref.Forward(a.refPass, feats)
				r.RefLogp.Data[i] = a.refPass.LogProb(tok)
				a.Critic.Forward(a.critPass, feats)
				r.Values.Data[i] = a.critPass.Logits[0]
				place(tok)
			})
			p := parseResponse(resp, &env)
			envR, err := env.Step(p.Move, p.FormatOK)
			if err != nil {
				return err
			}
			if cfg.Sparse && !env.Won {
				envR = 0
			}
			turns = append(turns, p.Turn(envR))
			if !env.Done && turn+1 < cfg.MaxTurns {
				for _, tok := range observationTokens(nil, &env) {
					place(tok)
				}
			}
		}
		if env.Won {
			r.Won++
		}
		tr := r.TurnRewards[b][:0]
		tr = append(tr, make([]float64, len(turns))...)
		tc := cfg.Turn
		if cfg.Sparse {
			tc = rewards.TurnConfig{} // the goal's +10, in Env, is all
		}
		if err := rewards.TurnRewards(tr, turns, tc); err != nil {
			return err
		}
		r.TurnRewards[b] = tr
		for _, v := range tr {
			r.Return += v
		}
	}
	if err := gae.TurnEnds(r.TurnEnd, r.Mask); err != nil {
		return err
	}
	// One row of turn rewards per episode, padded to the most turns.
	turnR := tensor.MustNew[float64](r.Mask.B, cfg.MaxTurns)
	for b, tr := range r.TurnRewards {
		copy(turnR.Row(b), tr)
	}
	if err := gae.PlaceTurnRewards(r.Rewards, r.TurnEnd, turnR); err != nil {
		return err
	}
	// The per-token KL penalty (VAGEN Alg. 1 line 13), with the k1
	// estimate old_logp − ref_logp of the sampled token.
	kl := tensor.MustNew[float64](r.Mask.B, r.Mask.T)
	for i := range kl.Data {
		kl.Data[i] = r.OldLogp.Data[i] - r.RefLogp.Data[i]
	}
	return gae.AddKLPenalty(r.Rewards, kl, r.Mask, cfg.KLCoef)
}

// updateStats are what one PPO update logs.
type updateStats struct {
	PolicyLoss, ValueLoss, ClipFrac, ApproxKL float64
}

// Update estimates advantages with est and runs cfg.Epochs PPO epochs on
// the policy and the critic over the whole batch.
func (a *agent) Update(r *rollouts, est estimator) (updateStats, error) {
	cfg := a.cfg
	shape := r.Mask.Shape
	adv, ret := tensor.MustNew[float64](shape.B, shape.T), tensor.MustNew[float64](shape.B, shape.T)
	var err error
	switch est {
	case tokenGAE:
		err = gae.Advantages(adv, ret, r.Rewards, r.Values, r.Mask, cfg.Token)
	case biLevelGAE:
		err = gae.BiLevel(adv, ret, r.Rewards, r.Values, r.Mask, r.TurnEnd, cfg.BiLevel)
	default:
		err = fmt.Errorf("agent: unknown estimator %d", est)
	}
	if err != nil {
		return updateStats{}, err
	}
	var valid []int
	for i, m := range r.Mask.Data {
		if m == 1 {
			valid = append(valid, i)
		}
	}
	for len(a.polPasses) < len(valid) {
		a.polPasses = append(a.polPasses, a.Policy.NewPass())
		a.vPasses = append(a.vPasses, a.Critic.NewPass())
	}
	logp, values := tensor.MustNew[float64](shape.B, shape.T), tensor.MustNew[float64](shape.B, shape.T)
	grad, vgrad := tensor.MustNew[float64](shape.B, shape.T), tensor.MustNew[float64](shape.B, shape.T)
	var st updateStats
	for range cfg.Epochs {
		for j, i := range valid {
			f := r.Feats[i*numFeats : (i+1)*numFeats]
			a.Policy.Forward(a.polPasses[j], f)
			logp.Data[i] = a.polPasses[j].LogProb(r.Tokens[i])
			a.Critic.Forward(a.vPasses[j], f)
			values.Data[i] = a.vPasses[j].Logits[0]
		}
		res, err := ppo.PolicyLoss(grad, ppo.Inputs[float64]{Logp: logp, OldLogp: r.OldLogp, Advantages: adv, Mask: r.Mask}, cfg.PPO)
		if err != nil {
			return st, err
		}
		vres, err := ppo.ValueLoss(vgrad, ppo.ValueInputs[float64]{Values: values, OldValues: r.Values, Returns: ret, Mask: r.Mask}, cfg.Value)
		if err != nil {
			return st, err
		}
		a.polGrad.Zero()
		a.critGrad.Zero()
		var dv [1]float64
		for j, i := range valid {
			a.Policy.BackwardLogp(a.polGrad, a.polPasses[j], r.Tokens[i], grad.Data[i], a.scratch)
			dv[0] = vgrad.Data[i]
			a.Critic.Backward(a.critGrad, a.vPasses[j], dv[:])
		}
		a.polOpt.Step(a.Policy, a.polGrad)
		a.critOpt.Step(a.Critic, a.critGrad)
		st = updateStats{PolicyLoss: res.Loss, ValueLoss: vres.Loss, ClipFrac: res.ClipFracHigh + res.ClipFracLow, ApproxKL: res.ApproxKL}
	}
	return st, nil
}

// evalResult is the greedy policy's record on a map set.
type evalResult struct {
	// Success is the fraction of maps solved within the turn limit;
	// Format the fraction of well-formed turns; SolvedTurns the mean
	// number of turns a solved map took; Holes the fraction of maps
	// that ended in a hole (the rest ran out of turns).
	Success, Format, SolvedTurns, Holes float64
}

// Evaluate plays every map once with greedy decoding.
func (a *agent) Evaluate(maps []*board) (evalResult, error) {
	var env episode
	var won, turns, formatted, wonTurns, holes int
	for _, m := range maps {
		env.Reset(m)
		turn := 0
		for ; turn < a.cfg.MaxTurns && !env.Done; turn++ {
			p := parseResponse(a.respond(&env, turn, nil, nil), &env)
			if _, err := env.Step(p.Move, p.FormatOK); err != nil {
				return evalResult{}, err
			}
			turns++
			if p.FormatOK {
				formatted++
			}
		}
		switch {
		case env.Won:
			won++
			wonTurns += turn
		case env.Done:
			holes++
		}
	}
	n := float64(len(maps))
	r := evalResult{Success: float64(won) / n, Format: float64(formatted) / float64(turns), Holes: float64(holes) / n}
	if won > 0 {
		r.SolvedTurns = float64(wonTurns) / float64(won)
	}
	return r, nil
}

// warmStart trains pol with cross-entropy on well-formed responses
// <think> w </think> <answer> a </answer> whose grounding word w and
// action a are drawn uniformly, in states met by random walks on the
// training maps: it learns the format and nothing about the task.
func warmStart(cfg config, pol *policy.Model, train []*board, rng *rand.Rand) error {
	feats := newFeatures(cfg.Maps.Size, cfg.MaxTokens, cfg.MaxTurns)
	opt := policy.NewAdam(pol, 1e-2)
	g := pol.NewGrads()
	pass := pol.NewPass()
	scratch := make([]float64, vocabSize)
	var env episode
	var f []int
	const perStep = 16
	for range cfg.WarmSteps {
		g.Zero()
		for range perStep {
			env.Reset(train[rng.IntN(len(train))])
			turn := rng.IntN(cfg.MaxTurns)
			for range turn {
				if env.Done {
					break
				}
				if _, err := env.Step(action(rng.IntN(int(numActions))), true); err != nil {
					return err
				}
			}
			if env.Done {
				env.Reset(env.Map)
			}
			seq := []int{tokThink, tokGoalUp + rng.IntN(4), tokThinkEnd, tokAnswer, tokUp + rng.IntN(4), tokAnswerEnd}
			prev := -1
			for pos, tok := range seq {
				f = feats.Append(f[:0], &env, prev, pos, turn)
				pol.Forward(pass, f)
				pol.BackwardLogp(g, pass, tok, -1.0/perStep, scratch)
				prev = tok
			}
		}
		opt.Step(pol, g)
	}
	return nil
}
