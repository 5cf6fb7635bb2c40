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

"""Waits on a volume snapshot's state: made, and gone.

Cinder answers before it acts. A new snapshot is ``creating`` until
cinder-volume has made it (and Cinder refuses to delete it until then);
``DELETE /snapshots/{id}`` answers once the snapshot is ``deleting``, and
cinder-volume deletes it afterwards, where it may fail: ``error_deleting``,
or ``available`` again when the storage refuses (a snapshot still in use,
e.g. an RBD snapshot with a clone). What the plugin says deleted, it has
seen gone. The one home of both waits, for a failed request's snapshots
(:mod:`nova_snapshot_ext.nova.volumes`), a rotation's
(:mod:`nova_snapshot_ext.backup.rotation`) and ``audit --fix``'s.
"""

from __future__ import annotations

import dataclasses
import time
import typing as ty

from nova_snapshot_ext import exception

#: Seconds a snapshot still ``creating`` is waited for.
CREATING_WAIT = 60.0
#: Seconds of polling for the deletes Cinder accepted (on RBD about a
#: second each; a snapshot with a clone to flatten takes longer).
DELETING_WAIT = 30.0
#: Seconds between two reads.
POLL = 1.0


class SnapshotReader(ty.Protocol):
    """Reads one volume snapshot (both Cinder clients of the facade)."""

    def get_snapshot(self, snapshot_id: str) -> dict[str, ty.Any] | None:
        """The snapshot as Cinder shows it, ``None`` when it is gone.

        :raises CinderError: Cinder failed to answer.
        """


@dataclasses.dataclass
class Deletes:
    """What became of volume snapshots whose delete Cinder accepted.

    :ivar gone: ids Cinder no longer shows.
    :ivar failed: id -> why it is not gone: the status of a delete Cinder
        failed.
    :ivar deleting: ids still ``deleting`` when the wait ended.
    :ivar unread: id -> the error of its last read, for one Cinder never
        answered about until the wait ended (each read is tried again).
    """

    gone: list[str] = dataclasses.field(default_factory=list)
    failed: dict[str, str] = dataclasses.field(default_factory=dict)
    deleting: list[str] = dataclasses.field(default_factory=list)
    unread: dict[str, exception.CinderError] = dataclasses.field(
        default_factory=dict)
    #: The wait, in seconds.
    seconds: float = 0.0

    def why_not_gone(self) -> dict[str, str]:
        """id -> why, for every snapshot not seen gone, in words."""
        why = dict(self.failed)
        why.update({snapshot_id: 'Cinder still deleting it after %.0f s'
                    % self.seconds for snapshot_id in self.deleting})
        why.update({snapshot_id: 'Cinder accepted its delete; reading it '
                    'since failed: %s' % err.format_message()
                    for snapshot_id, err in self.unread.items()})
        return why


def _clock(clock: ty.Callable[[], float] | None,
           sleep: ty.Callable[[float], None] | None
           ) -> tuple[ty.Callable[[], float], ty.Callable[[float], None]]:
    return clock or time.monotonic, sleep or time.sleep


def wait_created(cinder: SnapshotReader, snapshot_id: str,
                 seconds: float = CREATING_WAIT,
                 clock: ty.Callable[[], float] | None = None,
                 sleep: ty.Callable[[float], None] | None = None
                 ) -> dict[str, ty.Any] | None:
    """A volume snapshot, read again while it is ``creating``.

    :param seconds: at most this long; then the last reading is returned
        as it is (a delete's refusal then names the snapshot).
    :param clock: seconds, monotonic (default :func:`time.monotonic`);
        ``sleep`` waits (default :func:`time.sleep`).
    :returns: the snapshot, or ``None`` when it is gone.
    :raises CinderError: Cinder failed to answer.
    """
    clock, sleep = _clock(clock, sleep)
    deadline = clock() + seconds
    while True:
        snapshot = cinder.get_snapshot(snapshot_id)
        if snapshot is None or snapshot.get('status') != 'creating' or \
                clock() >= deadline:
            return snapshot
        sleep(POLL)


def wait_gone(cinder: SnapshotReader, snapshot_ids: ty.Iterable[str],
              seconds: float = DELETING_WAIT,
              clock: ty.Callable[[], float] | None = None,
              sleep: ty.Callable[[float], None] | None = None) -> Deletes:
    """Poll until Cinder no longer shows these snapshots.

    Polls every :data:`POLL` seconds for ``seconds`` at most (plus the
    time of the reads themselves, each bounded by the client's timeout).

    :param cinder: reads a snapshot (:class:`SnapshotReader`).
    :param snapshot_ids: snapshots whose delete Cinder accepted.
    :param clock: seconds, monotonic (default :func:`time.monotonic`);
        ``sleep`` waits (default :func:`time.sleep`).
    :returns: :class:`Deletes`.
    """
    clock, sleep = _clock(clock, sleep)
    deadline = clock() + seconds
    result = Deletes(seconds=seconds)
    pending = list(dict.fromkeys(snapshot_ids))
    unread: dict[str, exception.CinderError] = {}
    while pending:
        still = []
        for snapshot_id in pending:
            try:
                snapshot = cinder.get_snapshot(snapshot_id)
            except exception.CinderError as err:
                unread[snapshot_id] = err  # read again: a blip is no fate
                still.append(snapshot_id)
                continue
            unread.pop(snapshot_id, None)
            if not snapshot:
                result.gone.append(snapshot_id)
            elif snapshot.get('status') == 'deleting':
                still.append(snapshot_id)
            else:
                result.failed[snapshot_id] = (
                    "Cinder's delete failed (status %s)"
                    % snapshot.get('status'))
        pending = still
        if pending and clock() >= deadline:
            result.unread = {i: unread[i] for i in pending if i in unread}
            result.deleting = [i for i in pending if i not in unread]
            break
        if pending:
            sleep(POLL)
    return result
