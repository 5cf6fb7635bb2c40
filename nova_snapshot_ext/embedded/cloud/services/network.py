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

"""The network stand-in: a minimal endpoint of the ``network`` type.

:mod:`nova_snapshot_ext.embedded.cloud.network` run as a process: what
Nova and Tempest ask of Neutron when servers boot with ``networks:
none`` (no port, no address).
"""

from nova_snapshot_ext.embedded.cloud import network as network_mod
from nova_snapshot_ext.embedded.cloud.services import base


class Network(base.CloudService):
    """The ``network`` endpoint (a stand-in, said in ``cloud.rst``)."""

    name = 'network'
    words = 'the network stand-in endpoint'
    ports = ('network',)
    backing = True
    catalog_entries = (('neutron', 'network'),)

    def url(self):
        return 'http://127.0.0.1:%d' % self.port()

    def start(self):
        process = self.cloud.procs.start(
            'network', [self.cloud.python, network_mod.__file__,
                        str(self.port())], env=self.env())
        self.wait_http(process, self.url() + '/')
