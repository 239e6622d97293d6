"""A Redis-backed ``Store``: loop state shared by the workers of a gateway.

Each scope's ``ScopeState`` is one JSON string.  ``scope()`` takes a per-scope
Redis lock (``SET NX PX`` with a random token), reads the state, hands it
out, and on a normal exit saves it with a Lua script that first checks the
lock is still ours, so two workers never interleave updates of one scope;
the lock is released by a compare-and-delete script (never someone else's).
An exception inside the block saves nothing.

Faults cost seconds, not calls: ``RedisStore.from_url`` builds a client with
short connect and command timeouts and no retries; after a connection fault
the store answers ``StoreUnavailableError`` at once for ``retry_seconds`` (a
circuit breaker: a dead server costs one timeout per interval, not one per
call); a lock lease is ``lock_seconds`` (2 s), so a worker killed while holding
a scope delays that scope by at most that long.  Lost state is told from new
state by epochs: each scope's state is saved with an epoch key (a random
token made when the state starts), and each worker remembers the epoch of the
scopes it used (at most ``MAX_REMEMBERED`` of them); a scope whose state is
gone, or came back with another epoch, before its ``ttl_seconds`` ran out and
without a ``drop_thread`` or ``drop_all`` lost its loop state (a restart
without persistence, a flush, an eviction), and that is logged at WARNING
once per scope and loss.  A prefix-wide epoch tells the same of the whole
server, for scopes no worker remembers.  Text that UTF-8 cannot encode (lone
surrogates) is kept as JSON escapes.

Workspace snapshots, which a state names by key, are kept under
``<prefix>:snapshot:<key>`` for ``SNAPSHOT_TTL_SECONDS`` after their last use
(``RedisSnapshots``).  A state that starts afresh because Redis lost it, or
because it was unreadable, says so (``ScopeState.restarted``).

Bounded: states expire ``ttl_seconds`` after their last use, and at most
``max_scopes`` are kept (the least recently used go).  A set per thread lists
its run scopes for ``drop_thread``.  Written for a standalone Redis (the
save script deletes evicted scopes it only learns about while running).

Needs the optional ``redis`` package (``pip install policyctl[redis]``).
"""

from __future__ import annotations

import logging
import random
import secrets
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from policy.model.events import Scope
from policy.runtime.loops.state import ScopeState
from policy.runtime.workspace.kept import BackedSnapshots
from policy.stores.lru import LruDict

if TYPE_CHECKING:
    import redis

log = logging.getLogger("policy.stores")

_RELEASE = """
if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('del', KEYS[1])
end
return 0
"""

_SAVE = """
if redis.call('get', KEYS[1]) ~= ARGV[1] then
  return 0
end
local ttl, now, max_scopes = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
redis.call('set', KEYS[2], ARGV[2], 'EX', ttl)
redis.call('set', KEYS[2] .. ':epoch', ARGV[6], 'EX', ttl)
redis.call('sadd', KEYS[3], KEYS[2])
redis.call('expire', KEYS[3], ttl)
redis.call('zadd', KEYS[4], now, KEYS[2])
redis.call('zremrangebyscore', KEYS[4], '-inf', now - ttl)
local excess = redis.call('zcard', KEYS[4]) - max_scopes
if excess > 0 then
  local evicted = redis.call('zpopmin', KEYS[4], excess)
  for i = 1, #evicted, 2 do
    redis.call('del', evicted[i], evicted[i] .. ':epoch')
  end
end
return 1
"""


MAX_REMEMBERED = 10_000
"""Scopes whose epoch one worker remembers (the least recently used are forgotten)."""


SNAPSHOT_TTL_SECONDS = 3600


class StoreUnavailableError(ConnectionError):
    """The server did not answer lately; the store does not try again before ``retry_seconds``."""


class StoreBusyError(TimeoutError):
    """Another worker held a scope's lock for longer than the store waits."""


class LockLostError(RuntimeError):
    """A scope's lock expired while its state was in use; the update was not saved."""


