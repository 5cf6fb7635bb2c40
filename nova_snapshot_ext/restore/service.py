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

"""A restore: every copy of a set to a new volume, then a new server.

Flow::

    check (every copy available, the flavor, the project's volume quota:
    refused before anything is made) -> restore each copy into a new
    volume (POST /backups/{id}/restore) -> wait until each is available
    -> boot a server from them with the source's layout (device names,
    boot index) -> wait until it is ACTIVE

A failure after the first volume is made undoes what this restore made,
and only that: the server (then its volumes are free), each volume; the
:class:`~nova_snapshot_ext.exception.RestoreFailed` names every one and
its fate (deleted, or left and why).  The copies are never touched.

The guest's description (``hw_*``, ``os_*``... image properties) comes
back with the root volume: Cinder's backup keeps a volume's image
metadata and its restore writes it onto the new volume, where Nova reads
it when it boots from the volume.
"""

from __future__ import annotations

import dataclasses
import datetime
import time
import typing as ty

from oslo_log import log as logging
from oslo_utils import timeutils

from nova_snapshot_ext.backup import copies
from nova_snapshot_ext.backup import copy_sets as sets_mod
from nova_snapshot_ext.cinder import client as cinder_client
from nova_snapshot_ext import exception
from nova_snapshot_ext.restore import compute as compute_mod

LOG = logging.getLogger(__name__)

#: Seconds between two polls of a volume or the server.
POLL_S = 2.0
#: Volume states a restore does not come back from.
VOLUME_FAILED = ('error', 'error_restoring')
#: Seconds before an unanswered restore request from which a volume of
#: its name may be its (Cinder's clock and this host's may differ).
CLOCK_SLACK_S = 60.0


@dataclasses.dataclass
class RestoreResult:
    """What :meth:`Restore.run` made.

    :ivar copy_set: the :class:`~.sets.CopySet` restored.
    :ivar volumes: ``[{'device_name', 'boot_index', 'backup_id',
        'volume_id'}]``, boot disk first.
    :ivar server_id: the new server, or ``None`` (``volumes_only``).
    :ivar seconds: wall time of the restore.
    """

    copy_set: sets_mod.CopySet
    volumes: list[dict[str, ty.Any]]
    server_id: str | None
    seconds: float

    def to_dict(self) -> dict[str, ty.Any]:
        return {'copy_set': self.copy_set.to_dict(),
                'volumes': list(self.volumes), 'server_id': self.server_id,
                'seconds': round(self.seconds, 1)}

    def describe(self) -> str:
        lines = ['restored the copies of backup image %s (server %s, %s) '
                 'in %.1f s' % (self.copy_set.image_id, self.copy_set.server,
                                self.copy_set.backup_type or 'no type',
                                self.seconds)]
        for vol in self.volumes:
            lines.append('  %s: volume %s from backup %s' % (
                vol['device_name'] or '(no device)', vol['volume_id'],
                vol['backup_id']))
        if self.server_id:
            lines.append('  server %s ACTIVE' % self.server_id)
        return '\n'.join(lines)


def _older(created: ty.Any, since: datetime.datetime) -> bool:
    """Whether a ``created`` time (Cinder's, Nova's) is before ``since``.

    An unreadable time is not older: what may be a restore's is named.
    """
    when = copies.parse_time(created)
    return when is not None and when < since


