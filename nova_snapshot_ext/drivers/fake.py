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

"""Reference no-op driver, used by tests and demos.

Everything it declares comes from its options, so tests can impersonate
any hypervisor: ``disk_formats`` (default ``raw, qcow2``, the two formats
nova-snapshot-ext can always produce an honest payload for),
``hypervisor_type`` and ``vm_mode`` (default unset: stamp nothing) and
``supports_quiesce`` (default false).  Values are validated like any
driver's: unknown formats or hypervisor types raise ``ConfigurationError``
naming the option.  It makes no hypervisor call, like every driver.
"""

from __future__ import annotations

from oslo_config import cfg

from nova_snapshot_ext import driver

CONFIG_OPTS = [
    cfg.ListOpt(
        'disk_formats',
        default=['raw', 'qcow2'],
        help="""
Glance disk formats the fake hypervisor reads, most preferred first.

Possible values:

* a non-empty list of Glance disk_format names (raw, qcow2, vhd, vhdx,
  vmdk, vdi, iso, ploop, aki, ari, ami) without duplicates
"""),
    cfg.StrOpt(
        'hypervisor_type',
        help="""
Value stamped as image property ``hypervisor_type``; unset stamps nothing.

Possible values:

* a Glance OS::Compute::Hypervisor hypervisor_type (baremetal, hyperv,
  kvm, lxc, powervm, qemu, uml, vmware, vz, xen) or ``zvm``
"""),
    cfg.StrOpt(
        'vm_mode',
        choices=[('hvm', 'fully virtualised guests'),
                 ('xen', 'Xen paravirtualised guests'),
                 ('uml', 'User Mode Linux guests'),
                 ('exe', 'executables in containers')],
        help="""
Value stamped as image property ``vm_mode``; unset stamps nothing.
"""),
    cfg.BoolOpt(
        'supports_quiesce',
        default=False,
        help='Whether the fake hypervisor claims it can quiesce guests.'),
]


class FakeDriver(driver.SnapshotDriver):
    """No-op reference driver configured entirely by options."""

    name = 'fake'
    compute_drivers = ('fake',)
    hypervisor_types = tuple(sorted(driver.HYPERVISOR_TYPES))
    CONFIG_OPTS = CONFIG_OPTS
    formats_option = 'disk_formats'

    @property
    def disk_formats(self) -> tuple[str, ...]:
        return tuple(f.strip() for f in self._option('disk_formats') or ())

    @property
    def hypervisor_type(self) -> str | None:
        return self._option('hypervisor_type') or None

    @property
    def vm_mode(self) -> str | None:
        return self._option('vm_mode') or None

    @property
    def supports_quiesce(self) -> bool:
        return bool(self._option('supports_quiesce'))
