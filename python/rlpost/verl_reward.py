"""verl custom reward functions that score through `rlpost serve`.

Give verl this file's path (it is installed with the package; print it with
``python -m rlpost verl-path``) or ``pkg://rlpost.verl_reward``:

    custom_reward_function.path=/…/site-packages/rlpost/verl_reward.py
    custom_reward_function.name=compute_score   # reward loop naive/dapo/remote; legacy naive/dapo
    # or name=compute_score_async               # reward loop naive/dapo (remote refuses coroutines)
    # or name=compute_score_batch               # legacy reward_model.reward_manager=batch
    # or name=compute_score_float               # legacy prime (it wants a number)

verl loads the file with importlib's spec_from_file_location under a name
of its own, without changing sys.path, in whatever folder the trainer runs.
So this file stands alone: it imports only the standard library (and
aiohttp, when installed, for compute_score_async) and nothing beside it.
That is also why it has its own small HTTP transport instead of using
rlpost.client: the same policy (keep-alive per thread, retries with
backoff on transport failures and 502/503/504, 4xx raise), tested against
the same server.

Configuration, per call through verl's custom_reward_function.reward_kwargs
(``+custom_reward_function.reward_kwargs.url=http://lb:8700``) or else from
the environment of the reward workers:

    url      RLPOST_URL, default http://127.0.0.1:8700
    token    RLPOST_TOKEN (sent as a bearer token), default none
    verifier RLPOST_VERIFIER, default "math": the verifier for samples
             whose extra_info has no "verifier" key
    timeout  RLPOST_TIMEOUT, seconds per attempt, default 60
    retries  RLPOST_RETRIES, extra attempts, default 4

extra_info["verifier"] and extra_info["verifier_params"], when a sample has
them, choose its verifier and parameters. The ground truth is sent as the
item's gold: a string as it is, anything else (a number, a list, a numpy
value) as its JSON text.

Each function but compute_score_float returns verl's dict form, with the
same keys for every sample (verl requires it): "score" (the reward),
"acc" (1.0 when correct; verl's validation reports it as the core
metric), "timeout" and "error" (1.0 or 0.0), and "reason" (the service's
text, "" when there is none). A sample the service could not score (an
unknown verifier, a reference the verifier rejects) gets score 0.0, error
1.0 and the reason, and a WARNING on the "rlpost.verl" logger (at most one
line per 10 s, with a count), so that one bad row does not stop the run.
A transport failure after every retry raises.

Pickling: verl's remote reward manager sends the function to Ray workers
with cloudpickle, and the legacy prime manager to processes with pickle.
compute_score, compute_score_batch and compute_score_float pickle as
"load this file by path and take the function" (the file must exist at
the same absolute path where they are unpickled, as verl's own loader
needs); no connection, lock or thread-local travels, and each process
opens its own connections on first use.
"""

import asyncio
import functools
import http.client
import json
import logging
import operator
import os
import random
import runpy
import threading
import time
import urllib.parse
import weakref

__all__ = ["compute_score", "compute_score_async", "compute_score_batch", "compute_score_float"]

_LOG = logging.getLogger("rlpost.verl")
_FILE = os.path.abspath(__file__)
_RETRY_STATUSES = (502, 503, 504)
_WARN_EVERY = 10.0  # seconds between two warnings about unscorable samples


class _State:
    """Per-process state: one keep-alive connection per (thread, URL), one
    aiohttp session per event loop, the warning limiter. Pickles as a fresh,
    empty state."""

    def __init__(self):
        self.local = threading.local()
        self.lock = threading.Lock()
        self.sessions = weakref.WeakKeyDictionary()  # event loop -> aiohttp session
        self.unscorable = 0
        self.warned_at = 0.0

    def __reduce__(self):
        return (_State, ())

    def warn(self, n, reason):
        with self.lock:
            self.unscorable += n
            now = time.monotonic()
            if now - self.warned_at < _WARN_EVERY and self.warned_at:
                return
            self.warned_at, count = now, self.unscorable
        _LOG.warning("rlpost serve could not score a sample (%d so far; scored 0.0, error=1.0): %s", count, reason)


_STATE = _State()


