"""Peak memory of `rlpost serve` under concurrent large batches (Linux).

    python3 examples/serve/memcheck.py /path/to/rlpost [-max-body 8MiB]

Starts the server on 127.0.0.1 with the given flags, posts 8 /verify batches
of 6500 math items (~1.2 KB each, a 7.2 MiB body) at once, and prints the
server's peak resident memory (VmHWM) before and after.
"""

import http.client
import json
import signal
import subprocess
import sys
import threading


def vmhwm(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return line.split(":", 1)[1].strip()
    return "?"


def main(binary, *flags):
    proc = subprocess.Popen([binary, "serve", "-addr", "127.0.0.1:0", *(flags or ("-max-body", "8MiB"))],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    host, port = proc.stdout.readline().split("http://", 1)[1].strip().rsplit(":", 1)
    try:
        print("idle VmHWM", vmhwm(proc.pid))
        item = {"verifier": "math", "gold": "\\frac{14}{3}",
                "pred": "<think>" + "We set up the equation and simplify.\n" * 28 + "</think> so $\\boxed{\\frac{14}{3}}$"}
        body = json.dumps({"items": [item] * 6500}).encode()
        codes = []

        def post():
            c = http.client.HTTPConnection(host, int(port), timeout=600)
            c.request("POST", "/verify", body=body, headers={"Content-Type": "application/json"})
            r = c.getresponse()
            r.read()
            codes.append(r.status)

        threads = [threading.Thread(target=post) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        print("8 bodies of %.2f MiB: statuses %s; peak VmHWM %s" % (len(body) / 2**20, sorted(codes), vmhwm(proc.pid)))
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
    return 0 if codes == [200] * 8 else 1


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
