package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
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
		{"-max-factorial", "0"}, {"-max-verify-timeout", "0s"}, {"-min-body-rate", "0"}, {"-body-grace", "0s"},
		{"-max-body", "1MiB", "-max-inflight", "4MiB", "-max-client-inflight", "8MiB"}, {"-allow-host", "a/b"},
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

// TestServeSIGTERMMidBatch: `rlpost serve` sent SIGTERM while it scores a
// batch finishes the batch, answers it in full, and exits 0.
func TestServeSIGTERMMidBatch(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a subprocess")
	}
	cmd := exec.Command(os.Args[0], "serve", "-addr", "127.0.0.1:0", "-workers", "1")
	cmd.Env = append(os.Environ(), "RLPOST_TEST_AS_MAIN=1")
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
		}
	}()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err, "first line of stdout; stderr %s", stderr.String())
	url := strings.TrimSpace(strings.TrimPrefix(line, "rlpost serve: listening on "))
	require.True(t, strings.HasPrefix(url, "http://127.0.0.1:"), "address line %q", line)

	const n = 40000
	items := make([]string, n)
	for i := range items {
		items[i] = fmt.Sprintf(`{"verifier": "math", "gold": "%d", "pred": "so the answer is $\\boxed{%d}$"}`, i, i+i%2)
	}
	body := `{"items": [` + strings.Join(items, ",") + `]}`
	type answer struct {
		code int
		body []byte
		err  error
	}
	done := make(chan answer, 1)
	go func() {
		resp, err := http.Post(url+"/verify", "application/json", strings.NewReader(body))
		if err != nil {
			done <- answer{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		done <- answer{resp.StatusCode, b, err}
	}()
	// Wait until the batch is being scored, then signal.
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get(url + "/metrics")
		require.NoError(t, err)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if m := regexp.MustCompile(`(?m)^rlpost_serve_items_in_flight (\d+)`).FindSubmatch(b); m != nil && string(m[1]) != "0" {
			break
		}
		require.True(t, time.Now().Before(deadline), "the batch never started")
		time.Sleep(5 * time.Millisecond)
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	a := <-done
	require.NoError(t, a.err)
	require.Equal(t, http.StatusOK, a.code, "%.200s", a.body)
	var got struct {
		Results []struct {
			Score   float64 `json:"score"`
			Correct bool    `json:"correct"`
		} `json:"results"`
	}
	require.NoError(t, json.Unmarshal(a.body, &got))
	require.Len(t, got.Results, n, "every item of the batch answered")
	for i, r := range got.Results {
		if r.Correct != (i%2 == 0) {
			t.Fatalf("item %d: %+v", i, r)
		}
	}
	select {
	case err := <-exited:
		require.NoError(t, err, "exit after SIGTERM; stderr %s", stderr.String())
	case <-time.After(10 * time.Second):
		t.Fatal("still running 10 s after SIGTERM")
	}
	assert.Contains(t, stderr.String(), "stopped after finishing the requests in flight")
}
