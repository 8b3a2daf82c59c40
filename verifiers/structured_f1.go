package verifiers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/rlpost/rlpost/tensor"
	"github.com/rlpost/rlpost/verifiers/internal/slot"
)

// Limits of the structured-dictionary parser, on top of MaxInputBytes.
const (
	// MaxStructuredFacts bounds the facts of one dictionary.
	MaxStructuredFacts = 4096
	// MaxStructuredDepth bounds the nesting of objects and lists.
	MaxStructuredDepth = 16
)

// errStructuredLimit reports a dictionary over MaxStructuredFacts or
// MaxStructuredDepth.
var errStructuredLimit = errors.New("structured dictionary over its limits")

// StructuredFacts parses a structured dictionary of VAGEN's anti-hacking
// reward ("VAGEN", Appendix D.1.2: the agent's reasoning converted into "a
// structured dictionary" that "captures key entities and relations") into
// its set of facts. s is a JSON object mapping each entity to a value or
// to a list of relations:
//
//	{"player": "row 2 col 1", "box0": ["above player", "left of target0"]}
//
// Each scalar value is one fact (entity, value); each item of a list is one
// fact (entity, item), so the order of a relation list does not matter and
// repeated items count once. A nested object contributes the facts of its
// members under the entity path "outer.inner"; a list item that is itself
// an object or a list is one fact, compared as a whole. Entities and
// string values compare after case folding and collapsing white space, so
// "Box0" and "box0 " are one entity; numbers compare by value (1 and 1.0
// agree); true, false and null are themselves.
//
// A text that is not a JSON object is an error wrapping ErrSyntax; one over
// MaxStructuredFacts facts or MaxStructuredDepth levels of nesting an error
// wrapping ErrTooLarge.
func StructuredFacts(s string) (map[string]struct{}, error) {
	r0, err := structuredFacts(s)
	if err != nil {
		err = fmt.Errorf("verifiers: %w", err)
	}
	return r0, err
}

func structuredFacts(s string) (map[string]struct{}, error) {
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, tensor.Errorf(ErrSyntax, "dictionary", nil, "not JSON: %v", err)
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, tensor.Errorf(ErrSyntax, "dictionary", nil, "text after the JSON object")
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, tensor.Errorf(ErrSyntax, "dictionary", nil, "a JSON %s, want an object of entity → value or relation list", jsonKind(v))
	}
	facts := make(map[string]struct{})
	if err := addFacts(facts, "", obj, 1); err != nil {
		return nil, tensor.Errorf(ErrTooLarge, "dictionary", nil, "%v", err)
	}
	return facts, nil
}

// addFacts adds the facts of obj, whose entities sit under prefix.
func addFacts(facts map[string]struct{}, prefix string, obj map[string]any, depth int) error {
	if depth > MaxStructuredDepth {
		return fmt.Errorf("%w: nested deeper than %d", errStructuredLimit, MaxStructuredDepth)
	}
	for k, v := range obj {
		entity := foldSpace(k)
		if prefix != "" {
			entity = prefix + "." + entity
		}
		switch x := v.(type) {
		case map[string]any:
			if err := addFacts(facts, entity, x, depth+1); err != nil {
				return err
			}
			continue
		case []any:
			for _, item := range x {
				c, err := canonical(item, depth+1)
				if err != nil {
					return err
				}
				facts[entity+"\x00"+c] = struct{}{}
			}
		default:
			c, err := canonical(x, depth)
			if err != nil {
				return err
			}
			facts[entity+"\x00"+c] = struct{}{}
		}
		if len(facts) > MaxStructuredFacts {
			return fmt.Errorf("%w: more than %d facts", errStructuredLimit, MaxStructuredFacts)
		}
	}
	return nil
}

