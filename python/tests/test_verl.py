"""rlpost/verl_reward.py as verl uses it, against a live server: loaded by
path (importlib, a name of its own, sys.path unchanged) from another
working folder with no site-packages; called as verl's reward managers call
it (keyword arguments of the reward loop's naive/dapo/remote managers,
positional as the legacy prime manager, the batch manager's lists);
pickled as the remote manager (cloudpickle) and prime manager (pickle) do,
and unpickled in a fresh process."""

import asyncio
import concurrent.futures
import functools
import inspect
import json
import logging
import os
import pickle
import subprocess
import sys
import tempfile
import textwrap
import unittest

import serve
import trainers

KEYS = {"score", "acc", "timeout", "error", "reason"}


def load(name="compute_score"):
    return trainers.verl_load(serve.VERL_FILE, name)


class VerlTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.srv = serve.Server()
        cls.env = {k: os.environ.get(k) for k in ("RLPOST_URL", "RLPOST_TOKEN", "RLPOST_VERIFIER")}
        os.environ["RLPOST_URL"] = cls.srv.url
        os.environ.pop("RLPOST_TOKEN", None)
        os.environ.pop("RLPOST_VERIFIER", None)

    @classmethod
    def tearDownClass(cls):
        for k, v in cls.env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        assert cls.srv.stop() == 0

    def naive_call(self, fn, solution_str, ground_truth, extra_info=None, **reward_kwargs):
        # The reward loop's managers pass these keywords; verl adds num_turns
        # and rollout_reward_scores to extra_info first, and merges
        # custom_reward_function.reward_kwargs into the keywords.
        extra = dict(extra_info or {})
        extra.update(num_turns=None, rollout_reward_scores={})
        return fn(data_source="openai/gsm8k", solution_str=solution_str, ground_truth=ground_truth,
                  extra_info=extra, **reward_kwargs)

    def test_reward_loop_call(self):
        fn = load()
        right = self.naive_call(fn, "so \\boxed{12}", "12", {"index": 3})
        wrong = self.naive_call(fn, "so \\boxed{13}", "12")
        choice = self.naive_call(fn, "<answer>B</answer>", "B", {"verifier": "choice"})
        self.assertEqual(right, {"score": 1.0, "acc": 1.0, "timeout": 0.0, "error": 0.0, "reason": ""})
        self.assertEqual(wrong["score"], 0.0)
        self.assertEqual(choice["score"], 1.0)
        for r in (right, wrong, choice):
            self.assertEqual(set(r), KEYS)  # verl needs the same keys for every sample
            self.assertTrue(all(type(r[k]) is float for k in KEYS - {"reason"}), r)

    def test_reward_kwargs_choose_url_and_verifier(self):
        fn = load()
        r = self.naive_call(fn, "<answer>B</answer>", "B", url=self.srv.url, verifier="choice",
                            reward_router_address=None)
        self.assertEqual(r["score"], 1.0)

    def test_non_string_ground_truths(self):
        fn = load()
        self.assertEqual(self.naive_call(fn, "\\boxed{12}", 12)["score"], 1.0)
        self.assertEqual(self.naive_call(fn, "\\boxed{1.5}", 1.5)["score"], 1.0)
        try:
            import numpy as np
        except ImportError:
            return
        self.assertEqual(self.naive_call(fn, "\\boxed{12}", np.int64(12))["score"], 1.0)
        self.assertEqual(self.naive_call(fn, "\\boxed{12}", np.str_("12"))["score"], 1.0)

    def test_unscorable_sample_is_zero_with_reason_and_warns(self):
        fn = load()
        with self.assertLogs("rlpost.verl", logging.WARNING) as logs:
            r = self.naive_call(fn, "x", "B", {"verifier": "no-such-verifier"})
        self.assertEqual(r["score"], 0.0)
        self.assertEqual(r["error"], 1.0)
        self.assertEqual(set(r), KEYS)
        self.assertIn("no-such-verifier", r["reason"])
        self.assertIn("no-such-verifier", "".join(logs.output))
        # rate-limited: a second one within 10 s is counted, not logged
        with self.assertNoLogs("rlpost.verl", logging.WARNING):
            r2 = self.naive_call(fn, "x", "B", {"verifier": "no-such-verifier"})
        self.assertEqual(r2["error"], 1.0)

    def test_prime_manager_process_pool(self):
        # The legacy prime manager submits evaluation_func(task, completion,
        # reference, task_extra_info) to a ProcessPoolExecutor (pickle) and
        # reads a number. Both start methods: fork, and spawn (a fresh
        # interpreter that has never loaded the file).
        import multiprocessing
        fn = load("compute_score_float")
        self.assertIs(type(fn("math", "\\boxed{3}", "3", None)), float)
        for method in ("fork", "spawn"):
            with self.subTest(start_method=method):
                ctx = multiprocessing.get_context(method)
                with concurrent.futures.ProcessPoolExecutor(2, mp_context=ctx) as ex:
                    futs = [ex.submit(fn, "math", "\\boxed{%d}" % (i % 3), "1", {"index": i}) for i in range(12)]
                    got = [f.result(timeout=60) for f in futs]
                self.assertEqual(got, [1.0 if i % 3 == 1 else 0.0 for i in range(12)])

    def test_batch_manager(self):
        fn = load("compute_score_batch")
        out = fn(data_sources=["a", "b", "c"], solution_strs=["\\boxed{1}", "<answer>B</answer>", "x"],
                 ground_truths=["2", "B", "C"], extra_infos=[{}, {"verifier": "choice"}, {"verifier": "choice"}])
        self.assertEqual([o["score"] for o in out], [0.0, 1.0, 0.0])
        try:
            import numpy as np
        except ImportError:
            return
        # verl hands non-tensor columns over as numpy object arrays.
        out = fn(data_sources=np.array(["a", "b"], dtype=object), solution_strs=["\\boxed{1}", "\\boxed{2}"],
                 ground_truths=["1", np.int64(2)], extra_infos=np.array([{}, {}], dtype=object))
        self.assertEqual([o["score"] for o in out], [1.0, 1.0])

    def test_threads_like_run_in_executor(self):
        fn = load()
        with concurrent.futures.ThreadPoolExecutor(16) as ex:
            got = list(ex.map(lambda i: self.naive_call(fn, "\\boxed{%d}" % (i % 5), str(i % 4))["score"],
                              range(400)))
        self.assertEqual(got, [1.0 if i % 5 == i % 4 else 0.0 for i in range(400)])

    def test_async_reward_loop(self):
        fn = load("compute_score_async")
        wrapped = functools.partial(fn, url=self.srv.url)  # as verl wraps it with reward_kwargs
        self.assertTrue(inspect.iscoroutinefunction(wrapped))

        async def go():
            out = await asyncio.gather(*(wrapped(data_source="d", solution_str="\\boxed{%d}" % (i % 2),
                                                 ground_truth="1", extra_info={}) for i in range(64)))
            # verl's loop lives as long as the worker; this one ends here.
            session = fn.__globals__["_STATE"].sessions.pop(asyncio.get_running_loop(), None)
            if session is not None:
                await session.close()
            return out
        got = asyncio.run(go())
        self.assertEqual([g["score"] for g in got], [float(i % 2) for i in range(64)])
        self.assertEqual(set(got[0]), KEYS)

    def test_pickle_after_use(self):
        fn = load()
        self.naive_call(fn, "\\boxed{1}", "1")  # connections now open in this thread
        for dumps, loads in self.picklers():
            with self.subTest(pickler=dumps.__module__):
                # what get_custom_reward_fn hands to the managers
                wrapped = functools.partial(trainers.verl_call_with_kwargs, fn, {"url": self.srv.url})
                again = loads(dumps(wrapped))
                self.assertEqual(self.naive_call(again, "\\boxed{2}", "2")["score"], 1.0)
                batch = loads(dumps(load("compute_score_batch")))
                self.assertEqual(batch(["d"], ["\\boxed{2}"], ["2"])[0]["score"], 1.0)

    def test_cloudpickle_async_function_after_use(self):
        try:
            import cloudpickle
        except ImportError:
            self.skipTest("cloudpickle is not installed (apt-get install python3-cloudpickle)")
        fn = load("compute_score_async")

        async def go(f):
            return await f(data_source="d", solution_str="\\boxed{3}", ground_truth="3", extra_info={})
        loop = asyncio.new_event_loop()
        try:
            self.assertEqual(loop.run_until_complete(go(fn))["score"], 1.0)  # a session now exists
            again = cloudpickle.loads(cloudpickle.dumps(fn))
            self.assertEqual(loop.run_until_complete(go(again))["score"], 1.0)
            for f in (fn, again):
                s = f.__globals__["_STATE"].sessions.pop(loop, None)
                if s is not None:
                    loop.run_until_complete(s.close())
        finally:
            loop.close()

    def picklers(self):
        out = [(pickle.dumps, pickle.loads)]
        try:
            import cloudpickle
            out.append((cloudpickle.dumps, cloudpickle.loads))
        except ImportError:
            pass
        return out

    def test_load_by_path_from_another_folder_and_unpickle_in_a_fresh_process(self):
        # `python -I -S`: no site-packages (so no installed rlpost), no
        # PYTHONPATH, no current folder on sys.path: only the file itself.
        script = textwrap.dedent("""
            import functools, importlib.util, json, pickle, sys
            path, url, out = sys.argv[1], sys.argv[2], sys.argv[3]
            before = list(sys.path)
            spec = importlib.util.spec_from_file_location("custom_module_%d" % hash(path), path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            assert sys.path == before and "rlpost" not in sys.modules
            fn = functools.partial(module.compute_score, url=url)
            r = fn(data_source="d", solution_str="\\\\boxed{7}", ground_truth="7", extra_info={})
            with open(out, "wb") as f:
                pickle.dump(fn, f)
            print(json.dumps(r))
        """)
        unpickle = textwrap.dedent("""
            import json, pickle, sys
            with open(sys.argv[1], "rb") as f:
                fn = pickle.load(f)
            print(json.dumps(fn(data_source="d", solution_str="\\\\boxed{8}", ground_truth="8", extra_info={})))
        """)
        with tempfile.TemporaryDirectory() as cwd:
            blob = os.path.join(cwd, "fn.pkl")
            r = subprocess.run([sys.executable, "-I", "-S", "-c", script, os.path.relpath(serve.VERL_FILE, cwd),
                                self.srv.url, blob], cwd=cwd, capture_output=True, text=True, timeout=60)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(json.loads(r.stdout)["score"], 1.0)
            with tempfile.TemporaryDirectory() as cwd2:
                r = subprocess.run([sys.executable, "-I", "-S", "-c", unpickle, blob], cwd=cwd2,
                                   capture_output=True, text=True, timeout=60)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(json.loads(r.stdout)["score"], 1.0)

    def test_old_path_in_examples_still_loads(self):
        # examples/serve/verl_reward.py is a link to this file, for configs
        # written before the package existed.
        old = os.path.join(serve.REPO, "examples", "serve", "verl_reward.py")
        if not os.path.exists(old):
            self.skipTest("no checkout beside the tests")
        fn = trainers.verl_load(old, "compute_score")
        self.assertEqual(self.naive_call(fn, "\\boxed{4}", "4")["score"], 1.0)
        again = pickle.loads(pickle.dumps(fn))
        self.assertEqual(self.naive_call(again, "\\boxed{4}", "4")["score"], 1.0)

    def test_transport_failure_raises_after_retries(self):
        fn = load()
        dead = "http://127.0.0.1:%d" % serve.free_port()
        with self.assertRaises(ConnectionError) as cm:
            self.naive_call(fn, "\\boxed{1}", "1", url=dead, retries=1, timeout=2)
        self.assertIn("2 attempt(s)", str(cm.exception))

    def test_pkg_path_form(self):
        # custom_reward_function.path=pkg://rlpost.verl_reward imports the
        # installed module by name.
        import importlib
        m = importlib.import_module("rlpost.verl_reward")
        self.assertEqual(self.naive_call(m.compute_score, "\\boxed{5}", "5")["score"], 1.0)


if __name__ == "__main__":
    unittest.main()
