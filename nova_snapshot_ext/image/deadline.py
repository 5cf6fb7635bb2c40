# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at
#
#      http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
# WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
# License for the specific language governing permissions and limitations
# under the License.

"""A total deadline for one HTTP request, below keystoneauth1.

keystoneauth1's ``timeout`` becomes requests'/urllib3's socket timeout:
it bounds each read of the socket, so an answer that trickles in (one
byte every half second) is waited for as long as it trickles.  Neither
requests nor urllib3 has a total deadline for reading an answer
(urllib3's ``Timeout(total=...)`` only shortens the per-read timeout once,
when the request is sent).

:class:`Deadline` is a watchdog: when it fires before the request is
done, it shuts the request's socket down; the read blocked in it returns
at once and requests raises a connection error that the caller
translates.  Every deadline of a process is watched by one daemon thread
(:class:`_Watchdog`, started on first use, again in a forked child): a
request starts no thread of its own, and the thread wakes only when a
deadline falls due or an earlier one is added.  The socket is found
through urllib3's connection class: :func:`watch_session` gives the
keystoneauth1 session's connection pools a connection class that, as it
sends a request, attaches itself to the deadline of the calling thread
(:func:`current`).

A deadline that fires after the answer was read changes nothing: the
connection is back in urllib3's pool, which finds it dropped before
reusing it and opens a new one.
"""

from __future__ import annotations

import heapq
import itertools
import math
import os
import socket
import threading
import time
import typing as ty

from urllib3 import connection as u3_connection
from urllib3 import connectionpool as u3_pool

_LOCAL = threading.local()


class DeadlineReached(Exception):
    """A request was about to be sent after its deadline passed.

    Deliberately not a transport error: neither urllib3, requests nor
    keystoneauth1 re-send on it, so it reaches the caller at once.
    """


class Deadline:
    """A watchdog for the requests made by this thread inside ``with``.

    :param seconds: how long, from entering the ``with`` block, the
        requests may take in total.

    :ivar expired: whether the deadline passed before the block ended (the
        request's socket was then shut down).
    :ivar connected: whether, when the deadline passed, a connection of the
        request was open (Glance was reached and answered too slowly, as
        opposed to a connection that was never made).
    """

    def __init__(self, seconds: float):
        self.seconds = max(0.0, float(seconds))
        self.expired = False
        self.connected = False
        self._done = False
        self._lock = threading.Lock()
        self._connections: list[ty.Any] = []
        self._outer: Deadline | None = None

    def attach(self, conn: ty.Any) -> None:
        """Watch ``conn`` (a urllib3 connection about to send).

        :raises DeadlineReached: the deadline has passed: nothing is sent
            (e.g. keystoneauth re-sending a read that the deadline cut).
        """
        with self._lock:
            if self._done:
                return
            if self.expired:
                raise DeadlineReached('the deadline of %.1f s has passed'
                                      % self.seconds)
            self._connections.append(conn)

    def _expire(self) -> None:
        with self._lock:
            if self._done:
                return
            self.expired = True
            connections = list(self._connections)
            self.connected = any(getattr(c, 'sock', None) is not None
                                 for c in connections)
        for conn in connections:
            _shut(conn)

    @property
    def done(self) -> bool:
        """Whether the ``with`` block has ended (nothing left to cut)."""
        return self._done

    def __enter__(self) -> Deadline:
        self._outer = getattr(_LOCAL, 'deadline', None)
        _LOCAL.deadline = self
        _WATCHDOG.watch(self)
        return self

    def __exit__(self, *exc: ty.Any) -> None:
        with self._lock:
            self._done = True
            self._connections = []
        _WATCHDOG.finished()
        _LOCAL.deadline = self._outer


