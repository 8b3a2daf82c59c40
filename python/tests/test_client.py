"""rlpost.Client and rlpost.AsyncClient: the endpoints against a live
server, and keep-alive, retries, backoff and timeouts against small stub
servers that misbehave on purpose."""

import asyncio
import http.server
import json
import pickle
import socket
import sys
import tempfile
import threading
import time
import unittest
import urllib.request

import serve
from rlpost import AsyncClient, Client, ServeError, TransportError, basic_auth_url, label


class Stub:
    """An HTTP/1.1 server on 127.0.0.1 that answers from a script: a list of
    (status, body) or "close" (drop the connection without answering) or
    "hang" (never answer), then 200 {"results": []} forever. .hits counts
    requests, .conns connections."""

    def __init__(self, script, close_after_each=False):
        stub = self
        self.script = list(script)
        self.hits = 0
        self.conns = 0
        self.lock = threading.Lock()

        class H(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self):
                super().setup()
                with stub.lock:
                    stub.conns += 1

            def log_message(self, *a):
                pass

            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                with stub.lock:
                    stub.hits += 1
                    step = stub.script.pop(0) if stub.script else (200, {"results": []})
                if step == "close":
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                if step == "hang":
                    time.sleep(3)
                    self.close_connection = True
                    return
                status, body = step
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                if close_after_each:
                    # close without "Connection: close": what an idle timeout looks like to the client
                    self.wfile.flush()
                    self.close_connection = True

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.httpd.daemon_threads = True
        self.url = "http://127.0.0.1:%d" % self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


class LiveTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.srv = serve.Server("-token-file", serve.token_file(cls.tmp.name))

    @classmethod
    def tearDownClass(cls):
        assert cls.srv.stop() == 0
        cls.tmp.cleanup()

    def test_endpoints_and_floats(self):
        c = Client(self.srv.url, token=serve.TOKEN)
        self.assertEqual(c.healthz(), {"status": "ok"})
        res = c.verify([{"verifier": "math", "gold": "\\frac{1}{2}", "pred": "\\boxed{0.5}"},
                        {"verifier": "choice", "gold": "B", "pred": "<answer>C</answer>"},
                        {"verifier": "no-such-verifier", "pred": "x"},
                        {"verifier": "math", "gold": "\u221a2", "pred": "caf\u00e9 \U0001F600 \\boxed{\\sqrt{2}}"}])
        self.assertEqual([r["score"] for r in res], [1.0, 0.0, 0.0, 1.0])
        self.assertTrue(all(type(r["score"]) is float for r in res))
        self.assertIn("no-such-verifier", res[2]["error"])
        out = c.openrlhf(query=["Q: \\boxed{4}", "Q: x"], prompts=["Q: ", "Q: "], labels=["4", label("B", "choice")])
        self.assertEqual(out["rewards"], [1.0, 0.0])
        self.assertEqual(c.slime(response="\\boxed{42}", label="42"), 1.0)
        self.assertIs(type(c.slime(response="\\boxed{42}", label=42)), float)
        d = c.slime(response="\\boxed{41}", label=42, detail=True)
        self.assertEqual((d["reward"], d["correct"], d["verifier"]), (0.0, False, "math"))

    def test_malformed_body_is_400_and_the_server_goes_on(self):
        c = Client(self.srv.url, token=serve.TOKEN, retries=0)
        with self.assertRaises(ServeError) as cm:
            c._request("POST", "/verify", {"items": "not a list"})
        self.assertEqual(cm.exception.status, 400)
        self.assertIn("items", cm.exception.message)
        self.assertEqual(c.healthz(), {"status": "ok"})

    def test_metrics_count_items(self):
        c = Client(self.srv.url, token=serve.TOKEN)
        c.openrlhf(query=["a\\boxed{1}"], prompts=["a"], labels=["1"])
        req = urllib.request.Request(self.srv.url + "/metrics", headers={"Authorization": "Bearer " + serve.TOKEN})
        text = urllib.request.urlopen(req, timeout=30).read().decode()
        self.assertRegex(text, r'rlpost_serve_items_total\{endpoint="openrlhf",verifier="math"\} [1-9]')

    def test_public_bind_without_token_is_refused(self):
        import subprocess
        r = subprocess.run([serve.binary(), "serve", "-addr", "0.0.0.0:0"], capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 2)
        self.assertIn("token", r.stderr)

    def test_token_forms(self):
        with self.assertRaises(ServeError) as cm:
            Client(self.srv.url, token="wrong-token-0123456789", retries=0).healthz()
        self.assertEqual(cm.exception.status, 401)
        # the token as the URL's password, as OpenRLHF and slime users write it
        self.assertEqual(Client(basic_auth_url(self.srv.url, serve.TOKEN)).healthz(), {"status": "ok"})

    def test_keep_alive_one_connection_per_thread(self):
        c = Client(self.srv.url, token=serve.TOKEN)
        c.healthz()
        sock = c._local.conn.sock
        for _ in range(20):
            c.verify([{"verifier": "math", "gold": "1", "pred": "\\boxed{1}"}])
        self.assertIs(c._local.conn.sock, sock)
        socks = []

        def other():
            c.healthz()
            socks.append(c._local.conn.sock)
        t = threading.Thread(target=other)
        t.start()
        t.join()
        self.assertIsNot(socks[0], sock)

    def test_pickle_after_use(self):
        c = Client(self.srv.url, token=serve.TOKEN)
        c.healthz()
        again = pickle.loads(pickle.dumps(c))
        self.assertEqual(again.healthz(), {"status": "ok"})
        a = pickle.loads(pickle.dumps(AsyncClient(self.srv.url, token=serve.TOKEN)))
        self.assertEqual(asyncio.run(self._async_health(a)), {"status": "ok"})

    async def _async_health(self, a):
        async with a:
            return await a.healthz()

    def test_async_client(self):
        for mode in ("default", "without aiohttp"):
            with self.subTest(mode=mode):
                saved = sys.modules.get("aiohttp")
                if mode == "without aiohttp":
                    sys.modules["aiohttp"] = None  # import aiohttp now raises ImportError
                try:
                    got = asyncio.run(self._async_many())
                finally:
                    if mode == "without aiohttp":
                        if saved is None:
                            del sys.modules["aiohttp"]
                        else:
                            sys.modules["aiohttp"] = saved
                self.assertEqual(got, [1.0 if i % 3 == 0 else 0.0 for i in range(100)])

    async def _async_many(self):
        async with AsyncClient(self.srv.url, token=serve.TOKEN) as a:
            outs = await asyncio.gather(*(a.slime(response="\\boxed{%d}" % (i % 3), label="0") for i in range(100)))
            self.assertTrue(all(type(x) is float for x in outs))
            return outs


def have_ipv6_loopback():
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


@unittest.skipUnless(have_ipv6_loopback(), "no IPv6 loopback here")
class IPv6Test(unittest.TestCase):
    def test_sync_async_and_verl_over_ipv6(self):
        srv = serve.Server(addr="[::1]:0")
        try:
            self.assertTrue(srv.url.startswith("http://[::1]:"))
            self.assertEqual(Client(srv.url).slime("\\boxed{1}", "1"), 1.0)

            async def go():
                async with AsyncClient(srv.url) as a:
                    return await a.slime("\\boxed{1}", "1")
            self.assertEqual(asyncio.run(go()), 1.0)
            fn = serve_verl("compute_score_async")

            async def verl():
                r = await fn(data_source="d", solution_str="\\boxed{2}", ground_truth="2", extra_info={}, url=srv.url)
                session = fn.__globals__["_STATE"].sessions.pop(asyncio.get_running_loop(), None)
                if session is not None:
                    await session.close()
                return r
            self.assertEqual(asyncio.run(verl())["score"], 1.0)
        finally:
            self.assertEqual(srv.stop(), 0)


def serve_verl(name):
    import trainers
    return trainers.verl_load(serve.VERL_FILE, name)


