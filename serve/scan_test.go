package serve

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// shapeOf is the reference for checkShape on valid JSON: the largest
// container's entries, the deepest nesting and the values in all, from a
// full decode.
func shapeOf(v any, depth int) (items, maxDepth, values int) {
	switch x := v.(type) {
	case []any:
		items, maxDepth, values = len(x), depth+1, len(x)
		for _, e := range x {
			i, d, n := shapeOf(e, depth+1)
			items, maxDepth, values = max(items, i), max(maxDepth, d), values+n
		}
	case map[string]any:
		items, maxDepth, values = len(x), depth+1, len(x)
		for _, e := range x {
			i, d, n := shapeOf(e, depth+1)
			items, maxDepth, values = max(items, i), max(maxDepth, d), values+n
		}
	}
	return
}

// agrees checks checkShape against the reference on one valid JSON text
// whose objects have no duplicate keys.
func agrees(t *testing.T, data []byte, lim shapeLimits) {
	var v any
	if json.Unmarshal(data, &v) != nil {
		return
	}
	items, depth, values := shapeOf(v, 0)
	if strings.Count(string(data), `"`) > 0 && hasDuplicateKeys(data) {
		return // a map merges duplicates: the reference undercounts
	}
	over := items > lim.items || depth > lim.depth || lim.values > 0 && values > lim.values
	got := checkShape(data, lim)
	if over {
		require.NotNil(t, got, "%q: items %d depth %d values %d over %+v, not refused", data, items, depth, values, lim)
	} else {
		require.Nil(t, got, "%q: items %d depth %d values %d within %+v, refused: %v", data, items, depth, values, lim, got)
	}
}

func hasDuplicateKeys(data []byte) bool {
	dec := json.NewDecoder(strings.NewReader(string(data)))
	type frame struct {
		obj  bool
		keys map[string]bool
		key  bool // next string token is a key
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		switch x := tok.(type) {
		case json.Delim:
			switch x {
			case '{':
				stack = append(stack, &frame{obj: true, keys: map[string]bool{}, key: true})
				continue
			case '[':
				stack = append(stack, &frame{})
				continue
			default:
				stack = stack[:len(stack)-1]
			}
		case string:
			if n := len(stack); n > 0 && stack[n-1].obj && stack[n-1].key {
				if stack[n-1].keys[x] {
					return true
				}
				stack[n-1].keys[x] = true
				stack[n-1].key = false
				continue
			}
		}
		if n := len(stack); n > 0 && stack[n-1].obj {
			stack[n-1].key = true
		}
	}
}

// TestCheckShapeMatchesADecode: on generated JSON of every kind of value,
// nesting and escape, checkShape refuses exactly the texts over a limit.
func TestCheckShapeMatchesADecode(t *testing.T) {
	rng := rand.New(rand.NewPCG(33, 1))
	var gen func(depth int) any
	gen = func(depth int) any {
		k := rng.IntN(9)
		if depth > 6 {
			k = rng.IntN(5)
		}
		switch k {
		case 0:
			return nil
		case 1:
			return rng.IntN(2) == 0
		case 2:
			return rng.NormFloat64()
		case 3:
			return []string{"", "a", `q"uote`, `back\slash`, "[{,:}]", "é😀", "\u2028"}[rng.IntN(7)]
		case 4:
			return float64(rng.IntN(100))
		case 5, 6:
			a := make([]any, rng.IntN(6))
			for i := range a {
				a[i] = gen(depth + 1)
			}
			return a
		default:
			m := map[string]any{}
			for range rng.IntN(6) {
				m[[]string{"a", "b", `"k"`, "[", "}", ",", ":", "x\\y"}[rng.IntN(8)]+string(rune('0'+rng.IntN(10)))] = gen(depth + 1)
			}
			return m
		}
	}
	for range 3000 {
		b, err := json.Marshal(gen(0))
		require.NoError(t, err)
		if rng.IntN(2) == 0 {
			b, _ = json.MarshalIndent(json.RawMessage(b), " ", "\t")
		}
		lim := shapeLimits{items: 1 + rng.IntN(6), depth: 1 + rng.IntN(8)}
		if rng.IntN(2) == 0 {
			lim.values = 1 + rng.IntN(40)
		}
		agrees(t, b, lim)
	}
}

func TestCheckShapeNamesThePath(t *testing.T) {
	v := checkShape([]byte(`{"items": [{"verifier": "math"}, {"params": {"x": [1, 2, 3, 4]}}]}`), shapeLimits{items: 3, depth: 10})
	require.NotNil(t, v)
	assert.Equal(t, "items[1].params.x", v.path)
	assert.Contains(t, v.Error(), "more than 3 elements in one array")
	v = checkShape([]byte(`{"a": {"b": [[[1]]]}}`), shapeLimits{items: 10, depth: 4})
	require.NotNil(t, v)
	assert.Equal(t, "a.b[0][0]", v.path)
	assert.Contains(t, v.Error(), "nested more than 4 deep")
}

// FuzzCheckShape: on any input checkShape ends without panicking, and on
// valid JSON it agrees with a full decode.
func FuzzCheckShape(f *testing.F) {
	for _, s := range []string{`{"items": [0, 0, 0]}`, `[[[[]]]]`, `{"a": "\"[", "b": [1, {"c": []}]}`, `"\\`, `[1,,,]`, `{"query": ["", "", ""]}`} {
		f.Add([]byte(s), uint8(2), uint8(3))
	}
	f.Fuzz(func(t *testing.T, data []byte, items, depth uint8) {
		lim := shapeLimits{items: 1 + int(items%16), depth: 1 + int(depth%maxNesting)}
		_ = checkShape(data, lim)
		agrees(t, data, lim)
	})
}
