// Package serve is rlpost's reward service: the verifiers of package
// verifiers behind an HTTP API that Python RL trainers already know how to
// call, so that a rollout's rewards are scored by a pool of Go workers
// instead of one `rlpost verify` process per batch.
//
// # Endpoints
//
//	POST /verify    {"items": [{"verifier", "gold", "pred", "params"}, …]}
//	                → {"results": [{"score", "correct"[, "timeout", "reason"]} | {"error"}, …]}
//	POST /openrlhf  OpenRLHF's --remote_rm_url: {"query", "prompts", "labels"}
//	                → {"rewards", "scores", "extra_logs": {"correct", "timeout", "error"}}
//	POST /slime     slime's --rm-url: {"prompt", "response", "label"} → a number;
//	                with ?detail=1 → {"reward", "correct", "timeout", "verifier", …}
//	GET  /healthz   200 {"status": "ok"} while serving
//	GET  /metrics   Prometheus text format
//
// The full contract, field by field with status codes, is in
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
// one by one (Config.MaxBody) and together (Config.MaxInflight), so memory
// stays bounded too.
//
// # Security
//
// The service runs verifiers on whatever it is sent. CheckBind refuses a
// non-loopback address without a token; with Config.Token every request
// must carry it, as a bearer token or as the password of Basic credentials
// (a URL's user info, for trainers that cannot set headers), compared in
// constant time. Slow clients
// are cut off by the header, body, write and idle timeouts of Serve.
//
// # Example
//
//	s, err := serve.New(serve.DefaultConfig())
//	if err != nil { … }
//	defer s.Close()
//	http.Handle("/rewards/", http.StripPrefix("/rewards", s))
package serve
