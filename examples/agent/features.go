package main

// features lays out the sparse binary input of the policy and the critic.
// At every generated token both networks see the state the turn started
// from (player square, goal square, the goal's direction, what lies one
// move away in each direction), the previous token of the turn, the
// position within the turn and the turn index. That is what a language
// model would read from the observation tokens and its own response so
// far; the MLP gets it directly instead of through attention.
type features struct {
	size, maxTokens, maxTurns int
	// Offsets of each group.
	agent, goal, dir, neigh, prev, pos, turn, total int
}

// numFeats is the number of active features at every token.
const numFeats = 10

// Neighbour kinds.
const (
	nbFrozen = iota
	nbHole
	nbGoal
	nbEdge
	numNeighbourKinds
)

// newFeatures returns the layout for size × size maps, responses of at
// most maxTokens tokens and episodes of at most maxTurns turns.
func newFeatures(size, maxTokens, maxTurns int) features {
	f := features{size: size, maxTokens: maxTokens, maxTurns: maxTurns}
	n := size * size
	f.agent = 0
	f.goal = f.agent + n
	f.dir = f.goal + n
	f.neigh = f.dir + 9
	f.prev = f.neigh + int(numActions)*numNeighbourKinds
	f.pos = f.prev + vocabSize + 1 // + "start of turn"
	f.turn = f.pos + maxTokens
	f.total = f.turn + maxTurns
	return f
}

// Count is the number of features.
func (f features) Count() int { return f.total }

// Append appends the numFeats active features of the token at position
// pos of turn turn, after token prev (-1 at the start of a turn), in
// state e.
func (f features) Append(dst []int, e *episode, prev, pos, turn int) []int {
	m := e.Map
	n := m.Size
	g := m.GoalPos()
	sign := func(x int) int {
		switch {
		case x < 0:
			return 0
		case x == 0:
			return 1
		}
		return 2
	}
	dst = append(dst, f.agent+e.Pos, f.goal+g, f.dir+3*sign(g/n-e.Pos/n)+sign(g%n-e.Pos%n))
	for a := range numActions {
		kind := nbEdge
		if q, ok := m.Neighbour(e.Pos, a); ok {
			switch m.Cells[q] {
			case cellHole:
				kind = nbHole
			case cellGoal:
				kind = nbGoal
			default:
				kind = nbFrozen
			}
		}
		dst = append(dst, f.neigh+int(a)*numNeighbourKinds+kind)
	}
	if prev < 0 {
		prev = vocabSize
	}
	return append(dst, f.prev+prev, f.pos+pos, f.turn+turn)
}
