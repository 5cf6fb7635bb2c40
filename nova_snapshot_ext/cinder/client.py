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

Four calls: read, list and delete volume snapshots, and write a
snapshot's metadata (the plugin's record,
:mod:`nova_snapshot_ext.backup.leaks`).  Every
keystoneauth error is translated (:func:`translate`); a 404 on delete is
"already gone", not a failure.
"""

from __future__ import annotations

import typing as ty

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

#: What :meth:`CinderClient.delete_snapshot` reports.
DELETED = 'deleted'
GONE = 'already gone'


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


def translate(err: BaseException, operation: str,
              snapshot_id: str) -> exception.CinderError:
    """A keystoneauth1 error as the plugin's Cinder exception (not raised).

    :returns: ``CinderForbidden`` for 401/403, ``CinderUnavailable`` for a
        transport failure or 503, ``CinderError`` otherwise (an endpoint
        keystoneauth could not choose names the options).
    """
    if loading.raised_in_auth_plugin(err):
        # A plugin checks some of its options only when it first
        # authenticates ("password is a required attribute").
        return exception.CinderError(
            operation=operation, snapshot_id=snapshot_id,
            reason='the auth plugin of the Cinder credentials lacks an '
            'option it needs ([snapshot_ext_cinder], or the section its '
            'auth_section names): %s' % exception.reason_of(err))
    if isinstance(err, ValueError):
        return exception.CinderError(
            operation=operation, snapshot_id=snapshot_id,
            reason='keystoneauth could not choose a Cinder endpoint for '
            'these credentials (%s): scope [snapshot_ext_cinder] to a '
            'project, not the system' % ' '.join(str(err).split())[:300])
    kwargs = dict(operation=operation, snapshot_id=snapshot_id,
                  reason=exception.reason_of(err))
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
            return self._adapter.request('snapshots/%s' % snapshot_id,
                                         method, raise_exc=True)
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
        marker = None
        while True:
            query = 'snapshots/detail?limit=%d' % page_size
            if all_projects:
                query += '&all_tenants=1'
            if marker:
                query += '&marker=%s' % marker
            try:
                resp = self._adapter.get(query, raise_exc=True)
            except Exception as err:  # noqa: B902 - re-raised unless sent
                if not sent_error(err):
                    raise
                raise translate(err, 'list', '(all)') from err
            try:
                body = resp.json()
            except ValueError as err:
                raise exception.CinderError(
                    operation='list', snapshot_id='(all)',
                    reason='the answer is not JSON') from err
            page = body.get('snapshots') if isinstance(body, dict) else None
            if not isinstance(page, list):
                raise exception.CinderError(
                    operation='list', snapshot_id='(all)',
                    reason='the answer is not a Cinder snapshot list')
            yield from (dict(s) for s in page if isinstance(s, dict))
            if len(page) < page_size or not page:
                return
            marker = page[-1].get('id')

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
