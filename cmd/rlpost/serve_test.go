package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestServeRefusesPublicAddressWithoutToken(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := serveRun(context.Background(), []string{"-addr", "0.0.0.0:0"}, &stdout, &stderr)
	assert.Equal(t, 2, code, "exit, stderr")
	assert.Contains(t, stderr.String(), "without a token", "exit, stderr")
}

func TestServeTokenFile(t *testing.T) {
	dir := t.TempDir()
	short := filepath.Join(dir, "short")
	require.NoError(t, os.WriteFile(short, []byte("abc\n"), 0o600))
	var stdout, stderr bytes.Buffer
	if code := serveRun(context.Background(), []string{"-token-file", short}, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "at least 16") {
		t.Errorf("short token: exit %d, stderr %q", code, stderr.String())
	}
	good := filepath.Join(dir, "good")
	require.NoError(t, os.WriteFile(good, []byte("  0123456789abcdef0123\n"), 0o600))
	// With a token the server starts (CheckBind's test covers public
	// addresses) and
	// stops when its context ends.
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	stdout.Reset()
	stderr.Reset()
	if code := serveRun(ctx, []string{"-addr", "127.0.0.1:0", "-token-file", good}, &stdout, &stderr); code != 0 {
		t.Errorf("exit %d, stderr %q", code, stderr.String())
	}
	assert.True(t, strings.HasPrefix(stdout.String(), "rlpost serve: listening on http://"), "stdout %q", stdout.String())
}

func TestServeFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-max-body", "lots"}, {"-workers", "0"}, {"-timeout", "0s"}, {"-verifier", "nope"}, {"extra"},
	} {
		var stdout, stderr bytes.Buffer
		if code := serveRun(context.Background(), append(args, "-addr", "127.0.0.1:0"), &stdout, &stderr); code != 2 {
			t.Errorf("%q: exit %d, want 2 (stderr %q)", args, code, stderr.String())
		}
	}
	var b byteSize
	for in, want := range map[string]int64{"1048576": 1 << 20, "64KiB": 64 << 10, "32MiB": 32 << 20, "1GiB": 1 << 30} {
		err := b.Set(in)
		require.NoError(t, err, "%s: %d", in, b)
		assert.Equal(t, want, int64(b), "%s: %d", in, b)
	}
}

func TestServeLoadtestRunsAndStops(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := serveRun(context.Background(), []string{"-loadtest", "-duration", "50ms", "-batches", "1,8", "-conns", "1,2"}, &stdout, &stderr)
	require.Equal(t, 0, code, "exit, stderr %q", stderr.String())
	out := stdout.String()
	for _, want := range []string{"mean raw rate", "| 1 | 1 |", "| 8 | 2 |", "best batched"} {
		assert.Contains(t, out, want, "output lacks")
	}
	if code := serveRun(context.Background(), []string{"-loadtest", "-duration", "2m"}, &stdout, &stderr); code != 2 {
		t.Errorf("-duration 2m: exit %d, want 2 (bounded)", code)
	}
}
