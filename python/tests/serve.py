"""Test support: a live `rlpost serve` on 127.0.0.1.

The binary is $RLPOST_BIN, or built once per test run with `go build
./cmd/rlpost` from the repository this folder is in. Servers listen on a
free port (-addr 127.0.0.1:0; the port is read from the first line of
output) and are stopped with SIGTERM, which must end them with exit 0.
"""

import atexit
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
PYROOT = os.path.dirname(HERE)  # python/
REPO = os.path.dirname(PYROOT)
# The verl file of the rlpost that tests import: the installed one in CI.
VERL_FILE = os.path.join(os.path.dirname(os.path.abspath(__import__("rlpost").__file__)), "verl_reward.py")
TOKEN = "py-test-token-0123456789abcdef"

_bin = None
_lock = threading.Lock()


def binary():
    global _bin
    with _lock:
        if _bin is None:
            _bin = os.environ.get("RLPOST_BIN")
            if not _bin:
                tmp = tempfile.mkdtemp(prefix="rlpost-pytest-")
                atexit.register(shutil.rmtree, tmp, True)
                _bin = os.path.join(tmp, "rlpost")
                subprocess.run(["go", "build", "-o", _bin, "./cmd/rlpost"], cwd=REPO, check=True)
        return _bin


class Server:
    """A running `rlpost serve`; .url, .proc; stop() returns its exit code."""

    def __init__(self, *args, addr="127.0.0.1:0"):
        self.proc = subprocess.Popen([binary(), "serve", "-addr", addr, *args],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()  # "rlpost serve: listening on http://127.0.0.1:PORT"
        if "listening on " not in line:
            self.proc.kill()
            raise RuntimeError("rlpost serve did not start: %r %s" % (line, self.proc.stderr.read()))
        self.url = line.split("listening on ", 1)[1].strip()
        self.port = int(self.url.rsplit(":", 1)[1])
        # Drain stderr (the WARN log) so the server never blocks on a full pipe.
        self.log = []
        self._reader = threading.Thread(target=self._drain, daemon=True)
        self._reader.start()

    def _drain(self):
        for line in self.proc.stderr:
            self.log.append(line)

    def stop(self, sig=signal.SIGTERM, timeout=30):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait()
        self._reader.join(timeout=5)
        self.proc.stdout.close()
        self.proc.stderr.close()
        return code

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def token_file(tmpdir):
    path = os.path.join(tmpdir, "token")
    with open(path, "w") as f:
        f.write(TOKEN + "\n")
    return path


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def have(module):
    try:
        __import__(module)
        return True
    except ImportError:
        return False