class RetryTest(unittest.TestCase):
    def test_retries_transient_statuses_then_succeeds(self):
        s = Stub([(503, {"error": "shutting down"}), (502, {"error": "no backend"}),
                  (200, {"results": [{"score": 1, "correct": True}]})])
        try:
            c = Client(s.url, retries=2, backoff=0.01)
            self.assertEqual(c.verify([{}]), [{"score": 1.0, "correct": True}])
            self.assertEqual(s.hits, 3)
        finally:
            s.close()

    def test_gives_up_after_retries(self):
        s = Stub([(503, {"error": "busy"})] * 10)
        try:
            t = time.monotonic()
            with self.assertRaises(TransportError) as cm:
                Client(s.url, retries=3, backoff=0.05, max_backoff=0.1).verify([{}])
            took = time.monotonic() - t
            self.assertEqual(s.hits, 4)
            self.assertEqual(cm.exception.attempts, 4)
            self.assertIsInstance(cm.exception.__cause__, ServeError)
            # waits of 0.05, 0.1, 0.1 s, each scaled by a jitter in [0.5, 1]
            self.assertGreaterEqual(took, 0.125)
        finally:
            s.close()

    def test_client_errors_are_not_retried(self):
        s = Stub([(400, {"error": "body: malformed JSON"})])
        try:
            with self.assertRaises(ServeError) as cm:
                Client(s.url, retries=5, backoff=0.01).verify([{}])
            self.assertEqual((cm.exception.status, cm.exception.message), (400, "body: malformed JSON"))
            self.assertEqual(s.hits, 1)
        finally:
            s.close()

    def test_dropped_connection_is_retried(self):
        s = Stub(["close", (200, {"results": []})])
        try:
            self.assertEqual(Client(s.url, retries=1, backoff=0.01).verify([]), [])
            self.assertEqual(s.hits, 2)
        finally:
            s.close()

    def test_stale_keep_alive_connection_costs_no_retry(self):
        # The server closes every connection after answering, as an idle
        # timeout would: with retries=0 every call must still succeed.
        s = Stub([], close_after_each=True)
        try:
            c = Client(s.url, retries=0)
            for _ in range(5):
                self.assertEqual(c.verify([]), [])
            self.assertEqual(s.conns, 5)
        finally:
            s.close()

    def test_timeout_per_attempt(self):
        s = Stub(["hang", "hang"])
        try:
            t = time.monotonic()
            with self.assertRaises(TransportError) as cm:
                Client(s.url, timeout=0.3, retries=1, backoff=0.01).verify([{}])
            took = time.monotonic() - t
            self.assertIsInstance(cm.exception.__cause__, (socket.timeout, TimeoutError))
            self.assertGreaterEqual(took, 0.6)
            self.assertLess(took, 2.5)
        finally:
            s.close()

    def test_refused_connection(self):
        with self.assertRaises(TransportError) as cm:
            Client("http://127.0.0.1:%d" % serve.free_port(), retries=2, backoff=0.01).healthz()
        self.assertIsInstance(cm.exception.__cause__, ConnectionRefusedError)

    def test_async_retries(self):
        s = Stub([(503, {"error": "busy"}), "close", (200, {"results": [{"score": 0, "correct": False}]})])

        async def go():
            async with AsyncClient(s.url, retries=2, backoff=0.01) as a:
                return await a.verify([{}])
        try:
            self.assertEqual(asyncio.run(go()), [{"score": 0.0, "correct": False}])
            self.assertEqual(s.hits, 3)
        finally:
            s.close()

    def test_a_boolean_score_is_refused(self):
        s = Stub([(200, {"results": [{"score": True, "correct": True}]})])
        try:
            with self.assertRaisesRegex(ServeError, r"results\[0\]\.score"):
                Client(s.url).verify([{}])
        finally:
            s.close()

    def test_ipv6_url(self):
        c = Client("http://rlpost:secret-token-0123456789@[::1]:8700/prefix")
        self.assertEqual(c.url, "http://[::1]:8700/prefix")
        self.assertEqual(c._o.token, "secret-token-0123456789")

    def test_arguments_are_checked(self):
        for kw in ({"url": "ftp://x"}, {"timeout": 0}, {"retries": -1}, {"retries": 1.5}, {"backoff": -1}):
            with self.subTest(**{k: str(v) for k, v in kw.items()}):
                with self.assertRaises(ValueError):
                    Client(**kw)


if __name__ == "__main__":
    unittest.main()
