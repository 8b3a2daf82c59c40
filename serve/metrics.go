package serve

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// metrics are the Prometheus series of one Server, in a registry of its
// own so that several servers in one process (tests, a program embedding
// two) do not collide. Label values come from fixed sets: the endpoints,
// the status codes the server writes, and the names the verifier registry
// holds ("unknown" for anything else), so a hostile client cannot grow the
// series without bound.
type metrics struct {
	reg *prometheus.Registry

	requests         *prometheus.CounterVec   // endpoint, code
	requestSeconds   *prometheus.HistogramVec // endpoint
	requestsInFlight prometheus.Gauge
	items            *prometheus.CounterVec   // endpoint, verifier
	itemTimeouts     *prometheus.CounterVec   // endpoint, verifier
	itemErrors       *prometheus.CounterVec   // endpoint, verifier
	itemReasons      *prometheus.CounterVec   // endpoint, reason
	refusals         *prometheus.CounterVec   // reason
	itemSeconds      *prometheus.HistogramVec // verifier
	itemsInFlight    prometheus.Gauge
	workers          prometheus.Gauge
}

func newMetrics() *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rlpost_serve_requests_total",
			Help: "HTTP requests answered, by endpoint and status code.",
		}, []string{"endpoint", "code"}),
		requestSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "rlpost_serve_request_duration_seconds",
			Help:    "Time from a request's arrival to its answer, by endpoint.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10), // 100 µs … 26 s
		}, []string{"endpoint"}),
		requestsInFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "rlpost_serve_requests_in_flight",
			Help: "Requests being read, scored or answered.",
		}),
		items: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rlpost_serve_items_total",
			Help: "Items answered (scored, timed out or failed), by endpoint and verifier.",
		}, []string{"endpoint", "verifier"}),
		itemTimeouts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rlpost_serve_item_timeouts_total",
			Help: "Items that ran past the per-item timeout and scored 0, by endpoint and verifier.",
		}, []string{"endpoint", "verifier"}),
		itemErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rlpost_serve_item_errors_total",
			Help: "Items that could not be scored (malformed item, rejected reference or parameter, verifier panic), by endpoint and verifier.",
		}, []string{"endpoint", "verifier"}),
		itemReasons: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rlpost_serve_item_error_reasons_total",
			Help: "Items that could not be scored and scored 0.0, by endpoint and reason kind (bad_item, bad_label, unknown_verifier, param_over_cap, bad_params, bad_reference, too_large, panic, verifier_error).",
		}, []string{"endpoint", "reason"}),
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rlpost_serve_refusals_total",
			Help: "Requests refused as a whole, by reason kind (bad_json, body_too_large, slow_body, busy, content_type, host, origin, unauthorized, method, shutting_down, client_canceled).",
		}, []string{"reason"}),
		itemSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "rlpost_serve_item_duration_seconds",
			Help:    "Time a worker spent in one verifier call, by verifier.",
			Buckets: prometheus.ExponentialBuckets(0.000005, 4, 11), // 5 µs … 5 s
		}, []string{"verifier"}),
		itemsInFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "rlpost_serve_items_in_flight",
			Help: "Items accepted and not yet answered (queued or running).",
		}),
		workers: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "rlpost_serve_workers",
			Help: "Size of the shared worker pool.",
		}),
	}
	m.reg.MustRegister(m.requests, m.requestSeconds, m.requestsInFlight, m.items, m.itemTimeouts,
		m.itemErrors, m.itemReasons, m.refusals, m.itemSeconds, m.itemsInFlight, m.workers,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}
