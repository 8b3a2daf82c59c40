"""Clients for `rlpost serve`, the reward service (docs/conformance.md#rlpost-serve).

    from rlpost import Client
    c = Client("http://127.0.0.1:8700")      # or RLPOST_URL; token= or RLPOST_TOKEN
    c.verify([{"verifier": "math", "gold": "1/2", "pred": "... \\boxed{0.5}"}])
    # -> [{"score": 1.0, "correct": True}]

Client is synchronous and uses only the standard library (http.client). It
keeps one HTTP/1.1 connection per thread open between calls, so the
one-sample-per-request traffic of current trainers pays no connection
setup, and it may be shared by threads. AsyncClient is the same API with
``await``, on aiohttp when it is installed and on Client in a worker thread
otherwise.

Retries: scoring is idempotent, so a request that failed in transport (the
connection refused or reset, no answer within ``timeout``) or was answered
502, 503 or 504 (a load balancer without a healthy backend, a server
shutting down) is sent again, up to ``retries`` more times, after
``backoff * 2**attempt`` seconds (capped at ``max_backoff``, with jitter of
up to half the wait). A 4xx answer is the caller's error and raises
ServeError at once. Every score the clients return is a Python float.

Both clients pickle without their connections (a fresh one is opened on
first use after unpickling), so they can travel to Ray workers or
multiprocessing pools.
"""

import asyncio
import http.client
import json
import os
import random
import threading
import time
import urllib.parse
import weakref

__all__ = ["AsyncClient", "Client", "ServeError", "TransportError"]

DEFAULT_URL = "http://127.0.0.1:8700"

# Statuses that mean "try again, maybe elsewhere": no backend (502), the
# server is shutting down or overloaded (503), the balancer gave up (504).
RETRY_STATUSES = frozenset((502, 503, 504))


class ServeError(Exception):
    """The service answered with an error status; .status and .message say why."""

    def __init__(self, status, message):
        super().__init__("rlpost serve: HTTP %d: %s" % (status, message))
        self.status = status
        self.message = message


class TransportError(ConnectionError):
    """Every attempt failed in transport or with a retryable status; .attempts
    is how many were made and __cause__ the last failure."""

    def __init__(self, url, attempts, last):
        super().__init__("rlpost serve at %s: %d attempt(s) failed; last: %s" % (url, attempts, last))
        self.attempts = attempts


class _Options:
    """What both clients share: the parsed URL, credentials and retry policy."""

    def __init__(self, url, token, timeout, retries, backoff, max_backoff):
        url = url or os.environ.get("RLPOST_URL") or DEFAULT_URL
        parsed = urllib.parse.urlsplit(url)
        if parsed.scheme not in ("http", "https"):
            raise ValueError("url %r: want http:// or https://" % url)
        if not parsed.hostname:
            raise ValueError("url %r: no host" % url)
        if timeout is not None and not timeout > 0:
            raise ValueError("timeout %r: want a positive number of seconds or None" % (timeout,))
        if not isinstance(retries, int) or isinstance(retries, bool) or retries < 0:
            raise ValueError("retries %r: want an int >= 0" % (retries,))
        if not backoff >= 0 or not max_backoff >= 0:
            raise ValueError("backoff %r, max_backoff %r: want seconds >= 0" % (backoff, max_backoff))
        if token is None:
            token = os.environ.get("RLPOST_TOKEN") or None
        if token is None and parsed.password:
            # http://rlpost:TOKEN@host:8700, the form OpenRLHF and slime use.
            token = urllib.parse.unquote(parsed.password)
        self.https = parsed.scheme == "https"
        self.host = parsed.hostname
        self.port = parsed.port
        self.base = parsed.path.rstrip("/")
        host = "[%s]" % parsed.hostname if ":" in parsed.hostname else parsed.hostname  # IPv6
        netloc = host if parsed.port is None else "%s:%d" % (host, parsed.port)
        self.url = "%s://%s%s" % (parsed.scheme, netloc, self.base)  # without credentials, for messages
        self.token = token
        self.timeout = timeout
        self.retries = retries
        self.backoff = float(backoff)
        self.max_backoff = float(max_backoff)

    def headers(self, with_body):
        h = {"Accept": "application/json"}
        if with_body:
            h["Content-Type"] = "application/json"
        if self.token:
            h["Authorization"] = "Bearer " + self.token
        return h

    def wait(self, attempt):
        d = min(self.max_backoff, self.backoff * (2 ** attempt))
        return d * (0.5 + 0.5 * random.random())


