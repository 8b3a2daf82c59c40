"""rlpost.trl as TRL's GRPOTrainer calls a reward function, against a live
server: keyword arguments only (prompts, completions, completion_ids,
trainer_state, log_extra, log_metric and the dataset columns), standard and
conversational completions, None for an unscorable completion turned into
NaN, the result made a float32 tensor; async functions awaited on a loop
running in another thread; the function's name; pickling."""

import asyncio
import functools
import inspect
import math
import os
import pickle
import random
import threading
import unittest

import serve
from rlpost import AsyncClient, trl

try:
    import torch
except ImportError:
    torch = None


def callable_name(func):
    # How TRL names a reward function's metrics: partials unwrapped.
    while isinstance(func, functools.partial):
        func = func.func
    return getattr(func, "__name__", type(func).__name__)


class TRLCaller:
    """GRPOTrainer._calculate_rewards for custom functions, one function."""

    def __init__(self):
        self.extra = {}
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def close(self, clients=()):
        for c in clients:
            asyncio.run_coroutine_threadsafe(c.close(), self.loop).result()
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join()
        self.loop.close()

    def __call__(self, func, inputs, prompts, completions, completion_ids):
        keys = [k for k in inputs[0] if k not in ("prompt", "completion", "completion_ids")]
        kwargs = {k: [ex[k] for ex in inputs] for k in keys}
        kwargs["trainer_state"] = object()
        kwargs["log_extra"] = lambda column, values: self.extra.__setitem__(column, values)
        kwargs["log_metric"] = lambda name, value: None
        if inspect.iscoroutinefunction(func):
            async def run():
                return await func(prompts=prompts, completions=completions, completion_ids=completion_ids, **kwargs)
            out = asyncio.run_coroutine_threadsafe(run(), self.loop).result()
        else:
            out = func(prompts=prompts, completions=completions, completion_ids=completion_ids, **kwargs)
        out = [r if r is not None else math.nan for r in out]
        if torch is not None:
            t = torch.tensor(out, dtype=torch.float32)
            self.assertable = t
        return out


