//go:build unix

package appo

import (
	"syscall"
	"testing"

	"github.com/rlpost/rlpost/internal/parallel"
)

// BenchmarkReadFloor is the memory floor of BenchmarkWeightsQwen: it reads
// as many float32 rows of Qwen2.5-VL's 152 064 words as that group has
// grouped tokens (3 555, 2.2 GB) once, through the row kernel without
// logarithms (a sum and a minimum per word), over the cores, and does
// nothing else. No way of computing the weights from those rows can take
// less.
func BenchmarkReadFloor(b *testing.B) {
	const rows, vocab = 3555, 152064
	data := make([]float32, rows*vocab)
	for i := range data {
		data[i] = 1.0 / vocab
	}
	job := readRows{data: data, vocab: vocab, sums: make([]float64, rows)}
	parallel.Do(job, rows, parallel.Workers()-1)
	cpu0 := cpuTime()
	for b.Loop() {
		parallel.Do(job, rows, parallel.Workers()-1)
	}
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(rows*vocab*4)/1e9/(b.Elapsed().Seconds()/float64(b.N)), "GB/s")
}

// readRows reads row r of data into sums[r].
type readRows struct {
	data  []float32
	vocab int
	sums  []float64
}

func (j readRows) Run(r int) {
	row := j.data[r*j.vocab : (r+1)*j.vocab]
	next := j.data[min(r+1, len(j.sums)-1)*j.vocab:][:j.vocab]
	_, j.sums[r] = rowSums(row, next, false)
}

// cpuTime returns the CPU time the process has used, user and system, in
// nanoseconds.
func cpuTime() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
