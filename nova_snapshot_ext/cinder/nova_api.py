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

"""Nova's own Cinder API for the plugin inside nova-api (one context)."""

from __future__ import annotations

import typing as ty

from oslo_log import log as logging

from nova_snapshot_ext.cinder import client as cinder_mod
from nova_snapshot_ext import exception

LOG = logging.getLogger(__name__)


class NovaCinder:
    """Nova's own Cinder API (``nova.volume.cinder.API``) for one context.

    What the rotation uses to delete a rotated backup's volume snapshots,
    and the plugin to record the volume snapshots of an image it made
    (:mod:`nova_snapshot_ext.backup.leaks`), inside Nova: the user's
    token, Nova's ``[cinder]`` settings.

    :param context: the request's ``RequestContext``.
    :param api: Nova's ``nova.volume.cinder.API`` (default: a new one).
    """

    def __init__(self, context: ty.Any, api: ty.Any = None):
        from nova.volume import cinder

        self.context = context
        self.api = api or cinder.API()

    def delete_snapshot(self, snapshot_id: str, owner: str) -> str:
        """See :meth:`.client.CinderClient.delete_snapshot`."""
        from nova import exception as nova_exc

        snap = self.get_snapshot(snapshot_id)
        if not snap or snap.get('status') == 'deleting':
            return cinder_mod.GONE
        project = snap.get('project_id')
        if project and project != owner:
            raise exception.CinderForbidden(
                operation='delete', snapshot_id=snapshot_id,
                reason='it belongs to project %s, not to the backup\'s '
                'owner %s' % (project, owner))
        try:
            self.api.delete_snapshot(self.context, snapshot_id)
        except nova_exc.SnapshotNotFound:
            return cinder_mod.GONE
        except Exception as err:  # Nova wraps only some of Cinder's errors
            raise exception.CinderError(
                operation='delete', snapshot_id=snapshot_id,
                reason=exception.reason_of(err)) from err
        return cinder_mod.DELETED

    def get_snapshot(self, snapshot_id: str) -> dict[str, ty.Any] | None:
        """A volume snapshot as Nova's Cinder API shows it, or ``None``.

        :returns: Nova's snapshot view (``id``, ``status``,
            ``volume_id``, ``volume_size``, ``project_id``).
        :raises CinderError: Cinder failed to answer (also an error Nova
            does not wrap: a 5xx or 401 arrives as cinderclient's or
            keystoneauth's own).
        """
        from nova import exception as nova_exc

        try:
            snapshot = self.api.get_snapshot(self.context, snapshot_id)
        except nova_exc.SnapshotNotFound:
            return None
        except Exception as err:  # Nova wraps only some of Cinder's errors
            raise exception.CinderError(
                operation='read', snapshot_id=snapshot_id,
                reason=exception.reason_of(err)) from err
        # Gone also when the API answers nothing (Nova's CinderFixture).
        return dict(snapshot) if snapshot else None

    def _backups(self) -> ty.Any:
        """python-cinderclient's backups at backup metadata's microversion.

        Through Nova's ``nova.volume.cinder.cinderclient`` (the user's
        token, Nova's ``[cinder]``): Nova's own ``API`` has no backup
        calls.
        """
        from nova.volume import cinder

        return cinder.cinderclient(
            self.context,
            microversion=cinder_mod.BACKUP_METADATA_VERSION).backups

    def list_backups(self, volume_id: str | None = None
                     ) -> list[dict[str, ty.Any]]:
        """See :meth:`.client.CinderClient.list_backups`."""
        search = {'volume_id': volume_id} if volume_id else None
        try:
            return [dict(b.to_dict()) for b in
                    self._backups().list(search_opts=search)]
        except Exception as err:  # cinderclient and keystoneauth errors
            raise exception.CinderError(
                operation='list', resource='backups',
                reason=exception.reason_of(err)) from err

    def create_backup(self, volume_id: str, snapshot_id: str,
                      incremental: bool, name: str, description: str,
                      metadata: ty.Mapping[str, str]) -> dict[str, ty.Any]:
        """See :meth:`.client.CinderClient.create_backup`."""
        try:
            backup = self._backups().create(
                volume_id, name=name, description=description,
                incremental=incremental, snapshot_id=snapshot_id,
                metadata=dict(metadata))
        except Exception as err:  # cinderclient and keystoneauth errors
            raise exception.CinderError(
                operation='backup', snapshot_id=snapshot_id,
                reason=exception.reason_of(err)) from err
        return dict(backup.to_dict())

    def get_backup(self, backup_id: str) -> dict[str, ty.Any] | None:
        """See :meth:`.client.CinderClient.get_backup`."""
        from cinderclient import exceptions as cinder_exc

        try:
            return dict(self._backups().get(backup_id).to_dict())
        except cinder_exc.NotFound:
            return None
        except Exception as err:  # cinderclient and keystoneauth errors
            raise exception.CinderError(
                operation='read', resource='backup %s' % backup_id,
                reason=exception.reason_of(err)) from err

    def delete_backup(self, backup_id: str) -> str:
        """See :meth:`.client.CinderClient.delete_backup`."""
        from cinderclient import exceptions as cinder_exc

        try:
            self._backups().delete(backup_id)
        except cinder_exc.NotFound:
            return cinder_mod.GONE
        except Exception as err:  # cinderclient and keystoneauth errors
            raise exception.CinderError(
                operation='delete', resource='backup %s' % backup_id,
                reason=exception.reason_of(err)) from err
        return cinder_mod.DELETED

    def snapshot_sizes(self, snapshot_ids: ty.Iterable[str]
                       ) -> dict[str, int]:
        """The sizes Cinder gives these volume snapshots.

        :param snapshot_ids: Cinder snapshot ids.
        :returns: ``{snapshot id: size in GiB}``; a snapshot that cannot
            be read (gone, Cinder not answering) is left out and logged:
            the caller keeps what it knew.
        """
        sizes = {}
        for snapshot_id in snapshot_ids:
            try:
                snap = self.api.get_snapshot(self.context, snapshot_id)
            except Exception:  # noqa: B902 - an enrichment, never a failure
                # Design rule 9: whatever Nova's Cinder API raises (gone,
                # not answering, refused), the request goes on with the size
                # Nova recorded.
                LOG.warning('nova-snapshot-ext: the size of volume snapshot '
                            '%s could not be read from Cinder; the image '
                            'records the size Nova knows', snapshot_id,
                            exc_info=True)
                continue
            size = (snap or {}).get('size')
            if isinstance(size, int) and not isinstance(size, bool) and \
                    size >= 1:
                sizes[snapshot_id] = size
            else:
                LOG.warning('nova-snapshot-ext: Cinder gives volume snapshot '
                            '%s no usable size (%r)', snapshot_id, size)
        return sizes

    def set_snapshot_metadata(self, snapshot_id: str,
                              metadata: ty.Mapping[str, str]) -> None:
        """See :meth:`.client.CinderClient.set_snapshot_metadata`.

        Through Nova's ``nova.volume.cinder.cinderclient`` (Nova's own
        ``API`` has no snapshot metadata call): python-cinderclient's
        ``volume_snapshots.set_metadata``.
        """
        from nova.volume import cinder

        try:
            cinder.cinderclient(self.context).volume_snapshots.set_metadata(
                snapshot_id, dict(metadata))
        except Exception as err:  # cinderclient and keystoneauth errors
            raise exception.CinderError(
                operation='set metadata', snapshot_id=snapshot_id,
                reason=exception.reason_of(err)) from err
