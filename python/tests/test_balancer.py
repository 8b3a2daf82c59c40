"""examples/serve/haproxy.cfg, unchanged, in front of two `rlpost serve`
backends on loopback; one backend is killed (SIGKILL) mid-run while
OpenRLHF-, slime- and rlpost-client traffic goes through the balancer.
Every request must come back with its right reward: nothing lost.

Skipped, with the reason, when haproxy is not installed (apt-get install
haproxy)."""

import asyncio
import os
import shutil
import signal
import subprocess
import time
import unittest
import urllib.request

import serve
import trainers
from rlpost import AsyncClient, Client

HAPROXY = shutil.which("haproxy") or ("/usr/sbin/haproxy" if os.path.exists("/usr/sbin/haproxy") else None)
CONFIG = os.path.join(serve.REPO, "examples", "serve", "haproxy.cfg")


def wait_healthy(url, want_backends_up, deadline=20.0):
    t = time.monotonic() + deadline
    while time.monotonic() < t:
        try:
            with urllib.request.urlopen(url + "/healthz", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.1)
    raise RuntimeError("the balancer at %s did not answer /healthz" % url)


def served(url):
    """Scoring requests a backend has answered (its /metrics)."""
    text = urllib.request.urlopen(url + "/metrics", timeout=10).read().decode()
    n = 0.0
    for line in text.splitlines():
        if line.startswith("rlpost_serve_requests_total{") and 'endpoint="healthz"' not in line \
                and 'endpoint="metrics"' not in line:
            n += float(line.rsplit(" ", 1)[1])
    return n


@unittest.skipUnless(HAPROXY, "haproxy is not installed (apt-get install haproxy)")
class BalancerTest(unittest.TestCase):
    def setUp(self):
        self.backends = [serve.Server(addr="127.0.0.1:%d" % serve.free_port()) for _ in range(2)]
        self.lb = "127.0.0.1:%d" % serve.free_port()
        env = dict(os.environ, RLPOST_LB_BIND=self.lb, RLPOST_BACKEND_1=self.backends[0].url.split("://")[1],
                   RLPOST_BACKEND_2=self.backends[1].url.split("://")[1])
        self.haproxy = subprocess.Popen([HAPROXY, "-db", "-f", CONFIG], env=env,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.url = "http://" + self.lb
        wait_healthy(self.url, 2)

    def tearDown(self):
        self.haproxy.send_signal(signal.SIGTERM)
        try:
            self.haproxy.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.haproxy.kill()
            self.haproxy.wait()
        self.haproxy.stderr.close()
        for b in self.backends:
            b.stop(signal.SIGKILL if b.proc.poll() is None else signal.SIGTERM)

    def test_one_backend_killed_mid_run_nothing_lost(self):
        total = 1200
        kill_at = total // 3
        done = []
        killed = {}

        def case(i):
            # a right or a wrong answer, known in advance
            gold = str(i % 7)
            return gold, "\\boxed{%d}" % (i % 5), 1.0 if i % 7 == i % 5 else 0.0

        async def run():
            slime = trainers.SlimeRM(self.url + "/slime")
            client = AsyncClient(self.url)
            sync_client = Client(self.url)
            loop = asyncio.get_running_loop()
            sem = asyncio.Semaphore(24)

            async def one(i):
                gold, resp, want = case(i)
                async with sem:
                    kind = i % 4
                    if kind == 0:
                        ans = await trainers.openrlhf_fetch_reward(self.url + "/openrlhf", "Q " + resp, "Q ", gold)
                        got = ans["rewards"][0]
                    elif kind == 1:
                        got = await slime("Q", resp, gold)
                    elif kind == 2:
                        got = (await client.verify([{"verifier": "math", "gold": gold, "pred": resp}]))[0]["score"]
                    else:
                        got = await loop.run_in_executor(None, sync_client.slime, resp, gold)
                done.append(i)
                if len(done) == kill_at:
                    killed["served_before"] = served(self.backends[0].url)
                    self.backends[0].proc.send_signal(signal.SIGKILL)
                    killed["at"] = time.monotonic()
                return i, got, want

            try:
                return await asyncio.gather(*(one(i) for i in range(total)))
            finally:
                await slime.close()
                await client.close()

        t = time.monotonic()
        results = asyncio.run(run())
        took = time.monotonic() - t
        self.assertIn("at", killed, "the backend was never killed")
        self.assertIsNotNone(self.backends[0].proc.wait(timeout=10))
        wrong = [(i, got, want) for i, got, want in results if got != want]
        self.assertEqual(wrong, [], "requests answered wrongly through the balancer")
        self.assertEqual(len(results), total)
        after = served(self.backends[1].url)
        # both backends had traffic, and the survivor took the rest
        self.assertGreater(killed["served_before"], 0)
        self.assertGreater(after, total - kill_at - 1)
        print("\nbalancer: %d requests in %.1f s; backend 1 served %d before SIGKILL, backend 2 served %d in all"
              % (total, took, killed["served_before"], after))


if __name__ == "__main__":
    unittest.main()
