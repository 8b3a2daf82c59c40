package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rlpost/rlpost/internal/tool/verifyline"
	"github.com/rlpost/rlpost/serve"
	"github.com/rlpost/rlpost/verifiers"
)

// Bounds of `rlpost serve -loadtest`, so that it always stops by itself.
const (
	loadMaxDuration = time.Minute
	loadMaxBatch    = 10000
	loadMaxConns    = 64
)

// loadItems are the load test's work: math answers after a chain of thought
// of about 1 KB, half of them right, in the shape a GRPO rollout sends.
func loadItems() []verifyline.Request {
	think := "<think>" + strings.Repeat("We set up the equation from the statement, simplify both sides, and check the result against the constraints. ", 9) + "</think>\n"
	pairs := []struct{ gold, answer string }{
		{`\frac{14}{3}`, `\frac{14}{3}`}, {`3\sqrt{13}`, `\sqrt{117}`}, {`(3, \frac{\pi}{2})`, `\left( 3, \frac{\pi}{2} \right)`},
		{`[-2, 7]`, `[-2, 7]`}, {`28\%`, `28\%`}, {`x^2+2x+1`, `(x+1)^2`}, {`12000023`, `12,000,023`}, {`\frac{1}{2}`, `0.5`},
		{`\frac{14}{3}`, `\frac{13}{3}`}, {`3\sqrt{13}`, `3\sqrt{11}`}, {`[-2, 7]`, `(-2, 7)`}, {`28\%`, `27\%`},
		{`x^2+2x+1`, `(x-1)^2`}, {`12000023`, `12000032`}, {`\frac{1}{2}`, `0.25`}, {`42`, `41`},
	}
	reqs := make([]verifyline.Request, len(pairs))
	for i, p := range pairs {
		pred := think + "Therefore the answer is $\\boxed{" + p.answer + "}$."
		reqs[i] = verifyline.Request{Verifier: "math", Gold: p.gold, Pred: &pred}
	}
	return reqs
}

// loadCell is one measurement: a batch size and a number of connections.
type loadCell struct {
	batch, conns int
	requests     int
	itemsPerSec  float64
	p50, p99     time.Duration
	// timeouts counts items answered "timeout": true: on a starved
	// machine a worker can lose the CPU for longer than -timeout.
	timeouts int
}

func loadtestCmd(ctx context.Context, cfg serve.Config, dur time.Duration, batchList, connList string, stdout, stderr io.Writer) int {
	batches, err1 := parseInts(batchList, 1, loadMaxBatch)
	conns, err2 := parseInts(connList, 1, loadMaxConns)
	if err := cmpOr(err1, err2); err != nil || dur <= 0 || dur > loadMaxDuration {
		fmt.Fprintf(stderr, "serve -loadtest: -batches and -conns are comma-separated lists in [1, %d] and [1, %d], -duration in (0, %v]: %v\n",
			loadMaxBatch, loadMaxConns, loadMaxDuration, err)
		return 2
	}
	items := loadItems()

	cfg.Token, cfg.Logger = "", nil
	if cfg.MaxItems < loadMaxBatch {
		cfg.MaxItems = loadMaxBatch
	}
	s, err := serve.New(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "serve -loadtest: %v\n", err)
		return 2
	}
	defer s.Close()
	// Only ever 127.0.0.1: the load test measures its own server and
	// cannot be pointed at anyone else's.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintf(stderr, "serve -loadtest: %v\n", err)
		return 1
	}
	sctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Serve(sctx, ln); close(done) }()
	defer func() { stop(); <-done }()
	url := "http://" + ln.Addr().String() + "/verify"

	fmt.Fprintf(stdout, "rlpost serve -loadtest: %d workers, GOMAXPROCS %d, %v per cell, math items of ~1 KB (client and server in one process)\n",
		cfg.Workers, runtime.GOMAXPROCS(0), dur)
	fmt.Fprintf(stdout, "raw: verifiers.Default.Verify on %d goroutines, measured for %v just before each cell, since a shared machine's speed drifts\n\n",
		runtime.GOMAXPROCS(0), dur)
	fmt.Fprintln(stdout, "| batch | conns | requests | items/s | p50 per request | p99 per request | timeouts | raw items/s | of raw |")
	fmt.Fprintln(stdout, "|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	var cells []loadCell
	var rawSum float64
	for _, b := range batches {
		for _, c := range conns {
			if ctx.Err() != nil {
				return 1
			}
			raw := rawRate(ctx, items, dur)
			rawSum += raw
			cell, err := measureCell(ctx, url, items, b, c, dur)
			if err != nil {
				fmt.Fprintf(stderr, "serve -loadtest: batch %d, %d conns: %v\n", b, c, err)
				return 1
			}
			cells = append(cells, cell)
			fmt.Fprintf(stdout, "| %d | %d | %d | %.0f | %v | %v | %d | %.0f | %.0f %% |\n", cell.batch, cell.conns, cell.requests,
				cell.itemsPerSec, cell.p50.Round(time.Microsecond), cell.p99.Round(time.Microsecond), cell.timeouts, raw, 100*cell.itemsPerSec/raw)
		}
	}
	raw := rawSum / float64(len(cells))
	fmt.Fprintf(stdout, "\nmean raw rate %.0f items/s\n", raw)
	var single, best float64
	for _, c := range cells {
		if c.batch == 1 {
			single = max(single, c.itemsPerSec)
		} else {
			best = max(best, c.itemsPerSec)
		}
	}
	if single > 0 && best > 0 {
		fmt.Fprintf(stdout, "best batched / best one-item-per-request: %.1f×; best batched / mean raw: %.0f %%\n", best/single, 100*best/raw)
	}
	return 0
}

