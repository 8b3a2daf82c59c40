"""verl custom reward functions that score through `rlpost serve`.

Point verl at this file:

    custom_reward_function.path=examples/serve/verl_reward.py
    custom_reward_function.name=compute_score              # one sample per call
    # or, with reward_model.reward_manager=batch:
    custom_reward_function.name=compute_score_batch        # one request per batch

and run `rlpost serve` where the trainer can reach it (RLPOST_URL, default
http://127.0.0.1:8700; RLPOST_TOKEN when it was started with -token-file).

The verifier is extra_info["verifier"] when the sample has one, else
RLPOST_VERIFIER (default "math"); extra_info["verifier_params"], when present,
is passed as the verifier's params. Each function returns verl's dict form:
"score" is the reward; "correct" and "timeout" become reward_extra_info
columns (the same keys for every sample, as verl requires). An item the
service could not score raises, so that a wrong dataset is noticed at the
first step rather than trained on as rewards of 0.
"""

import os
import threading

from rlpost_client import Client

_local = threading.local()


def _client():
    # verl may call from several threads; a Client holds one connection.
    c = getattr(_local, "client", None)
    if c is None:
        c = _local.client = Client()
    return c


def _item(solution_str, ground_truth, extra_info):
    extra_info = extra_info or {}
    item = {
        "verifier": extra_info.get("verifier") or os.environ.get("RLPOST_VERIFIER", "math"),
        "gold": "" if ground_truth is None else str(ground_truth),
        "pred": solution_str,
    }
    params = extra_info.get("verifier_params")
    if params:
        item["params"] = params
    return item


def _to_verl(result):
    if "error" in result:
        raise RuntimeError("rlpost serve could not score a sample: " + result["error"])
    return {
        "score": float(result["score"]),
        "correct": float(result["correct"]),
        "timeout": float(result.get("timeout", False)),
    }


def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    """verl's per-sample reward function."""
    return _to_verl(_client().verify([_item(solution_str, ground_truth, extra_info)])[0])


def compute_score_batch(data_sources, solution_strs, ground_truths, extra_infos=None, **kwargs):
    """verl's batched reward function (reward_model.reward_manager=batch)."""
    if extra_infos is None:
        extra_infos = [None] * len(solution_strs)
    items = [_item(s, g, e) for s, g, e in zip(solution_strs, ground_truths, extra_infos, strict=True)]
    return [_to_verl(r) for r in _client().verify(items)]
