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

"""The volume snapshots of a ``createBackup`` the plugin serves in nova-api.

Nova's ``compute.api.API.snapshot_volume_backed`` serves ``createImage``
only: it records the instance action as ``createImage``, and a failure
between its quiesce and its volume snapshots (the instance action write)
never thaws the guest.  The backup route (:mod:`.backup`) takes its
volume snapshots here instead, with Nova's own parts (its compute RPC
API, Cinder API, instance action and event objects) and these rules:

* the request's context must already be targeted at the server's cell
  (:func:`.adapter.load_server` does it, as Nova's API does);
* the Cinder snapshot quota is checked before the guest is touched (as
  Nova does);
* an ``active`` guest is quiesced first; a driver that cannot quiesce is
  skipped unless the image requires it (``os_require_quiesce``), as Nova
  does;
* from the quiesce on, **every** failure thaws the guest (an
  ``unquiesce_instance`` cast) before it propagates, and a success thaws
  it once the snapshots are taken (the compute host waits for them before
  thawing);
* the instance action is the caller's (``createBackup``), with the
  ``api_snapshot_instance`` event Nova records for volume snapshots taken
  by the API;

:func:`settle` is the one rule for the volume snapshots of a failed
``createImage`` or ``createBackup`` (Nova's own path leaks them): delete
what the request took when no image may name them (:func:`why_kept`),
else leave each and say why; a snapshot that is not of the server's
volumes, or that Cinder will not delete, is left and named too.  The
:class:`Settlement` is what the answer and the log say.
"""

from __future__ import annotations

import dataclasses
import typing as ty

from oslo_log import log as logging
from oslo_utils import strutils

from nova_snapshot_ext.backup import leaks
from nova_snapshot_ext.cinder import nova_api
from nova_snapshot_ext.cinder import waits
from nova_snapshot_ext import exception

LOG = logging.getLogger(__name__)

#: Cinder's limit on a volume snapshot's name, in characters (its API
#: checks ``len(name)``, 400 above it).
CINDER_NAME_MAX = 255


def snapshot_name(image_name: str) -> str:
    """The name Nova gives a volume snapshot taken for ``image_name``.

    Nova's own ``snapshot for <image name>`` (translated as Nova's
    ``createImage`` path translates it), so that tools reading Cinder
    (the audit's :data:`~..backup.leaks.NOVA_SNAPSHOT_NAME_PREFIX`) see
    one convention.  May be longer than :data:`CINDER_NAME_MAX`: Nova
    accepts an image name of 255 characters.
    """
    from nova.i18n import _

    return str(_('snapshot for %s') % image_name)


def check_snapshot_name(image_name: str) -> None:
    """Refuse an image name whose volume snapshots Cinder would refuse.

    Nova's ``createImage`` names each volume snapshot
    :func:`snapshot_name` and gets Cinder's 400 for a name above
    :data:`CINDER_NAME_MAX` characters, after the guest was quiesced; the
    plugin's own ``createBackup`` path shortens it instead
    (:meth:`VolumeSnapshots.take`).

    :raises InvalidRequest: field ``name``, with the longest name that
        works.
    """
    length = len(snapshot_name(image_name))
    if length > CINDER_NAME_MAX:
        raise exception.InvalidRequest(
            field='name', reason='Nova names each volume snapshot '
            '"snapshot for <name>": %d characters for this name of %d, '
            "above Cinder's limit of %d; use a name of at most %d "
            'characters' % (length, len(image_name), CINDER_NAME_MAX,
                            len(image_name) - (length - CINDER_NAME_MAX)))


#: The instance-action event of volume snapshots taken by nova-api (the
#: name Nova's own volume-backed snapshot records).
EVENT = 'api_snapshot_instance'


