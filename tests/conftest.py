"""Fixtures shared by several test modules."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator

import pytest


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def start_redis(port: int) -> subprocess.Popen[bytes]:
    """A ``redis-server`` without persistence on ``port``, answering pings (skips the test without one)."""
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("redis-server is not installed (apt-get install redis-server)")
    redis = pytest.importorskip("redis")
    server = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
    )
    client = redis.Redis(port=port)
    deadline = time.monotonic() + 10
    while True:
        try:
            client.ping()
            return server
        except redis.ConnectionError:
            if time.monotonic() > deadline or server.poll() is not None:
                server.terminate()
                raise RuntimeError(f"redis-server did not start on port {port}") from None
            time.sleep(0.05)


class RestartableRedis:
    """A redis-server of one test that the test can restart (it comes back empty)."""

    def __init__(self) -> None:
        self.port = _free_port()
        self.server = start_redis(self.port)

    def restart(self) -> None:
        self.stop()
        self.server = start_redis(self.port)

    def stop(self) -> None:
        self.server.terminate()
        self.server.wait(10)


@pytest.fixture(scope="module")
def redis_port() -> Iterator[int]:
    """The port of a real ``redis-server`` started for one test module."""
    port = _free_port()
    server = start_redis(port)
    try:
        yield port
    finally:
        server.terminate()
        server.wait(10)


@pytest.fixture
def restartable_redis() -> Iterator[RestartableRedis]:
    """A real ``redis-server`` of its own, for tests that restart it."""
    server = RestartableRedis()
    try:
        yield server
    finally:
        server.stop()
