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

"""Bare metal driver (Nova ``ironic.IronicDriver``).

Declares ``hypervisor_type = baremetal`` and ``vm_mode = hvm``: Nova's
Ironic driver reports ``(cpu_arch, baremetal, hvm)`` as each node's
``supported_instances`` (the compute node's own ``hypervisor_type`` is
``ironic``, but the ``ImagePropertiesFilter`` compares against
``supported_instances``); the metadef lists ``baremetal`` for "physical
provisioning".

Formats ``raw, qcow2, iso``: the Ironic Python Agent writes whole-disk
images of these formats.  raw first because the agent can stream it to
disk without conversion; qcow2 is converted with ``qemu-img`` on the
node; iso is last (ramdisk/ISO boot interfaces).  Ironic does not boot a
volume-backed snapshot's (empty) image data anyway; the declaration only
has to be a format the deployment reads.

No quiesce: Nova's Ironic driver does not implement ``quiesce``.

An operator can later pin or reorder the formats with a core
``[snapshot_ext]`` option.
"""

from __future__ import annotations

from nova_snapshot_ext import driver


class IronicDriver(driver.SnapshotDriver):
    """Bare metal nodes managed by Ironic."""

    name = 'ironic'
    compute_drivers = ('ironic',)
    hypervisor_types = ('baremetal',)
    CONFIG_OPTS = []

    @property
    def disk_formats(self) -> tuple[str, ...]:
        return ('raw', 'qcow2', 'iso')

    @property
    def hypervisor_type(self) -> str:
        return 'baremetal'

    @property
    def vm_mode(self) -> str:
        return 'hvm'