def _error_message(status, raw):
    text = raw.decode("utf-8", "replace")
    try:
        return json.loads(text)["error"]
    except (ValueError, KeyError, TypeError):
        return text


def _as_float(x, where):
    # bool is an int in Python; a JSON true/false is never a reward.
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        raise ServeError(200, "%s: want a number, got %r" % (where, x))
    return float(x)


def _floats_verify(results):
    if not isinstance(results, list):
        raise ServeError(200, "results: want a list, got %r" % (type(results).__name__,))
    for i, r in enumerate(results):
        if isinstance(r, dict) and "score" in r:
            r["score"] = _as_float(r["score"], "results[%d].score" % i)
    return results


def _floats_openrlhf(out):
    for key in ("rewards", "scores"):
        if key in out:
            out[key] = [_as_float(x, "%s[%d]" % (key, i)) for i, x in enumerate(out[key])]
    return out


def _floats_slime(out, detail):
    if detail:
        out["reward"] = _as_float(out.get("reward"), "reward")
        return out
    return _as_float(out, "reward")


def _openrlhf_body(query, prompts, labels):
    body = {"query": list(query)}
    if prompts is not None:
        body["prompts"] = list(prompts)
    if labels is not None:
        body["labels"] = list(labels)
    return body


class Client:
    """Synchronous client; see the module doc for keep-alive, retries and pickling.

    url: the service (default RLPOST_URL, else http://127.0.0.1:8700); a
    path prefix is kept (http://lb/rlpost/verify). token: sent as a bearer
    token (default RLPOST_TOKEN, else the URL's password). timeout: seconds
    per attempt for connecting and for each read (None: wait forever).
    """

    def __init__(self, url=None, token=None, timeout=60.0, retries=4, backoff=0.5, max_backoff=8.0):
        self._o = _Options(url, token, timeout, retries, backoff, max_backoff)
        self._local = threading.local()

    @property
    def url(self):
        return self._o.url

    def __getstate__(self):
        return {"_o": self._o}

    def __setstate__(self, state):
        self._o = state["_o"]
        self._local = threading.local()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- the endpoints ---------------------------------------------------

    def verify(self, items):
        """Score /verify items; one dict per item, in order: {"score": float,
        "correct": bool} plus "timeout" and "reason" when the service gives
        them, or with "error" for an item that could not be scored."""
        return _floats_verify(self._request("POST", "/verify", {"items": list(items)})["results"])

    def openrlhf(self, query, prompts=None, labels=None):
        """OpenRLHF's remote reward call; the whole answer dict, rewards as floats."""
        return _floats_openrlhf(self._request("POST", "/openrlhf", _openrlhf_body(query, prompts, labels)))

    def slime(self, response, label=None, prompt="", detail=False):
        """slime's remote reward call: the reward (float), or with detail=True
        the dict {"reward", "correct", "timeout", "verifier", ...}."""
        path = "/slime?detail=1" if detail else "/slime"
        out = self._request("POST", path, {"prompt": prompt, "response": response, "label": label})
        return _floats_slime(out, detail)

    def healthz(self):
        return self._request("GET", "/healthz", None)

    # -- transport -------------------------------------------------------

    def close(self):
        """Close this thread's connection (others close when their thread ends)."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    def _conn(self):
        conn = getattr(self._local, "conn", None)
        if conn is None:
            o = self._o
            cls = http.client.HTTPSConnection if o.https else http.client.HTTPConnection
            conn = self._local.conn = cls(o.host, o.port, timeout=o.timeout)
        return conn

    def _once(self, method, path, data):
        """One attempt: (status, body bytes). Transport failures raise; .reused
        on the exception says whether a kept-alive connection was used."""
        o = self._o
        reused = getattr(self._local, "conn", None) is not None
        conn = self._conn()
        try:
            conn.request(method, o.base + path, body=data, headers=o.headers(data is not None))
            resp = conn.getresponse()
            raw = resp.read()
        except BaseException as e:
            self.close()
            e.rlpost_reused = reused
            raise
        if resp.will_close:
            self.close()
        return resp.status, raw

    def _request(self, method, path, body):
        o = self._o
        data = None if body is None else json.dumps(body).encode("utf-8")
        last, attempt = None, 0
        while attempt <= o.retries:
            try:
                status, raw = self._once(method, path, data)
            except (OSError, http.client.HTTPException) as e:  # refused, reset, timed out, bad status line
                last = e
                if e.rlpost_reused and isinstance(e, _STALE):
                    continue  # the server closed an idle kept-alive connection: again at once, not counted
            else:
                if status == 200:
                    return json.loads(raw)
                if status not in RETRY_STATUSES:
                    raise ServeError(status, _error_message(status, raw))
                last = ServeError(status, _error_message(status, raw))
            attempt += 1
            if attempt <= o.retries:
                time.sleep(o.wait(attempt - 1))
        raise TransportError(o.url, o.retries + 1, last) from last


# What a kept-alive connection that the server closed while idle fails with.
_STALE = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError)


class AsyncClient:
    """The Client API as coroutines. With aiohttp installed it keeps one
    aiohttp.ClientSession (a keep-alive connection pool of up to ``limit``
    connections) per event loop, created on first use; without aiohttp each
    call runs a Client in the default executor. Close with ``await
    client.close()`` or ``async with``."""

    def __init__(self, url=None, token=None, timeout=60.0, retries=4, backoff=0.5, max_backoff=8.0, limit=64):
        self._o = _Options(url, token, timeout, retries, backoff, max_backoff)
        self._limit = limit
        self._sessions = weakref.WeakKeyDictionary()  # event loop -> aiohttp session
        self._sync = None

    @property
    def url(self):
        return self._o.url

    def __getstate__(self):
        return {"_o": self._o, "_limit": self._limit}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._sessions = weakref.WeakKeyDictionary()
        self._sync = None

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        await self.close()

    async def verify(self, items):
        return _floats_verify((await self._request("POST", "/verify", {"items": list(items)}))["results"])

    async def openrlhf(self, query, prompts=None, labels=None):
        return _floats_openrlhf(await self._request("POST", "/openrlhf", _openrlhf_body(query, prompts, labels)))

    async def slime(self, response, label=None, prompt="", detail=False):
        path = "/slime?detail=1" if detail else "/slime"
        out = await self._request("POST", path, {"prompt": prompt, "response": response, "label": label})
        return _floats_slime(out, detail)

    async def healthz(self):
        return await self._request("GET", "/healthz", None)

    async def close(self):
        s = self._sessions.pop(asyncio.get_running_loop(), None)
        if s is not None:
            await s.close()
        if self._sync is not None:
            self._sync.close()

    def _session(self, aiohttp):
        loop = asyncio.get_running_loop()
        s = self._sessions.get(loop)
        if s is None or s.closed:
            o = self._o
            timeout = aiohttp.ClientTimeout(total=None, sock_connect=o.timeout, sock_read=o.timeout)
            s = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=self._limit), timeout=timeout)
            self._sessions[loop] = s
        return s

    async def _request(self, method, path, body):
        try:
            import aiohttp
        except ImportError:
            if self._sync is None:
                self._sync = Client.__new__(Client)
                self._sync.__setstate__({"_o": self._o})
            return await asyncio.get_running_loop().run_in_executor(None, self._sync._request, method, path, body)
        o = self._o
        data = None if body is None else json.dumps(body).encode("utf-8")
        session = self._session(aiohttp)
        last = None
        for attempt in range(o.retries + 1):
            if attempt:
                await asyncio.sleep(o.wait(attempt - 1))
            try:
                async with session.request(method, o.url + path, data=data, headers=o.headers(data is not None)) as r:
                    raw = await r.read()
                    status = r.status
            except (aiohttp.ClientError, asyncio.TimeoutError, OSError) as e:
                last = e
                continue
            if status == 200:
                return json.loads(raw)
            if status in RETRY_STATUSES:
                last = ServeError(status, _error_message(status, raw))
                continue
            raise ServeError(status, _error_message(status, raw))
        raise TransportError(o.url, o.retries + 1, last) from last


def basic_auth_url(url, token, user="rlpost"):
    """The URL with the token as its password, the form for trainers that set
    no headers (OpenRLHF, slime): http://rlpost:TOKEN@host:8700/openrlhf."""
    p = urllib.parse.urlsplit(url)
    netloc = "%s:%s@%s" % (urllib.parse.quote(user, safe=""), urllib.parse.quote(token, safe=""),
                           p.netloc.rsplit("@", 1)[-1])
    return urllib.parse.urlunsplit((p.scheme, netloc, p.path, p.query, p.fragment))