class RedisStore:
    """Scope state in Redis, safe across processes, threads and hosts."""

    def __init__(
        self,
        client: redis.Redis,
        *,
        prefix: str = "policyctl",
        ttl_seconds: int = 86400,
        max_scopes: int = 100_000,
        lock_seconds: float = 2.0,
        wait_seconds: float = 3.0,
        retry_seconds: float = 5.0,
    ) -> None:
        if ttl_seconds < 1 or max_scopes < 1 or lock_seconds <= 0 or wait_seconds < 0 or retry_seconds < 0:
            raise ValueError("RedisStore: ttl_seconds, max_scopes and lock_seconds must be positive")
        self.client = client
        self.prefix = prefix
        self.ttl_seconds = ttl_seconds
        self.max_scopes = max_scopes
        self.lock_seconds = lock_seconds
        self.wait_seconds = wait_seconds
        self.retry_seconds = retry_seconds
        self._release = client.register_script(_RELEASE)
        self._save = client.register_script(_SAVE)
        self._scopes_key = f"{prefix}:scopes"
        self._epoch_key = f"{prefix}:epoch"
        self._dropped_all_key = f"{prefix}:dropped"
        self._epoch: str | None = None
        self._seen: LruDict[str, tuple[str, float]] = LruDict(MAX_REMEMBERED)
        """State key → the epoch this worker last saved it with, and when."""
        self._seen_lock = threading.Lock()
        self._down_until = 0.0
        self._snapshots: RedisSnapshots | None = None

    @classmethod
    def from_url(cls, url: str, *, connect_timeout: float = 0.5, command_timeout: float = 1.0,
                 **options: Any) -> RedisStore:
        """A store on a new client for ``url`` that gives up quickly: short timeouts, no retries."""
        import redis
        from redis.backoff import NoBackoff
        from redis.retry import Retry

        client = redis.Redis.from_url(url, socket_connect_timeout=connect_timeout,
                                      socket_timeout=command_timeout, retry=Retry(NoBackoff(), 0))
        return cls(client, **options)

    @contextmanager
    def scope(self, scope: Scope) -> Iterator[ScopeState]:
        """Exclusive access to the scope's state across every worker; saved when the block ends normally."""
        with self._run_state(scope, create=True) as state:
            assert state is not None
            yield state

    @contextmanager
    def existing(self, scope: Scope) -> Iterator[ScopeState | None]:
        """``scope()`` for a scope that has state; None for one that has none (nothing is locked or
        written)."""
        with self._run_state(scope, create=False) as state:
            yield state

    @contextmanager
    def _run_state(self, scope: Scope, *, create: bool) -> Iterator[ScopeState | None]:
        """The scope's state, locked across workers and saved when the block ends normally;
        without ``create``, None when the server holds none."""
        with self._connection():
            key = self.state_key(scope)
            if not create and not self.client.exists(key):
                yield None
                return
            lock = f"{key}:lock"
            token = self._acquire(lock)
            try:
                state, epoch = self._load(key, scope.thread_id)
                yield state
                now = time.time()
                saved = self._save(
                    keys=[lock, key, self._thread_key(scope.thread_id), self._scopes_key],
                    args=[token, _encoded(state.to_json()), self.ttl_seconds, now, self.max_scopes, epoch],
                )
                if not saved:
                    raise LockLostError(f"the lock of {key} expired after {self.lock_seconds}s; not saved")
                with self._seen_lock:
                    self._seen.put(key, (epoch, now))
            finally:
                self._release(keys=[lock], args=[token])

    @contextmanager
    def _connection(self) -> Iterator[None]:
        """The circuit breaker: refuse at once while the server is known down; note a new fault."""
        from redis.exceptions import ConnectionError as RedisConnectionError
        from redis.exceptions import TimeoutError as RedisTimeoutError

        if time.monotonic() < self._down_until:
            raise StoreUnavailableError(f"Redis did not answer; next try within {self.retry_seconds:g}s")
        try:
            yield
        except (RedisConnectionError, RedisTimeoutError, OSError) as err:
            if not isinstance(err, StoreBusyError | StoreUnavailableError):
                self._down_until = time.monotonic() + self.retry_seconds
            raise

    def snapshots(self) -> RedisSnapshots:
        """The workspace snapshots the states name, in this Redis (one keeper per store)."""
        if self._snapshots is None:
            self._snapshots = RedisSnapshots(self)
        return self._snapshots

    def drop_thread(self, thread_id: str) -> None:
        """Forget every run of the thread; other workers read it as a reset, not a loss."""
        thread_key = self._thread_key(thread_id)
        with self._connection():
            members = list(self.client.smembers(thread_key))
            pipeline = self.client.pipeline()
            if members:
                pipeline.delete(*members, *(_epoch_key_of(member) for member in members))
                pipeline.zrem(self._scopes_key, *members)
            pipeline.delete(thread_key)
            pipeline.set(self._dropped_key(thread_id), time.time(), ex=self.ttl_seconds)
            pipeline.execute()

    def drop_all(self) -> None:
        """Forget every thread under this store's prefix."""
        prefix = _glob_escaped(self.prefix)
        with self._connection():
            for pattern in (f"{prefix}:state:*", f"{prefix}:thread:*", f"{prefix}:dropped:*"):
                keys = list(self.client.scan_iter(match=pattern, count=500))
                for start in range(0, len(keys), 500):
                    self.client.delete(*keys[start:start + 500])
            self.client.delete(self._scopes_key)
            self.client.set(self._dropped_all_key, time.time(), ex=self.ttl_seconds)

    def __len__(self) -> int:
        """Scopes used within the last ``ttl_seconds``."""
        with self._connection():
            return int(self.client.zcount(self._scopes_key, time.time() - self.ttl_seconds, "+inf"))

    def state_key(self, scope: Scope) -> str:
        return f"{self.prefix}:state:{_quoted(scope.thread_id)}:{_quoted(scope.run_id or '')}"

    def _thread_key(self, thread_id: str) -> str:
        return f"{self.prefix}:thread:{_quoted(thread_id)}"

    def _dropped_key(self, thread_id: str) -> str:
        """When the thread was last dropped (by any worker)."""
        return f"{self.prefix}:dropped:{_quoted(thread_id)}"

    def _check_epoch(self, epoch: Any) -> bool:
        """Set the epoch when the server has none; log (and answer True) when it lost the one this
        store saw."""
        if isinstance(epoch, bytes):
            epoch = epoch.decode("ascii", "replace")
        if epoch is None:
            self.client.set(self._epoch_key, secrets.token_hex(8), nx=True)
            epoch = self.client.get(self._epoch_key)
            epoch = epoch.decode("ascii", "replace") if isinstance(epoch, bytes) else epoch
        lost = self._epoch is not None and epoch != self._epoch
        if lost:
            log.warning("Redis lost the loop state under %s (restarted without persistence, or flushed): "
                        "loop counting starts afresh for every scope", self.prefix)
        self._epoch = epoch
        return lost

    def _acquire(self, lock: str) -> str:
        token = secrets.token_hex(16)
        deadline = time.monotonic() + self.wait_seconds
        pause = 0.001
        while not self.client.set(lock, token, nx=True, px=int(self.lock_seconds * 1000)):
            if time.monotonic() >= deadline:
                raise StoreBusyError(f"{lock} stayed locked for more than {self.wait_seconds}s")
            time.sleep(pause * random.uniform(0.5, 1.5))
            pause = min(pause * 2, 0.05)
        return token

    def _load(self, key: str, thread_id: str) -> tuple[ScopeState, str]:
        """The scope's state and its epoch (a new one for a new state); a loss is logged."""
        raw, epoch, server_epoch, *dropped = self.client.mget(
            key, f"{key}:epoch", self._epoch_key, self._dropped_key(thread_id), self._dropped_all_key)
        lost = self._check_epoch(server_epoch)
        scope_epoch = _text(epoch) if raw is not None else None  # no state: whatever epoch is left is stale
        lost = self._check_scope_epoch(key, scope_epoch, dropped) or lost
        if raw is None:
            restarted = "Redis lost the loop state (restarted without persistence, flushed, or evicted it)"
            return ScopeState(restarted=restarted if lost else None), secrets.token_hex(8)
        try:
            return ScopeState.from_json(raw), scope_epoch or secrets.token_hex(8)
        except ValueError as err:
            log.warning("discarding unreadable state of %s: %s", key, err)
            restarted = f"the stored state was unreadable ({err}); it starts afresh"
            return ScopeState(restarted=restarted), secrets.token_hex(8)

    def _check_scope_epoch(self, key: str, epoch: str | None, dropped: list[Any]) -> bool:
        """Log (and answer True) when a scope this worker saved has lost its state since (not expired,
        not dropped)."""
        with self._seen_lock:
            seen = self._seen.get(key)
        if seen is None or epoch == seen[0]:
            return False
        saved_at = seen[1]
        if time.time() - saved_at >= self.ttl_seconds:
            return False
        if any(marker is not None and float(marker) >= saved_at for marker in dropped):
            return False
        with self._seen_lock:
            self._seen.pop(key)
        log.warning("Redis no longer has the loop state of %s saved at %s (restarted without persistence, "
                    "flushed, or evicted it): loop counting starts afresh for this scope", key,
                    time.strftime("%H:%M:%S", time.localtime(saved_at)))
        return True