class _Config:
    def __init__(self, url=None, token=None, verifier=None, timeout=None, retries=None, **_):
        # Other keyword arguments (reward_router_address, reward_model_tokenizer, …)
        # are verl's and not for us.
        env = os.environ.get
        url = url or env("RLPOST_URL") or "http://127.0.0.1:8700"
        p = urllib.parse.urlsplit(url)
        if p.scheme not in ("http", "https") or not p.hostname:
            raise ValueError("rlpost url %r: want http://HOST:PORT or https://HOST:PORT" % url)
        self.https, self.host, self.port, self.base = p.scheme == "https", p.hostname, p.port, p.path.rstrip("/")
        self.url = url
        token = token if token is not None else env("RLPOST_TOKEN") or (p.password and urllib.parse.unquote(p.password))
        self.token = token or None
        self.verifier = verifier or env("RLPOST_VERIFIER") or "math"
        self.timeout = float(timeout if timeout is not None else env("RLPOST_TIMEOUT") or 60)
        self.retries = int(retries if retries is not None else env("RLPOST_RETRIES") or 4)
        if not self.timeout > 0 or self.retries < 0:
            raise ValueError("rlpost timeout %r, retries %r: want timeout > 0 and retries >= 0" % (timeout, retries))

    def headers(self):
        h = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.token:
            h["Authorization"] = "Bearer " + self.token
        return h


def _gold(ground_truth):
    if ground_truth is None:
        return ""
    if isinstance(ground_truth, str):
        return ground_truth

    def plain(x):  # numpy scalars and arrays
        if hasattr(x, "tolist"):
            return x.tolist()
        raise TypeError("ground_truth: cannot send %s as JSON" % type(x).__name__)

    g = plain(ground_truth) if hasattr(ground_truth, "tolist") else ground_truth
    return g if isinstance(g, str) else json.dumps(g, default=plain, ensure_ascii=False)


def _item(cfg, solution_str, ground_truth, extra_info):
    extra = extra_info if isinstance(extra_info, dict) else {}
    item = {"verifier": extra.get("verifier") or cfg.verifier, "gold": _gold(ground_truth), "pred": solution_str}
    if extra.get("verifier_params"):
        item["params"] = extra["verifier_params"]
    return item


def _to_verl(result):
    err = result.get("error")
    if err:
        # The service gives the message in "error" and its kind in "reason".
        reason = "%s: %s" % (result["reason"], err) if result.get("reason") else str(err)
        _STATE.warn(1, reason)
        return {"score": 0.0, "acc": 0.0, "timeout": 0.0, "error": 1.0, "reason": reason}
    score = result.get("score")
    if isinstance(score, bool) or not isinstance(score, (int, float)):
        raise RuntimeError("rlpost serve answered a score that is not a number: %r" % (score,))
    return {
        "score": float(score),
        "acc": 1.0 if result.get("correct") else 0.0,
        "timeout": 1.0 if result.get("timeout") else 0.0,
        "error": 0.0,
        "reason": str(result.get("reason") or ""),
    }


def _message(raw):
    try:
        return json.loads(raw)["error"]
    except (ValueError, KeyError, TypeError):
        return raw.decode("utf-8", "replace")


def _verify(cfg, items):
    """POST /verify with keep-alive and retries; the list of results."""
    data = json.dumps({"items": items}).encode("utf-8")
    conns = _STATE.local.__dict__.setdefault("conns", {})
    key = (cfg.https, cfg.host, cfg.port, cfg.timeout)
    last, attempt = None, 0
    while attempt <= cfg.retries:
        conn = conns.get(key)
        reused = conn is not None
        if conn is None:
            cls = http.client.HTTPSConnection if cfg.https else http.client.HTTPConnection
            conn = conns[key] = cls(cfg.host, cfg.port, timeout=cfg.timeout)
        try:
            conn.request("POST", cfg.base + "/verify", body=data, headers=cfg.headers())
            resp = conn.getresponse()
            raw = resp.read()
        except (OSError, http.client.HTTPException) as e:
            conns.pop(key).close()
            last = e
            if not (reused and isinstance(e, (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError))):
                # A kept-alive connection the server had closed is retried at
                # once and not counted; anything else waits and counts.
                attempt += 1
                if attempt <= cfg.retries:
                    time.sleep(min(8.0, 0.5 * 2 ** (attempt - 1)) * (0.5 + 0.5 * random.random()))
            continue
        if resp.will_close:
            conns.pop(key).close()
        if resp.status == 200:
            results = json.loads(raw)["results"]
            if len(results) != len(items):
                raise RuntimeError("rlpost serve answered %d results for %d items" % (len(results), len(items)))
            return results
        last = RuntimeError("rlpost serve at %s: HTTP %d: %s" % (cfg.url, resp.status, _message(raw)))
        if resp.status not in _RETRY_STATUSES:
            raise last
        attempt += 1
        if attempt <= cfg.retries:
            time.sleep(min(8.0, 0.5 * 2 ** (attempt - 1)) * (0.5 + 0.5 * random.random()))
    raise ConnectionError("rlpost serve at %s: %d attempt(s) failed; last: %s" % (cfg.url, cfg.retries + 1, last))


