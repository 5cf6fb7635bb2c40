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

"""When a volume snapshot Cinder agreed to delete is really gone.

Cinder answers ``DELETE /snapshots/{id}`` (202) once it has set the
snapshot ``deleting``; cinder-volume deletes it afterwards, and may fail:
``error_deleting``, or ``available`` again when the storage refuses (a
snapshot still in use, e.g. an RBD snapshot with a clone). What the
plugin says deleted, it has seen gone: :func:`wait_gone` is the one wait,
for a failed request's snapshots (:mod:`nova_snapshot_ext.nova.volumes`)
and a rotation's (:mod:`nova_snapshot_ext.backup.rotation`).
"""

from __future__ import annotations

import time
import typing as ty

from nova_snapshot_ext import exception

#: Seconds, in all, a caller waits for the deletes Cinder accepted (on
#: RBD about a second each; a snapshot with a clone to flatten longer).
WAIT = 30.0
#: Seconds between two reads of the snapshots still ``deleting``.
POLL = 1.0


class SnapshotReader(ty.Protocol):
    """Reads one volume snapshot (both Cinder clients of the facade)."""

    def get_snapshot(self, snapshot_id: str) -> dict[str, ty.Any] | None:
        """The snapshot as Cinder shows it, ``None`` when it is gone.

        :raises CinderError: Cinder failed to answer.
        """


def wait_gone(cinder: SnapshotReader, snapshot_ids: ty.Iterable[str],
              seconds: float = WAIT,
              clock: ty.Callable[[], float] | None = None,
              sleep: ty.Callable[[float], None] | None = None
              ) -> dict[str, str]:
    """Wait until Cinder no longer shows these snapshots, ``seconds`` at most.

    :param cinder: reads a snapshot (:class:`SnapshotReader`).
    :param snapshot_ids: snapshots whose delete Cinder accepted.
    :param seconds: the wait for all of them, in seconds.
    :param clock: seconds, monotonic (default :func:`time.monotonic`);
        ``sleep`` waits (default :func:`time.sleep`).
    :returns: snapshot id -> why it is not gone (empty: all gone): the
        status of a delete Cinder failed, a read that failed, or still
        ``deleting`` when the wait ended.
    """
    clock = clock or time.monotonic
    sleep = sleep or time.sleep
    deadline = clock() + seconds
    left: dict[str, str] = {}
    pending = list(snapshot_ids)
    while pending:
        deleting = []
        for snapshot_id in pending:
            try:
                snapshot = cinder.get_snapshot(snapshot_id)
            except exception.CinderError as err:
                left[snapshot_id] = ('Cinder accepted its delete; reading it '
                                     'since failed: %s' % err.format_message())
                continue
            if not snapshot:
                continue
            if snapshot.get('status') == 'deleting':
                deleting.append(snapshot_id)
            else:
                left[snapshot_id] = "Cinder's delete failed (status %s)" % (
                    snapshot.get('status'))
        pending = deleting
        if pending and clock() >= deadline:
            left.update({snapshot_id: 'Cinder still deleting it after %.0f s'
                         % seconds for snapshot_id in pending})
            break
        if pending:
            sleep(POLL)
    return left
