package main

import (
	"fmt"
	"math/rand/v2"
)

// cell is what lies on one square of a FrozenLake map.
type cell uint8

const (
	cellFrozen cell = iota
	cellHole
	cellGoal
)

// action is one of FrozenLake's four moves (VAGEN Table 8).
type action int

const (
	actUp action = iota
	actDown
	actLeft
	actRight
	numActions
)

// delta returns the row and column change of a.
func (a action) delta() (dr, dc int) {
	switch a {
	case actUp:
		return -1, 0
	case actDown:
		return 1, 0
	case actLeft:
		return 0, -1
	default:
		return 0, 1
	}
}

func (a action) String() string {
	return [...]string{"Up", "Down", "Left", "Right"}[a]
}

// board is a deterministic ("not slippery") FrozenLake board: Size × Size
// cells in row-major order, a start square and exactly one goal.
type board struct {
	Size  int
	Cells []cell
	Start int
}

// VAGEN's FrozenLake rewards (§2.3, Table 17).
const (
	// goalReward is R(s, a) when a reaches the goal.
	goalReward = 10.0
	// stepPenalty is R(s, a) for every other step, falling into a hole
	// included: VAGEN's FrozenLake reward is +10 or −0.1, nothing else.
	stepPenalty = -0.1
)

// episode is one episode on a board. The agent moves one square per valid
// action; a move off the board leaves it in place (as in Gymnasium's
// FrozenLake). The episode ends on the goal, in a hole, or, enforced by
// the caller, after a maximum number of turns.
type episode struct {
	Map  *board
	Pos  int
	Done bool
	// Won says the episode ended on the goal.
	Won bool
}

// Reset starts an episode on m.
func (e *episode) Reset(m *board) {
	*e = episode{Map: m, Pos: m.Start}
}

// Step applies a (ok false: the turn had no valid action, and the agent
// stays where it is) and returns R(s, a). Stepping a finished episode is
// an error.
func (e *episode) Step(a action, ok bool) (float64, error) {
	if e.Done {
		return 0, fmt.Errorf("agent: step after the episode ended")
	}
	if ok {
		if a < 0 || a >= numActions {
			return 0, fmt.Errorf("agent: action %d out of range", a)
		}
		// Off the board, Neighbour returns the square itself.
		e.Pos, _ = e.Map.Neighbour(e.Pos, a)
	}
	switch e.Map.Cells[e.Pos] {
	case cellGoal:
		e.Done, e.Won = true, true
		return goalReward, nil
	case cellHole:
		e.Done = true
	}
	return stepPenalty, nil
}

// Neighbour returns the cell one move a away from pos, and false when
// the move would leave the board.
func (m *board) Neighbour(pos int, a action) (int, bool) {
	r, c := pos/m.Size, pos%m.Size
	dr, dc := a.delta()
	r, c = r+dr, c+dc
	if r < 0 || r >= m.Size || c < 0 || c >= m.Size {
		return pos, false
	}
	return r*m.Size + c, true
}

// GoalPos returns the index of the goal square.
func (m *board) GoalPos() int {
	for i, c := range m.Cells {
		if c == cellGoal {
			return i
		}
	}
	return -1
}

// ShortestPath returns the number of moves from the start to the goal
// avoiding holes, or -1 when the goal cannot be reached.
func (m *board) ShortestPath() int {
	dist := make([]int, len(m.Cells))
	for i := range dist {
		dist[i] = -1
	}
	dist[m.Start] = 0
	queue := []int{m.Start}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if m.Cells[p] == cellGoal {
			return dist[p]
		}
		for a := range numActions {
			q, ok := m.Neighbour(p, a)
			if ok && dist[q] < 0 && m.Cells[q] != cellHole {
				dist[q] = dist[p] + 1
				queue = append(queue, q)
			}
		}
	}
	return -1
}

// mapConfig says how random maps are drawn.
type mapConfig struct {
	Size int
	// HoleProb is the chance that a square other than the start and the
	// goal is a hole (Gymnasium's generate_random_map uses 1 − p = 0.2).
	HoleProb float64
	// MinPath is the least number of moves a solution needs, so that
	// every episode spans several turns.
	MinPath int
}

// randomMap draws maps until one is solvable in at least cfg.MinPath
// moves.
func randomMap(rng *rand.Rand, cfg mapConfig) *board {
	n := cfg.Size * cfg.Size
	for {
		m := &board{Size: cfg.Size, Cells: make([]cell, n), Start: rng.IntN(n)}
		g := rng.IntN(n - 1)
		if g >= m.Start {
			g++
		}
		m.Cells[g] = cellGoal
		for i := range m.Cells {
			if i != m.Start && i != g && rng.Float64() < cfg.HoleProb {
				m.Cells[i] = cellHole
			}
		}
		if d := m.ShortestPath(); d >= cfg.MinPath {
			return m
		}
	}
}

// randomMaps returns count distinct maps drawn with rng, none of them
// equal to a map of exclude (so that an evaluation set is held out).
func randomMaps(rng *rand.Rand, count int, cfg mapConfig, exclude []*board) []*board {
	seen := make(map[string]bool)
	for _, m := range exclude {
		seen[m.key()] = true
	}
	maps := make([]*board, 0, count)
	for len(maps) < count {
		m := randomMap(rng, cfg)
		if k := m.key(); !seen[k] {
			seen[k] = true
			maps = append(maps, m)
		}
	}
	return maps
}

// key identifies a map by its size, start and cells.
func (m *board) key() string {
	b := make([]byte, 0, len(m.Cells)+2)
	b = append(b, byte(m.Size), byte(m.Start))
	for _, c := range m.Cells {
		b = append(b, byte(c))
	}
	return string(b)
}
