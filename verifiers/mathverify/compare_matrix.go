package mathverify

import ()

// Matrices: sums, products and scalar multiples evaluated, then compared
// entry by entry.

// maxMatrixWork bounds the multiply-adds of one matrix product.
const maxMatrixWork = 4096

// matrix is a matrix value with symbolic cells.
type matrix struct {
	rows, cols int
	cells      []*node
}

// rowsMatrix reads a bracketed list of bracketed rows of one length,
// [[1, 2], [3, 4]] or ((1, 2), (3, 4)), as the matrix of those rows; nil
// for anything else.
func rowsMatrix(n *node) *node {
	isRow := func(x *node) bool { return (x.k == kTuple || x.k == kInterval) && len(x.args) > 0 }
	if !isRow(n) || !isRow(n.args[0]) {
		return nil
	}
	cols := len(n.args[0].args)
	cells := make([]*node, 0, len(n.args)*cols)
	for _, r := range n.args {
		if !isRow(r) || len(r.args) != cols {
			return nil
		}
		cells = append(cells, r.args...)
	}
	return &node{k: kMatrix, cols: cols, args: cells}
}

// matrixOf evaluates sums, products and scalar multiples of matrices
// cell by cell.
func (c *comparer) matrixOf(n *node) (matrix, bool) {
	switch n.k {
	case kMatrix:
		return matrix{len(n.args) / n.cols, n.cols, n.args}, true
	case kNeg:
		m, ok := c.matrixOf(n.args[0])
		if !ok {
			return m, false
		}
		out := matrix{m.rows, m.cols, make([]*node, len(m.cells))}
		for i, x := range m.cells {
			out.cells[i] = neg(x)
		}
		return out, true
	case kAdd:
		var acc matrix
		for i, a := range n.args {
			m, ok := c.matrixOf(a)
			if !ok || i > 0 && (m.rows != acc.rows || m.cols != acc.cols) {
				return matrix{}, false
			}
			if i == 0 {
				acc = m
				continue
			}
			sum := matrix{m.rows, m.cols, make([]*node, len(m.cells))}
			for j := range m.cells {
				sum.cells[j] = bin(kAdd, acc.cells[j], m.cells[j])
			}
			acc = sum
		}
		return acc, len(n.args) > 0
	case kMul:
		var acc matrix
		var scale *node
		have := false
		for _, a := range n.args {
			m, ok := c.matrixOf(a)
			switch {
			case !ok && !a.has(func(x *node) bool { return x.k == kMatrix }):
				if scale == nil {
					scale = a
				} else {
					scale = bin(kMul, scale, a)
				}
			case !ok:
				return matrix{}, false
			case !have:
				acc, have = m, true
			default:
				if acc.cols != m.rows || acc.rows*m.cols*acc.cols > maxMatrixWork {
					return matrix{}, false
				}
				prod := matrix{acc.rows, m.cols, make([]*node, acc.rows*m.cols)}
				for i := 0; i < acc.rows; i++ {
					for j := 0; j < m.cols; j++ {
						var s *node
						for k := 0; k < acc.cols; k++ {
							t := bin(kMul, acc.cells[i*acc.cols+k], m.cells[k*m.cols+j])
							if s == nil {
								s = t
							} else {
								s = bin(kAdd, s, t)
							}
						}
						prod.cells[i*m.cols+j] = s
					}
				}
				acc = prod
			}
		}
		if !have {
			return matrix{}, false
		}
		if scale != nil {
			out := matrix{acc.rows, acc.cols, make([]*node, len(acc.cells))}
			for i, x := range acc.cells {
				out.cells[i] = bin(kMul, scale, x)
			}
			acc = out
		}
		return acc, true
	}
	return matrix{}, false
}

func (c *comparer) matricesEqual(g, p matrix) bool {
	if g.rows != p.rows || g.cols != p.cols {
		return false
	}
	for i := range g.cells {
		if !c.equal(g.cells[i], p.cells[i]) {
			return false
		}
	}
	return true
}
