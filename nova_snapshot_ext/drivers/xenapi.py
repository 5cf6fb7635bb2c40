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

"""XenServer/XCP-ng driver (legacy Nova ``xenapi.XenAPIDriver``).

Nova removed the XenAPI driver in Victoria; this driver remains for old
deployments and for clouds whose Glance is still configured the Xen way
(field report E03: ``disk_formats = vhd,ami,ari,aki``).

Declares ``hypervisor_type = xen`` (metadef value; Nova's ``HVType``
canonicalises ``xapi`` to ``xen``) and ``vm_mode`` from option
``vm_mode``: ``hvm`` (default) for fully virtualised guests, ``xen`` for
paravirtualised ones.  Nova's XenAPI driver reported both ``(arch, xen,
xen)`` and ``(arch, xen, hvm)`` in ``supported_instances``.

Formats ``vhd, raw, iso``: XenServer stores VDIs as VHD and Nova's XenAPI
driver uploaded and fetched VHD chains (``disk_format=vhd``), so vhd comes
first; it also fetched ``raw`` disk images and ``iso`` images
(``ImageType.DISK_RAW``/``DISK_ISO``), iso last because it only boots as a
CD-ROM.  The ``vhd`` label was also what Nova's pre-raw code picked for Xen
clouds (nova-facts §2/§4, LP#1616938).

No quiesce: the XenAPI driver did not implement ``quiesce``.

An operator can later pin or reorder the formats with a core
``[snapshot_ext]`` option.
"""

from __future__ import annotations

from oslo_config import cfg

from nova_snapshot_ext import driver

CONFIG_OPTS = [
    cfg.StrOpt(
        'vm_mode',
        default='hvm',
        choices=[
            ('hvm', 'Fully virtualised (HVM) guests.'),
            ('xen', 'Xen paravirtualised (PV) guests.'),
        ],
        help="""
The guest mode stamped as image property ``vm_mode`` on snapshot images,
matched by Nova's ImagePropertiesFilter against the hosts'
supported_instances.
"""),
]


class XenAPIDriver(driver.SnapshotDriver):
    """XenServer / XCP-ng hosts (legacy)."""

    name = 'xenapi'
    compute_drivers = ('xenapi',)
    hypervisor_types = ('xen',)
    CONFIG_OPTS = CONFIG_OPTS

    @property
    def disk_formats(self) -> tuple[str, ...]:
        return ('vhd', 'raw', 'iso')

    @property
    def hypervisor_type(self) -> str:
        return 'xen'

    @property
    def vm_mode(self) -> str:
        return self._option('vm_mode')
