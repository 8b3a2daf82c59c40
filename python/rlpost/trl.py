"""TRL reward functions that score through `rlpost serve`.

    from rlpost.trl import reward_func            # or async_reward_func
    trainer = GRPOTrainer(model=..., reward_funcs=[reward_func], train_dataset=ds, ...)

TRL's GRPOTrainer calls a reward function with keyword arguments only:
``prompts``, ``completions``, ``completion_ids``, ``trainer_state``,
``log_extra``, ``log_metric`` (and ``environments`` with an environment
factory), plus every dataset column except ``prompt`` as a list with one
value per completion. It wants a list with one float (or None) per
completion; None means "this function does not score this sample", which
TRL turns into NaN and leaves out of the sum of reward functions. It calls
an ``async def`` function (or a functools.partial of one) on its own event
loop, concurrently with the other async functions.

What these functions send, one POST /verify for all the completions of a
call:

- pred: the completion. In the standard format it is a string; in the
  conversational format a list of messages, whose last assistant message's
  content is scored (a content given as parts, [{"type": "text", "text":
  …}], is joined).
- gold: the dataset column named by ``gold_key`` (make_reward_func), or by
  default the first of "answer", "solution", "ground_truth", "gold",
  "label", "reference" that the dataset has; a value that is not a string is sent as its JSON text. A
  dataset with none of them is a ValueError naming the columns it has.
- verifier: the "verifier" column when the dataset has one, else
  ``default_verifier`` (default RLPOST_VERIFIER, else "math"); a "verifier_params"
  column becomes the item's params.

A completion the service could not score (an unknown verifier, a gold the
verifier rejects) gets None, a WARNING on the "rlpost.trl" logger with the
reason, and, when TRL passes ``log_extra``, its reason in the completions
table's "rlpost_reason" column ("" for the others). A timeout is a score of
0.0, as the service answers it. Transport failures that outlast the
client's retries raise.

Both functions and every make_reward_func result pickle (a partial of a
module-level function and a Client without its connections).
"""

import functools
import json
import logging
import os

from .client import AsyncClient, Client

__all__ = ["async_reward_func", "make_reward_func", "reward_func"]

_LOG = logging.getLogger("rlpost.trl")
GOLD_KEYS = ("answer", "solution", "ground_truth", "gold", "label", "reference")


def completion_text(completion):
    """The text to score of one TRL completion: a string as it is; for a list
    of chat messages, the last assistant message's content."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, (list, tuple)):
        for msg in reversed(completion):
            if isinstance(msg, dict) and msg.get("role", "assistant") == "assistant":
                return _content(msg.get("content"))
        raise ValueError("completion: a list of messages without an assistant message")
    raise TypeError("completion: want a string or a list of chat messages, got %s" % type(completion).__name__)


def _content(content):
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # [{"type": "text", "text": ...}, {"type": "image", ...}]
        return "".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
    raise TypeError("message content: want a string or a list of parts, got %s" % type(content).__name__)


def _gold(x):
    if x is None:
        return ""
    if isinstance(x, str):
        return x
    return json.dumps(x.tolist() if hasattr(x, "tolist") else x, ensure_ascii=False)


def _items(completions, gold_key, default_verifier, kwargs):
    n = len(completions)
    if gold_key is None:
        gold_key = next((k for k in GOLD_KEYS if k in kwargs), None)
        if gold_key is None:
            cols = sorted(k for k, v in kwargs.items() if isinstance(v, list) and len(v) == n)
            raise ValueError("rlpost.trl: the dataset has none of the columns %s for the reference answer "
                             "(its columns: %s); name one with make_reward_func(gold_key=...)" % (GOLD_KEYS, cols))
    elif gold_key not in kwargs:
        raise ValueError("rlpost.trl: the dataset has no column %r (gold_key)" % gold_key)
    golds = kwargs[gold_key]
    verifiers = kwargs.get("verifier")
    params = kwargs.get("verifier_params")
    for name, col in ((gold_key, golds), ("verifier", verifiers), ("verifier_params", params)):
        if col is not None and len(col) != n:
            raise ValueError("rlpost.trl: column %r has %d values for %d completions" % (name, len(col), n))
    default = default_verifier or os.environ.get("RLPOST_VERIFIER") or "math"
    items = []
    for i, c in enumerate(completions):
        item = {"verifier": (verifiers[i] if verifiers is not None else None) or default,
                "gold": _gold(golds[i]), "pred": completion_text(c)}
        if params is not None and params[i]:
            item["params"] = params[i]
        items.append(item)
    return items


def _rewards(results, log_extra):
    rewards, reasons = [], []
    for r in results:
        err = r.get("error")
        if err:
            # The service gives the message in "error" and its kind in "reason".
            reason = "%s: %s" % (r["reason"], err) if r.get("reason") else str(err)
            _LOG.warning("rlpost serve could not score a completion (reward None): %s", reason)
            rewards.append(None)
            reasons.append(reason)
        else:
            rewards.append(r["score"])  # a float: the client converts
            reasons.append(str(r.get("reason") or ""))
    if callable(log_extra):
        log_extra("rlpost_reason", reasons)
    return rewards


def score(completions, *, rlpost_client, gold_key=None, default_verifier=None, log_extra=None, **kwargs):
    """The synchronous reward function behind reward_func and make_reward_func."""
    if not completions:
        return []
    return _rewards(rlpost_client.verify(_items(completions, gold_key, default_verifier, kwargs)), log_extra)


async def ascore(completions, *, rlpost_client, gold_key=None, default_verifier=None, log_extra=None, **kwargs):
    """The asynchronous reward function behind async_reward_func."""
    if not completions:
        return []
    return _rewards(await rlpost_client.verify(_items(completions, gold_key, default_verifier, kwargs)), log_extra)


def make_reward_func(url=None, token=None, gold_key=None, default_verifier=None, asynchronous=False, **client_options):
    """A TRL reward function with its own client: url/token as Client's
    (default RLPOST_URL, RLPOST_TOKEN), gold_key the dataset column with the
    reference answer, default_verifier the verifier for rows without a
    "verifier" column (default RLPOST_VERIFIER, else "math"), asynchronous=True for
    the ``async`` form. client_options go to Client/AsyncClient (timeout,
    retries, backoff, max_backoff). TRL names the function's metrics after
    it: "reward_func" or "async_reward_func"."""
    if asynchronous:
        return functools.partial(async_reward_func, rlpost_client=AsyncClient(url, token, **client_options),
                                 gold_key=gold_key, default_verifier=default_verifier)
    return functools.partial(reward_func, rlpost_client=Client(url, token, **client_options),
                             gold_key=gold_key, default_verifier=default_verifier)


_DEFAULT = {}


def _default(cls):
    c = _DEFAULT.get(cls)
    if c is None:
        c = _DEFAULT[cls] = cls()
    return c


def reward_func(completions, rlpost_client=None, **kwargs):
    """TRL reward function (sync): one float per completion, None where the
    service could not score it. Uses RLPOST_URL/RLPOST_TOKEN unless given
    rlpost_client (see make_reward_func)."""
    return score(completions, rlpost_client=rlpost_client or _default(Client), **kwargs)


async def async_reward_func(completions, rlpost_client=None, **kwargs):
    """TRL reward function (async): as reward_func, awaited on TRL's event loop."""
    return await ascore(completions, rlpost_client=rlpost_client or _default(AsyncClient), **kwargs)
