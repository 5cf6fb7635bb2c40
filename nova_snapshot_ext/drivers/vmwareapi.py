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

"""VMware vSphere driver (Nova ``vmwareapi.VMwareVCDriver``).

Declares ``hypervisor_type = vmware`` and ``vm_mode = hvm``: Nova's VMware
driver reports ``(arch, vmware, hvm)`` in its ``supported_instances`` and
the ``OS::Compute::Hypervisor`` metadef lists ``vmware``.

Formats ``vmdk, iso``.  Nova's VMware driver boots Glance images of
``disk_format`` vmdk (its native virtual disk; Glance only accepts the
single-file ``streamOptimized``/``monolithicSparse`` subformats by default,
``[image_format] vmdk_allowed_types``) and attaches iso images as a CD-ROM;
it reads no other format, so vmdk is preferred and iso is the fallback.

No quiesce: Nova's VMware driver does not implement ``quiesce`` (the
support matrix marks it missing), so Nova snapshots the volumes without
quiescing.

An operator can later pin or reorder the formats with a core
``[snapshot_ext]`` option.
"""

from __future__ import annotations

from nova_snapshot_ext import driver


class VMwareAPIDriver(driver.SnapshotDriver):
    """VMware vCenter/ESXi hosts."""

    name = 'vmwareapi'
    compute_drivers = ('vmwareapi',)
    hypervisor_types = ('vmware',)
    CONFIG_OPTS = []

    @property
    def disk_formats(self) -> tuple[str, ...]:
        return ('vmdk', 'iso')

    @property
    def hypervisor_type(self) -> str:
        return 'vmware'

    @property
    def vm_mode(self) -> str:
        return 'hvm'
