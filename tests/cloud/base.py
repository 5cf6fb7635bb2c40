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

import fixtures
from testtools import content as testtools_content

from nova_snapshot_ext.embedded.cloud import client
from nova_snapshot_ext.embedded.cloud import launcher

DESCRIBE_ENV = 'NOVA_SNAPSHOT_EXT_CLOUD_DESCRIBE'
COMPUTE = client.COMPUTE
Api = client.Api
_clouds = {}
_lock = threading.Lock()


class _External(object):
    """A cloud started by ``serve --cloud`` (from its JSON)."""

    def __init__(self, path):
        with open(path) as fh:
            self.info = json.load(fh)
        self.profile = self.info['profile']
        self.stack = self.info.get('stack', 'fake')
        self.location_url = self.info.get('location_url')
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
            proxy = getattr(cloud, 'fault_proxy', None)
            if proxy is not None:
                proxy.stop()
            cloud.stop()
    _clouds.clear()


atexit.register(_stop_all)


def attach_errors_on_failure(test, cloud):
    """When ``test`` fails, attach its cloud's error lines as details.

    One detail per service log (``errors in <name>.log``): the ERROR and
    CRITICAL lines written from now until the failure.  A running cloud
    given by its JSON has no logs here: nothing is attached.
    """
    procs = getattr(cloud, 'procs', None)
    if procs is None:
        return
    marks = procs.log_marks()

    def attach(exc_info):
        for name, text in sorted(procs.errors_since(marks).items()):
            test.addDetail('errors in ' + name,
                           testtools_content.text_content(text))

    test.addOnException(attach)


def skip_unless_cloud(test, profile, plugin=True, activation='upload',
                      glance_proxy=False, stack='fake', glance_store='file'):
    """Skip ``test`` when the running cloud it was given cannot serve it.

    With ``NOVA_SNAPSHOT_EXT_CLOUD_DESCRIBE`` set, only tests of that
    cloud's Glance profile, nova-api (plugin or stock), activation
    method, stack and Glance store run, and none that needs a fault proxy
    before nova-api's Glance.
    """
    external = os.environ.get(DESCRIBE_ENV)
    if not external:
        return
    if glance_proxy:
        test.skipTest('needs a cloud whose nova-api reaches Glance through '
                      'a fault proxy (not %s)' % external)
    with open(external) as fh:
        info = json.load(fh)
    running = (info['profile'], info['plugin'],
               info.get('activation', 'upload'), info.get('stack', 'fake'),
               info.get('glance_store', 'file'))
    wanted = (profile, plugin, activation, stack, glance_store)
    if running != wanted:
        test.skipTest('the running cloud (%s) is (Glance profile, plugin, '
                      'activation, stack, Glance store) %r, this test needs '
                      '%r' % (external, running, wanted))


class CloudFixture(fixtures.Fixture):
    """The running cloud: ``cloud = self.useFixture(CloudFixture()).cloud``.

    :param profile: the Glance profile (``'default'``, ``'no-raw'``, ...).
    :param plugin: nova-api with the plugin's filter (False: stock Nova).
    :param activation: the plugin's ``activation_method``
        (:data:`launcher.ACTIVATIONS`).
    :param glance_proxy: nova-api reaches Glance through a fault proxy
        (``cloud.fault_proxy``, :class:`tests.functional.faultproxy.
        FaultProxy`; rules are cleared when the test ends).
    :param stack: ``'fake'`` or ``'real'`` (Ceph and libvirt/QEMU).
    :param glance_store: ``'file'`` or ``'rbd'`` (real stack only).
    """

    def __init__(self, profile='default', plugin=True, activation='upload',
                 glance_proxy=False, stack='fake', glance_store='file'):
        super().__init__()
        self.profile = profile
        self.plugin = plugin
        self.activation = activation
        self.glance_proxy = glance_proxy
        self.stack = stack
        self.glance_store = glance_store
        self.cloud = None

    def _setUp(self):
        key = (self.profile, self.plugin, self.activation, self.glance_proxy,
               self.stack, self.glance_store)
        with _lock:
            cloud = _clouds.get(key)
            if cloud is None:
                external = os.environ.get(DESCRIBE_ENV)
                if external:
                    cloud = _External(external)
                    if cloud.profile != self.profile:
                        raise ValueError(
                            'the running cloud (%s) has Glance profile %r, '
                            'this test needs %r (see skip_unless_cloud)' % (
                                external, cloud.profile, self.profile))
                else:
                    # Never two clouds at once in one process.
                    _stop_all()
                    cloud = self._start()
                _clouds[key] = cloud
        self.cloud = cloud
        proxy = getattr(cloud, 'fault_proxy', None)
        if proxy is not None:
            self.addCleanup(proxy.clear)

    def _start(self):
        from nova_snapshot_ext.embedded import process
        from tests.functional import faultproxy

        port = process.free_ports(1)[0] if self.glance_proxy else None
        cloud = launcher.Cloud(profile=self.profile, plugin=self.plugin,
                               activation=self.activation,
                               nova_glance_port=port, stack=self.stack,
                               glance_store=self.glance_store)
        cloud.start()
        if port is not None:
            try:
                cloud.fault_proxy = faultproxy.FaultProxy(
                    cloud.glance.endpoint, port=port).start()
            except Exception:
                cloud.stop()
                raise
        return cloud


def ceph_of(cloud):
    """The Ceph cluster of a real-stack cloud, to read from.

    :returns: a :class:`~nova_snapshot_ext.embedded.cloud.ceph.Ceph`.
    """
    from nova_snapshot_ext.embedded.cloud import ceph

    if isinstance(cloud, _External):
        return ceph.Ceph.of_conf(cloud.info['ceph_conf'])
    return cloud.real.ceph


def agent_status(cloud, instance_name):
    """The QEMU guest agent's ``guest-fsfreeze-status`` of a domain.

    Asked through the real-stack cloud's own libvirtd.

    :returns: ``'thawed'`` or ``'frozen'``.
    """
    from nova_snapshot_ext.embedded.cloud import libvirtd

    if isinstance(cloud, _External):
        daemon = libvirtd.Libvirtd.of_uri(cloud.info['libvirt_uri'])
    else:
        daemon = cloud.real.libvirtd
    out = daemon.virsh('qemu-agent-command', instance_name,
                       '{"execute": "guest-fsfreeze-status"}')
    return json.loads(out)['return']


def payload_format(data):
    """What ``qemu-img info`` says the bytes are (``raw`` for none)."""
    with tempfile.NamedTemporaryFile() as fh:
        fh.write(data)
        fh.flush()
        out = subprocess.run(['qemu-img', 'info', '--output', 'json',
                              fh.name], capture_output=True, text=True,
                             check=True, timeout=60).stdout
    return json.loads(out)['format']
