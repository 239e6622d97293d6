"""What a Redis server that stopped answering costs each guarded call.

A real ``redis-server`` is started, used once, then frozen with SIGSTOP: the
kernel still accepts connections, but no command is answered, the worst kind
of "down".  CALLS broken writes then go through ``Guard.on_call`` with a
``RedisStore.from_url`` store (1 s command timeout, circuit breaker
``retry_seconds`` 5), and, as the baseline in the same run, with the breaker
off (``retry_seconds`` 0: every call waits for its own timeout).  Every call
must still be blocked.  The issue measured 3.3 s per call before the fix.

    .venv/bin/python bench/bench_redis_down.py
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import statistics
import subprocess
import time

import redis

from policy.language.loader import load_policy
from policy.model.events import Scope, ToolCall
from policy.runtime.guard import Guard
from policy.stores.redis import RedisStore

CALLS = 20
BROKEN = {"path": "app.py", "content": "def f(:\n"}


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _timed_calls(guard: Guard) -> list[float]:
    times = []
    for index in range(CALLS):
        start = time.perf_counter()
        decision = guard.on_call(ToolCall(id=f"w{index}", name="write_file", args=BROKEN), Scope("t", "r"))
        times.append(time.perf_counter() - start)
        assert decision.action == "block", decision
    return times


def main() -> None:
    binary = shutil.which("redis-server")
    assert binary, "redis-server is not installed"
    port = _free_port()
    server = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                               "--appendonly", "no"], stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                redis.Redis(port=port).ping()
                break
            except redis.ConnectionError:
                assert time.monotonic() < deadline, "redis-server did not start"
                time.sleep(0.05)
        policy = load_policy("builtin:default")
        url = f"redis://127.0.0.1:{port}/0"
        guards = {"breaker on (retry_seconds 5)": Guard(policy, store=RedisStore.from_url(url)),
                  "breaker off (retry_seconds 0)":
                      Guard(policy, store=RedisStore.from_url(url, retry_seconds=0))}
        for guard in guards.values():
            guard.on_call(ToolCall(id="w", name="write_file", args=BROKEN), Scope("t", "warm"))  # answering
        os.kill(server.pid, signal.SIGSTOP)
        print(f"{CALLS} blocked writes each, Redis frozen (SIGSTOP); per-call latency")
        for label, guard in guards.items():
            times = _timed_calls(guard)
            rest = times[1:]
            print(f"{label:32s} first {times[0] * 1000:8.1f} ms   rest: median "
                  f"{statistics.median(rest) * 1000:8.3f} ms, max {max(rest) * 1000:8.1f} ms   "
                  f"total {sum(times):6.2f} s")
    finally:
        os.kill(server.pid, signal.SIGCONT)
        server.terminate()
        server.wait(10)


if __name__ == "__main__":
    main()
