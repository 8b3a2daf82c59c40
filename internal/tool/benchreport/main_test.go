package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const sample = `# Benchmarks

Prose that stays.

<!-- bench table: printf '| a | b |\n|---|---|\n| 1 | 2 |\n' -->
old figures
<!-- end bench table -->

Between.

<!-- bench text: echo hello -->
<!-- end bench text -->

<!-- bench broken: exit 3 -->
kept
<!-- end bench broken -->
`

func write(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "B.md")
	require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
	return p
}

// TestRegenerates: each block is replaced by the provenance line and the
// command's table or output; prose stays; a failing command leaves its
// block and makes the exit code 1.
func TestRegenerates(t *testing.T) {
	p := write(t, sample)
	var out, errw bytes.Buffer
	assert.Equal(t, 1, run([]string{"-file", p}, &out, &errw), errw.String())
	got, err := os.ReadFile(p)
	require.NoError(t, err)
	s := string(got)
	assert.Contains(t, s, "Prose that stays.\n")
	assert.Contains(t, s, "Between.\n")
	assert.NotContains(t, s, "old figures")
	assert.Regexp(t, "(?s)<!-- bench table: .*-->\nMeasured .* UTC on .*cores.*command `printf.*`:\n\n\\| a \\| b \\|\n\\|---\\|---\\|\n\\| 1 \\| 2 \\|\n<!-- end bench table -->", s)
	assert.Contains(t, s, "```text\nhello\n```\n<!-- end bench text -->")
	assert.Contains(t, s, "<!-- bench broken: exit 3 -->\nkept\n<!-- end bench broken -->")
	assert.Contains(t, errw.String(), "broken")
}

// TestOnly regenerates the named blocks only and refuses unknown names.
func TestOnly(t *testing.T) {
	p := write(t, sample)
	var out, errw bytes.Buffer
	require.Equal(t, 0, run([]string{"-file", p, "-only", "text"}, &out, &errw), errw.String())
	got, _ := os.ReadFile(p)
	assert.Contains(t, string(got), "old figures")
	assert.Contains(t, string(got), "hello")
	assert.Equal(t, 2, run([]string{"-file", p, "-only", "nope"}, &out, &errw))
}

// TestMalformed: a block without its end marker, or twice, is an error and
// the file is not touched.
func TestMalformed(t *testing.T) {
	for _, text := range []string{
		"<!-- bench a: true -->\nno end\n",
		"<!-- bench a: true -->\n<!-- end bench a -->\n<!-- bench a: true -->\n<!-- end bench a -->\n",
		"no blocks at all\n",
	} {
		p := write(t, text)
		var out, errw bytes.Buffer
		assert.Equal(t, 1, run([]string{"-file", p}, &out, &errw), text)
		got, _ := os.ReadFile(p)
		assert.Equal(t, text, string(got))
	}
}

func TestList(t *testing.T) {
	p := write(t, sample)
	var out, errw bytes.Buffer
	require.Equal(t, 0, run([]string{"-file", p, "-list"}, &out, &errw))
	assert.Equal(t, "table        printf '| a | b |\\n|---|---|\\n| 1 | 2 |\\n'\ntext         echo hello\nbroken       exit 3\n", out.String())
}