class VolumeSnapshots:
    """Take (and, on failure, discard) one server's volume snapshots.

    :param context: the request's ``RequestContext``, targeted at the
        server's cell.
    :param instance: the ``Instance`` (with ``system_metadata``).
    :param bdms: its ``BlockDeviceMappingList``.
    :param action: the instance action to record (Nova's
        ``instance_actions`` value, e.g. ``createBackup``).
    """

    def __init__(self, context: ty.Any, instance: ty.Any, bdms: ty.Any,
                 action: str):
        from nova.compute import api as compute_api

        api = compute_api.API()
        self.context = context
        self.instance = instance
        self.action = action
        self.rpc = api.compute_rpcapi
        self.cinder = api.volume_api
        self.volumes = volume_mappings(bdms)
        #: Ids of the volume snapshots taken, in the order of
        #: :attr:`volumes`.
        self.snapshot_ids: list[str] = []
        #: ``{snapshot id: GiB}`` as Cinder answered each create (what
        #: :func:`~.adapter.volume_size_for` reads).
        self.snapshot_sizes: dict[str, int] = {}

    def take(self, name: str) -> list[str]:
        """Quiesce, record the action, snapshot every volume, thaw.

        :param name: the image name (the snapshots are named after it, as
            Nova names them).
        :returns: :attr:`snapshot_ids`, one per volume mapping, in BDM
            order.
        :raises nova.exception.OverQuota: Cinder's snapshot quota would be
            exceeded (nothing taken, guest untouched).
        :raises nova.exception.NovaException: the quiesce the image
            requires failed, or a Cinder call failed (the guest thawed).
        :raises Exception: anything else, the guest thawed.
        """
        self._check_quota()
        quiesced = self._quiesce()
        taken: list[dict[str, ty.Any]] = []
        try:
            self._record_action()
            self._snapshot_all(name, taken)
        except BaseException:
            if quiesced:
                self._thaw(taken, failed=True)
            raise
        if quiesced:
            self._thaw(taken, failed=False)
        return self.snapshot_ids

    def _check_quota(self) -> None:
        from nova import exception as nova_exc

        if not self.volumes:
            return
        limits = self.cinder.get_absolute_limits(self.context)
        limit = limits['maxTotalSnapshots']
        if limit > -1 and (limits['totalSnapshotsUsed'] +
                           len(self.volumes)) > limit:
            raise nova_exc.OverQuota(overs='snapshots')

    def _quiesce(self) -> bool:
        """Freeze an active guest; True when it may be frozen now."""
        from nova import exception as nova_exc

        if self.instance.vm_state != 'active':
            return False
        sysmeta = self.instance.system_metadata or {}
        required = strutils.bool_from_string(
            sysmeta.get('image_os_require_quiesce'))
        try:
            self.rpc.quiesce_instance(self.context, self.instance)
        except (nova_exc.NovaException, NotImplementedError) as err:
            # The driver answered that it cannot (or did not) freeze it.
            if required:
                raise
            LOG.info('nova-snapshot-ext: %(action)s of server %(server)s '
                     'goes on without quiescing it: %(reason)s',
                     {'action': self.action, 'server': self.instance.uuid,
                      'reason': describe(err)})
            return False
        except BaseException:
            # No answer (e.g. an RPC timeout): the guest may be frozen.
            self._thaw([], failed=True)
            raise
        return True

    def _record_action(self) -> None:
        from nova import objects

        objects.InstanceAction.action_start(
            self.context, self.instance.uuid, self.action,
            want_result=False)

    def _snapshot_all(self, name: str, taken: list[dict[str, ty.Any]]
                      ) -> None:
        from nova import block_device
        from nova.compute import utils as compute_utils
        import nova.conf

        with compute_utils.EventReporter(self.context, EVENT,
                                         nova.conf.CONF.host,
                                         self.instance.uuid):
            for bdm in self.volumes:
                volume = self.cinder.get(self.context, bdm.volume_id)
                snapshot = self.cinder.create_snapshot_force(
                    self.context, volume['id'],
                    snapshot_name(name)[:CINDER_NAME_MAX],
                    volume.get('display_description'))
                self.snapshot_ids.append(snapshot['id'])
                if snapshot.get('size') is not None:
                    self.snapshot_sizes[snapshot['id']] = int(
                        snapshot['size'])
                taken.append(block_device.snapshot_from_bdm(
                    snapshot['id'], bdm).get_image_mapping())

    def _thaw(self, taken: list[dict[str, ty.Any]], failed: bool) -> None:
        """Cast ``unquiesce_instance``; a failed cast is logged, not raised.

        The compute host waits for the snapshots in ``taken`` to leave
        ``creating`` before it thaws the guest.
        """
        if failed:
            LOG.info('nova-snapshot-ext: thawing server %s after the failed '
                     '%s', self.instance.uuid, self.action)
        try:
            self.rpc.unquiesce_instance(self.context, self.instance,
                                        taken or None)
        except Exception as err:
            LOG.error('nova-snapshot-ext: server %(server)s may still be '
                      'quiesced (its filesystems frozen) after '
                      '%(action)s: the unquiesce_instance cast to host '
                      '%(host)s failed: %(reason)s',
                      {'server': self.instance.uuid, 'action': self.action,
                       'host': self.instance.host, 'reason': describe(err)})

    def volume_ids(self) -> set[str]:
        """The ids of the server's volumes."""
        return {bdm.volume_id for bdm in self.volumes}


