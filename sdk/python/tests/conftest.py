"""Starts rlserver for the tests: $RLSERVER_BIN, or built from the repository
once per session; in memory, DEBUG CLOCK enabled, on a free 127.0.0.1 port."""
import os
import re
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
import redis
import socket

ROOT = Path(__file__).resolve().parents[3]
EPOCH_MS = 1_800_000_000_000


@pytest.fixture(scope="session")
def rlserver_bin():
    b = os.environ.get("RLSERVER_BIN")
    if b:
        yield b
        return
    with tempfile.TemporaryDirectory() as d:
        b = os.path.join(d, "rlserver")
        subprocess.run(["go", "build", "-o", b, "./cmd/rlserver"], cwd=ROOT, check=True)
        yield b


class Server:
    def __init__(self, bin_, *args):
        self.p = subprocess.Popen([bin_, "--dir", "", "--enable-debug-command", "--bind", "127.0.0.1", "--port", "0", *args],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 30
        for line in self.p.stderr:
            m = re.search(r"listening on 127\.0\.0\.1:(\d+)", line)
            if m:
                self.port = int(m.group(1))
                break
            if time.monotonic() > deadline:
                raise RuntimeError("rlserver did not listen")
        else:
            raise RuntimeError("rlserver exited before listening")
        self.url = f"redis://127.0.0.1:{self.port}"

    def stop(self):
        self.p.kill()
        self.p.wait()
        self.p.stderr.close()


@pytest.fixture
def server(rlserver_bin):
    s = Server(rlserver_bin)
    yield s
    s.stop()


@pytest.fixture
def start_server(rlserver_bin):
    started = []

    def start(*args):
        s = Server(rlserver_bin, *args)
        started.append(s)
        return s
    yield start
    for s in started:
        s.stop()


@pytest.fixture
def admin(server):
    r = redis.Redis.from_url(server.url)
    r.execute_command("DEBUG", "CLOCK", "SET", EPOCH_MS)
    yield r
    r.close()


def closed_port():
    """A 127.0.0.1 port nothing listens on."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p
