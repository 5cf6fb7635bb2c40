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

"""Real storage and hypervisor: Ceph and libvirtd (``stack='real'``).

:class:`~nova_snapshot_ext.embedded.cloud.realstack.RealStack` as a
service of the cloud: the guest's disk and the bindings are prepared
when configured, Ceph and libvirtd (with the Ceph user's secret) start
before any OpenStack service, and what Cinder, Glance and Nova read of
them is :attr:`real`'s.
"""

import itertools

from nova_snapshot_ext.embedded.cloud import realstack
from nova_snapshot_ext.embedded.cloud.services import base


class Storage(base.CloudService):
    """Ceph RBD and libvirt/QEMU (the real stack only)."""

    name = 'ceph_libvirt'
    words = ('Ceph and libvirtd (the first libvirtd probes QEMU for about '
             '8 s)')
    ports = ('ceph_v2', 'ceph_v1', 'libvirt')
    backing = True
    stacks = ('real',)
    programs = dict(itertools.chain.from_iterable(
        programs.items() for programs in realstack.PROGRAM_MAPS))

    def __init__(self, cloud):
        super().__init__(cloud)
        self.real = realstack.RealStack(cloud.procs, cloud.base_dir,
                                        cloud.ports, cloud.glance_store)

    def configure(self, template):
        self.cloud.step('guest', self.real.prepare, self.cloud.python)

    def start(self):
        self.real.start()

    def stop(self):
        self.real.cleanup()
