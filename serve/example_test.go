package serve_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/rlpost/rlpost/serve"
)

// A Go program can mount the reward service in its own HTTP server; here
// an httptest server stands in for it.
func ExampleNew() {
	s, err := serve.New(serve.DefaultConfig())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	ts := httptest.NewServer(s)
	defer ts.Close()

	post := func(path, body string) string {
		resp, err := http.Post(ts.URL+path, "application/json", strings.NewReader(body))
		if err != nil {
			return err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.Status + " " + string(b)
	}
	fmt.Println(post("/verify", `{"items": [{"verifier": "math", "gold": "1/2", "pred": "so $\\boxed{0.5}$"}, {"verifier": "choice", "gold": "B", "pred": "A"}]}`))
	fmt.Println(post("/openrlhf", `{"query": ["Q: 2+2? A: \\boxed{4}"], "prompts": ["Q: 2+2? A:"], "labels": ["4"]}`))
	fmt.Println(post("/slime", `{"prompt": "Q: 2+2?", "response": "\\boxed{5}", "label": "4"}`))
	fmt.Println(post("/slime", `{"response": 5}`))
	// Output:
	// 200 OK {"results":[{"score":1.0,"correct":true},{"score":0.0,"correct":false}]}
	// 200 OK {"rewards":[1.0],"scores":[1.0],"extra_logs":{"correct":[1.0],"timeout":[0.0],"error":[0.0]},"reasons":[null]}
	// 200 OK 0.0
	// 400 Bad Request {"error":"body: field \"response\" is number, want string"}
}