class _Watchdog:
    """The one thread that fires every :class:`Deadline` of the process.

    Deadlines wait in a heap by the time they fall due.  The thread sleeps
    until the earliest one; adding a deadline wakes it only when that one
    falls due sooner than the thread is set to wake.  A deadline whose
    block ended stays in the heap until it comes up (or until finished
    ones are more than half the heap, which is then rebuilt without
    them): its end costs a counter, not a search.
    """

    #: Finished deadlines tolerated in the heap before it is rebuilt.
    COMPACT_AFTER = 256

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._heap: list[tuple[float, int, Deadline]] = []
        self._order = itertools.count()
        self._finished = 0
        # When the thread wakes next: -inf while it is not waiting (it
        # looks at the heap before it waits again), inf while the heap
        # is empty.
        self._wakes_at = -math.inf
        self._thread: threading.Thread | None = None
        self._pid = os.getpid()

    def watch(self, watch: Deadline) -> None:
        """Fire ``watch`` ``watch.seconds`` from now unless it is done."""
        end = time.monotonic() + watch.seconds
        with self._cond:
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name='snapshot-ext-deadlines',
                    daemon=True)
                self._thread.start()
            heapq.heappush(self._heap, (end, next(self._order), watch))
            if end < self._wakes_at:
                self._cond.notify()

    def finished(self) -> None:
        """One watched deadline's block ended."""
        with self._cond:
            self._finished += 1
            if (self._finished > self.COMPACT_AFTER and
                    2 * self._finished > len(self._heap)):
                self._heap = [e for e in self._heap if not e[2].done]
                heapq.heapify(self._heap)
                self._finished = 0

    def _run(self) -> None:
        cond = self._cond
        with cond:
            while True:
                heap = self._heap  # finished() may have rebuilt it
                while heap and heap[0][2].done:
                    heapq.heappop(heap)
                    self._finished = max(0, self._finished - 1)
                if not heap:
                    self._wakes_at = math.inf
                    cond.wait()
                    self._wakes_at = -math.inf
                    continue
                end, _, watch = heap[0]
                wait = end - time.monotonic()
                if wait > 0:
                    self._wakes_at = end
                    cond.wait(wait)
                    self._wakes_at = -math.inf
                    continue
                heapq.heappop(heap)
                cond.release()
                try:
                    watch._expire()
                except Exception:  # noqa: B902 - must outlive any one
                    # A watchdog that died would leave every later
                    # request of the process unwatched.
                    pass
                finally:
                    cond.acquire()


_WATCHDOG = _Watchdog()
# A forked child has the heap but not the thread: it starts its own.
os.register_at_fork(after_in_child=_WATCHDOG._reset)


def current() -> Deadline | None:
    """The deadline of the calling thread's request, if any."""
    return getattr(_LOCAL, 'deadline', None)


def _shut(conn: ty.Any) -> None:
    sock = getattr(conn, 'sock', None)
    if sock is None:
        return
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass  # already closed: nothing left to wait for


class _Watched:
    """Mixin: attach the connection to the thread's deadline as it sends."""

    def request(self, *args: ty.Any, **kwargs: ty.Any) -> ty.Any:
        watch = current()
        if watch is not None:
            watch.attach(self)
        return super().request(*args, **kwargs)  # type: ignore[misc]


class WatchedHTTPConnection(_Watched, u3_connection.HTTPConnection):
    """urllib3's HTTP connection, watched by :class:`Deadline`."""


class WatchedHTTPSConnection(_Watched, u3_connection.HTTPSConnection):
    """urllib3's HTTPS connection, watched by :class:`Deadline`."""


class WatchedHTTPConnectionPool(u3_pool.HTTPConnectionPool):
    ConnectionCls = WatchedHTTPConnection


class WatchedHTTPSConnectionPool(u3_pool.HTTPSConnectionPool):
    ConnectionCls = WatchedHTTPSConnection


POOL_CLASSES = {'http': WatchedHTTPConnectionPool,
                'https': WatchedHTTPSConnectionPool}


def watch_session(session: ty.Any) -> bool:
    """Let :class:`Deadline` watch the connections of ``session``.

    :param session: a keystoneauth1 session (its ``session`` attribute is
        the requests session; a requests session is accepted too).
    :returns: whether every HTTP(S) adapter of the session is watched
        (False for a session whose transport is not requests/urllib3, a
        test double for instance: its requests then have the per-read
        timeout only).  Idempotent; connection pools made before the first
        call are closed once, so that new ones are watched.
    """
    requests_session = getattr(session, 'session', session)
    adapters = getattr(requests_session, 'adapters', None)
    if not isinstance(adapters, ty.Mapping):
        return False
    watched = True
    for adapter in adapters.values():
        manager: ty.Any = getattr(adapter, 'poolmanager', None)
        classes = getattr(manager, 'pool_classes_by_scheme', None)
        if manager is None or not isinstance(classes, dict):
            watched = False
            continue
        if classes is not POOL_CLASSES and classes != POOL_CLASSES:
            manager.pool_classes_by_scheme = POOL_CLASSES
            manager.clear()
    return watched
