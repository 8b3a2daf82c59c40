package main

import (
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
)

// progress shows the runs as they go: on a terminal, one mpb bar per
// running run (steps done, elapsed) under an overall bar; otherwise one
// plain line per finished run, so that logs and CI stay readable.
type progress struct {
	p        *mpb.Progress
	total    *mpb.Bar
	w        io.Writer
	mu       sync.Mutex
	finished int
	n        int
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func newProgress(w io.Writer, runs int) *progress {
	pr := &progress{w: w, n: runs}
	if isTerminal(w) {
		pr.p = mpb.New(mpb.WithOutput(w), mpb.WithWidth(40))
		pr.total = pr.p.AddBar(int64(runs),
			mpb.PrependDecorators(decor.Name("all runs          ", decor.WCSyncSpaceR), decor.CountersNoUnit("%d/%d")),
			mpb.AppendDecorators(decor.Elapsed(decor.ET_STYLE_GO), decor.Name(" "), decor.Percentage()))
	}
	return pr
}

// runBar is one run's bar.
type runBar struct {
	pr    *progress
	bar   *mpb.Bar
	label string
}

func (pr *progress) start(label string, steps int) *runBar {
	rb := &runBar{pr: pr, label: label}
	if pr.p != nil {
		rb.bar = pr.p.AddBar(int64(steps), mpb.BarRemoveOnComplete(),
			mpb.PrependDecorators(decor.Name(label, decor.WCSyncSpaceR), decor.CountersNoUnit("%d/%d steps")),
			mpb.AppendDecorators(decor.Elapsed(decor.ET_STYLE_GO)))
	}
	return rb
}

func (rb *runBar) tick() {
	if rb.bar != nil {
		rb.bar.Increment()
	}
}

// done ends the run's bar and counts the run.
func (rb *runBar) done(msg string, err error) {
	pr := rb.pr
	if rb.bar != nil {
		if err != nil {
			rb.bar.Abort(true)
		} else {
			rb.bar.SetTotal(-1, true)
		}
		pr.total.Increment()
		return
	}
	pr.mu.Lock()
	defer pr.mu.Unlock()
	pr.finished++
	if err != nil {
		msg = "failed: " + err.Error()
	}
	fmt.Fprintf(pr.w, "avatar: [%d/%d] %s  %s\n", pr.finished, pr.n, rb.label, msg)
}

func (pr *progress) wait() {
	if pr.p != nil {
		pr.p.Wait()
	}
}
