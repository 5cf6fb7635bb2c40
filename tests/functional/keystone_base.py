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

"""A Keystone-backed Glance for a test, in one line.

::

    kg = self.useFixture(KeystoneGlanceFixture(token_expiration=10))
    kg.keystone          # EmbeddedKeystone (real Keystone 30)
    kg.glance            # EmbeddedGlance behind keystonemiddleware
    kg.proxy             # a FaultProxy in front of Glance (with proxy=True)
    path = kg.cli_config(self.tmp, user='demo')

The catalog's image endpoint (``RegionOne``, public and internal) is the
proxy's URL when there is one, else Glance's.
"""

import atexit
import os

import fixtures
import glanceclient

from nova_snapshot_ext.embedded import glance as embedded_glance
from nova_snapshot_ext.embedded import keystone as embedded_keystone
from tests.functional import faultproxy

#: A CLI config authenticating with a password and finding Glance in the
#: catalog (no endpoint_override).
PASSWORD_CONFIG = """\
[snapshot_ext]
driver = {driver}
{snapshot_ext}
[snapshot_ext_glance]
auth_type = password
auth_url = {auth_url}
username = {user}
password = {password}
user_domain_id = default
project_name = {project}
project_domain_id = default
region_name = {region}
valid_interfaces = {interface}
"""
APP_CRED_CONFIG = """\
[snapshot_ext]
driver = {driver}
{snapshot_ext}
[snapshot_ext_glance]
auth_type = v3applicationcredential
auth_url = {auth_url}
application_credential_id = {cred_id}
application_credential_secret = {cred_secret}
region_name = {region}
valid_interfaces = {interface}
"""
SERVICE_USER_CONFIG = """
[snapshot_ext_service_user]
send_service_user_token = true
auth_type = password
auth_url = {auth_url}
username = {user}
password = {password}
user_domain_id = default
project_name = service
project_domain_id = default
"""


class KeystoneGlanceFixture(fixtures.Fixture):
    """A real Keystone and a Glance that validates its tokens.

    :param token_expiration: Keystone's ``[token] expiration`` (seconds).
    :param keystone_limits: Glance's ``use_keystone_limits`` (unified
        limits from this Keystone).
    :param proxy: put a :class:`~tests.functional.faultproxy.FaultProxy`
        in front of Glance and list it in the catalog.
    :param glance_overrides: more :class:`EmbeddedGlance` arguments.
    """

    def __init__(self, token_expiration=3600, keystone_limits=False,
                 proxy=False, **glance_overrides):
        super().__init__()
        self.token_expiration = token_expiration
        self.keystone_limits = keystone_limits
        self.with_proxy = proxy
        self.glance_overrides = glance_overrides
        self.keystone = None
        self.glance = None
        self.proxy = None

    def _setUp(self):
        self.keystone = embedded_keystone.EmbeddedKeystone(
            self.token_expiration)
        self.addCleanup(self.keystone.stop)
        self.keystone.start()
        self.glance = embedded_glance.EmbeddedGlance(
            identity='keystone', keystone=self.keystone,
            keystone_limits=self.keystone_limits, **self.glance_overrides)
        self.addCleanup(self.glance.stop)
        self.glance.start()
        url = self.glance.endpoint
        if self.with_proxy:
            self.proxy = faultproxy.FaultProxy(self.glance.endpoint)
            self.proxy.start()
            self.addCleanup(self.proxy.stop)
            url = self.proxy.endpoint
        self.keystone.set_image_endpoint(url)

    def project_id(self, name='demo'):
        """The id of a template project.

        :param name: its name.
        :returns: a string.
        """
        return self.keystone.ids['projects'][name]

    def client(self, user='admin', project=None):
        """A glanceclient v2 authenticating as a template user (catalog).

        :param user: the user name.
        :param project: the project name (the user's own if None).
        :returns: a ``glanceclient.v2.client.Client`` (straight to Glance,
            not through the proxy).
        """
        return glanceclient.Client(
            '2', session=self.keystone.session(user, project),
            endpoint_override=self.glance.endpoint)

    def images_of(self, project='demo'):
        """Every image (hidden ones too) a project owns, seen by admin.

        :param project: a project name.
        :returns: a list of image dicts.
        """
        admin = self.client('admin')
        found = {}
        for hidden in (False, True):
            for image in admin.images.list(filters={
                    'owner': self.project_id(project), 'os_hidden': hidden}):
                found[image['id']] = dict(image)
        return list(found.values())

    def cli_config(self, directory, user='demo', project=None,
                   driver='hyperv', region=embedded_keystone.REGION,
                   interface='public', password=None,
                   app_credential=None, service_user=None, extra='',
                   disk_formats=None):
        """Write a CLI config that authenticates through this Keystone.

        :param directory: where to write ``snapshot-<user>.conf``.
        :param user: a template user.
        :param project: the project to scope to (the user's own if None).
        :param driver: ``[snapshot_ext] driver``.
        :param region: ``region_name``.
        :param interface: ``valid_interfaces``.
        :param password: the password (the template's if None).
        :param app_credential: ``(id, secret)``: use
            ``v3applicationcredential`` instead of a password.
        :param service_user: a user whose token goes along as the
            service token (``[snapshot_ext_service_user]``).
        :param extra: text appended (more sections).
        :param disk_formats: ``[snapshot_ext] disk_formats`` (a list).
        :returns: the path.
        """
        if project is None:
            grant = embedded_keystone.USERS.get(user)
            project = grant[0] if grant else 'demo'
        values = dict(driver=driver, auth_url=self.keystone.url, user=user,
                      password=password or embedded_keystone.PASSWORD,
                      project=project, region=region, interface=interface,
                      snapshot_ext='disk_formats = %s\n' % ','.join(
                          disk_formats) if disk_formats else '')
        if app_credential:
            text = APP_CRED_CONFIG.format(cred_id=app_credential[0],
                                          cred_secret=app_credential[1],
                                          **values)
        else:
            text = PASSWORD_CONFIG.format(**values)
        if service_user:
            text += SERVICE_USER_CONFIG.format(
                auth_url=self.keystone.url, user=service_user,
                password=embedded_keystone.PASSWORD)
        path = os.path.join(directory, 'snapshot-%s.conf' % user)
        with open(path, 'w', encoding='utf-8') as fh:
            fh.write(text + extra)
        return path


_shared = {}


def shared(**kwargs):
    """A :class:`KeystoneGlanceFixture` shared by the tests of a process.

    Started on first use, stopped when the process exits (starting a
    Keystone and a Glance takes 10-30 s on a loaded machine).

    :param kwargs: :class:`KeystoneGlanceFixture` arguments.
    :returns: the set-up fixture.
    """
    key = tuple(sorted(kwargs.items()))
    fixture = _shared.get(key)
    if fixture is None:
        fixture = KeystoneGlanceFixture(**kwargs)
        fixture.setUp()
        atexit.register(fixture.cleanUp)
        _shared[key] = fixture
    return fixture
