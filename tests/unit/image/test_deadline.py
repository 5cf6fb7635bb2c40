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

"""The one watchdog thread behind every request deadline."""

import socket
import threading
import time

import testtools

from nova_snapshot_ext.image import deadline


class _Conn:
    """A urllib3-like connection holding one end of a socket pair."""

    def __init__(self) -> None:
        self.sock, self.peer = socket.socketpair()

    def close(self) -> None:
        self.sock.close()
        self.peer.close()


class TestWatchdog(testtools.TestCase):

    def _wait(self, predicate, seconds=5.0):
        end = time.monotonic() + seconds
        while not predicate() and time.monotonic() < end:
            time.sleep(0.005)
        return predicate()

    def test_a_deadline_that_falls_due_shuts_the_socket(self):
        conn = _Conn()
        self.addCleanup(conn.close)
        with deadline.Deadline(0.05) as watch:
            watch.attach(conn)
            conn.sock.settimeout(5)
            started = time.monotonic()
            # The read blocked on the socket returns when it is shut.
            self.assertEqual(b'', conn.sock.recv(1))
            self.assertTrue(watch.expired)
            # A re-send after the deadline is not sent.
            self.assertRaises(deadline.DeadlineReached, watch.attach, conn)
        self.assertLess(time.monotonic() - started, 4)

    def test_a_block_that_ends_in_time_is_never_fired(self):
        conn = _Conn()
        self.addCleanup(conn.close)
        with deadline.Deadline(0.05) as watch:
            watch.attach(conn)
        time.sleep(0.15)
        self.assertFalse(watch.expired)
        conn.peer.sendall(b'x')
        conn.sock.settimeout(1)
        self.assertEqual(b'x', conn.sock.recv(1))  # not shut

    def test_an_earlier_deadline_added_later_fires_first(self):
        late = deadline.Deadline(30)
        late.__enter__()
        self.addCleanup(late.__exit__, None, None, None)
        early = deadline.Deadline(0.05)
        early.__enter__()
        self.addCleanup(early.__exit__, None, None, None)
        self.assertTrue(self._wait(lambda: early.expired, 3))
        self.assertFalse(late.expired)

    def test_deadlines_of_many_threads_fire_in_their_order(self):
        watches = [deadline.Deadline(0.02 * (i + 1)) for i in range(8)]
        fired: list[int] = []

        def hold(i: int) -> None:
            with watches[i]:
                while not watches[i].expired:
                    time.sleep(0.002)
                fired.append(i)

        threads = [threading.Thread(target=hold, args=(i,))
                   for i in reversed(range(8))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(10)
        self.assertEqual(list(range(8)), sorted(fired))
        self.assertTrue(all(w.expired for w in watches))

    def test_no_thread_per_request(self):
        with deadline.Deadline(60):
            pass
        before = threading.active_count()
        for _ in range(50):
            with deadline.Deadline(60):
                pass
        self.assertEqual(before, threading.active_count())
        names = [t.name for t in threading.enumerate()]
        self.assertEqual(1, names.count('snapshot-ext-deadlines'))

    def test_finished_deadlines_do_not_pile_up(self):
        for _ in range(3 * deadline._Watchdog.COMPACT_AFTER):
            with deadline.Deadline(600):
                pass
        self.assertLessEqual(len(deadline._WATCHDOG._heap),
                             2 * deadline._Watchdog.COMPACT_AFTER + 2)
        # Still watching after the heap was rebuilt.
        with deadline.Deadline(0.05) as watch:
            self.assertTrue(self._wait(lambda: watch.expired, 3))

    def test_nested_deadlines_restore_the_outer_one(self):
        with deadline.Deadline(60) as outer:
            with deadline.Deadline(60) as inner:
                self.assertIs(inner, deadline.current())
            self.assertIs(outer, deadline.current())
        self.assertIsNone(deadline.current())
