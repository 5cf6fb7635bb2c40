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

"""The cloud in a box for tests: :class:`CloudFixture` and REST helpers.

One cloud per (profile, plugin) and test process, started on first use and
stopped when the process exits (bring-up is 30-60 s).  Run with ``tox -e
cloud`` (one test process: never two clouds at once on a 2-core machine).

``NOVA_SNAPSHOT_EXT_CLOUD_DESCRIBE`` may name the JSON that
``nova-snapshot-ext serve --cloud --format json`` printed: the tests then
use that running cloud instead of starting one (its profile must match).
"""

import atexit
import json
import os
import subprocess
import tempfile
import threading
import time

import fixtures
import testtools

from nova_snapshot_ext.embedded.cloud import launcher

DESCRIBE_ENV = 'NOVA_SNAPSHOT_EXT_CLOUD_DESCRIBE'
WAIT = 180.0
COMPUTE = 'compute 2.90'
_clouds = {}
_lock = threading.Lock()


class _External(object):
    """A cloud started by ``serve --cloud`` (from its JSON)."""

    def __init__(self, path):
        with open(path) as fh:
            self.info = json.load(fh)
        self.profile = self.info['profile']
        self.keystone_url = self.info['endpoints']['keystone']
        self.ids = {'flavors': self.info['flavors'],
                    'images': self.info['images']}

    def url(self, name):
        return self.info['endpoints'][name]

    def session(self, user='admin', project=None):
        from keystoneauth1.identity import v3
        from keystoneauth1 import session as ks_session
        import requests

        if project is None:
            project = {'admin': 'admin'}.get(user, 'demo')
        http = requests.Session()
        http.trust_env = False
        return ks_session.Session(auth=v3.Password(
            auth_url=self.keystone_url, username=user,
            password=launcher.PASSWORD, user_domain_id='default',
            project_name=project, project_domain_id='default'),
            session=http)


def _stop_all():
    for cloud in list(_clouds.values()):
        if isinstance(cloud, launcher.Cloud):
            cloud.stop()
    _clouds.clear()


atexit.register(_stop_all)


class CloudFixture(fixtures.Fixture):
    """The running cloud: ``cloud = self.useFixture(CloudFixture()).cloud``.

    :param profile: the Glance profile (``'default'``, ``'no-raw'``, ...).
    :param plugin: nova-api with the plugin's filter (False: stock Nova).
    """

    def __init__(self, profile='default', plugin=True):
        super().__init__()
        self.profile = profile
        self.plugin = plugin
        self.cloud = None

    def _setUp(self):
        key = (self.profile, self.plugin)
        with _lock:
            cloud = _clouds.get(key)
            if cloud is None:
                external = os.environ.get(DESCRIBE_ENV)
                if external:
                    cloud = _External(external)
                    if cloud.profile != self.profile:
                        raise testtools.TestCase.skipException(
                            'the running cloud (%s) has Glance profile %r, '
                            'this test needs %r' % (
                                external, cloud.profile, self.profile))
                else:
                    # Never two clouds at once in one process.
                    _stop_all()
                    cloud = launcher.Cloud(profile=self.profile,
                                           plugin=self.plugin)
                    cloud.start()
                _clouds[key] = cloud
        self.cloud = cloud


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

    def wait(self, what, fetch, done, failed=(), timeout=WAIT):
        """Poll ``fetch()`` until ``done(value)``; fail on ``failed``."""
        deadline = time.monotonic() + timeout
        value = None
        while time.monotonic() < deadline:
            value = fetch()
            if done(value):
                return value
            status = value.get('status') if isinstance(value, dict) else None
            if status in failed:
                raise AssertionError('%s is %s: %s' % (what, status, value))
            time.sleep(0.5)
        raise AssertionError('%s not done after %.0f s: %s' % (
            what, timeout, value))

    # volumes
    def volume(self, volume_id):
        return self.json('cinder', 'GET', self.project_path(
            '/volumes/%s' % volume_id))['volume']

    def create_volume(self, size=1, image=None, name='cloud-test'):
        body = {'size': size, 'name': name}
        if image:
            body['imageRef'] = image
        vol = self.json('cinder', 'POST', self.project_path('/volumes'),
                        json={'volume': body})['volume']
        return self.wait('volume %s' % vol['id'],
                         lambda: self.volume(vol['id']),
                         lambda v: v['status'] == 'available',
                         failed=('error',))

    def snapshot(self, snapshot_id, ok=(200,)):
        resp = self.call('cinder', 'GET', self.project_path(
            '/snapshots/%s' % snapshot_id), ok=ok)
        return resp.json()['snapshot'] if resp.status_code == 200 else None

    # servers
    def server(self, server_id, ok=(200,)):
        resp = self.call('nova', 'GET', '/servers/%s' % server_id,
                         microversion=COMPUTE, ok=ok)
        return resp.json()['server'] if resp.status_code == 200 else None

    def boot(self, name, bdm=None, image=None):
        body = {'name': name, 'flavorRef':
                self.cloud.ids['flavors']['cloud.tiny'],
                'networks': 'none'}
        if bdm:
            body['block_device_mapping_v2'] = bdm
        if image:
            body['imageRef'] = image
        server = self.json('nova', 'POST', '/servers', microversion=COMPUTE,
                           json={'server': body})['server']
        return self.wait('server %s' % server['id'],
                         lambda: self.server(server['id']),
                         lambda s: s['status'] == 'ACTIVE',
                         failed=('ERROR',))

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


def payload_format(data):
    """What ``qemu-img info`` says the bytes are (``raw`` for none)."""
    with tempfile.NamedTemporaryFile() as fh:
        fh.write(data)
        fh.flush()
        out = subprocess.run(['qemu-img', 'info', '--output', 'json',
                              fh.name], capture_output=True, text=True,
                             check=True, timeout=60).stdout
    return json.loads(out)['format']
