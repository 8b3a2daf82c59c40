package serve

import (
	"fmt"
	"strconv"
	"strings"
)

// Decoding JSON costs more memory than the JSON's bytes: encoding/json
// turns the two bytes "0," of an array into a 24-byte interface value, and
// """," into a 16-byte string header, so a 32 MiB body of such items
// decodes into several hundred MiB before any count could refuse it. The
// shape check below walks a body once, allocating nothing, and refuses it
// when a container or the nesting is over its limit; only then is it
// decoded. It is not a validator: malformed JSON passes it and is reported
// by encoding/json afterwards.

// shapeLimits bounds a JSON text: the elements of any one array or the
// members of any one object (items), the nesting (depth), and, when not 0,
// the values in all (values).
type shapeLimits struct {
	items, depth, values int
}

// maxNesting is the deepest nesting a request body may have. The deepest
// legitimate body is a slime prompt of chat messages with multimodal parts
// (about 5 levels); encoding/json's own limit is 10000.
const maxNesting = 64

// shapeFrame is one open container of the walk.
type shapeFrame struct {
	array    bool
	nonEmpty bool
	n        int // elements or members so far, minus one once nonEmpty
	key      [2]int
}

// shapeViolation says which limit a JSON text is over, and where.
type shapeViolation struct {
	path  string
	limit string
}

func (v *shapeViolation) Error() string {
	if v.path == "" {
		return v.limit
	}
	return v.path + ": " + v.limit
}

// checkShape walks data and reports the first limit it is over, or nil.
// It runs in time linear in len(data) and allocates only when it fails.
func checkShape(data []byte, lim shapeLimits) *shapeViolation {
	var stackArr [maxNesting + 1]shapeFrame
	stack := stackArr[:0]
	values := 0
	expectKey := false
	for i := 0; i < len(data); i++ {
		c := data[i]
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		case '"':
			start := i
			i++
			for i < len(data) && data[i] != '"' {
				if data[i] == '\\' {
					i++
				}
				i++
			}
			if expectKey && len(stack) > 0 {
				stack[len(stack)-1].key = [2]int{start + 1, min(i, len(data))}
				expectKey = false
				continue // a key is not a value
			}
		case ',':
			if len(stack) == 0 {
				continue
			}
			f := &stack[len(stack)-1]
			f.n++
			values++
			if f.n+1 > lim.items {
				return violation(data, stack, fmt.Sprintf("more than %d %s (-max-items)", lim.items, f.noun()))
			}
			if lim.values > 0 && values > lim.values {
				return violation(data, stack, fmt.Sprintf("more than %d values in all", lim.values))
			}
			expectKey = !f.array
			continue
		case ':':
			continue
		case '}', ']':
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
			expectKey = false
			continue
		}
		// A value starts at c (a string, a container or a scalar's first
		// byte; the rest of a scalar's bytes land here too and change
		// nothing once its container is non-empty).
		if len(stack) > 0 {
			if f := &stack[len(stack)-1]; !f.nonEmpty {
				f.nonEmpty = true
				values++
				if lim.values > 0 && values > lim.values {
					return violation(data, stack, fmt.Sprintf("more than %d values in all", lim.values))
				}
			}
		}
		if c == '{' || c == '[' {
			if len(stack) == lim.depth {
				return violation(data, append(stack, shapeFrame{}), fmt.Sprintf("nested more than %d deep", lim.depth))
			}
			stack = append(stack, shapeFrame{array: c == '['})
			expectKey = c == '{'
		}
	}
	return nil
}

func (f *shapeFrame) noun() string {
	if f.array {
		return "elements in one array"
	}
	return "members in one object"
}

// violation formats the path of the open containers but the last, the one
// over the limit: items[3].params.x.
func violation(data []byte, stack []shapeFrame, limit string) *shapeViolation {
	var b strings.Builder
	for k := range stack {
		f := &stack[k]
		if k == len(stack)-1 {
			break // the container itself is over the limit
		}
		if f.array {
			b.WriteString("[" + strconv.Itoa(f.n) + "]")
			continue
		}
		key := string(data[f.key[0]:f.key[1]])
		if len(key) > 64 {
			key = key[:64] + "…"
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(key)
	}
	return &shapeViolation{path: b.String(), limit: limit}
}
