package parallel

// MinTokens is the size of a call (rows × width) below which Rows runs it
// on the calling goroutine alone: waking a worker costs a few microseconds,
// more than the work of a smaller batch.
const MinTokens = 1 << 14

// chunkTokens is the least work of one piece Rows hands out: a piece
// smaller than this costs more in the atomic counter and the cache line it
// bounces than it saves in balance.
const chunkTokens = 1 << 12

// piecesPerWorker is how many pieces per worker Rows aims for, so that a
// worker slowed by another process leaves its share to the others.
const piecesPerWorker = 8

// Rows is the engine of every row-parallel hot loop in rlpost: it runs
// job.Run(r) for every row r in [0, rows), where a row costs about width
// tokens of work. Calls under MinTokens run in order on the caller. Larger
// ones are split into pieces of Chunk(rows, width) consecutive rows, which
// the caller and the pool's workers take in turn until none is left. A
// job's rows must be independent; results that combine rows are formed by
// the caller afterwards, in row order, so they do not depend on which
// worker ran which piece. Rows allocates nothing in steady state.
func Rows(job Job, rows, width int) {
	if rows <= 0 {
		return
	}
	if rows*max(width, 1) < MinTokens {
		do(job, rows, rows, 0)
		return
	}
	do(job, rows, Chunk(rows, width), Workers()-1)
}

// Chunk is the one rule for splitting rows into pieces: as many rows as make
// chunkTokens tokens of work, but no more than leave piecesPerWorker pieces
// per worker, and at least one.
func Chunk(rows, width int) int {
	width = max(width, 1)
	c := (chunkTokens + width - 1) / width
	c = min(c, max(rows/(piecesPerWorker*Workers()), 1))
	return max(c, 1)
}
