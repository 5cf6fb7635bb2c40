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

"""IBM z/VM driver (Nova ``zvm.ZVMDriver``).

Declares ``hypervisor_type = zvm`` and ``vm_mode = hvm``: Nova's z/VM driver
reports ``(s390x, zvm, hvm)`` in ``supported_instances``, so the
``ImagePropertiesFilter`` needs ``zvm``.  ``zvm`` is a Nova ``HVType``
value that Glance's ``OS::Compute::Hypervisor`` metadef does not list
(see :data:`nova_snapshot_ext.driver.NOVA_ONLY_HYPERVISOR_TYPES`).

Formats ``raw`` only: the z/VM driver deploys images through z/VM Cloud
Connector, which takes raw disk images only (Nova's z/VM driver documents
that images must be raw).

No quiesce: the z/VM driver does not implement ``quiesce``.

An operator can later pin formats with a core ``[snapshot_ext]`` option.
"""

from __future__ import annotations

from nova_snapshot_ext import driver


class ZVMDriver(driver.SnapshotDriver):
    """IBM z/VM hosts (s390x)."""

    name = 'zvm'
    compute_drivers = ('zvm',)
    hypervisor_types = ('zvm',)
    CONFIG_OPTS = []

    @property
    def disk_formats(self) -> tuple[str, ...]:
        return ('raw',)

    @property
    def hypervisor_type(self) -> str:
        return 'zvm'

    @property
    def vm_mode(self) -> str:
        return 'hvm'