def volume_mappings(bdms: ty.Iterable[ty.Any]) -> list[ty.Any]:
    """The volume mappings of a ``BlockDeviceMappingList``.

    Nova snapshots each of these, in this order.
    """
    return [bdm for bdm in bdms if not bdm.no_device and bdm.is_volume]


def discard(context: ty.Any, snapshot_ids: ty.Iterable[str],
            volume_ids: ty.Collection[str], cinder: ty.Any = None
            ) -> dict[str, str]:
    """Delete volume snapshots a failed request of this server took.

    Each is read first (waiting, bounded, while Cinder is still
    ``creating`` it: Cinder refuses to delete those) and deleted only when
    it is a snapshot of one of ``volume_ids``; then each delete Cinder
    accepted is watched until Cinder no longer shows the snapshot, so
    that one said deleted is gone (:mod:`nova_snapshot_ext.cinder.waits`).

    :param context: the request's ``RequestContext`` (Nova's Cinder API
        acts with the user's token).
    :param snapshot_ids: the Cinder snapshot ids the request took.
    :param volume_ids: the server's volume ids.
    :param cinder: Nova's ``nova.volume.cinder.API`` (default: a new one).
    :returns: snapshot id -> why it is not gone (empty when every one
        is gone, already-gone ones included).
    """
    from nova import exception as nova_exc

    reader = nova_api.NovaCinder(context, cinder)
    left, accepted = {}, []
    for snapshot_id in snapshot_ids:
        try:
            snapshot = waits.wait_created(reader, snapshot_id)
        except exception.CinderError as err:
            left[snapshot_id] = err.format_message()
            continue
        if snapshot is None:
            continue
        if snapshot.get('volume_id') not in volume_ids:
            left[snapshot_id] = (
                "it is a snapshot of volume %s, not of the server's "
                "volumes" % snapshot.get('volume_id'))
            continue
        try:
            reader.api.delete_snapshot(context, snapshot_id)
        except nova_exc.SnapshotNotFound:
            continue  # deleted meanwhile: gone
        except Exception as err:  # Nova's API: Nova's and Cinder's errors
            left[snapshot_id] = 'Cinder delete failed: %s' % describe(err)
            continue
        accepted.append(snapshot_id)
    left.update(waits.wait_gone(reader, accepted).why_not_gone())
    return left


#: Why a failed request's volume snapshots stay: an image names them.
LEFT_WITH_IMAGE = ('an image left in place names it (a retry of this '
                   'request adopts it)')
#: Why they stay when the failure is not one the plugin can account for.
LEFT_NO_RESULT = 'the activation ended without a result: an image may name it'
#: Why they stay when the server's volumes could not be read.
LEFT_UNPROVEN = ("the server's volumes could not be read to prove it is "
                 "this request's")


