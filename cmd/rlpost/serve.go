package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rlpost/rlpost/serve"
)

// serveCmd runs the reward service until SIGTERM or SIGINT, then shuts it
// down gracefully; with -loadtest it measures a server of its own on
// 127.0.0.1 instead. Exit codes: 0 after a clean shutdown, 1 when serving
// fails, 2 for wrong flags or a refused address.
func serveCmd(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	return serveRun(ctx, args, stdout, stderr)
}

// byteSize is a flag holding a byte count: 1048576, 64KiB, 32MiB, 1GiB.
type byteSize int64

func (b *byteSize) String() string { return strconv.FormatInt(int64(*b), 10) }

func (b *byteSize) Set(s string) error {
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		m      int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}} {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSuffix(s, u.suffix), u.m
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 || n > (1<<40)/mult {
		return fmt.Errorf("want a positive byte count such as 1048576 or 32MiB")
	}
	*b = byteSize(n * mult)
	return nil
}

func serveRun(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	def := serve.DefaultConfig()
	fs := newFlags("serve", stderr)
	addr := fs.String("addr", "127.0.0.1:8700", "listen address; a non-loopback one needs -token-file")
	workers := fs.Int("workers", def.Workers, "verifier calls at once, shared by all requests (default: all cores)")
	timeout := fs.Duration("timeout", def.Timeout, "time limit of one item; an item over it scores 0 with \"timeout\": true")
	maxBody := byteSize(def.MaxBody)
	fs.Var(&maxBody, "max-body", "largest request body, larger ones get 413 (default 32MiB)")
	maxInflight := byteSize(def.MaxInflight)
	fs.Var(&maxInflight, "max-inflight", "body bytes of all requests being scored at once; more wait (default 4 × -max-body)")
	maxItems := fs.Int("max-items", def.MaxItems, "most items in one /verify or /openrlhf request, and most entries in any JSON array or object of a body; more get 413 before the body is decoded")
	maxClient := byteSize(0)
	fs.Var(&maxClient, "max-client-inflight", "one client's (remote IP's) share of -max-inflight (default -max-inflight minus -max-body, at least -max-body)")
	minRate := byteSize(def.MinBodyRate)
	fs.Var(&minRate, "min-body-rate", "slowest average body upload after -body-grace, in bytes/s; slower bodies get 408 (default 64KiB)")
	bodyGrace := fs.Duration("body-grace", def.BodyGrace, "time a body may take before -min-body-rate applies")
	var allowHosts stringList
	fs.Var(&allowHosts, "allow-host", "a Host name requests may carry besides loopback names and the listen address (repeatable or comma-separated; \"*\" allows any, e.g. behind a load balancer that rewrites nothing)")
	caps := def.Caps
	fs.IntVar(&caps.MaxFactorial, "max-factorial", caps.MaxFactorial, "cap on the \"max_factorial\" an item's params may ask for (largest n for n! and binomials)")
	fs.IntVar(&caps.MaxExponent, "max-exponent", caps.MaxExponent, "cap on the \"max_exponent\" an item's params may ask for (largest exact power)")
	fs.IntVar(&caps.MaxDepth, "max-depth", caps.MaxDepth, "cap on the \"max_depth\" an item's params may ask for (nesting of one answer)")
	fs.IntVar(&caps.MaxInputLen, "max-input-len", caps.MaxInputLen, "cap on the \"max_input_len\" an item's params may ask for (bytes of gold and pred)")
	fs.DurationVar(&caps.MaxVerifyTimeout, "max-verify-timeout", caps.MaxVerifyTimeout, "cap on the \"timeout_ms\" an item's params may ask for (\"timeout_ms\": 0, no limit, counts as above it)")
	tokenFile := fs.String("token-file", "", "file holding the bearer token every request must send")
	verifier := fs.String("verifier", def.Verifier, "verifier for /openrlhf and /slime labels that do not name one")
	shutdown := fs.Duration("shutdown-timeout", def.ShutdownTimeout, "on SIGTERM, how long in-flight requests may take to finish")
	loadtest := fs.Bool("loadtest", false, "measure a server of its own on 127.0.0.1 and print a table, then exit")
	duration := fs.Duration("duration", 3*time.Second, "with -loadtest: time per measurement")
	batches := fs.String("batches", "1,64,1000", "with -loadtest: items per request")
	conns := fs.String("conns", "1,4", "with -loadtest: concurrent connections")
	if code, done := parseFlags(fs, args, stdout); done {
		return code
	}
	if fs.NArg() != 0 {
		fmt.Fprintf(stderr, "serve: unexpected arguments %q\n", fs.Args())
		return 2
	}
	explicit := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { explicit[f.Name] = true })
	cfg := def
	cfg.Workers, cfg.Timeout, cfg.MaxBody, cfg.MaxItems = *workers, *timeout, int64(maxBody), *maxItems
	cfg.MaxInflight = int64(maxInflight)
	if explicit["max-body"] && !explicit["max-inflight"] {
		cfg.MaxInflight = 4 * cfg.MaxBody
	}
	cfg.MaxClientInflight = int64(maxClient)
	cfg.MinBodyRate, cfg.BodyGrace = int64(minRate), *bodyGrace
	cfg.AllowedHosts, cfg.Caps = allowHosts, caps
	cfg.Verifier, cfg.ShutdownTimeout = *verifier, *shutdown
	cfg.Logger = slog.New(slog.NewTextHandler(stderr, nil))
	if *loadtest {
		return loadtestCmd(ctx, cfg, *duration, *batches, *conns, stdout, stderr)
	}
	if *tokenFile != "" {
		tok, err := readToken(*tokenFile)
		if err != nil {
			fmt.Fprintf(stderr, "serve: %v\n", err)
			return 2
		}
		cfg.Token = tok
	}
	if err := serve.CheckBind(*addr, cfg.Token != ""); err != nil {
		fmt.Fprintf(stderr, "%v\n", err)
		return 2
	}
	s, err := serve.New(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "%v\n", err)
		return 2
	}
	defer s.Close()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintf(stderr, "serve: %v\n", err)
		return 1
	}
	// The first line of stdout is the address, so that a script that asked
	// for port 0 learns the port.
	fmt.Fprintf(stdout, "rlpost serve: listening on http://%s\n", ln.Addr())
	if f, ok := stdout.(*os.File); ok {
		f.Sync()
	}
	cfg.Logger.Info("serving", "addr", ln.Addr().String(), "workers", cfg.Workers, "timeout", cfg.Timeout,
		"verifier", cfg.Verifier, "auth", cfg.Token != "", "max_body", cfg.MaxBody, "max_inflight", cfg.MaxInflight,
		"max_items", cfg.MaxItems, "min_body_rate", cfg.MinBodyRate, "allow_host", cfg.AllowedHosts)
	if err := s.Serve(ctx, ln); err != nil {
		fmt.Fprintf(stderr, "serve: %v\n", err)
		return 1
	}
	cfg.Logger.Info("stopped after finishing the requests in flight")
	return 0
}

// stringList is a repeatable, comma-separated flag.
type stringList []string

func (l *stringList) String() string { return strings.Join(*l, ",") }

func (l *stringList) Set(s string) error {
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			*l = append(*l, v)
		}
	}
	return nil
}

// readToken reads a token file: the token is its content without
// surrounding white space.
func readToken(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("-token-file: %w", err)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", errors.New("-token-file: the file is empty")
	}
	if len(tok) < serve.MinTokenLen {
		return "", fmt.Errorf("-token-file: token of %d bytes; use at least %d (e.g. openssl rand -hex 32)", len(tok), serve.MinTokenLen)
	}
	return tok, nil
}
