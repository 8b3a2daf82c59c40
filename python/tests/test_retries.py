"""The trainers' retry budgets and timeouts against the service: a server
that comes up while the trainer is retrying (a restart, a rolling update)
is reached within each trainer's own retries, and an item over the
service's -timeout comes back at once as a timed-out 0.0, far inside every
trainer's request timeout (OpenRLHF 180 s, slime 120 s, rlpost 60 s)."""

import asyncio
import threading
import time
import unittest

import serve
import trainers
from rlpost import Client


class LateServer:
    """Starts `rlpost serve` on a fixed port after `delay` seconds."""

    def __init__(self, delay, *args):
        self.port = serve.free_port()
        self.url = "http://127.0.0.1:%d" % self.port
        self.srv = None
        self.timer = threading.Timer(delay, self._start, args)
        self.timer.start()

    def _start(self, *args):
        self.srv = serve.Server(*args, addr="127.0.0.1:%d" % self.port)

    def stop(self):
        self.timer.join()
        return self.srv.stop() if self.srv else None


class RetryBudgetTest(unittest.TestCase):
    def test_openrlhf_reaches_a_server_that_starts_late(self):
        late = LateServer(1.5)
        try:
            t = time.monotonic()
            ans = asyncio.run(trainers.openrlhf_fetch_reward(late.url + "/openrlhf", "p\\boxed{1}", "p", "1"))
            self.assertEqual(ans["rewards"], [1.0])
            self.assertGreater(time.monotonic() - t, 1.0)  # it did have to retry
        finally:
            self.assertEqual(late.stop(), 0)

    def test_slime_reaches_a_server_that_starts_late(self):
        late = LateServer(1.5)

        async def go():
            rm = trainers.SlimeRM(late.url + "/slime")
            try:
                return await rm("p", "\\boxed{1}", "1"), rm.attempts
            finally:
                await rm.close()
        try:
            reward, attempts = asyncio.run(go())
            self.assertEqual(reward, 1.0)
            self.assertGreater(attempts, 1)
        finally:
            self.assertEqual(late.stop(), 0)

    def test_rlpost_client_reaches_a_server_that_starts_late(self):
        late = LateServer(1.0)
        try:
            c = Client(late.url, retries=4, backoff=0.5)  # waits up to 0.5+1+2+4 s
            self.assertEqual(c.slime(response="\\boxed{1}", label="1"), 1.0)
        finally:
            self.assertEqual(late.stop(), 0)

    def test_verl_reaches_a_server_that_starts_late(self):
        late = LateServer(1.0)
        try:
            fn = trainers.verl_load(serve.VERL_FILE, "compute_score")
            r = fn(data_source="d", solution_str="\\boxed{1}", ground_truth="1", extra_info={}, url=late.url)
            self.assertEqual(r["score"], 1.0)
        finally:
            self.assertEqual(late.stop(), 0)


class ItemTimeoutTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.srv = serve.Server("-timeout", "1ns")  # every item runs out of time

    @classmethod
    def tearDownClass(cls):
        assert cls.srv.stop() == 0

    def test_each_trainer_gets_a_timed_out_zero_quickly(self):
        t = time.monotonic()
        ans = asyncio.run(trainers.openrlhf_fetch_reward(self.srv.url + "/openrlhf", "p\\boxed{1}", "p", "1", tries=1))
        self.assertEqual((ans["rewards"], ans["extra_logs"]["timeout"]), ([0.0], [1.0]))

        async def slime():
            rm = trainers.SlimeRM(self.srv.url + "/slime?detail=1", max_retries=1)
            try:
                return await rm("p", "\\boxed{1}", "1")
            finally:
                await rm.close()
        d = asyncio.run(slime())
        self.assertEqual((d["reward"], d["timeout"]), (0.0, True))
        fn = trainers.verl_load(serve.VERL_FILE, "compute_score")
        r = fn(data_source="d", solution_str="\\boxed{1}", ground_truth="1", extra_info={}, url=self.srv.url)
        self.assertEqual((r["score"], r["timeout"], r["error"]), (0.0, 1.0, 0.0))
        from rlpost import trl
        got = trl.make_reward_func(url=self.srv.url)(prompts=["p"], completions=["\\boxed{1}"], answer=["1"])
        self.assertEqual(got, [0.0])  # a timeout is a score, not None
        self.assertLess(time.monotonic() - t, 30)


if __name__ == "__main__":
    unittest.main()