def why_kept(err: BaseException) -> str | None:
    """Why the volume snapshots of a failed image create must stay, if so.

    For a failure from the image's create on (before it, no image can
    name them: delete them).

    :param err: the failure of the create and activation.
    :returns: ``None`` (they may be deleted) when the plugin's
        :class:`~..exception.ActivationFailed` deleted every image it
        made; :data:`LEFT_WITH_IMAGE` when it left one in place or sent a
        create that got no answer (a retry adopts or finishes it);
        :data:`LEFT_NO_RESULT` for any other failure.
    """
    if not isinstance(err, exception.ActivationFailed):
        return LEFT_NO_RESULT
    made = err.result
    if made is not None and (made.leftover or made.unconfirmed):
        return LEFT_WITH_IMAGE
    return None


@dataclasses.dataclass
class Settlement:
    """What became of a failed request's volume snapshots.

    :ivar deleted: ids deleted (or already gone), in the request's order.
    :ivar left: id -> why it was left.
    """

    deleted: list[str]
    left: dict[str, str]

    def notes(self) -> list[str]:
        """One note per fact, for the answer and the log."""
        notes = ['volume snapshot %s left: %s' % (snap, why)
                 for snap, why in sorted(self.left.items())]
        if self.deleted:
            notes.insert(0, 'volume snapshot(s) %s deleted' %
                         ', '.join(self.deleted))
        return notes

    def suffix(self) -> str:
        """``' (note; note)'``, or ``''`` when nothing was taken."""
        notes = self.notes()
        return ' (%s)' % '; '.join(notes) if notes else ''


def settle(context: ty.Any, snapshot_ids: ty.Iterable[str | None],
           why_left: str | None, volume_ids: ty.Collection[str] | None,
           cinder: ty.Any = None) -> Settlement:
    """Delete or name the volume snapshots of a request that failed.

    Nova's own ``createImage`` leaves them whatever failed; here each is
    either deleted or named with why.

    :param context: the request's ``RequestContext``.
    :param snapshot_ids: the snapshot ids the request took (``None``
        entries are ignored; none at all: nothing to settle).
    :param why_left: why they must stay (:func:`why_kept`), or ``None`` to
        delete them.
    :param volume_ids: the server's volume ids; ``None`` when unknown (then
        nothing is deleted: each is named, :data:`LEFT_UNPROVEN`).
    :param cinder: Nova's Cinder API (default: a new one).
    :returns: the :class:`Settlement`.
    """
    taken = [snap for snap in snapshot_ids if snap]
    if why_left is None and volume_ids is None:
        why_left = LEFT_UNPROVEN
    if why_left is not None:
        left = {snap: why_left for snap in taken}
    else:
        left = discard(context, taken, volume_ids or (), cinder)
    return Settlement([snap for snap in taken if snap not in left], left)


def describe(err: BaseException) -> str:
    """A Nova exception's message, else the type and text of ``err``."""
    format_message = getattr(err, 'format_message', None)
    if callable(format_message):
        return str(format_message())
    return '%s: %s' % (type(err).__name__, err)


def record_image_snapshots(context: ty.Any, image_id: str,
                           snapshot_ids: ty.Iterable[str]) -> None:
    """Record, in Cinder, the volume snapshots of an active plugin image.

    :func:`~nova_snapshot_ext.backup.leaks.record_taken` with the
    request's token; the image's owner is the request's project (Glance
    makes the creating project the owner).  Never raises: the image is
    active and Nova's answer must not change (design rule 9); a failure
    is logged.
    """
    ids = [snap_id for snap_id in snapshot_ids if snap_id]
    if not ids:
        return
    try:
        leaks.record_taken(nova_api.NovaCinder(context), image_id,
                           str(context.project_id), ids)
    except Exception:
        LOG.exception('nova-snapshot-ext: image %s is active; recording its '
                      'volume snapshots in Cinder failed', image_id)
