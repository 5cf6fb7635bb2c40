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

"""Cinder (block-storage service) from keystoneauth1: volume snapshots.

One keystoneauth1 adapter on the block-storage service
(``service_type = block-storage``; keystoneauth matches its aliases,
``volumev3`` included, in the catalog), built from the
``[snapshot_ext_cinder]`` options or from a caller's auth (inside Nova:
the user's token, as Nova's own Cinder API acts for the user).  Paths are
relative to the catalog endpoint (``.../v3/{project_id}``).

Volume snapshots: read, list, delete, and write a snapshot's metadata (the
plugin's record, :mod:`nova_snapshot_ext.backup.leaks`).  Backups (the
copies off the primary storage, :mod:`nova_snapshot_ext.backup.copies`):
create from a volume snapshot, read, list, delete, restore to a new
volume.  Volumes: read and delete (what a restore made), and the project's
volume quota.  Every keystoneauth error is translated (:func:`translate`);
a 404 on delete is "already gone", not a failure.
"""

from __future__ import annotations

import typing as ty
import urllib.parse

from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import exceptions as ks_exc
from keystoneauth1 import session as ks_session
from oslo_config import cfg

from nova_snapshot_ext import exception
from nova_snapshot_ext import loading
from nova_snapshot_ext import opts

#: Cinder's snapshot attribute naming the owning project (shown to the
#: owner and admins by Cinder's default policy).
PROJECT_ATTRIBUTE = 'os-extended-snapshot-attributes:project_id'

#: Volume API microversion of backup metadata (create and read).
BACKUP_METADATA_VERSION = '3.43'

#: What :meth:`CinderClient.delete_snapshot` reports.
DELETED = 'deleted'
GONE = 'already gone'


#: Connection retries of a request that is safe to send again (a read):
#: an idle keep-alive connection the server closed just as it was reused
#: fails before the server reads the request.
SAFE_RETRIES = 3
#: Methods sent again on a failed connection (not POST or DELETE: the
#: server may have acted on it, and a second DELETE of a backup being
#: deleted is refused).
SAFE_METHODS = ('GET', 'HEAD')


def retries_for(adapter: ks_adapter.Adapter, method: str) -> int | None:
    """The ``connect_retries`` of one request on ``adapter``.

    :returns: at least :data:`SAFE_RETRIES` for :data:`SAFE_METHODS`; the
        adapter's own (the options') otherwise.
    """
    own = adapter.connect_retries
    if method.upper() in SAFE_METHODS:
        return max(own or 0, SAFE_RETRIES)
    return own


#: What keystoneauth1 raises on its way to Cinder: its own errors, and a
#: ``ValueError`` when it cannot choose an endpoint for the token (a
#: system-scoped token, whose catalog has no project endpoints).
SENT_ERRORS = (ks_exc.ClientException, ValueError)


def sent_error(err: BaseException) -> bool:
    """Whether ``err`` came from sending a request (then translate it).

    keystoneauth1's errors (:data:`SENT_ERRORS`), and what an auth plugin
    raises itself when it lacks an option
    (:func:`nova_snapshot_ext.loading.raised_in_auth_plugin`); anything
    else is a bug, raised as it came.
    """
    return isinstance(err, SENT_ERRORS) or loading.raised_in_auth_plugin(err)


def next_marker(page: list[ty.Any], page_size: int,
                marker: str | None) -> str | None:
    """The ``marker`` of the next page, or ``None`` after the last.

    A short page is the last; so is a full one whose last entry has no
    id, or the id already asked with (a listing that would never end).
    """
    last = page[-1] if page else None
    if len(page) < page_size or not isinstance(last, dict):
        return None
    following = last.get('id')
    if not following or following == marker:
        return None
    return str(following)


