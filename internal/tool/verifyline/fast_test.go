package verifyline

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

var fastSeeds = []string{
	`{"verifier": "math", "gold": "1/2", "pred": "so \\boxed{0.5}"}`,
	`{"pred": "x", "verifier": "choice"}`,
	`{"verifier": "number", "gold": "12", "pred": "<answer>12</answer>", "params": {"tol": 0.1, "extract": "answer"}}`,
	`{"verifier": "number", "gold": "12", "pred": "12", "params": null}`,
	`{"verifier":"math","gold":"\u00bd","pred":"caf\u00e9 \ud83d\ude00 \n\t\"q\" \\ \/ \b\f\r"}`,
	`{"verifier": "math", "gold": "é", "pred": "√2 ≈ 1.414"}`,
	`{"verifier": "math", "pred": "\ud800"}`,
	`{"verifier": "math", "pred": "\udc00\ud800"}`,
	`{"verifier": "math", "pred": "a", "pred": "b"}`,
	`{"Verifier": "math", "pred": "a"}`,
	`{"verifier": "math", "pred": "a", "extra": 1}`,
	`{"verifier": "", "pred": "a"}`,
	`{"verifier": "math", "pred": null}`,
	`{"verifier": "math", "pred": "a"} x`,
	`{"verifier": "math", "pred": "a",}`,
	`{"verifier": "math", "pred": "a\x01"}`,
	"{\"verifier\": \"math\", \"pred\": \"\xff\xfe\"}",
	`{"verifier": "math", "pred": "a", "params": [1]}`,
	`{"verifier": "math", "pred": "a", "params": {"x": [1, 2e5, -0.5, true, null, {"y": "z"}]}}`,
	`  {"verifier" : "math" , "pred" : "a" }  `,
	``, `{}`, `[]`, `"x"`, `{"verifier": "math", "pred": "\u12"}`,
}

