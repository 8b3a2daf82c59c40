"""A client for `rlpost serve`, the reward service, using only the Python
standard library.

    from rlpost_client import Client
    c = Client("http://127.0.0.1:8700")            # token="..." when served with -token-file
    c.verify([{"verifier": "math", "gold": "1/2", "pred": "... \\boxed{0.5}"}])
    # -> [{"score": 1.0, "correct": True}]
    c.openrlhf(query=[...], prompts=[...], labels=[...])   # -> {"rewards": [...], ...}
    c.slime(prompt="...", response="...", label="42")      # -> 1.0

One Client keeps one HTTP/1.1 connection open and reconnects when the
server closed it (idle timeout, restart). It is not thread-safe: use one per
thread, or a process pool. The contract is in docs/conformance.md#rlpost-serve.
"""

import http.client
import json
import os
import urllib.parse

__all__ = ["Client", "ServeError"]


class ServeError(Exception):
    """The service answered with an error status; .status and .message say why."""

    def __init__(self, status, message):
        super().__init__("rlpost serve: HTTP %d: %s" % (status, message))
        self.status = status
        self.message = message


class Client:
    def __init__(self, url=None, token=None, timeout=300.0):
        url = url or os.environ.get("RLPOST_URL", "http://127.0.0.1:8700")
        parsed = urllib.parse.urlsplit(url)
        if parsed.scheme not in ("http", "https"):
            raise ValueError("url %r: want http:// or https://" % url)
        self._https = parsed.scheme == "https"
        self._host = parsed.hostname
        self._port = parsed.port
        self._base = parsed.path.rstrip("/")
        self._token = token if token is not None else os.environ.get("RLPOST_TOKEN")
        self._timeout = timeout
        self._conn = None

    # -- the endpoints ---------------------------------------------------

    def verify(self, items):
        """Score verify-contract items; returns one dict per item, in order:
        {"score", "correct"} (plus "timeout", "reason" when a limit was hit)
        or {"error"} for an item that could not be scored."""
        return self._post("/verify", {"items": list(items)})["results"]

    def openrlhf(self, query, prompts=None, labels=None):
        """OpenRLHF's remote reward call; returns the whole answer dict."""
        body = {"query": list(query)}
        if prompts is not None:
            body["prompts"] = list(prompts)
        if labels is not None:
            body["labels"] = list(labels)
        return self._post("/openrlhf", body)

    def slime(self, response, label=None, prompt="", detail=False):
        """slime's remote reward call: the reward, or with detail=True the
        dict {"reward", "correct", "timeout", "verifier", ...}."""
        path = "/slime?detail=1" if detail else "/slime"
        return self._post(path, {"prompt": prompt, "response": response, "label": label})

    def healthz(self):
        return self._request("GET", "/healthz", None)

    # -- transport -------------------------------------------------------

    def close(self):
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _post(self, path, body):
        return self._request("POST", path, json.dumps(body).encode("utf-8"))

    def _request(self, method, path, data):
        headers = {"Accept": "application/json"}
        if data is not None:
            headers["Content-Type"] = "application/json"
        if self._token:
            headers["Authorization"] = "Bearer " + self._token
        # One retry, only when a kept-alive connection turned out closed
        # before the server read the request.
        for attempt in (0, 1):
            if self._conn is None:
                cls = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
                self._conn = cls(self._host, self._port, timeout=self._timeout)
            try:
                self._conn.request(method, self._base + path, body=data, headers=headers)
                resp = self._conn.getresponse()
                raw = resp.read()
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
                self.close()
                if attempt == 1:
                    raise
                continue
            if resp.getheader("Connection", "").lower() == "close":
                self.close()
            text = raw.decode("utf-8")
            if resp.status != 200:
                try:
                    message = json.loads(text)["error"]
                except (ValueError, KeyError, TypeError):
                    message = text
                raise ServeError(resp.status, message)
            return json.loads(text)
        raise AssertionError("unreachable")
