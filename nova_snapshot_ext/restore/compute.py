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

"""Nova's compute API for ``restore``: flavors and servers.

A keystoneauth1 adapter on the ``compute`` service with the Cinder
credentials' session and identity
(:meth:`nova_snapshot_ext.cinder.CinderClient.sibling`), at microversion
:data:`MICROVERSION` (``networks`` may be ``auto`` or ``none``).  Every
keystoneauth error is a :class:`~nova_snapshot_ext.exception.ComputeError`
naming the request.
"""

from __future__ import annotations

import re
import typing as ty
import urllib.parse

from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import exceptions as ks_exc

from nova_snapshot_ext.cinder import client as cinder_client
from nova_snapshot_ext import exception

#: The compute API microversion of every request (2.37: ``networks``
#: ``auto``/``none``).
MICROVERSION = '2.37'


def translate(err: BaseException, operation: str,
              resource: str) -> exception.ComputeError:
    """A keystoneauth1 error as the plugin's compute exception.

    :returns: ``ComputeForbidden`` for 401/403, ``ComputeUnavailable`` for
        a transport failure or 503, ``ComputeError`` otherwise; Nova's
        own message when its answer has one.
    """
    kwargs = cinder_client.answered_kwargs(err, operation=operation,
                                           resource=resource)
    if isinstance(err, (ks_exc.Unauthorized, ks_exc.Forbidden)):
        return exception.ComputeForbidden(**kwargs)
    if isinstance(err, (ks_exc.ConnectionError, ks_exc.ServiceUnavailable,
                        ks_exc.EndpointNotFound)):
        return exception.ComputeUnavailable(**kwargs)
    return exception.ComputeError(**kwargs)


class Compute:
    """Flavors and servers in one Nova, for one identity.

    :param adapter: a keystoneauth1 adapter on the compute service.
    """

    def __init__(self, adapter: ks_adapter.Adapter):
        self._adapter = adapter

    def _send(self, method: str, path: str, operation: str, resource: str,
              body: ty.Any = None, missing_ok: bool = False) -> ty.Any:
        kwargs: dict[str, ty.Any] = {
            'raise_exc': True, 'microversion': MICROVERSION,
            'connect_retries': cinder_client.retries_for(self._adapter,
                                                         method)}
        if body is not None:
            kwargs['json'] = body
        try:
            resp = self._adapter.request(path, method, **kwargs)
        except Exception as err:  # noqa: B902 - re-raised unless sent
            if not cinder_client.sent_error(err):
                raise
            if missing_ok and isinstance(err, ks_exc.NotFound):
                return None
            raise translate(err, operation, resource) from err
        document = cinder_client.json_document(resp)
        if document is None:
            raise exception.ComputeError(
                operation=operation, resource=resource,
                reason='the answer is not a JSON document')
        return document

    def flavor_id(self, name_or_id: str) -> str:
        """The id of the flavor with this id or name.

        :raises RestoreRefused: no such flavor visible to this identity.
        :raises ComputeError: Nova did not answer.
        """
        resource = 'flavor %s' % name_or_id
        quoted = urllib.parse.quote(name_or_id, safe='')
        found = None
        if quoted not in ('.', '..'):
            found = self._send('GET', 'flavors/%s' % quoted, 'read',
                               resource, missing_ok=True)
        flavor = (found or {}).get('flavor')
        if isinstance(flavor, dict) and flavor.get('id'):
            return str(flavor['id'])
        listing = self._send('GET', 'flavors', 'list', 'flavors')
        flavors = listing.get('flavors')
        for flavor in flavors if isinstance(flavors, list) else ():
            if isinstance(flavor, dict) and flavor.get('id') and \
                    flavor.get('name') == name_or_id:
                return str(flavor['id'])
        raise exception.RestoreRefused(
            reason='Nova shows no flavor %r to this project (--flavor)'
            % name_or_id)

    def create_server(self, name: str, flavor_id: str,
                      disks: ty.Sequence[ty.Mapping[str, ty.Any]],
                      networks: ty.Any) -> str:
        """``POST /servers`` booting from existing volumes.

        :param disks: ``[{'volume_id', 'device_name', 'boot_index'}]``
            (``boot_index`` ``-1``: not a boot disk); the volumes stay
            when the server is deleted.
        :param networks: ``'auto'``, ``'none'``, or a list of network ids.
        :returns: the new server's id.
        :raises ComputeError: Nova refused it (its reason).
        """
        mappings = []
        for disk in disks:
            entry: dict[str, ty.Any] = {
                'uuid': disk['volume_id'], 'source_type': 'volume',
                'destination_type': 'volume',
                'delete_on_termination': False}
            if disk.get('device_name'):
                entry['device_name'] = disk['device_name']
            if disk['boot_index'] >= 0:
                entry['boot_index'] = disk['boot_index']
            mappings.append(entry)
        if isinstance(networks, str):
            nets: ty.Any = networks
        else:
            nets = [{'uuid': net} for net in networks]
        body = {'server': {'name': name, 'flavorRef': flavor_id,
                           'networks': nets,
                           'block_device_mapping_v2': mappings}}
        document = self._send('POST', 'servers', 'create', 'server %s'
                              % name, body)
        server = document.get('server')
        if not isinstance(server, dict) or not server.get('id'):
            raise exception.ComputeError(
                operation='create', resource='server %s' % name,
                reason='the answer names no server')
        return str(server['id'])

    def servers_named(self, name: str, page_size: int = 200
                      ) -> list[dict[str, ty.Any]]:
        """The caller's servers named exactly ``name``, in detail.

        ``GET /servers/detail?name=^<name>$`` (Nova's ``name`` filter is a
        regular expression: ``name`` is escaped; a database may read an
        escape differently, so each is compared exactly here), paged with
        ``limit`` and ``marker``.

        :raises ComputeError: Nova did not answer, or refused.
        """
        found: list[dict[str, ty.Any]] = []
        marker = None
        while True:
            query = {'name': '^%s$' % re.escape(name), 'limit': page_size}
            if marker:
                query['marker'] = marker
            document = self._send(
                'GET', 'servers/detail?%s' % urllib.parse.urlencode(query),
                'list', 'servers named %s' % name)
            page = document.get('servers')
            if not isinstance(page, list):
                raise exception.ComputeError(
                    operation='list', resource='servers named %s' % name,
                    reason='the answer is not a Nova server list')
            found.extend(dict(server) for server in page
                         if isinstance(server, dict) and
                         server.get('name') == name)
            marker = cinder_client.next_marker(page, page_size, marker)
            if marker is None:
                return found

    def get_server(self, server_id: str) -> dict[str, ty.Any] | None:
        """``GET /servers/{id}``, or ``None`` once it is gone."""
        document = self._send('GET', 'servers/%s' % server_id, 'read',
                              'server %s' % server_id, missing_ok=True)
        if document is None:
            return None
        server = document.get('server')
        return dict(server) if isinstance(server, dict) else None

    def delete_server(self, server_id: str) -> None:
        """``DELETE /servers/{id}`` (gone already is fine)."""
        self._send('DELETE', 'servers/%s' % server_id, 'delete',
                   'server %s' % server_id, missing_ok=True)