def json_document(resp: ty.Any) -> dict[str, ty.Any] | None:
    """An answer's JSON object (a ``requests`` response).

    :returns: the object; ``{}`` for an empty body; ``None`` when the
        body is not a JSON object.
    """
    if not resp.content:
        return {}
    try:
        document = resp.json()
    except ValueError:
        return None
    return document if isinstance(document, dict) else None


def answered_reason(err: BaseException) -> str | None:
    """The reason in an OpenStack fault body, with the HTTP status.

    Cinder (and Nova) answer ``{"badRequest": {"code": 400, "message":
    "..."}}``; keystoneauth1 reads only ``error``/``errors`` bodies and
    would say "Unrecognized schema in response body".

    :returns: ``"<message> (HTTP <status>)"``, or ``None`` when the
        answer has no such body.
    """
    response = getattr(err, 'response', None)
    if not isinstance(err, ks_exc.HttpError) or response is None:
        return None
    try:
        body = response.json()
    except ValueError:
        return None
    if not isinstance(body, dict) or len(body) != 1:
        return None
    fault = next(iter(body.values()))
    message = fault.get('message') if isinstance(fault, dict) else None
    if not isinstance(message, str) or not message.strip():
        return None
    return '%s (HTTP %s)' % (' '.join(message.split())[:500],
                             err.http_status)


def answered_kwargs(err: BaseException, **kwargs: ty.Any
                    ) -> dict[str, ty.Any]:
    """What a keystoneauth1 error says of its answer, as exception keywords.

    :returns: ``kwargs`` with ``reason`` (the service's own message when
        its answer has one, :func:`answered_reason`), ``status`` (the
        HTTP status, ``None`` without an answer) and ``sent`` (False only
        when keystoneauth1 could not choose an endpoint: its
        ``ConnectFailure`` and ``ConnectTimeout`` also stand for a
        connection reset or a read timeout after the request left).
    """
    return dict(kwargs, reason=answered_reason(err) or
                exception.reason_of(err),
                status=getattr(err, 'http_status', None)
                if isinstance(err, ks_exc.HttpError) else None,
                sent=not isinstance(err, ks_exc.EndpointNotFound))


def translate(err: BaseException, operation: str,
              snapshot_id: str | None = None,
              resource: str | None = None) -> exception.CinderError:
    """A keystoneauth1 error as the plugin's Cinder exception (not raised).

    :param resource: what was asked about, in Cinder's words (``backup
        <id>``); default ``volume snapshot <snapshot_id>``.
    :returns: ``CinderForbidden`` for 401/403, ``CinderUnavailable`` for a
        transport failure or 503, ``CinderError`` otherwise (an endpoint
        keystoneauth could not choose names the options).
    """
    resource = resource or 'volume snapshot %s' % snapshot_id
    if loading.raised_in_auth_plugin(err):
        # A plugin checks some of its options only when it first
        # authenticates ("password is a required attribute").
        return exception.CinderError(
            operation=operation, resource=resource, sent=False,
            reason='the auth plugin of the Cinder credentials lacks an '
            'option it needs ([snapshot_ext_cinder], or the section its '
            'auth_section names): %s' % exception.reason_of(err))
    if isinstance(err, ValueError):
        return exception.CinderError(
            operation=operation, resource=resource, sent=False,
            reason='keystoneauth could not choose a Cinder endpoint for '
            'these credentials (%s): scope [snapshot_ext_cinder] to a '
            'project, not the system' % ' '.join(str(err).split())[:300])
    kwargs = answered_kwargs(err, operation=operation, resource=resource)
    if isinstance(err, (ks_exc.Unauthorized, ks_exc.Forbidden)):
        return exception.CinderForbidden(**kwargs)
    if isinstance(err, (ks_exc.ConnectionError, ks_exc.ServiceUnavailable,
                        ks_exc.EndpointNotFound)):
        return exception.CinderUnavailable(**kwargs)
    return exception.CinderError(**kwargs)


