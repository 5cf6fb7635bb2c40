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

"""Plain REST on the cloud in a box as one of its users.

Used by the scenario tests (``tests/cloud``) and the measurements
(``bench/cloud.py``): a keystoneauth1 session per user, bounded polls.
"""

import time

WAIT = 180.0
#: The compute microversion used (>= 2.37 for ``"networks": "none"``).
COMPUTE = 'compute 2.90'


class Api(object):
    """Plain REST on the cloud as one user (keystoneauth1 session)."""

    def __init__(self, cloud, user):
        self.cloud = cloud
        self.session = cloud.session(user)

    def call(self, service, method, path, ok=(200, 201, 202, 204),
             microversion=None, **kwargs):
        url = self.cloud.url(service) + path
        headers = kwargs.pop('headers', {})
        if microversion:
            headers['OpenStack-API-Version'] = microversion
        resp = self.session.request(url, method, raise_exc=False,
                                    headers=headers, **kwargs)
        if ok and resp.status_code not in ok:
            raise AssertionError('%s %s: HTTP %s %s' % (
                method, url, resp.status_code, resp.text[:1000]))
        return resp

    def json(self, service, method, path, **kwargs):
        resp = self.call(service, method, path, **kwargs)
        return resp.json() if resp.content else {}

    def project_path(self, path):
        return '/%s%s' % (self.session.get_project_id(), path)

    def wait(self, what, fetch, done, failed=(), timeout=WAIT, why=None):
        """Poll ``fetch()`` until ``done(value)``; fail on ``failed``.

        :param why: called with the value when its status is in
            ``failed``; what it returns (text) ends the message.
        :returns: the value ``done`` accepted.
        :raises AssertionError: on a ``failed`` status, or after
            ``timeout`` seconds.
        """
        deadline = time.monotonic() + timeout
        value = None
        while time.monotonic() < deadline:
            value = fetch()
            if done(value):
                return value
            status = value.get('status') if isinstance(value, dict) else None
            if status in failed:
                raise AssertionError('%s is %s: %s%s' % (
                    what, status, value, why(value) if why else ''))
            time.sleep(0.5)
        raise AssertionError('%s not done after %.0f s: %s' % (
            what, timeout, value))

    # volumes
    def volume(self, volume_id):
        return self.json('cinder', 'GET', self.project_path(
            '/volumes/%s' % volume_id))['volume']

    def create_volume(self, size=1, image=None, name='cloud-test',
                      snapshot=None):
        """A new volume, ``available``: blank, from an image or a snapshot."""
        body = {'size': size, 'name': name}
        if image:
            body['imageRef'] = image
        if snapshot:
            body['snapshot_id'] = snapshot
        vol = self.json('cinder', 'POST', self.project_path('/volumes'),
                        json={'volume': body})['volume']
        return self.wait('volume %s' % vol['id'],
                         lambda: self.volume(vol['id']),
                         lambda v: v['status'] == 'available',
                         failed=('error',), why=self._cinder_says)

    def _cinder_says(self, resource):
        """Cinder's user messages about a resource, as text ('' if none).

        ``GET /v3/{project_id}/messages`` (volume API 3.3): where Cinder
        says why a volume or snapshot went to ``error``.  Whatever fails
        in asking is said instead: the failure being reported stays.
        """
        try:
            resp = self.call('cinder', 'GET', self.project_path('/messages'),
                             microversion='volume 3.3', ok=None)
            if resp.status_code != 200:
                return '; Cinder messages: HTTP %s' % resp.status_code
            said = ['%s (%s)' % (m.get('user_message'), m.get('event_id'))
                    for m in resp.json().get('messages', ())
                    if m.get('resource_uuid') == resource.get('id')]
        except Exception as exc:  # noqa: B902 - never hide the failure
            return '; Cinder messages not read: %r' % exc
        return '; Cinder messages: %s' % ('; '.join(said) or 'none')

    def create_snapshot(self, volume_id, name='cloud-test'):
        """A Cinder snapshot of a volume, ``available``.

        ``force``: of an in-use volume too, with no quiesce (a
        crash-consistent copy, as a storage-side snapshot is).
        """
        snap = self.json('cinder', 'POST', self.project_path('/snapshots'),
                         json={'snapshot': {'volume_id': volume_id,
                                            'name': name, 'force': True}}
                         )['snapshot']
        return self.wait('snapshot %s' % snap['id'],
                         lambda: self.snapshot(snap['id']),
                         lambda s: s['status'] == 'available',
                         failed=('error',), why=self._cinder_says)

    def snapshot(self, snapshot_id, ok=(200,)):
        resp = self.call('cinder', 'GET', self.project_path(
            '/snapshots/%s' % snapshot_id), ok=ok)
        return resp.json()['snapshot'] if resp.status_code == 200 else None

    # servers
    def server(self, server_id, ok=(200,)):
        resp = self.call('nova', 'GET', '/servers/%s' % server_id,
                         microversion=COMPUTE, ok=ok)
        return resp.json()['server'] if resp.status_code == 200 else None

    def boot(self, name, bdm=None, image=None, metadata=None):
        body = {'name': name, 'flavorRef':
                self.cloud.ids['flavors']['cloud.tiny'],
                'networks': 'none'}
        if bdm:
            body['block_device_mapping_v2'] = bdm
        if image:
            body['imageRef'] = image
        if metadata:
            body['metadata'] = metadata
        server = self.json('nova', 'POST', '/servers', microversion=COMPUTE,
                           json={'server': body})['server']
        return self.wait('server %s' % server['id'],
                         lambda: self.server(server['id']),
                         lambda s: s['status'] == 'ACTIVE',
                         failed=('ERROR',))

    def boot_on_volumes(self, name, image_id):
        """A server on a root volume made from an image and a data volume.

        Both 1 GB, ``delete_on_termination`` false; ``vda`` and ``vdb``.

        :returns: ``(server, root volume, data volume)``, ACTIVE.
        """
        root = self.create_volume(image=image_id, name=name + '-root')
        data = self.create_volume(name=name + '-data')
        server = self.boot(name, bdm=[
            {'boot_index': index, 'uuid': volume['id'],
             'source_type': 'volume', 'destination_type': 'volume',
             'delete_on_termination': False}
            for index, volume in ((0, root), (-1, data))])
        return server, root, data

    def action(self, server_id, body, ok=(200, 202)):
        """``POST /servers/{id}/action``: the response."""
        return self.call('nova', 'POST', '/servers/%s/action' % server_id,
                         microversion=COMPUTE, json=body, ok=ok)

    def console(self, server_id):
        """The server's whole console log (``os-getConsoleOutput``).

        :returns: text; '' while the hypervisor has none yet (404 or 409:
            a domain not yet running, or shut off).
        """
        resp = self.action(server_id, {'os-getConsoleOutput': {}},
                           ok=(200, 404, 409))
        return resp.json().get('output', '') if resp.status_code == 200 \
            else ''

    def delete_server(self, server_id):
        self.call('nova', 'DELETE', '/servers/%s' % server_id,
                  ok=(204, 404))
        self.wait('server %s deleted' % server_id,
                  lambda: {'gone': self.server(server_id, ok=(200, 404))
                           is None},
                  lambda v: v['gone'])

    # images
    def image(self, image_id, ok=(200,)):
        resp = self.call('glance', 'GET', '/v2/images/%s' % image_id, ok=ok)
        return resp.json() if resp.status_code == 200 else None

    def image_payload(self, image_id):
        return self.call('glance', 'GET', '/v2/images/%s/file' % image_id,
                         ok=(200, 204)).content
