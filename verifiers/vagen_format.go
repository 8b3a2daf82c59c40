package verifiers

import (
	"context"
	"fmt"
	"strings"

	"github.com/rlpost/rlpost/verifiers/internal/norm"
)

// The reasoning strategies of VAGEN ("VAGEN", §2.2 and Appendix A Table 5,
// "Reasoning strategy formats"), the values of vagen_format's "style".
const (
	VAGENNoThink                = "no_think"
	VAGENFreeThink              = "free_think"
	VAGENGrounding              = "grounding"
	VAGENWorldModeling          = "worldmodeling"
	VAGENGroundingWorldModeling = "grounding_worldmodeling"
)

// vagenTemplates are the section names of each style, outermost first, as
// Table 5 writes them; "think" encloses the sections listed after it up to
// "answer".
var vagenTemplates = map[string][]string{
	VAGENNoThink:                {"answer"},
	VAGENFreeThink:              {"think", "answer"},
	VAGENGrounding:              {"think", "observation", "reasoning", "answer"},
	VAGENWorldModeling:          {"think", "reasoning", "prediction", "answer"},
	VAGENGroundingWorldModeling: {"think", "observation", "reasoning", "prediction", "answer"},
}

// VAGENStyles lists the styles VAGENFormat knows.
func VAGENStyles() []string {
	return []string{VAGENNoThink, VAGENFreeThink, VAGENGrounding, VAGENWorldModeling, VAGENGroundingWorldModeling}
}

// VAGENFormat reports whether response follows the output format of a VAGEN
// reasoning strategy (Appendix A, Table 5), after trimming surrounding
// white space:
//
//	no_think                 <answer>ā</answer>
//	free_think               <think>z</think><answer>ā</answer>
//	grounding                <think><observation>G</observation><reasoning>r</reasoning></think><answer>ā</answer>
//	worldmodeling            <think><reasoning>r</reasoning><prediction>W</prediction></think><answer>ā</answer>
//	grounding_worldmodeling  <think><observation>G</observation><reasoning>r</reasoning><prediction>W</prediction></think><answer>ā</answer>
//
// Only white space may lie between consecutive tags; every tag of the
// style occurs exactly once, no tag of another section appears, and every
// section's content is non-blank. (§2.2 prints Grounding and WorldModeling
// without <reasoning>; Table 5 and the training prompts of Appendix B.2
// include it, and so does this check.) An unknown style is an error
// wrapping ErrParam.
func VAGENFormat(response, style string) (bool, error) {
	r0, err := vagenFormatCheck(response, style)
	if err != nil {
		err = fmt.Errorf("verifiers: %w", err)
	}
	return r0, err
}

func vagenFormatCheck(response, style string) (bool, error) {
	tmpl, ok := vagenTemplates[style]
	if !ok {
		return false, paramErr("style", "%q, want one of %s", style, strings.Join(VAGENStyles(), ", "))
	}
	s := strings.TrimSpace(response)
	for _, name := range [...]string{"think", "observation", "reasoning", "prediction", "answer"} {
		want := 0
		for _, t := range tmpl {
			if t == name {
				want = 1
			}
		}
		if strings.Count(s, "<"+name+">") != want || strings.Count(s, "</"+name+">") != want {
			return false, nil
		}
	}
	// Walk the template: with thinking, <think> opens, the inner sections
	// follow, </think> closes, then the answer.
	inner := tmpl[:len(tmpl)-1]
	if len(inner) > 0 {
		var ok bool
		if s, ok = cutTag(s, "<think>"); !ok {
			return false, nil
		}
		if len(inner) == 1 { // free_think: any non-blank text
			body, rest, ok := strings.Cut(s, "</think>")
			if !ok || strings.TrimSpace(body) == "" {
				return false, nil
			}
			s = rest
		} else {
			for _, name := range inner[1:] {
				if s, ok = section(s, name); !ok {
					return false, nil
				}
			}
			if s, ok = cutTag(s, "</think>"); !ok {
				return false, nil
			}
		}
	}
	s, ok = section(s, "answer")
	return ok && strings.TrimSpace(s) == "", nil
}

// cutTag removes leading white space and then tag from s.
func cutTag(s, tag string) (string, bool) {
	return strings.CutPrefix(strings.TrimLeft(s, " \t\r\n"), tag)
}

// section reads "<name>content</name>" at the start of s (after white
// space), content non-blank, and returns what follows.
func section(s, name string) (string, bool) {
	s, ok := cutTag(s, "<"+name+">")
	if !ok {
		return s, false
	}
	body, rest, ok := strings.Cut(s, "</"+name+">")
	if !ok || strings.TrimSpace(body) == "" {
		return s, false
	}
	return rest, true
}

// VAGENFormatVerifier is the "vagen_format" verifier: score 1 when pred
// follows the format of the style named by the parameter "style"
// (VAGENFormat), else 0. ref is ignored.
//
// VAGENFormat's rule (every section non-blank after trimming white space)
// is the paper's. rlpost is stricter by default: a section counts only if
// it holds visible content — invisible characters (package norm: format
// and zero-width characters, Hangul fillers such as U+3164, U+2800) are
// not content, and are removed before the tags are read.
//
// Parameters: "style" (default "grounding_worldmodeling", the strategy of
// VAGEN-Base and VAGEN-Full, §3 and §5.3); "visible" (default true):
// false gives the paper's rule, VAGENFormat on the response as written.
func VAGENFormatVerifier(ctx context.Context, response, reference string, p Params) (Result, error) {
	return vagenRule.verify(ctx, response, reference, p)
}

var vagenRule = rule{norm: normNone,
	name: "vagen_format", params: []string{"style", "visible"},
	read: func(p Params, c *config) (err error) {
		if err := readVisible(p, c); err != nil {
			return err
		}
		if c.style, err = p.String("style", VAGENGroundingWorldModeling); err != nil {
			return err
		}
		_, err = vagenFormatCheck("", c.style) // an unknown style is an error now, not on every call
		return err
	},
	score: scoreVAGEN,
}

func scoreVAGEN(_ context.Context, pred string, _ bool, _ string, c *config) (Result, error) {
	style := c.style
	if c.visible {
		pred = norm.Clean(pred)
	}
	ok, err := vagenFormatCheck(pred, style)
	if err != nil || !ok {
		return Result{}, err
	}
	return Result{Score: 1, Correct: true, Parsed: style}, nil
}