def _epoch_key_of(state_key: bytes | str) -> bytes | str:
    return state_key + b":epoch" if isinstance(state_key, bytes) else state_key + ":epoch"


def _text(value: Any) -> str | None:
    return value.decode("ascii", "replace") if isinstance(value, bytes) else value


def _quoted(name: str) -> str:
    return quote(name, safe="", errors="surrogatepass")


def _encoded(text: str) -> bytes:
    """JSON text as UTF-8; a lone surrogate (only ever in a JSON string) becomes its ``\\uXXXX`` escape."""
    return text.encode("utf-8", "backslashreplace")


def _glob_escaped(text: str) -> str:
    """``text`` matched literally in a Redis ``SCAN MATCH`` pattern."""
    return "".join(f"\\{ch}" if ch in "*?[]\\" else ch for ch in text)


class RedisSnapshots(BackedSnapshots):
    """Workspace snapshots in Redis (``<prefix>:snapshot:<key>``), each kept for
    ``SNAPSHOT_TTL_SECONDS`` after its last use, behind the store's circuit breaker."""

    where = "Redis"

    def __init__(self, store: RedisStore) -> None:
        super().__init__()
        self._store = store

    def save(self, key: str, packed: bytes) -> None:
        with self._store._connection():
            self._store.client.set(self._name(key), packed, ex=SNAPSHOT_TTL_SECONDS)

    def load(self, key: str) -> bytes | None:
        with self._store._connection():
            packed = self._store.client.getex(self._name(key), ex=SNAPSHOT_TTL_SECONDS)
        return packed if isinstance(packed, bytes) else None

    def exists(self, key: str) -> bool:
        with self._store._connection():
            return bool(self._store.client.exists(self._name(key)))

    def _name(self, key: str) -> str:
        return f"{self._store.prefix}:snapshot:{key}"
