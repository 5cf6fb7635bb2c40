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

"""The cloud's Glance: :class:`~nova_snapshot_ext.embedded.glance.
EmbeddedGlance` with Keystone identity, on the cloud's port.

Its profile (``Cloud(profile=...)``) sets the disk formats; a location
mode adds the ``http`` store (the location object), the real stack's
``glance_store='rbd'`` the RBD store.
"""

import os

from nova_snapshot_ext.embedded.cloud.services import base
from nova_snapshot_ext.embedded import glance as glance_mod


class _KeystoneOptions(object):
    """What EmbeddedGlance's ``identity='keystone'`` reads from Keystone."""

    def __init__(self, url, password):
        self.url = url
        self.password = password

    def glance_options(self):
        section = {'auth_url': self.url, 'auth_type': 'password',
                   'username': 'glance', 'password': self.password,
                   'user_domain_id': 'default', 'project_name': 'service',
                   'project_domain_id': 'default',
                   'www_authenticate_uri': self.url,
                   'service_token_roles_required': 'true'}
        return {'keystone_authtoken': section}


class Glance(base.CloudService):
    """Images (glance-api in its own process group)."""

    name = 'glance'
    words = 'Glance'
    ports = ('glance',)
    user = 'glance'
    catalog_entries = (('glance', 'image'),)

    def __init__(self, cloud):
        super().__init__(cloud)
        self.server = None

    def url(self):
        return 'http://127.0.0.1:%d' % self.port()

    def start(self):
        cloud = self.cloud
        kwargs = dict(glance_mod.PROFILES[cloud.profile])
        if cloud.location_url is not None:
            # Glance reads the location object through its http store.
            kwargs.update(http_store=True, allowed_hosts=('127.0.0.1',))
        if cloud.real is not None:
            kwargs.update(rbd_store=cloud.real.glance_rbd_store())
        kwargs.update(python=cloud.python, identity='keystone',
                      keystone=_KeystoneOptions(
                          cloud.service('keystone').url(), cloud.password),
                      port=self.port())
        self.server = glance_mod.EmbeddedGlance(
            os.path.join(cloud.base_dir, 'glance'), **kwargs)
        self.server.profile_name = cloud.profile
        self.server.start()
        cloud.procs.other_logs.append(self.server.log_file)

    def stop(self):
        server, self.server = self.server, None
        if server is not None:
            server.stop()
