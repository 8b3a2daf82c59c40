// Package serve is rlpost's reward service: the verifiers of package
// verifiers behind an HTTP API that Python RL trainers already know how to
// call, so that a rollout's rewards are scored by a pool of Go workers
// instead of one `rlpost verify` process per batch.
//
// # Endpoints
//
//	POST /verify    {"items": [{"verifier", "gold", "pred", "params"}, …]}
//	                → {"results": [{"score", "correct"[, "timeout", "reason"]}
//	                               | {"score": 0.0, "correct": false, "error", "reason"}, …]}
//	POST /openrlhf  OpenRLHF's --reward.remote_url: {"query", "prompts", "labels"}
//	                → {"rewards", "scores", "extra_logs": {"correct", "timeout", "error"}, "reasons"}
//	POST /slime     slime's --rm-url: {"prompt", "response", "label"} → a float;
//	                with ?detail=1 → {"reward", "correct", "timeout", "verifier", …}
//	GET  /healthz   200 {"status": "ok"} while serving
//	GET  /metrics   Prometheus text format
//
// Every number in an answer is a JSON float (1.0, never 1). An item that
// cannot be scored never fails its request: it scores 0.0 with its reason
// (a kind from a fixed set, such as "unknown_verifier" or
// "param_over_cap") in its own slot, a rate-limited WARN line and a count
// in rlpost_serve_item_error_reasons_total. The full contract, field by
// field with status codes, is in
// docs/conformance.md#rlpost-serve; `rlpost serve` is the command that runs
// it.
//
// # Resources
//
// Every verifier call of every request runs on one pool of Config.Workers
// goroutines, fed through a short queue in arrival order, so the CPU spent
// scoring is bounded whatever the number of clients, and the items of
// concurrent requests interleave. Each call has its own deadline
// (Config.Timeout, counted from when a worker takes it); an item past it is
// answered at once with a score of 0 and "timeout": true, and counted, even
// if its verifier does not honour the context. Request bodies are bounded
// one by one (Config.MaxBody), together (Config.MaxInflight, charged as the
// bytes arrive) and per client (Config.MaxClientInflight); a body's arrays,
// objects and nesting are counted before it is decoded, so that decoding
// costs no more than a small constant times the body; bodies slower than
// Config.MinBodyRate are cut. The limits an item's params may raise in a
// verifier are capped by Config.Caps. docs/serve-security.md lists every
// limit.
//
// # Security
//
// The service runs verifiers on whatever it is sent. CheckBind refuses a
// non-loopback address without a token; with Config.Token every request
// must carry it, as a bearer token or as the password of Basic credentials
// (a URL's user info, for trainers that cannot set headers), compared in
// constant time. Whether or not a token is set, a request must carry a Host
// that names this server (loopback, the address it arrived on, or
// Config.AllowedHosts) and no cross-origin Origin, and the scoring
// endpoints take only application/json, so that a web page the operator
// visits can neither post to a loopback service nor read it through DNS
// rebinding. Slow clients are cut off by the header, body-rate, write and
// idle timeouts of Serve.
//
// # Example
//
//	s, err := serve.New(serve.DefaultConfig())
//	if err != nil { … }
//	defer s.Close()
//	http.Handle("/rewards/", http.StripPrefix("/rewards", s))
package serve