// FuzzFastMatchesEncodingJSON: whenever the fast path accepts a request, it
// decodes it exactly as encoding/json does; SplitItems accepts only valid
// JSON, and splits it into the items encoding/json finds.
func FuzzFastMatchesEncodingJSON(f *testing.F) {
	for _, s := range fastSeeds {
		f.Add([]byte(s))
		f.Add([]byte(`{"items": [` + s + `, ` + s + `]}`))
	}
	f.Add([]byte(`{"items": []}`))
	f.Add([]byte(`{"items": [1, -0.5e+3, "a", [true, false, null], {}]}`))
	f.Add([]byte(`{"items": [01]}`))
	f.Add([]byte(`{"items": [1.]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<16 {
			return
		}
		if fast, ok := fastParse(data); ok {
			slow, err := parseSlow(data)
			if err != nil {
				t.Fatalf("fast path accepted %q, encoding/json rejects it: %v", data, err)
			}
			if !reflect.DeepEqual(fast, slow) {
				t.Fatalf("%q: fast %#v, encoding/json %#v", data, fast, slow)
			}
		}
		if items, ok := SplitItems(data); ok {
			if !json.Valid(data) {
				t.Fatalf("SplitItems accepted invalid JSON %q", data)
			}
			var want struct{ Items []json.RawMessage }
			dec := json.NewDecoder(bytes.NewReader(data))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&want); err != nil {
				t.Fatalf("SplitItems accepted %q, encoding/json: %v", data, err)
			}
			if len(items) != len(want.Items) {
				t.Fatalf("%q: %d items, encoding/json %d", data, len(items), len(want.Items))
			}
			for i := range items {
				if !bytes.Equal(items[i], want.Items[i]) {
					t.Fatalf("%q: item %d is %q, encoding/json %q", data, i, items[i], want.Items[i])
				}
			}
		}
	})
}

func TestFastPathTakesTheCommonShapes(t *testing.T) {
	for _, s := range fastSeeds[:7] {
		if _, ok := fastParse([]byte(s)); !ok && !strings.Contains(s, `\ud800`) {
			t.Errorf("fast path refused %s", s)
		}
	}
	if _, ok := fastParse([]byte(fastSeeds[6])); ok {
		t.Error("fast path took a lone surrogate, which encoding/json replaces")
	}
	items, ok := SplitItems([]byte(` {"items" : [ {"a": 1} ,2, "x"] } `))
	if !ok || len(items) != 3 || string(items[0]) != `{"a": 1}` || string(items[2]) != `"x"` {
		t.Errorf("SplitItems: %q %v", items, ok)
	}
	for _, bad := range []string{`{"items": [1,]}`, `{"items": [1] , "x": 2}`, `{"items": [01]}`, `{"items": ["\x01"]}`, `{"items": [1]} 2`, `{"items": [` + strings.Repeat("[", maxDepth+1)} {
		if _, ok := SplitItems([]byte(bad)); ok {
			t.Errorf("SplitItems accepted %q", bad)
		}
	}
}

// TestParseErrorsAreEncodingJSONs: a request the fast path refuses gets the
// contract's error text.
func TestParseErrorsAreEncodingJSONs(t *testing.T) {
	for in, want := range map[string]string{
		``:                                       "empty line",
		`{"verifier": "math"}`:                   `missing "pred"`,
		`{"pred": "x"}`:                          `missing "verifier"`,
		`{"verifier": "m", "pred": "x", "y": 1}`: `unknown field "y"`,
		`{"verifier": "m", "pred": "x"} {}`:      "data after the JSON object",
	} {
		if _, err := Parse([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q): %v, want %q", in, err, want)
		}
	}
}

// BenchmarkSplitItems: the serial pass over a /verify body of 1000 items
// of ~1 KB, before the workers start.
func BenchmarkSplitItems(b *testing.B) {
	item := `{"verifier": "math", "gold": "\\frac{14}{3}", "pred": "<think>` + strings.Repeat(`We set up the equation and simplify.\n`, 28) + `</think> so $\\boxed{\\frac{14}{3}}$"}`
	body := []byte(`{"items": [` + strings.TrimSuffix(strings.Repeat(item+", ", 1000), ", ") + `]}`)
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, ok := SplitItems(body); !ok {
			b.Fatal("refused")
		}
	}
}

// BenchmarkParse: one ~1 KB item through the fast path.
func BenchmarkParse(b *testing.B) {
	item := []byte(`{"verifier": "math", "gold": "\\frac{14}{3}", "pred": "<think>` + strings.Repeat(`We set up the equation and simplify.\n`, 28) + `</think> so $\\boxed{\\frac{14}{3}}$"}`)
	b.SetBytes(int64(len(item)))
	for b.Loop() {
		if _, err := Parse(item); err != nil {
			b.Fatal(err)
		}
	}
}

// TestFastPathAtEveryOffset puts each kind of special byte at every offset
// of the eight-byte words the string scanners read, and checks the fast
// path against encoding/json.
func TestFastPathAtEveryOffset(t *testing.T) {
	for _, special := range []string{`\n`, `\"`, `\\`, `\u00e9`, `\ud83d\ude00`, "\x1f", "é", "\xff", `"`} {
		for p := range 24 {
			pred := strings.Repeat("a", p) + special + strings.Repeat("b", 24-p)
			line := []byte(`{"verifier": "math", "pred": "` + pred + `"}`)
			fast, ok := fastParse(line)
			slow, err := parseSlow(line)
			if ok && (err != nil || !reflect.DeepEqual(fast, slow)) {
				t.Errorf("%q: fast %#v, encoding/json %#v, %v", line, fast, slow, err)
			}
			body := []byte(`{"items": [` + string(line) + `]}`)
			if items, ok := SplitItems(body); ok != json.Valid(body) || (ok && string(items[0]) != string(line)) {
				t.Errorf("SplitItems(%q): %q, %v; json.Valid %v", body, items, ok, json.Valid(body))
			}
		}
	}
}
