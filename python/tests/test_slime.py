"""slime's remote_rm (tests/trainers.py) against a live server: the body it
sends, the bare-number and --reward-key answers, its label forms, per-item
errors that must not fail the rollout, and GRPO normalisation."""

import asyncio
import json
import math
import unittest

import serve
import trainers
from rlpost import label


class SlimeTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.srv = serve.Server()

    @classmethod
    def tearDownClass(cls):
        assert cls.srv.stop() == 0

    def rewards(self, path, samples, reward_key=None, max_retries=1):
        async def go():
            rm = trainers.SlimeRM(self.srv.url + path, max_retries=max_retries)
            try:
                return await asyncio.gather(*(rm(p, r, lab) for p, r, lab in samples))
            finally:
                await rm.close()
        return [trainers.slime_reward_value(x, reward_key) for x in asyncio.run(go())]

    def test_bare_number_and_reward_key(self):
        chat = [{"role": "user", "content": "6*7?"}]  # slime's prompt may be messages
        samples = [("6*7?", "\\boxed{42}", "42"), (chat, "\\boxed{41}", "42"),
                   ("pick", "<answer>B</answer>", label("B", verifier="choice", as_string=False)),
                   ("pick", "<answer>B</answer>", label("B", verifier="choice")),
                   ("n", "\\boxed{42}", 42), ("none", "\\boxed{1}", None)]
        plain = self.rewards("/slime", samples)
        self.assertEqual(plain, [1.0, 0.0, 1.0, 1.0, 1.0, 0.0])
        self.assertTrue(all(type(x) is float for x in plain), plain)
        keyed = self.rewards("/slime?detail=1", samples, reward_key="reward")
        self.assertEqual(keyed, plain)
        self.assertTrue(all(type(x) is float for x in keyed), keyed)

    def test_unscorable_sample_scores_zero_and_does_not_fail_the_rollout(self):
        # max_retries=1: a 400 would raise out of the rollout at once.
        bad = [("p", "<answer>B</answer>", label("B", verifier="no-such-verifier")),
               ("p", "\\boxed{1}", True),
               ("p", "\\boxed{1}", {"gold": "1", "colour": "red"})]
        self.assertEqual(self.rewards("/slime", bad), [0.0, 0.0, 0.0])

        async def detail():
            rm = trainers.SlimeRM(self.srv.url + "/slime?detail=1", max_retries=1)
            try:
                return await asyncio.gather(*(rm(*s) for s in bad))
            finally:
                await rm.close()
        for d in asyncio.run(detail()):
            self.assertEqual(d["reward"], 0.0, json.dumps(d))
            self.assertTrue(d.get("error"), json.dumps(d))
            self.assertTrue(d.get("reason"), json.dumps(d))

    @unittest.skipUnless(trainers.torch is not None, "torch is not installed")
    def test_grpo_normalisation(self):
        n = 4
        samples = [("q", "\\boxed{%d}" % a, "2") for a in (2, 3, 2, 2)] + \
                  [("q", "\\boxed{%d}" % a, "7") for a in (1, 7, 1, 1)]
        raw = self.rewards("/slime", samples)
        got = trainers.slime_grpo_rewards(raw, n)
        for g in range(2):
            row = raw[g * n:(g + 1) * n]
            mean = sum(row) / n
            sd = math.sqrt(sum((x - mean) ** 2 for x in row) / (n - 1))
            for j, x in enumerate(row):
                self.assertAlmostEqual(got[g * n + j], (x - mean) / (sd + 1e-6), places=5)

    def test_many_concurrent_samples(self):
        # slime's shared session: 64 connections, 256 samples in flight.
        samples = [("q", "\\boxed{%d}" % (i % 3), str(i % 2)) for i in range(256)]
        got = self.rewards("/slime", samples)
        self.assertEqual(got, [1.0 if i % 3 == i % 2 else 0.0 for i in range(256)])


if __name__ == "__main__":
    unittest.main()