class Restore:
    """Restores copy sets with one identity.

    :param cinder: a :class:`~nova_snapshot_ext.cinder.CinderClient`.
    :param compute: a :class:`~.compute.Compute`, or ``None`` (volumes
        only).
    :param say: called with one line of progress, or ``None``.
    :param timeout: seconds each wait (volumes, server) may take.
    """

    def __init__(self, cinder: ty.Any,
                 compute: compute_mod.Compute | None = None,
                 say: ty.Callable[[str], None] | None = None,
                 timeout: float = 600.0, poll: float = POLL_S,
                 clock: ty.Callable[[], float] = time.monotonic,
                 sleep: ty.Callable[[float], None] = time.sleep):
        self.cinder = cinder
        self.compute = compute
        self.say = say or (lambda text: None)
        self.timeout = timeout
        self.poll = poll
        self.clock = clock
        self.sleep = sleep

    @property
    def _nova(self) -> compute_mod.Compute:
        if self.compute is None:
            raise exception.RestoreRefused(
                reason='a server needs Nova\'s compute API')
        return self.compute

    def check(self, copy_set: sets_mod.CopySet, project: str,
              flavor: str | None) -> str | None:
        """Everything a restore needs, before anything is made.

        :param flavor: the server's flavor (id or name); ``None`` for
            volumes only.
        :returns: the flavor's id, or ``None``.
        :raises RestoreRefused: a copy is not available, the flavor is
            unknown, or the project's volume quota has no room (naming
            the quota, its limit and its use).
        """
        why = copy_set.refusal()
        if why:
            raise exception.RestoreRefused(reason=why)
        unsized = [m.backup_id for m in copy_set.members if m.size < 1]
        if unsized:
            raise exception.RestoreRefused(
                reason='Cinder gives no size of backup %s: the quota '
                'cannot be checked' % ', '.join(unsized))
        if flavor is not None and not any(m.boot_index == 0
                                          for m in copy_set.members):
            raise exception.RestoreRefused(
                reason='no copy is of a boot disk (boot index 0): restore '
                'the volumes only (--volumes-only)')
        need = {'volumes': len(copy_set.members),
                'gigabytes': sum(m.size for m in copy_set.members)}
        quota = self.cinder.volume_quota(project)
        for key, wanted in need.items():
            entry = quota[key]
            if entry['limit'] < 0:
                continue
            free = entry['limit'] - entry['in_use'] - entry['reserved']
            if wanted > free:
                raise exception.RestoreRefused(
                    reason='Cinder quota %r of project %s has room for %d, '
                    'the restore needs %d (limit %d, in use %d, reserved %d)'
                    % (key, project, max(free, 0), wanted, entry['limit'],
                       entry['in_use'], entry['reserved']))
        if flavor is None:
            return None
        return self._nova.flavor_id(flavor)

    def run(self, copy_set: sets_mod.CopySet, project: str, name: str,
            flavor: str | None = None, networks: ty.Any = 'auto'
            ) -> RestoreResult:
        """Restore every copy of ``copy_set``, then boot a server.

        :param project: the caller's project (its quota is checked).
        :param name: the new server's name; volume ``k`` is named
            ``<name>-<device>``.
        :param flavor: the server's flavor; ``None``: volumes only.
        :param networks: the server's ``networks`` (``auto``, ``none`` or
            network ids).
        :returns: :class:`RestoreResult`.
        :raises RestoreRefused: nothing was made (:meth:`check`).
        :raises RestoreFailed: something failed midway; what this
            restore made was deleted or is named.
        """
        start = self.clock()
        flavor_id = self.check(copy_set, project, flavor)
        made: list[dict[str, ty.Any]] = []
        # 'unanswered': fates of what a request without an answer may
        # have made (see _maybe_volumes, _find_server).
        state: dict[str, ty.Any] = {'step': 'restoring the volumes',
                                    'server': None, 'unanswered': []}
        try:
            self._restore_volumes(copy_set, name, made, state)
            state['step'] = 'waiting for the volumes'
            self._wait_volumes([m['volume_id'] for m in made])
            if flavor_id is not None:
                state['step'] = 'booting the server'
                self._boot(name, flavor_id, made, networks, state)
                self.say('server %s requested' % state['server'])
                state['step'] = 'waiting for the server'
                self._wait_server(str(state['server']))
        except BaseException as err:
            # Ctrl-C and bugs too: what this restore made is undone, and
            # named (logged) before the original error goes on.
            try:
                failure = self._undo(str(state['step']), err, made,
                                     state['server'], state['unanswered'])
            except KeyboardInterrupt as second:
                # A second interrupt stops the undo: everything it may
                # not have deleted is named.
                second.restore_made = [  # type: ignore[attr-defined]
                    {'kind': kind, 'id': ident,
                     'fate': 'left: a second interrupt stopped the undo'}
                    for kind, ident in ([('server', state['server'])]
                                        if state['server'] else []) +
                    [('volume', m['volume_id']) for m in made]
                ] + state['unanswered']
                raise
            if isinstance(err, exception.SnapshotExtException):
                raise failure from err
            LOG.warning('nova-snapshot-ext restore: %s',
                        failure.format_message())
            if isinstance(err, KeyboardInterrupt):
                # What the command's interrupt report names.
                err.restore_made = failure.made  # type: ignore
            raise
        return RestoreResult(copy_set, made, state['server'],
                             self.clock() - start)

    def _restore_volumes(self, copy_set: sets_mod.CopySet, name: str,
                         made: list[dict[str, ty.Any]],
                         state: dict[str, ty.Any]) -> None:
        """Restore each copy into a new volume, appending each to ``made``.

        A restore request without an answer may still have made its
        volume: the volumes of its name made since are named
        (``state['unanswered']``), never deleted unproven.
        """
        for index, member in enumerate(copy_set.members):
            device = (member.device_name.rsplit('/', 1)[-1] or
                      'disk%d' % index)
            volume_name = '%s-%s' % (name, device)
            sent_at = timeutils.utcnow()
            try:
                volume_id = self.cinder.restore_backup(member.backup_id,
                                                       volume_name)
            except exception.CinderError as err:
                if err.may_have_made:
                    state['unanswered'] = self._maybe_volumes(
                        volume_name, member.backup_id, sent_at,
                        {m['volume_id'] for m in made})
                raise
            except KeyboardInterrupt:
                # Interrupted in flight: no time to look, but it is said.
                state['unanswered'] = [{
                    'kind': 'volume', 'id': '(unknown)',
                    'fate': 'unknown: interrupted while Cinder restored '
                    'backup %s into a volume named %s' % (
                        member.backup_id, volume_name)}]
                raise
            made.append({'device_name': member.device_name,
                         'boot_index': member.boot_index,
                         'backup_id': member.backup_id,
                         'volume_id': volume_id})
            self.say('restoring %s from backup %s into volume %s' % (
                member.device_name, member.backup_id, volume_id))

    def _maybe_volumes(self, volume_name: str, backup_id: str,
                       sent_at: ty.Any, known: set[str]
                       ) -> list[dict[str, ty.Any]]:
        """Fates of the volumes an unanswered restore request may have made.

        Cinder's restore API takes only a name: a volume of that name
        made since the request (:data:`CLOCK_SLACK_S` earlier, for the
        clocks) may be its, and is named, not deleted.
        """
        why = ('Cinder did not answer the restore of backup %s into a '
               'volume named %s' % (backup_id, volume_name))
        try:
            found = self.cinder.volumes_named(volume_name)
        except Exception as err:  # a lookup's failure never hides the first
            return [{'kind': 'volume', 'id': '(unknown)',
                     'fate': 'unknown: %s, and the volumes of that name '
                     'could not be listed: %s'
                     % (why, exception.reason_of(err))}]
        since = sent_at - datetime.timedelta(seconds=CLOCK_SLACK_S)
        fates = []
        for volume in found:
            if not volume.get('id') or volume.get('id') in known or \
                    _older(volume.get('created_at'), since):
                continue
            fates.append({'kind': 'volume', 'id': str(volume.get('id')),
                          'fate': 'left: %s; made since, it may be that '
                          'restore\'s (not deleted: not proven)' % why})
        return fates

    def _boot(self, name: str, flavor_id: str,
              made: list[dict[str, ty.Any]], networks: ty.Any,
              state: dict[str, ty.Any]) -> None:
        """Ask Nova for the server (``state['server']``).

        A create without an answer may still have made it: a server of
        that name booting from this restore's volumes is this restore's
        (:meth:`_find_server`) and undone with the rest.
        """
        sent_at = timeutils.utcnow()
        try:
            state['server'] = self._nova.create_server(name, flavor_id,
                                                       made, networks)
        except exception.ComputeError as err:
            if err.may_have_made:
                self._find_server(name, made, state, sent_at)
            raise
        except KeyboardInterrupt:
            state['unanswered'] = [{
                'kind': 'server', 'id': '(unknown)',
                'fate': 'unknown: interrupted while Nova created server %s'
                % name}]
            raise

    def _find_server(self, name: str, made: list[dict[str, ty.Any]],
                     state: dict[str, ty.Any], sent_at: ty.Any) -> None:
        """The server an unanswered create made, proven by its volumes.

        Nova lists a server it has not scheduled yet (a build request)
        without its volumes: such a server of that name, made since the
        create, is read again until it shows them (the restore's
        ``timeout`` at most); one still unproven then is named, left.
        """
        why = 'Nova did not answer the create of server %s' % name
        ours = {m['volume_id'] for m in made}
        since = sent_at - datetime.timedelta(seconds=CLOCK_SLACK_S)
        end = self.clock() + self.timeout
        while True:
            try:
                found = self._nova.servers_named(name)
            except Exception as err:  # never hides the create's failure
                state['unanswered'] = [{
                    'kind': 'server', 'id': '(unknown)',
                    'fate': 'unknown: %s, and the servers of that name '
                    'could not be listed: %s'
                    % (why, exception.reason_of(err))}]
                return
            unproven = []
            for server in found:
                if not server.get('id') or _older(server.get('created'),
                                                  since):
                    continue
                attached = {v.get('id') for v in server.get(
                    'os-extended-volumes:volumes_attached') or ()
                    if isinstance(v, dict)}
                if attached & ours:
                    state['server'] = str(server['id'])
                    return
                if not attached:
                    unproven.append(str(server['id']))
            if unproven and self.clock() <= end:
                self.sleep(self.poll)
                continue
            state['unanswered'] = [{
                'kind': 'server', 'id': server_id,
                'fate': 'left: %s; made since, it showed no volumes in '
                'time: it may be that restore\'s (not deleted: not proven)'
                % why} for server_id in unproven]
            return

    def _deadline(self, what: str) -> ty.Callable[[], None]:
        end = self.clock() + self.timeout

        def check() -> None:
            if self.clock() > end:
                raise exception.RestoreFailed(
                    step=what, reason='not done within %.0f s' % self.timeout,
                    made=[])
        return check

    def _wait_volumes(self, volume_ids: list[str]) -> None:
        """Until every volume is ``available``.

        :raises RestoreFailed: one ends in an error state, is gone, or
            time runs out.
        """
        check = self._deadline('waiting for the volumes')
        pending = list(volume_ids)
        started = self.clock()
        while pending:
            for volume_id in list(pending):
                volume = self.cinder.get_volume(volume_id)
                status = (volume or {}).get('status')
                if status == 'available':
                    pending.remove(volume_id)
                elif volume is None or status in VOLUME_FAILED:
                    raise exception.RestoreFailed(
                        step='waiting for the volumes', made=[],
                        reason='volume %s is %s' % (
                            volume_id, status or 'gone'))
            self.say('%d of %d volumes restored (%.0f s)' % (
                len(volume_ids) - len(pending), len(volume_ids),
                self.clock() - started))
            if pending:
                check()
                self.sleep(self.poll)

    def _wait_server(self, server_id: str) -> None:
        """Until the server is ACTIVE.

        :raises RestoreFailed: it is ERROR (with Nova's fault), gone, or
            time runs out.
        """
        check = self._deadline('waiting for the server')
        while True:
            server = self._nova.get_server(server_id)
            status = (server or {}).get('status')
            if status == 'ACTIVE':
                self.say('server %s ACTIVE' % server_id)
                return
            if server is None or status == 'ERROR':
                fault = ((server or {}).get('fault') or {}).get('message')
                raise exception.RestoreFailed(
                    step='waiting for the server', made=[],
                    reason='server %s is %s%s' % (
                        server_id, status or 'gone',
                        ': %s' % fault if fault else ''))
            check()
            self.sleep(self.poll)

    def _undo(self, step: str, err: BaseException,
              made: list[dict[str, ty.Any]], server_id: str | None,
              unanswered: ty.Sequence[dict[str, ty.Any]] = ()
              ) -> exception.RestoreFailed:
        """Delete what this restore made; the failure naming each fate.

        :param unanswered: fates of what a request without an answer may
            have made, named as they are.
        """
        fates = []
        held = None
        if server_id:
            fate = self._delete_server(server_id)
            fates.append({'kind': 'server', 'id': server_id, 'fate': fate})
            if fate != 'deleted':
                held = server_id
        check = self._deadline('deleting the volumes')
        for vol in made:
            fate = ('left: attached to server %s, which was not deleted'
                    % held if held else
                    self._delete_volume(vol['volume_id'], check))
            fates.append({'kind': 'volume', 'id': vol['volume_id'],
                          'fate': fate})
        fates.extend(unanswered)
        if isinstance(err, exception.RestoreFailed):
            step = str(err.kwargs.get('step') or step)
            reason = str(err.reason)
        elif isinstance(err, exception.SnapshotExtException):
            reason = err.format_message()
        else:
            reason = exception.reason_of(err)
        return exception.RestoreFailed(step=step, reason=reason, made=fates)

    def _delete_server(self, server_id: str) -> str:
        try:
            self._nova.delete_server(server_id)
            check = self._deadline('deleting the server')
            while self._nova.get_server(server_id) is not None:
                check()
                self.sleep(self.poll)
        except exception.SnapshotExtException as err:
            return 'left: %s' % err.format_message()
        return 'deleted'

    def _delete_volume(self, volume_id: str,
                       check: ty.Callable[[], None]) -> str:
        try:
            while True:
                volume = self.cinder.get_volume(volume_id)
                status = (volume or {}).get('status')
                if volume is None or status not in (
                        'restoring-backup', 'creating', 'detaching',
                        'in-use', 'attaching', 'reserved'):
                    break
                check()
                self.sleep(self.poll)
            gone = self.cinder.delete_volume(volume_id)
        except exception.SnapshotExtException as err:
            return 'left: %s' % err.format_message()
        return 'already gone' if gone == cinder_client.GONE else 'deleted'