class _Exported:
    """A module-level reward function that pickles by this file's path."""

    def __init__(self, fn):
        functools.update_wrapper(self, fn)
        self._fn = fn

    def __call__(self, *args, **kwargs):
        return self._fn(*args, **kwargs)

    def __reduce__(self):
        return (operator.getitem, (_RunPath(_FILE), self.__name__))


class _RunPath:
    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (runpy.run_path, (self.path,))


def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    """verl's per-sample reward function: one /verify request per call."""
    cfg = _Config(**kwargs)
    return _to_verl(_verify(cfg, [_item(cfg, solution_str, ground_truth, extra_info)])[0])


def compute_score_batch(data_sources, solution_strs, ground_truths, extra_infos=None, **kwargs):
    """verl's batched reward function (legacy reward_model.reward_manager=batch):
    one /verify request for the whole batch."""
    cfg = _Config(**kwargs)
    n = len(solution_strs)
    if len(ground_truths) != n or (extra_infos is not None and len(extra_infos) != n):
        raise ValueError("compute_score_batch: %d solution_strs, %d ground_truths, %s extra_infos"
                         % (n, len(ground_truths), "no" if extra_infos is None else len(extra_infos)))
    extras = [None] * n if extra_infos is None else list(extra_infos)
    items = [_item(cfg, s, g, e) for s, g, e in zip(solution_strs, ground_truths, extras)]
    return [_to_verl(r) for r in _verify(cfg, items)] if items else []


def compute_score_float(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    """compute_score's reward alone, a float, for the legacy prime manager,
    which reads a number (or a sequence's first item) and not a dict."""
    return compute_score(data_source, solution_str, ground_truth, extra_info, **kwargs)["score"]


compute_score = _Exported(compute_score)
compute_score_batch = _Exported(compute_score_batch)
compute_score_float = _Exported(compute_score_float)


async def compute_score_async(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    """compute_score as a coroutine, for verl's reward loop (naive, dapo), which
    awaits it on its event loop instead of giving a thread to each sample.
    With aiohttp installed it uses one keep-alive session per event loop;
    without, it runs compute_score in the loop's default executor. (The
    remote reward manager refuses coroutines: use compute_score there.)"""
    cfg = _Config(**kwargs)
    item = _item(cfg, solution_str, ground_truth, extra_info)
    try:
        import aiohttp
    except ImportError:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(None, lambda: _to_verl(_verify(cfg, [item])[0]))
    loop = asyncio.get_running_loop()
    session = _STATE.sessions.get(loop)
    if session is None or session.closed:
        session = _STATE.sessions[loop] = aiohttp.ClientSession(
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=cfg.timeout, sock_read=cfg.timeout))
    data = json.dumps({"items": [item]}).encode("utf-8")
    url = "%s://%s%s%s/verify" % ("https" if cfg.https else "http", "[%s]" % cfg.host if ":" in cfg.host else cfg.host,
                                   "" if cfg.port is None else ":%d" % cfg.port, cfg.base)
    last = None
    for attempt in range(cfg.retries + 1):
        if attempt:
            await asyncio.sleep(min(8.0, 0.5 * 2 ** (attempt - 1)) * (0.5 + 0.5 * random.random()))
        try:
            async with session.post(url, data=data, headers=cfg.headers()) as resp:
                raw, status = await resp.read(), resp.status
        except (aiohttp.ClientError, asyncio.TimeoutError, OSError) as e:
            last = e
            continue
        if status == 200:
            return _to_verl(json.loads(raw)["results"][0])
        last = RuntimeError("rlpost serve at %s: HTTP %d: %s" % (cfg.url, status, _message(raw)))
        if status not in _RETRY_STATUSES:
            raise last
    raise ConnectionError("rlpost serve at %s: %d attempt(s) failed; last: %s" % (cfg.url, cfg.retries + 1, last))
