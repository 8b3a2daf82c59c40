"""OpenRLHF's remote reward call (tests/trainers.py) against a live server:
the per-sample protocol, the answer as OpenRLHF turns it into tensors and
its group estimators on them, the prompt fallback, labels, per-item errors
and URL credentials."""

import asyncio
import json
import math
import tempfile
import unittest
import urllib.request

import serve
import trainers
from rlpost import label


def run(coro):
    return asyncio.run(coro)


class OpenRLHFTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.srv = serve.Server()
        cls.url = cls.srv.url + "/openrlhf"

    @classmethod
    def tearDownClass(cls):
        assert cls.srv.stop() == 0

    def fetch(self, query, prompt, lab):
        return run(trainers.openrlhf_fetch_reward(self.url, query, prompt, lab, tries=1))

    def test_answer_is_floats_for_every_label_form(self):
        prompt = "<|im_start|>user\nWhat is 6*7?<|im_end|>\n<|im_start|>assistant\n"
        cases = [
            ("so \\boxed{42}", "42", 1.0),
            ("so \\boxed{41}", "42", 0.0),
            ("<answer>B</answer>", label("B", verifier="choice"), 1.0),
            ("<answer>C</answer>", label("B", verifier="choice"), 0.0),
            ("so \\boxed{42}", 42, 1.0),                      # a number from the JSONL
            ("<answer>B</answer>", {"verifier": "choice", "gold": "B"}, 1.0),  # an object from the JSONL
        ]
        for response, lab, want in cases:
            with self.subTest(label=lab):
                ans = self.fetch(prompt + response, prompt, lab)
                raw = json.dumps(ans)
                self.assertIsInstance(ans["rewards"][0], float, raw)
                self.assertIsInstance(ans["scores"][0], float, raw)
                self.assertEqual(ans["rewards"], [want])
                for k in ("correct", "timeout", "error"):
                    self.assertEqual(len(ans["extra_logs"][k]), 1, raw)

    def test_wire_numbers_are_json_floats(self):
        # What torch sees is what json.loads made of the text: "1.0" -> float,
        # "1" -> int. Check the text itself.
        body = json.dumps({"query": ["p\\boxed{1}", "p\\boxed{2}"], "prompts": ["p", "p"], "labels": ["1", "1"]})
        req = urllib.request.Request(self.url, data=body.encode(), headers={"Content-Type": "application/json"})
        text = urllib.request.urlopen(req, timeout=30).read().decode()
        ans = json.loads(text)
        self.assertTrue(all(type(x) is float for x in ans["rewards"] + ans["scores"]), text)
        self.assertIn('"rewards":[1.0,0.0]', text.replace(" ", ""))

    def test_prompt_not_a_prefix_scores_the_whole_query(self):
        # Left truncation and tokenizer clean-up: OpenRLHF's own example scores
        # the whole query then; the service must too, never a 400.
        # (A chat template's end-of-turn token before the answer makes the
        # math verifier see no answer in the whole query; a plain template
        # shows the fallback itself.)
        prompt = "User: A long question about 6*7?\nAssistant: "
        query = prompt[12:] + "so \\boxed{42}"
        ans = self.fetch(query, prompt, "42")
        self.assertEqual(ans["rewards"], [1.0])
        self.assertEqual(ans["extra_logs"]["error"], [0.0])

    def test_unscorable_items_score_zero_with_reason_not_400(self):
        bad = [
            ("unknown verifier", label("B", verifier="no-such-verifier")),
            ("boolean label", True),
            ("label object with other keys", {"verifier": "choice", "gold": "B", "colour": "red"}),
        ]
        for what, lab in bad:
            with self.subTest(what):
                ans = self.fetch("p<answer>B</answer>", "p", lab)  # tries=1: a 400 would raise
                self.assertEqual(ans["rewards"], [0.0])
                self.assertEqual(ans["extra_logs"]["error"], [1.0])
                kind = "unknown_verifier" if what == "unknown verifier" else "bad_label"
                self.assertTrue(ans["reasons"][0].startswith(kind + ": "), json.dumps(ans))
        # counted by reason
        text = urllib.request.urlopen(self.srv.url + "/metrics", timeout=30).read().decode()
        self.assertRegex(text, r'rlpost_serve_item_error_reasons_total\{endpoint="openrlhf",reason="bad_label"\} [2-9]')
        self.assertRegex(text, r'rlpost_serve_item_error_reasons_total\{endpoint="openrlhf",reason="unknown_verifier"\} [1-9]')

    @unittest.skipUnless(trainers.torch is not None, "torch is not installed")
    def test_group_estimators_on_the_answers(self):
        # 2 prompts x 4 samples, one request each, as OpenRLHF sends them.
        n = 4
        golds = ["3", "5"]
        answers = [["\\boxed{3}", "\\boxed{4}", "\\boxed{3}", "none"],
                   ["\\boxed{5}", "\\boxed{5}", "\\boxed{5}", "\\boxed{6}"]]

        async def all_samples():
            tasks = [trainers.openrlhf_fetch_reward(self.url, "Q%d " % g + r, "Q%d " % g, golds[g], tries=1)
                     for g in range(2) for r in answers[g]]
            return await asyncio.gather(*tasks)

        got = run(all_samples())
        torch = trainers.torch
        rewards, scores = [], []
        for ans in got:
            r, s, info = trainers.openrlhf_experience(ans)
            self.assertTrue(r.dtype.is_floating_point, r.dtype)
            self.assertTrue(torch.as_tensor(ans["rewards"]).dtype.is_floating_point)
            self.assertEqual(s.flatten()[0].item(), r.flatten()[0].item())  # dynamic filtering reads scores
            self.assertTrue(all(v.dtype.is_floating_point for v in info.values()))
            rewards.append(r)
            scores.append(s)
        want = [[1.0, 0.0, 1.0, 0.0], [1.0, 1.0, 1.0, 0.0]]
        self.assertEqual(torch.cat(rewards).reshape(-1, n).tolist(), want)
        for est in ("group_norm", "rloo", "reinforce_baseline", "dr_grpo"):
            with self.subTest(estimator=est):
                shaped, std = trainers.openrlhf_advantage_rewards(rewards, n, est)
                self.assertTrue(torch.isfinite(shaped).all())
                for g, row in enumerate(want):
                    mean = sum(row) / n
                    sd = math.sqrt(sum((x - mean) ** 2 for x in row) / (n - 1))
                    self.assertAlmostEqual(std[g, 0].item(), sd, places=6)
                    for j, x in enumerate(row):
                        exp = {"group_norm": (x - mean) / (sd + 1e-9),
                               "rloo": x - (sum(row) - x) / (n - 1),
                               "reinforce_baseline": x - mean, "dr_grpo": x - mean}[est]
                        self.assertAlmostEqual(shaped[g, j].item(), exp, places=5)

    def test_several_urls_only_the_first_scores(self):
        # --reward.remote_url a,b: the second URL gets an empty request for
        # every sample, which must answer 200, and does no scoring.
        ans = run(trainers.openrlhf_fetch_reward([self.url, self.url], "p\\boxed{2}", "p", "2", tries=1))
        self.assertEqual(ans["rewards"], [1.0])

    def test_token_in_the_url(self):
        with tempfile.TemporaryDirectory() as d:
            srv = serve.Server("-token-file", serve.token_file(d))
            try:
                host = srv.url.split("://", 1)[1]
                good = "http://rlpost:%s@%s/openrlhf" % (serve.TOKEN, host)
                ans = run(trainers.openrlhf_fetch_reward(good, "p\\boxed{1}", "p", "1", tries=1))
                self.assertEqual(ans["rewards"], [1.0])
                with self.assertRaises(trainers.OpenRLHFRewardFailed):
                    run(trainers.openrlhf_fetch_reward(srv.url + "/openrlhf", "p", "p", "1", tries=2, sleep=0.01))
            finally:
                self.assertEqual(srv.stop(), 0)


if __name__ == "__main__":
    unittest.main()
