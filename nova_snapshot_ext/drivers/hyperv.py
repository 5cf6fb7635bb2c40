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

"""Microsoft Hyper-V driver (``hyperv.HyperVDriver`` and the out-of-tree
``compute_hyperv.driver.HyperVDriver``).

Declares ``hypervisor_type = hyperv`` (metadef value; Nova's Hyper-V driver
reports ``(arch, hyperv, hvm)`` in ``supported_instances``) and
``vm_mode = hvm`` (Hyper-V only runs fully virtualised guests).

Formats ``vhdx, vhd, iso``.  Hyper-V boots VHDX and VHD virtual disks, the
two formats Nova's Hyper-V driver advertises
(``supports_image_type_vhdx``/``_vhd``).  VHDX comes first: it is the
native format since Windows Server 2012 and the only one generation 2 VMs
boot from; VHD remains readable for generation 1 VMs.  iso is last:
Hyper-V mounts ISO files only as read-only DVD media; whether a given Nova
Hyper-V release boots an iso image directly is not relied upon here, which
is why it never comes before a disk format.

No quiesce: Nova's Hyper-V driver does not implement ``quiesce`` (only
libvirt kvm/qemu are ``complete`` for quiesce in Nova's support matrix),
so Nova snapshots the volumes without quiescing.

An operator can later pin or reorder the formats with a core
``[snapshot_ext]`` option.
"""

from __future__ import annotations

from nova_snapshot_ext import driver


class HyperVDriver(driver.SnapshotDriver):
    """Microsoft Hyper-V hosts."""

    name = 'hyperv'
    #: ``compute_hyperv`` is the out-of-tree Hyper-V driver's shim module.
    compute_drivers = ('hyperv', 'compute_hyperv')
    hypervisor_types = ('hyperv',)
    CONFIG_OPTS = []

    @property
    def disk_formats(self) -> tuple[str, ...]:
        return ('vhdx', 'vhd', 'iso')

    @property
    def hypervisor_type(self) -> str:
        return 'hyperv'

    @property
    def vm_mode(self) -> str:
        return 'hvm'