class CompletionTextTest(unittest.TestCase):
    """completion_text by category, on generated chats: whatever comes
    before, the text scored is the last assistant message's, with its text
    parts joined and its other parts dropped."""

    def test_generated_chats(self):
        rnd = random.Random(27)
        words = ["\\boxed{1}", "<answer>B</answer>", "text", "", "\u00e9\U0001F600", "{\"a\": 1}"]

        def content(text):
            form = rnd.randrange(3)
            if form == 0:
                return text, text
            parts, want = [], ""
            for w in [text[:len(text) // 2], text[len(text) // 2:]]:
                if rnd.random() < 0.5:
                    parts.append({"type": "image", "image": None})
                parts.append({"type": "text", "text": w})
                want += w
            return parts, want

        for _ in range(500):
            msgs, want = [], None
            for _ in range(rnd.randrange(1, 6)):
                role = rnd.choice(["assistant", "tool", "user", "system"])
                c, text = content(rnd.choice(words) + rnd.choice(words))
                msgs.append({"role": role, "content": c})
                if role == "assistant":
                    want = text
            if want is None:
                with self.assertRaises(ValueError):
                    trl.completion_text(msgs)
            else:
                self.assertEqual(trl.completion_text(msgs), want, msgs)

    def test_strings_are_themselves(self):
        rnd = random.Random(28)
        for _ in range(200):
            s = "".join(chr(rnd.randrange(1, 0x2FFF)) for _ in range(rnd.randrange(0, 40)))
            self.assertEqual(trl.completion_text(s), s)


class TRLTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.srv = serve.Server()
        cls.old = os.environ.get("RLPOST_URL")
        os.environ["RLPOST_URL"] = cls.srv.url
        cls.call = TRLCaller()
        cls.made = []

    @classmethod
    def tearDownClass(cls):
        clients = [f.keywords["rlpost_client"] for f in cls.made if isinstance(f, functools.partial)]
        clients = [c for c in clients if isinstance(c, AsyncClient)]
        cls.call.close(clients + [c for c in trl._DEFAULT.values() if isinstance(c, AsyncClient)])
        if cls.old is None:
            os.environ.pop("RLPOST_URL", None)
        else:
            os.environ["RLPOST_URL"] = cls.old
        assert cls.srv.stop() == 0

    def funcs(self):
        made = [trl.make_reward_func(url=self.srv.url), trl.make_reward_func(url=self.srv.url, asynchronous=True)]
        self.made.extend(made)
        return [trl.reward_func, trl.async_reward_func] + made

    def test_standard_format(self):
        inputs = [{"prompt": "2+2?", "answer": "4"}, {"prompt": "3+3?", "answer": "6"},
                  {"prompt": "pick", "answer": "B", "verifier": "choice"}]
        # every row needs the same columns in TRL's batches; give all a verifier
        inputs[0]["verifier"] = inputs[1]["verifier"] = "math"
        completions = ["so \\boxed{4}", "so \\boxed{7}", "<answer>B</answer>"]
        for f in self.funcs():
            with self.subTest(func=callable_name(f)):
                got = self.call(f, inputs, [x["prompt"] for x in inputs], completions, [[1, 2]] * 3)
                self.assertEqual(got, [1.0, 0.0, 1.0])
                self.assertTrue(all(type(x) is float for x in got))

    def test_conversational_format(self):
        prompts = [[{"role": "user", "content": "2+2?"}], [{"role": "user", "content": "Pick."}]]
        completions = [[{"role": "assistant", "content": "It is \\boxed{4}."}],
                       [{"role": "assistant", "content": [{"type": "text", "text": "<answer>"},
                                                          {"type": "text", "text": "C</answer>"}]}]]
        inputs = [{"prompt": prompts[0], "solution": "4", "verifier": "math"},
                  {"prompt": prompts[1], "solution": "C", "verifier": "choice"}]
        for f in self.funcs():
            with self.subTest(func=callable_name(f)):
                self.assertEqual(self.call(f, inputs, prompts, completions, [[1], [2]]), [1.0, 1.0])

    def test_unscorable_completion_is_none_nan(self):
        inputs = [{"prompt": "p", "ground_truth": "B", "verifier": "no-such-verifier"},
                  {"prompt": "p", "ground_truth": "B", "verifier": "choice"}]
        for f in self.funcs():
            with self.subTest(func=callable_name(f)):
                self.call.extra.clear()
                with self.assertLogs("rlpost.trl", "WARNING"):
                    got = self.call(f, inputs, ["p", "p"], ["<answer>B</answer>"] * 2, [[1], [1]])
                self.assertTrue(math.isnan(got[0]))
                self.assertEqual(got[1], 1.0)
                reasons = self.call.extra["rlpost_reason"]
                self.assertIn("no-such-verifier", reasons[0])
                self.assertEqual(reasons[1], "")
                if torch is not None:
                    self.assertEqual(self.call.assertable.dtype, torch.float32)
                    self.assertTrue(torch.isnan(self.call.assertable[0]))

    def test_missing_gold_column_is_a_clear_error(self):
        with self.assertRaisesRegex(ValueError, "gold_key"):
            self.call(trl.reward_func, [{"prompt": "p", "target": "1"}], ["p"], ["x"], [[1]])
        with self.assertRaisesRegex(ValueError, "'target'"):
            self.call(trl.make_reward_func(gold_key="target"), [{"prompt": "p", "answer": "1"}], ["p"], ["x"], [[1]])

    def test_every_default_gold_column_and_its_order(self):
        for i, key in enumerate(trl.GOLD_KEYS):
            with self.subTest(column=key):
                # this column holds the right gold; every later default column a wrong one
                row = {"prompt": "p", key: "5"}
                row.update({k: "6" for k in trl.GOLD_KEYS[i + 1:]})
                self.assertEqual(self.call(trl.reward_func, [row], ["p"], ["\\boxed{5}"], [[1]]), [1.0])

    def test_names_coroutine_flags_and_pickling(self):
        f, af = trl.make_reward_func(), trl.make_reward_func(asynchronous=True)
        self.made.extend([f, af])
        self.assertEqual(callable_name(f), "reward_func")
        self.assertEqual(callable_name(af), "async_reward_func")
        self.assertFalse(inspect.iscoroutinefunction(f))
        self.assertTrue(inspect.iscoroutinefunction(af))
        self.assertTrue(inspect.iscoroutinefunction(trl.async_reward_func))
        inputs = [{"prompt": "p", "answer": "9"}]
        self.call(f, inputs, ["p"], ["\\boxed{9}"], [[1]])  # opens a connection
        for g in (f, af, trl.reward_func):
            again = pickle.loads(pickle.dumps(g))
            self.made.append(again)
            self.assertEqual(self.call(again, inputs, ["p"], ["\\boxed{9}"], [[1]]), [1.0])


if __name__ == "__main__":
    unittest.main()
