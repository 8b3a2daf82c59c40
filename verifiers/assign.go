package verifiers

import (
	"fmt"
	"math"

	"github.com/rlpost/rlpost/tensor"
)

// maxAssignCost bounds |cost| in Assign so that the dual potentials, which
// accumulate sums and differences of costs, stay far from overflow.
const maxAssignCost = 1e100

// Assign solves the rectangular assignment problem: it pairs each row of
// cost with a distinct column (or each column with a distinct row, when
// there are more rows than columns) so that the total cost of the pairs is
// minimal, writes the column of row i into dst[i] (−1 for a row left out)
// and returns the total. To maximise a score, pass its negation.
//
// It is the Hungarian method with dual potentials and shortest augmenting
// paths (Kuhn 1955; Munkres 1957; the O(n²·m) form of Jonker and Volgenant),
// for n = min(rows, cols) and m = max(rows, cols); gonum has no solver for
// this. cost must be rectangular with finite entries of magnitude at most
// 1e100; dst must have one entry per row. Ties between optimal assignments
// are broken deterministically.
func Assign(dst []int, cost [][]float64) (float64, error) {
	r0, err := assign(dst, cost)
	if err != nil {
		err = fmt.Errorf("verifiers: %w", err)
	}
	return r0, err
}

func assign(dst []int, cost [][]float64) (float64, error) {
	rows := len(cost)
	if len(dst) != rows {
		return 0, tensor.Errorf(tensor.ErrShape, "dst", nil, "length %d, want %d (rows of cost)", len(dst), rows)
	}
	if rows == 0 {
		return 0, nil
	}
	cols := len(cost[0])
	for i, row := range cost {
		if len(row) != cols {
			return 0, tensor.Errorf(tensor.ErrShape, "cost", tensor.At(i), "row has %d entries, want %d", len(row), cols)
		}
		for j, c := range row {
			if math.IsNaN(c) || math.Abs(c) > maxAssignCost {
				return 0, tensor.Errorf(tensor.ErrRange, "cost", tensor.At(i, j), "%v, want a finite number of magnitude ≤ 1e100", c)
			}
		}
	}
	for i := range dst {
		dst[i] = -1
	}
	if cols == 0 {
		return 0, nil
	}
	transposed := rows > cols
	n, m := rows, cols
	at := func(i, j int) float64 { return cost[i][j] }
	if transposed {
		n, m = cols, rows
		at = func(i, j int) float64 { return cost[j][i] }
	}
	owner := hungarian(n, m, at)
	var total float64
	for j := 1; j <= m; j++ {
		if i := owner[j]; i != 0 {
			if transposed {
				dst[j-1] = i - 1
			} else {
				dst[i-1] = j - 1
			}
		}
	}
	for i, j := range dst {
		if j >= 0 {
			total += cost[i][j]
		}
	}
	return total, nil
}

// hungarian assigns each of n rows to one of m ≥ n columns at minimum total
// cost a(i, j) (0-based). It returns owner, 1-based: owner[j] is the row
// (1..n) that took column j (1..m), 0 for a free column.
//
// Rows are added one at a time; each addition grows a tree of alternating
// paths from the new row by Dijkstra on reduced costs a(i,j) − u[i] − v[j]
// (which the potentials u, v keep non-negative) until it reaches a free
// column, then flips the path. Each addition costs O(n·m).
func hungarian(n, m int, a func(i, j int) float64) []int {
	u := make([]float64, n+1)
	v := make([]float64, m+1)
	owner := make([]int, m+1)
	way := make([]int, m+1)
	minv := make([]float64, m+1)
	used := make([]bool, m+1)
	for i := 1; i <= n; i++ {
		owner[0] = i
		j0 := 0
		for j := range minv {
			minv[j] = math.Inf(1)
			used[j] = false
		}
		for {
			used[j0] = true
			i0 := owner[j0]
			delta, j1 := math.Inf(1), 0
			for j := 1; j <= m; j++ {
				if used[j] {
					continue
				}
				if cur := a(i0-1, j-1) - u[i0] - v[j]; cur < minv[j] {
					minv[j], way[j] = cur, j0
				}
				if minv[j] < delta {
					delta, j1 = minv[j], j
				}
			}
			for j := 0; j <= m; j++ {
				if used[j] {
					u[owner[j]] += delta
					v[j] -= delta
				} else {
					minv[j] -= delta
				}
			}
			j0 = j1
			if owner[j0] == 0 {
				break
			}
		}
		for j0 != 0 {
			j1 := way[j0]
			owner[j0] = owner[j1]
			j0 = j1
		}
	}
	return owner
}
