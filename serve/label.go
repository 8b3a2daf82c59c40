package serve

import (
	"bytes"
	"encoding/json"

	"github.com/rlpost/rlpost/verifiers"
)

// labelSpec is a label that chooses its verifier: {"verifier", "gold",
// "params"}.
type labelSpec struct {
	Verifier string           `json:"verifier"`
	Gold     *json.RawMessage `json:"gold"`
	Params   verifiers.Params `json:"params"`
}

// call is what a label resolves to.
type call struct {
	verifier string
	gold     string
	params   verifiers.Params
}

// resolveLabel reads a trainer's label (OpenRLHF's labels[i], slime's
// label), a JSON value:
//
//   - null or absent: gold "" for Config.Verifier;
//   - a string: the gold for Config.Verifier, unless it holds a JSON object
//     with a "verifier" key, which is then read as below;
//   - an object {"verifier", "gold", "params"}: each optional ("verifier"
//     defaults to Config.Verifier), no other keys;
//   - a number or an array: its JSON text is the gold (slime datasets keep
//     numeric answers and boxes as JSON).
//
// The verifier must be registered. A gold given as a non-string JSON value
// is used as its JSON text.
func (s *Server) resolveLabel(raw json.RawMessage) (call, error) {
	raw = bytes.TrimSpace(raw)
	c := call{verifier: s.cfg.Verifier}
	switch {
	case len(raw) == 0 || string(raw) == "null":
		return c, nil
	case raw[0] == '"':
		var str string
		if err := json.Unmarshal(raw, &str); err != nil {
			return c, &itemError{kind: ReasonBadLabel, err: err}
		}
		if t := bytes.TrimSpace([]byte(str)); len(t) > 0 && t[0] == '{' && namesVerifier(t) {
			return s.readSpec(t)
		}
		c.gold = str
		return c, nil
	case raw[0] == '{':
		return s.readSpec(raw)
	case raw[0] == '[' || raw[0] == '-' || (raw[0] >= '0' && raw[0] <= '9'):
		c.gold = string(raw)
		return c, nil
	}
	return c, itemErr(ReasonBadLabel, "a %s, want a string, a number, an array, an object or null", jsonKind(raw[0]))
}

// namesVerifier reports whether text is a JSON object with a "verifier"
// key. A gold that merely looks like JSON stays a gold.
func namesVerifier(text []byte) bool {
	if checkShape(text, itemShape) != nil {
		return true // readSpec reports it
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(text, &m) != nil {
		return false
	}
	_, ok := m["verifier"]
	return ok
}

func (s *Server) readSpec(text []byte) (call, error) {
	if v := checkShape(text, itemShape); v != nil {
		return call{}, itemErr(ReasonTooLarge, "label object: %v", v)
	}
	var spec labelSpec
	dec := json.NewDecoder(bytes.NewReader(text))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&spec); err != nil {
		return call{}, itemErr(ReasonBadLabel, "label object: %v", err)
	}
	c := call{verifier: s.cfg.Verifier, params: spec.Params}
	if spec.Verifier != "" {
		c.verifier = spec.Verifier
	}
	if _, err := s.cfg.Registry.Factory(c.verifier); err != nil {
		return call{}, err
	}
	if spec.Gold != nil {
		g := bytes.TrimSpace(*spec.Gold)
		switch {
		case string(g) == "null":
		case len(g) > 0 && g[0] == '"':
			if err := json.Unmarshal(g, &c.gold); err != nil {
				return call{}, itemErr(ReasonBadLabel, "label object: gold: %v", err)
			}
		default:
			c.gold = string(g)
		}
	}
	return c, nil
}

func jsonKind(first byte) string {
	switch first {
	case 't', 'f':
		return "boolean"
	}
	return "value starting with " + string(first)
}