class CinderClient:
    """Volume snapshots in one Cinder, for one identity.

    :param adapter: a keystoneauth1 adapter on the block-storage service
        (:meth:`from_conf`, :meth:`for_auth`).
    """

    def __init__(self, adapter: ks_adapter.Adapter):
        self._adapter = adapter

    @property
    def session(self) -> ks_session.Session:
        """The keystoneauth1 session the client's requests go through."""
        return self._adapter.session

    @property
    def auth(self) -> ty.Any:
        """The identity it acts as (``None``: the session's own)."""
        return self._adapter.auth

    @property
    def project_id(self) -> str:
        """The project these credentials act in (from the token).

        :raises CinderError: the credentials could not be used (see
            :func:`translate`).
        """
        try:
            project = self._adapter.get_project_id()
        except Exception as err:  # noqa: B902 - re-raised unless sent
            if not sent_error(err):
                raise
            raise translate(err, 'read', resource='the project of the '
                            'credentials') from err
        if not project:
            raise exception.ConfigurationError(
                group=opts.CINDER_GROUP, option='auth_type',
                reason='these credentials act in no project (an unscoped '
                'token, or an auth plugin without one): the copies are a '
                'project\'s; give a project-scoped password or application '
                'credential')
        return str(project)

    def sibling(self, service_type: str) -> ks_adapter.Adapter:
        """An adapter on another service, as this client reaches Cinder.

        The same session, identity, interface and region (``restore``
        boots a server with the Cinder credentials).

        :param service_type: the catalog's service type (``compute``).
        """
        adapter = self._adapter
        return ks_adapter.Adapter(
            adapter.session, service_type=service_type, auth=adapter.auth,
            interface=adapter.interface, region_name=adapter.region_name,
            connect_retries=adapter.connect_retries)

    @classmethod
    def for_auth(cls, session: ks_session.Session, auth: ty.Any = None,
                 **adapter_options: ty.Any) -> CinderClient:
        """A client on ``session`` acting with ``auth`` (a user's token).

        :param adapter_options: keystoneauth1 adapter options, over
            :data:`~nova_snapshot_ext.opts.CINDER_DEFAULTS`.
        """
        options = dict(opts.CINDER_DEFAULTS)
        options.update(adapter_options)
        return cls(ks_adapter.Adapter(session, auth=auth, **options))

    @classmethod
    def from_conf(cls, conf: cfg.ConfigOpts, auth: ty.Any = None
                  ) -> CinderClient:
        """Build from ``[snapshot_ext_cinder]`` (session, adapter, auth).

        The session comes from :func:`nova_snapshot_ext.loading.
        load_session`, the loader and checks Glance's session has.

        :param auth: the caller's auth; default: the group's auth plugin.
        :raises ConfigurationError: the group names no usable auth plugin
            and no ``auth`` is given, or a transport option is out of
            range (naming the option).
        """
        group = opts.CINDER_GROUP
        session = loading.load_session(conf, group, auth=auth)
        return cls(loading.load_adapter(conf, group, session))

    def _request(self, method: str, snapshot_id: str,
                 operation: str) -> ty.Any:
        try:
            return self._adapter.request(
                'snapshots/%s' % snapshot_id, method, raise_exc=True,
                connect_retries=retries_for(self._adapter, method))
        except Exception as err:  # noqa: B902 - re-raised unless sent
            if not sent_error(err):
                raise
            if isinstance(err, ks_exc.NotFound):
                return None
            raise translate(err, operation, snapshot_id) from err

    def get_snapshot(self, snapshot_id: str) -> dict[str, ty.Any] | None:
        """``GET /snapshots/{id}``: the snapshot, or ``None`` if absent.

        :raises CinderError: see :func:`translate`.
        """
        resp = self._request('GET', snapshot_id, 'read')
        if resp is None:
            return None
        try:
            body = resp.json()
        except ValueError:
            body = None
        if not isinstance(body, dict) or not isinstance(
                body.get('snapshot'), dict):
            raise exception.CinderError(
                operation='read', snapshot_id=snapshot_id,
                reason='the answer is not a Cinder snapshot document')
        return dict(body['snapshot'])

    def list_snapshots(self, page_size: int = 200,
                       all_projects: bool = False
                       ) -> ty.Iterator[dict[str, ty.Any]]:
        """Every volume snapshot this identity sees.

        ``GET /snapshots/detail``, paged with ``limit`` and ``marker``.

        :param all_projects: ask for every project's (``all_tenants=1``).
            Cinder honours it only for an admin (``context.is_admin``)
            and otherwise lists the caller's project alone: the caller
            says which it asked, it cannot tell from the answer.

        :raises CinderError: see :func:`translate`.
        """
        return self._pages('snapshots/detail', 'snapshots',
                           'volume snapshots',
                           {'all_tenants': 1} if all_projects else {},
                           page_size)

    def set_snapshot_metadata(self, snapshot_id: str,
                              metadata: ty.Mapping[str, str]) -> None:
        """``POST /snapshots/{id}/metadata``: add or replace these keys.

        Cinder's snapshot metadata API (keys not given are kept).

        :raises CinderError: see :func:`translate`; a 404 too (the
            snapshot is gone: nothing to record on).
        """
        try:
            self._adapter.post('snapshots/%s/metadata' % snapshot_id,
                               json={'metadata': dict(metadata)},
                               raise_exc=True)
        except Exception as err:  # noqa: B902 - re-raised unless sent
            if not sent_error(err):
                raise
            raise translate(err, 'set metadata', snapshot_id) from err

    def delete_snapshot(self, snapshot_id: str, owner: str) -> str:
        """Delete a volume snapshot of project ``owner``.

        Reads it first: a snapshot another project owns is refused (as far
        as Cinder shows the owner).

        :returns: :data:`DELETED` or :data:`GONE` (404, or ``deleting``).
        :raises CinderForbidden: the snapshot belongs to another project,
            or Cinder refused the credentials.
        :raises CinderError: see :func:`translate`.
        """
        snap = self.get_snapshot(snapshot_id)
        if snap is None or snap.get('status') == 'deleting':
            return GONE
        project = snap.get(PROJECT_ATTRIBUTE)
        if project is not None and project != owner:
            raise exception.CinderForbidden(
                operation='delete', snapshot_id=snapshot_id,
                reason='it belongs to project %s, not to the backup\'s '
                'owner %s' % (project, owner))
        if self._request('DELETE', snapshot_id, 'delete') is None:
            return GONE
        return DELETED

    # backups, volumes and quotas ---------------------------------------

    def _send(self, method: str, path: str, operation: str, resource: str,
              body: ty.Any = None, microversion: str | None = None,
              missing_ok: bool = False) -> ty.Any:
        """One request; its JSON document (``{}`` when it has none).

        :param missing_ok: answer ``None`` for a 404 instead of raising.
        :raises CinderError: see :func:`translate`; also an answer that
            is not a JSON document.
        """
        kwargs: dict[str, ty.Any] = {
            'raise_exc': True,
            'connect_retries': retries_for(self._adapter, method)}
        if body is not None:
            kwargs['json'] = body
        if microversion:
            kwargs['microversion'] = microversion
        try:
            resp = self._adapter.request(path, method, **kwargs)
        except Exception as err:  # noqa: B902 - re-raised unless sent
            if not sent_error(err):
                raise
            if missing_ok and isinstance(err, ks_exc.NotFound):
                return None
            raise translate(err, operation, resource=resource) from err
        document = json_document(resp)
        if document is None:
            raise exception.CinderError(
                operation=operation, resource=resource,
                reason='the answer is not a JSON document')
        return document

    def _pages(self, collection: str, key: str, resource: str,
               filters: ty.Mapping[str, ty.Any], page_size: int,
               microversion: str | None = None
               ) -> ty.Iterator[dict[str, ty.Any]]:
        """Every document of a Cinder list, page by page.

        ``GET <collection>?<filters>&limit=<page_size>&marker=<last id>``
        until a short page (:func:`next_marker`); one page held at a time.

        :param key: the list's key in the answer (``snapshots``, a plural
            in ``s``).
        :param resource: what is listed, for errors (``backups``).
        :raises CinderError: see :func:`translate`; an answer without the
            list.
        """
        marker = None
        while True:
            query = dict({'limit': page_size}, **filters)
            if marker:
                query['marker'] = marker
            document = self._send(
                'GET', '%s?%s' % (collection, urllib.parse.urlencode(query)),
                'list', resource, microversion=microversion)
            page = document.get(key)
            if not isinstance(page, list):
                raise exception.CinderError(
                    operation='list', resource=resource,
                    reason='the answer is not a Cinder %s list' % key[:-1])
            yield from (dict(d) for d in page if isinstance(d, dict))
            marker = next_marker(page, page_size, marker)
            if marker is None:
                return

    @staticmethod
    def _member(document: ty.Any, key: str, operation: str,
                resource: str) -> dict[str, ty.Any]:
        value = document.get(key) if isinstance(document, dict) else None
        if not isinstance(value, dict):
            raise exception.CinderError(
                operation=operation, resource=resource,
                reason='the answer has no %r document' % key)
        return dict(value)

    def create_backup(self, volume_id: str, snapshot_id: str,
                      incremental: bool, name: str, description: str,
                      metadata: ty.Mapping[str, str]) -> dict[str, ty.Any]:
        """``POST /backups``: a backup of a volume snapshot.

        Cinder's backup API from a snapshot (``snapshot_id``; the volume
        is the snapshot's own), with metadata (microversion
        :data:`BACKUP_METADATA_VERSION`).  Cinder answers at once; the
        copy runs in cinder-backup (status ``creating``, then
        ``available`` or ``error``).

        :param incremental: ask for an incremental backup; Cinder refuses
            it (400) when the volume has no ``available`` backup.
        :returns: Cinder's ``backup`` document (``id``, ``name``...).
        :raises CinderError: Cinder refused it (its reason), or see
            :func:`translate`.
        """
        resource = 'volume snapshot %s' % snapshot_id
        body = {'backup': {
            'volume_id': volume_id, 'snapshot_id': snapshot_id,
            'incremental': bool(incremental), 'name': name,
            'description': description, 'metadata': dict(metadata)}}
        document = self._send('POST', 'backups', 'backup', resource, body,
                              BACKUP_METADATA_VERSION)
        return self._member(document, 'backup', 'backup', resource)

    def get_backup(self, backup_id: str) -> dict[str, ty.Any] | None:
        """``GET /backups/{id}`` with its metadata, or ``None`` if absent.

        :raises CinderError: see :func:`translate`.
        """
        resource = 'backup %s' % backup_id
        document = self._send('GET', 'backups/%s' % backup_id, 'read',
                              resource, microversion=BACKUP_METADATA_VERSION,
                              missing_ok=True)
        if document is None:
            return None
        return self._member(document, 'backup', 'read', resource)

    def list_backups(self, volume_id: str | None = None,
                     page_size: int = 200) -> ty.Iterator[dict[str, ty.Any]]:
        """Every backup of the caller's project, with metadata.

        ``GET /backups/detail``, paged with ``limit`` and ``marker``.

        :param volume_id: only this volume's (Cinder's ``volume_id``
            filter).
        :raises CinderError: see :func:`translate`.
        """
        return self._pages('backups/detail', 'backups', 'backups',
                           {'volume_id': volume_id} if volume_id else {},
                           page_size, microversion=BACKUP_METADATA_VERSION)

    def delete_backup(self, backup_id: str) -> str:
        """``DELETE /backups/{id}``.

        :returns: :data:`DELETED`, or :data:`GONE` (404).
        :raises CinderError: Cinder refused it (an incremental backup
            still depends on it, or it is not ``available`` or
            ``error``: its reason), or see :func:`translate`.
        """
        answer = self._send('DELETE', 'backups/%s' % backup_id, 'delete',
                            'backup %s' % backup_id, missing_ok=True)
        return GONE if answer is None else DELETED

    def restore_backup(self, backup_id: str, name: str) -> str:
        """``POST /backups/{id}/restore``: restore into a new volume.

        Cinder makes a volume of the backup's size and restores into it
        (``restoring-backup``, then ``available``).

        :returns: the new volume's id.
        :raises CinderError: see :func:`translate` (a quota refusal is
            Cinder's 413, its reason kept).
        """
        resource = 'backup %s' % backup_id
        document = self._send('POST', 'backups/%s/restore' % backup_id,
                              'restore', resource,
                              {'restore': {'name': name}})
        restore = self._member(document, 'restore', 'restore', resource)
        volume_id = restore.get('volume_id')
        if not isinstance(volume_id, str) or not volume_id:
            raise exception.CinderError(
                operation='restore', resource=resource,
                reason='the answer names no volume')
        return volume_id

    def volumes_named(self, name: str, page_size: int = 200
                      ) -> list[dict[str, ty.Any]]:
        """The caller's volumes named exactly ``name``.

        ``GET /volumes/detail?name=<name>`` (Cinder's exact ``name``
        filter), paged.

        :raises CinderError: see :func:`translate`.
        """
        return [volume for volume in self._pages(
            'volumes/detail', 'volumes', 'volumes named %s' % name,
            {'name': name}, page_size) if volume.get('name') == name]

    def get_volume(self, volume_id: str) -> dict[str, ty.Any] | None:
        """``GET /volumes/{id}``, or ``None`` if absent.

        :raises CinderError: see :func:`translate`.
        """
        resource = 'volume %s' % volume_id
        document = self._send('GET', 'volumes/%s' % volume_id, 'read',
                              resource, missing_ok=True)
        if document is None:
            return None
        return self._member(document, 'volume', 'read', resource)

    def delete_volume(self, volume_id: str) -> str:
        """``DELETE /volumes/{id}``.

        :returns: :data:`DELETED`, or :data:`GONE` (404).
        :raises CinderError: see :func:`translate`.
        """
        answer = self._send('DELETE', 'volumes/%s' % volume_id, 'delete',
                            'volume %s' % volume_id, missing_ok=True)
        return GONE if answer is None else DELETED

    def volume_quota(self, project_id: str) -> dict[str, dict[str, int]]:
        """The project's volume quotas and their use.

        ``GET /os-quota-sets/{project}?usage=True``.

        :returns: ``{'volumes': {'limit': n, 'in_use': n, 'reserved': n},
            'gigabytes': {...}}`` (a limit of -1 is unlimited; gigabytes
            in GiB).
        :raises CinderError: see :func:`translate`.
        """
        resource = 'the quotas of project %s' % project_id
        document = self._send('GET', 'os-quota-sets/%s?usage=True'
                              % project_id, 'read', resource)
        quota = self._member(document, 'quota_set', 'read', resource)
        usage = {}
        for key in ('volumes', 'gigabytes'):
            entry = quota.get(key)
            if not isinstance(entry, dict):
                raise exception.CinderError(
                    operation='read', resource=resource,
                    reason='the answer has no usage of %r' % key)
            try:
                usage[key] = {name: int(entry.get(name) or 0)
                              for name in ('in_use', 'reserved')}
                # No limit given: unknown, left to Cinder (-1).
                usage[key]['limit'] = int(entry.get('limit', -1))
            except (TypeError, ValueError, OverflowError):
                raise exception.CinderError(
                    operation='read', resource=resource,
                    reason='the usage of %r is not a number' % key)
        return usage