// canonical writes a JSON value in one spelling: normalised strings,
// numbers by value, object keys sorted.
func canonical(v any, depth int) (string, error) {
	if depth > MaxStructuredDepth {
		return "", fmt.Errorf("%w: nested deeper than %d", errStructuredLimit, MaxStructuredDepth)
	}
	switch x := v.(type) {
	case string:
		// A number written as a string is that number: "3" is 3.
		if f, err := strconv.ParseFloat(strings.TrimSpace(x), 64); err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
			return strconv.FormatFloat(f, 'g', -1, 64), nil
		}
		return strconv.Quote(foldSpace(x)), nil
	case json.Number:
		if f, err := strconv.ParseFloat(string(x), 64); err == nil && !math.IsInf(f, 0) {
			return strconv.FormatFloat(f, 'g', -1, 64), nil
		}
		return strings.ToLower(string(x)), nil
	case bool:
		return strconv.FormatBool(x), nil
	case nil:
		return "null", nil
	case []any:
		var b bytes.Buffer
		b.WriteByte('[')
		for i, item := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			c, err := canonical(item, depth+1)
			if err != nil {
				return "", err
			}
			b.WriteString(c)
		}
		b.WriteByte(']')
		return b.String(), nil
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var b bytes.Buffer
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			c, err := canonical(x[k], depth+1)
			if err != nil {
				return "", err
			}
			b.WriteString(strconv.Quote(foldSpace(k)))
			b.WriteByte(':')
			b.WriteString(c)
		}
		b.WriteByte('}')
		return b.String(), nil
	}
	return "", fmt.Errorf("unexpected JSON value %T", v)
}

// foldSpace folds case and collapses white space.
func foldSpace(s string) string { return strings.ToLower(strings.Join(strings.Fields(s), " ")) }

