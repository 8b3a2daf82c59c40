package parallel

// Free is a free list: it keeps up to a fixed number of *T for reuse, so
// that a hot path can recycle its scratch objects without allocating. Unlike
// a sync.Pool it is not per processor and is never emptied by the garbage
// collector, so a goroutine that moves between processors, or a call after
// a collection, still finds the object it put back. A nil *Free keeps
// nothing: Get allocates and Put drops.
type Free[T any] struct {
	ch chan *T
}

// NewFree returns a free list that keeps up to n objects.
func NewFree[T any](n int) *Free[T] { return &Free[T]{ch: make(chan *T, n)} }

// Get returns a kept object, or a new zero T if none is kept.
func (f *Free[T]) Get() *T {
	if f != nil {
		select {
		case x := <-f.ch:
			return x
		default:
		}
	}
	return new(T)
}

// Put keeps x for a later Get, unless the list is full.
func (f *Free[T]) Put(x *T) {
	if f == nil {
		return
	}
	select {
	case f.ch <- x:
	default:
	}
}

// Pick returns the first of lists that is a *Free[T], or nil. Generic code
// keeps one free list per instantiation of its job type and finds the one
// for its type parameter with Pick(jobs32, jobs64).
func Pick[T any](lists ...any) *Free[T] {
	for _, l := range lists {
		if f, ok := l.(*Free[T]); ok {
			return f
		}
	}
	return nil
}

// Jobs keeps an op's recycled jobs: one Free list per instantiation of its
// generic job type (one per float storage type), so that steady-state calls
// allocate nothing whichever processor they run on. A job type with no list
// (a named float type) gets a new job each call.
type Jobs []any

// Get returns a kept *J from jobs, or a new zero J.
func Get[J any](jobs Jobs) *J { return Pick[J](jobs...).Get() }

// Put keeps j for a later Get; reset it first, so that a kept job holds no
// caller's slices.
func Put[J any](jobs Jobs, j *J) { Pick[J](jobs...).Put(j) }