// rawRate is the verifiers' own rate on every core: items/s.
func rawRate(ctx context.Context, items []verifyline.Request, dur time.Duration) float64 {
	var n atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(dur)
	for g := range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := g; time.Now().Before(deadline) && ctx.Err() == nil; k++ {
				it := items[k%len(items)]
				verifiers.Default.Verify(ctx, it.Verifier, *it.Pred, it.Gold, it.Params)
				n.Add(1)
			}
		}()
	}
	wg.Wait()
	return float64(n.Load()) / time.Since(start).Seconds()
}

// measureCell posts batches of b items from c connections for dur.
func measureCell(ctx context.Context, url string, items []verifyline.Request, b, c int, dur time.Duration) (loadCell, error) {
	batch := make([]verifyline.Request, b)
	for i := range batch {
		batch[i] = items[i%len(items)]
	}
	body, err := json.Marshal(map[string]any{"items": batch})
	if err != nil {
		return loadCell{}, err
	}
	client := &http.Client{
		Transport: &http.Transport{MaxIdleConnsPerHost: c, MaxConnsPerHost: c, DisableCompression: true},
		Timeout:   time.Minute,
	}
	defer client.CloseIdleConnections()
	// One request first, checked in full, so that the timing is of right
	// answers.
	if err := checkBatch(client, url, body, b); err != nil {
		return loadCell{}, err
	}
	var (
		mu       sync.Mutex
		lat      []time.Duration
		timeouts int
		first    error
		wg       sync.WaitGroup
	)
	start := time.Now()
	deadline := start.Add(dur)
	for range c {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			for time.Now().Before(deadline) && ctx.Err() == nil {
				t := time.Now()
				resp, err := client.Post(url, "application/json", bytes.NewReader(body))
				var answer []byte
				if err == nil {
					answer, err = io.ReadAll(resp.Body)
					resp.Body.Close()
					if err == nil && resp.StatusCode != http.StatusOK {
						err = fmt.Errorf("status %s", resp.Status)
					}
				}
				if err != nil {
					mu.Lock()
					first = cmpOr(first, err)
					mu.Unlock()
					return
				}
				mine = append(mine, time.Since(t))
				if n := bytes.Count(answer, []byte(`"timeout":true`)); n > 0 {
					mu.Lock()
					timeouts += n
					mu.Unlock()
				}
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if first != nil {
		return loadCell{}, first
	}
	if len(lat) == 0 {
		return loadCell{}, fmt.Errorf("no request finished within %v", dur)
	}
	slices.Sort(lat)
	return loadCell{
		batch: b, conns: c, requests: len(lat),
		itemsPerSec: float64(len(lat)*b) / elapsed.Seconds(),
		p50:         lat[len(lat)/2],
		p99:         lat[(len(lat)*99+99)/100-1],
		timeouts:    timeouts,
	}, nil
}

// checkBatch posts one batch and checks that every item was scored.
func checkBatch(client *http.Client, url string, body []byte, n int) error {
	resp, err := client.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var out struct {
		Results []struct {
			Score *float64 `json:"score"`
			Error string   `json:"error"`
		} `json:"results"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return fmt.Errorf("status %s: %v", resp.Status, err)
	}
	if len(out.Results) != n {
		return fmt.Errorf("%d results for %d items", len(out.Results), n)
	}
	for i, r := range out.Results {
		if r.Error != "" || r.Score == nil {
			return fmt.Errorf("item %d not scored: %s", i, r.Error)
		}
	}
	return nil
}

func parseInts(list string, lo, hi int) ([]int, error) {
	var out []int
	for _, f := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < lo || n > hi {
			return nil, fmt.Errorf("%q is not an integer in [%d, %d]", f, lo, hi)
		}
		out = append(out, n)
	}
	return out, nil
}

func cmpOr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}