func jsonKind(v any) string {
	switch v.(type) {
	case []any:
		return "array"
	case string:
		return "string"
	case json.Number:
		return "number"
	case bool:
		return "boolean"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}

// StructuredF1 returns the F1 score of the facts pred against the facts
// gold: 2·|P ∩ G|/(|P| + |G|), the harmonic mean of precision |P ∩ G|/|P|
// and recall |P ∩ G|/|G|. Two empty sets agree (1); one empty set against a
// non-empty one scores 0.
func StructuredF1(gold, pred map[string]struct{}) float64 {
	if len(gold) == 0 && len(pred) == 0 {
		return 1
	}
	small, large := gold, pred
	if len(small) > len(large) {
		small, large = large, small
	}
	hit := 0
	for f := range small {
		if _, ok := large[f]; ok {
			hit++
		}
	}
	return 2 * float64(hit) / float64(len(gold)+len(pred))
}

// structuredCandidates are the places a response may hold its dictionary,
// tried in order: the whole response, the last <answer> block, and the span
// from the first '{' to the last '}'.
func structuredCandidates(pred string) []string {
	c := []string{strings.TrimSpace(pred)}
	if i := strings.LastIndex(pred, "<answer>"); i >= 0 {
		rest := pred[i+len("<answer>"):]
		if j := strings.Index(rest, "</answer>"); j >= 0 {
			c = append(c, strings.TrimSpace(rest[:j]))
		}
	}
	if i, j := strings.IndexByte(pred, '{'), strings.LastIndexByte(pred, '}'); i >= 0 && j > i {
		c = append(c, pred[i:j+1])
	}
	return c
}

// StructuredF1Verifier is the "structured_f1" verifier: ref and pred are
// structured dictionaries (StructuredFacts) and the score is their F1
// (StructuredF1). The dictionary is read under the slot rule
// (docs/spec.md#answer-slot): the answer region (after the reasoning,
// inside the last <answer>), or the last ``` fence or box group in it,
// read whole or from its first '{' to its last '}' — so two different
// dictionaries do not parse — as JSON, or else as a Python literal (single
// quotes, True/False/None, a trailing comma). A number written as a string
// ("3") is that number. A response with no dictionary or a retraction
// after it scores 0, and so does one over the parser's limits (Parsed then
// says which). ref must be a dictionary, JSON or Python (ErrSyntax
// otherwise).
//
// Parameters: "extract" (default "slot"; "none" reads as earlier releases
// did: the whole response, else its last <answer> block, else its first
// '{' to its last '}'); "threshold" (default 0.7, the correctness threshold of VAGEN
// Appendix D.1.2): Correct means F1 ≥ threshold.
func StructuredF1Verifier(ctx context.Context, response, reference string, p Params) (Result, error) {
	return structuredF1Rule.verify(ctx, response, reference, p)
}

var structuredF1Rule = rule{
	name: "structured_f1", params: []string{"threshold"},
	extract: ExtractSlot, region: true, shape: shapeStructured,
	has: func(s string) bool { return strings.Contains(s, "{") },
	read: func(p Params, c *config) (err error) {
		c.threshold, err = floatIn(p, "threshold", 0.7, 0, 1, false)
		return err
	},
	score: scoreStructuredF1,
}

func scoreStructuredF1(_ context.Context, pred string, found bool, ref string, c *config) (Result, error) {
	gold, err := structuredFacts(ref)
	if err != nil {
		gold, err = structuredFacts(pyLiteral(ref))
	}
	if err != nil {
		return Result{}, renameArg(err, "ref")
	}
	if !found {
		return Result{}, nil
	}
	cands := structuredCandidates(pred)
	if c.extract == ExtractSlot {
		// The slot rule: the region whole, or the span from its first '{'
		// to its last '}' (one object: two objects do not parse), each
		// also read as a Python literal; nothing after it may retract it.
		t := strings.TrimSpace(pred)
		cands = []string{t}
		if i, j := strings.IndexByte(t, '{'), strings.LastIndexByte(t, '}'); i >= 0 && j > i {
			if slot.Retracts(t[j+1:]) {
				return Result{Reason: slot.ReasonRetracted}, nil
			}
			cands = append(cands, t[i:j+1])
		}
		cands = append(cands, pyLiteral(cands[len(cands)-1]))
	}
	for _, cand := range cands {
		facts, err := structuredFacts(cand)
		if errors.Is(err, ErrTooLarge) {
			return Result{Parsed: "limit: " + err.Error()}, nil
		}
		if err != nil {
			continue
		}
		f1 := StructuredF1(gold, facts)
		return Result{Score: clamp01(f1), Correct: f1 >= c.threshold, Parsed: cand}, nil
	}
	return Result{Reason: "no dictionary in the answer (one JSON or Python object)"}, nil
}

// pyLiteral rewrites a Python dictionary literal as JSON: strings in
// single quotes become double-quoted, True, False and None outside strings
// become true, false and null, and a comma before a closing bracket is
// dropped. Other text is copied; a text that is JSON already comes out
// unchanged. Linear in len(s).
func pyLiteral(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\'':
			// A string, to its closing quote; escapes copied, a double
			// quote inside a single-quoted string escaped.
			b.WriteByte('"')
			j := i + 1
			for ; j < len(s) && s[j] != c; j++ {
				switch {
				case s[j] == '\\' && j+1 < len(s):
					if s[j+1] == '\'' {
						b.WriteByte('\'')
					} else {
						b.WriteString(s[j : j+2])
					}
					j++
				case s[j] == '"':
					b.WriteString(`\"`)
				default:
					b.WriteByte(s[j])
				}
			}
			b.WriteByte('"')
			i = j
		case c == ',':
			k := skipSpace(s, i+1)
			if k < len(s) && (s[k] == '}' || s[k] == ']') {
				continue
			}
			b.WriteByte(c)
		case isLetterByte(c) && (i == 0 || !isLetterByte(s[i-1])):
			j := i
			for j < len(s) && isLetterByte(s[j]) {
				j++
			}
			switch w := s[i:j]; w {
			case "True":
				b.WriteString("true")
			case "False":
				b.WriteString("false")
			case "None":
				b.WriteString("null")
			default:
				b.WriteString(w)
			}
			i = j - 1
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}
