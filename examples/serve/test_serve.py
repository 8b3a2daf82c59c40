"""End-to-end check of `rlpost serve` with the stdlib client: starts the
binary on 127.0.0.1 with a free port (-addr 127.0.0.1:0; the port is read
from its first line of output), runs the three protocols, auth, a hostile
body and the verl shim against it, stops it with SIGTERM and checks that it
exits 0. Exits non-zero on any failure.

    python3 examples/serve/test_serve.py /path/to/rlpost
"""

import base64
import os
import signal
import subprocess
import sys
import tempfile
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from rlpost_client import Client, ServeError  # noqa: E402

TOKEN = "ci-token-0123456789abcdef"
failures = []


def check(cond, what):
    if cond:
        print("ok   " + what)
    else:
        print("FAIL " + what)
        failures.append(what)


def start(binary, *args):
    proc = subprocess.Popen([binary, "serve", "-addr", "127.0.0.1:0", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline()  # "rlpost serve: listening on http://127.0.0.1:PORT"
    if "listening on " not in line:
        proc.kill()
        raise SystemExit("rlpost serve did not start: %r %s" % (line, proc.stderr.read()))
    return proc, line.split("listening on ", 1)[1].strip()


def stop(proc):
    proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        return -1


def main(binary):
    with tempfile.NamedTemporaryFile("w", suffix=".token", delete=False) as f:
        f.write(TOKEN + "\n")
        token_file = f.name
    proc, url = start(binary, "-token-file", token_file, "-timeout", "2s")
    try:
        c = Client(url, token=TOKEN)
        check(c.healthz() == {"status": "ok"}, "healthz")

        res = c.verify([
            {"verifier": "math", "gold": "\\frac{1}{2}", "pred": "So the answer is $\\boxed{0.5}$."},
            {"verifier": "choice", "gold": "B", "pred": "<answer>C</answer>"},
            {"verifier": "no-such-verifier", "pred": "x"},
            {"verifier": "math", "gold": "\u221a2", "pred": "caf\u00e9 \U0001F600 \\boxed{\\sqrt{2}}"},
        ])
        check(res[0] == {"score": 1, "correct": True}, "/verify: right math answer scores 1")
        check(res[1] == {"score": 0, "correct": False}, "/verify: wrong choice scores 0")
        check("error" in res[2] and "no-such-verifier" in res[2]["error"], "/verify: bad item gets its own error")
        check(len(res) == 4 and "score" in res[3], "/verify: non-ASCII text through json.dumps' \\u escapes")

        prompts = ["<|user|>What is 2+2?<|assistant|>", "<|user|>Pick one.<|assistant|>"]
        responses = ["It is \\boxed{4}.", "<answer>A</answer>"]
        out = c.openrlhf(query=[p + r for p, r in zip(prompts, responses)], prompts=prompts,
                         labels=["4", '{"verifier": "choice", "gold": "B"}'])
        check(out["rewards"] == [1, 0] and out["scores"] == [1, 0], "/openrlhf: rewards and scores")
        check(all(type(x) is float for x in out["rewards"] + out["scores"]), "/openrlhf: rewards are JSON floats")
        check(sorted(out["extra_logs"]) == ["correct", "error", "timeout"], "/openrlhf: extra_logs keys")
        out = c.openrlhf(query=["truncated prompt. \\boxed{1}"], prompts=["A long, truncated prompt. "], labels=["1"])
        check(out["rewards"] == [1.0], "/openrlhf: a prompt that is not a prefix: the whole query is scored")
        out = c.openrlhf(query=["x"], labels=[True])
        check(out["rewards"] == [0.0] and out["extra_logs"]["error"] == [1.0] and out["reasons"][0].startswith("bad_label: "),
              "/openrlhf: a bad label scores 0.0 with its reason, not a 400")

        check(c.slime(response="The answer is \\boxed{42}.", label="42") == 1, "/slime: bare number")
        d = c.slime(response="\\boxed{41}", label=42, detail=True)
        check(d["reward"] == 0 and d["correct"] is False and d["verifier"] == "math", "/slime?detail=1")

        try:
            Client(url, token="wrong-token-0123456789").healthz()
            check(False, "wrong token gets 401")
        except ServeError as e:
            check(e.status == 401, "wrong token gets 401")
        basic = base64.b64encode(("rlpost:" + TOKEN).encode()).decode()
        req = urllib.request.Request(url + "/healthz", headers={"Authorization": "Basic " + basic})
        check(urllib.request.urlopen(req, timeout=30).status == 200, "token as Basic password (URL credentials)")
        try:
            c._request("POST", "/verify", b'{"items": [')
            check(False, "malformed JSON gets 400")
        except ServeError as e:
            check(e.status == 400, "malformed JSON gets 400")
        check(c.healthz() == {"status": "ok"}, "still serving after the hostile body")

        os.environ["RLPOST_URL"], os.environ["RLPOST_TOKEN"] = url, TOKEN
        import verl_reward
        r = verl_reward.compute_score("gsm8k", "so \\boxed{12}", "12", {"index": 3})
        check(r == {"score": 1.0, "correct": 1.0, "timeout": 0.0}, "verl compute_score")
        rs = verl_reward.compute_score_batch(["a", "b"], ["\\boxed{1}", "<answer>B</answer>"], ["2", "B"],
                                             [None, {"verifier": "choice"}])
        check([x["score"] for x in rs] == [0.0, 1.0], "verl compute_score_batch")

        req = urllib.request.Request(url + "/metrics", headers={"Authorization": "Bearer " + TOKEN})
        text = urllib.request.urlopen(req, timeout=30).read().decode()
        check('rlpost_serve_items_total{endpoint="openrlhf",verifier="math"} 3' in text, "/metrics counts items")
        check('rlpost_serve_item_error_reasons_total{endpoint="openrlhf",reason="bad_label"} 1' in text, "/metrics counts item errors by reason")
    finally:
        code = stop(proc)
        err = proc.stderr.read()
        os.unlink(token_file)
    check(code == 0, "SIGTERM: graceful exit 0")
    if failures:
        print(err, file=sys.stderr)
        print("%d check(s) failed" % len(failures), file=sys.stderr)
        return 1

    # A public address without a token is refused.
    r = subprocess.run([binary, "serve", "-addr", "0.0.0.0:0"], capture_output=True, text=True, timeout=30)
    check(r.returncode == 2 and "without a token" in r.stderr, "public bind without a token is refused")
    return 1 if failures else 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: test_serve.py /path/to/rlpost")
    sys.exit(main(sys.argv[1]))
