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

"""libvirt driver: KVM, QEMU, LXC and Virtuozzo (``virt_type=parallels``).

What it declares, per ``virt_type``, and why:

``kvm`` / ``qemu``
    ``hypervisor_type = qemu``, ``vm_mode = hvm``.  Nova's libvirt driver
    builds each host's ``supported_instances`` from the libvirt
    capabilities, one entry per guest domain type; a KVM host lists both
    the ``kvm`` and the ``qemu`` domain types, a TCG-only host only
    ``qemu``.  So ``qemu`` matches every libvirt/QEMU host in the
    ``ImagePropertiesFilter`` while ``kvm`` would exclude TCG hosts.  This
    follows the Nova scheduler docs (ImagePropertiesFilter) and
    nova-facts §7: "qemu covers both QEMU and KVM".

    Formats ``qcow2, raw, vmdk, vdi, vhdx, vhd, iso``.  qcow2 comes first
    because it is the format of libvirt's default image backend
    (``[libvirt] images_type = default`` with ``use_cow_images = True``)
    and of Nova's own pre-raw empty snapshot image; raw is what
    ``force_raw_images`` and the rbd/lvm backends turn every image into.
    vmdk is listed by Nova's KVM admin guide as a supported image format;
    vdi, vhdx and vhd (qemu's ``vpc``) are read by qemu's block layer and
    are converted by ``qemu-img`` when Nova fetches an image.  iso comes
    last: it only boots as a read-only CD-ROM.

    Quiesce: yes.  Nova's ``_can_quiesce`` accepts only kvm and qemu; the
    guest still needs the QEMU guest agent (``hw_qemu_guest_agent``),
    which Nova checks when it quiesces.

``lxc``
    ``hypervisor_type = lxc``, ``vm_mode = exe`` (Nova's LXC guests are
    ``VMMode.EXE``; the metadef describes ``exe`` as "the mode used by
    LXC").  Formats ``raw, qcow2``: Nova mounts an LXC root image on the
    host through a loop device (raw) or ``qemu-nbd`` (qcow2); raw comes
    first because it needs no nbd module.  No quiesce.

``parallels`` (Virtuozzo / OpenVZ)
    ``hypervisor_type = vz``: libvirt reports the ``vz`` domain type and
    Nova canonicalises it to ``HVType.VIRTUOZZO = 'vz'``, which Glance's
    metadef lists (nova-facts §7, field report E23).  ``vm_mode`` comes
    from ``vz_vm_mode`` (``hvm`` for VMs, ``exe`` for containers).
    Formats start with ``ploop`` (Nova sets ``supports_image_type_ploop``
    only for ``virt_type=parallels``).  Nova's Virtuozzo guide configures
    containers with ``images_type = ploop`` and VMs with
    ``images_type = qcow2``, so VMs read ``ploop, qcow2, raw`` and
    containers ``ploop, raw`` (a raw image is converted into the ploop
    backend).  No quiesce: ``_can_quiesce`` refuses every ``virt_type``
    but kvm/qemu and the support matrix marks quiesce ``missing`` for
    ``libvirt-vz-vm``/``libvirt-vz-ct``.

``virt_type`` defaults to Nova's own ``[libvirt] virt_type`` when the
consumer (nova-api) has that option registered, else ``kvm`` (Nova's
default).  An operator can later pin or reorder the formats with a core
``[snapshot_ext]`` option; this module only declares what the hypervisor
reads.
"""

from __future__ import annotations

from oslo_config import cfg
from oslo_log import log as logging

from nova_snapshot_ext import driver
from nova_snapshot_ext import exception
from nova_snapshot_ext.i18n import _

LOG = logging.getLogger(__name__)

VIRT_TYPES = ('kvm', 'qemu', 'lxc', 'parallels')

#: Nova's default ``[libvirt] virt_type``.
DEFAULT_VIRT_TYPE = 'kvm'

_QEMU_FORMATS = ('qcow2', 'raw', 'vmdk', 'vdi', 'vhdx', 'vhd', 'iso')

_FORMATS = {
    'kvm': _QEMU_FORMATS,
    'qemu': _QEMU_FORMATS,
    'lxc': ('raw', 'qcow2'),
}

_VZ_FORMATS = {
    'hvm': ('ploop', 'qcow2', 'raw'),
    'exe': ('ploop', 'raw'),
}

_HYPERVISOR_TYPES = {
    'kvm': 'qemu',
    'qemu': 'qemu',
    'lxc': 'lxc',
    'parallels': 'vz',
}

CONFIG_OPTS = [
    cfg.StrOpt(
        'virt_type',
        choices=[
            ('kvm', 'KVM through libvirt; images are stamped '
                    'hypervisor_type=qemu, which Nova matches on KVM and '
                    'QEMU hosts.'),
            ('qemu', 'QEMU (TCG) through libvirt.'),
            ('lxc', 'Linux containers through libvirt (vm_mode=exe).'),
            ('parallels', 'Virtuozzo/OpenVZ through libvirt '
                          '(hypervisor_type=vz).'),
        ],
        help="""
The libvirt domain type of the compute hosts whose snapshots this service
makes. It selects the disk formats the hypervisor reads and the
hypervisor_type/vm_mode stamped on snapshot images.

Unset means: use Nova's own ``[libvirt] virt_type`` when this service runs
inside Nova with that option registered, else ``kvm``.

Related options:

* ``[snapshot_ext_libvirt] vz_vm_mode``
"""),
    cfg.StrOpt(
        'vz_vm_mode',
        default='hvm',
        choices=[
            ('hvm', 'Virtuozzo virtual machines.'),
            ('exe', 'Virtuozzo system containers.'),
        ],
        help="""
The kind of Virtuozzo instance snapshotted, stamped as image property
``vm_mode``. Only used when the virt_type is ``parallels``.

Related options:

* ``[snapshot_ext_libvirt] virt_type``
"""),
]


class LibvirtDriver(driver.SnapshotDriver):
    """libvirt: KVM, QEMU, LXC and Virtuozzo hosts."""

    name = 'libvirt'
    compute_drivers = ('libvirt',)
    matrix_variants = (
        ('libvirt (kvm)', {}),
        ('libvirt (lxc)', {'virt_type': 'lxc'}),
        ('libvirt (parallels, vz)', {'virt_type': 'parallels'}),
    )
    hypervisor_types = ('kvm', 'qemu', 'lxc', 'vz')
    CONFIG_OPTS = CONFIG_OPTS
    formats_option = 'virt_type'

    @property
    def virt_type(self) -> str:
        """Effective libvirt ``virt_type``.

        :returns: one of ``kvm``, ``qemu``, ``lxc``, ``parallels``: our
            option if set, else Nova's ``[libvirt] virt_type`` if
            registered on the consumer's conf and set, else ``kvm``.
        :raises ConfigurationError: the value found is not one of those
            (Nova's removed ``xen``/``uml`` types, for example); the error
            names the option it came from.
        """
        value = self._option('virt_type')
        if value:
            return value
        # Outside nova-api nobody registers [libvirt]: asked, not caught
        # (an exception per read, and the drivers are read on every
        # snapshot).
        if 'libvirt' not in self.conf or (
                'virt_type' not in self.conf.libvirt):
            return DEFAULT_VIRT_TYPE
        try:
            value = self.conf.libvirt.virt_type
        except (cfg.NoSuchOptError, cfg.NoSuchGroupError):
            return DEFAULT_VIRT_TYPE
        except (cfg.ConfigFileValueError, ValueError) as exc:
            raise exception.ConfigurationError(
                group='libvirt', option='virt_type',
                reason=str(exc)) from exc
        if not value:
            return DEFAULT_VIRT_TYPE
        value = str(value).lower()
        if value not in VIRT_TYPES:
            raise exception.ConfigurationError(
                group='libvirt', option='virt_type',
                reason=_("'%(value)s' has no snapshot driver support; set "
                         "[%(group)s] virt_type to one of %(choices)s") %
                {'value': value, 'group': self.group_name(),
                 'choices': ', '.join(VIRT_TYPES)})
        return value

    @property
    def disk_formats(self) -> tuple[str, ...]:
        virt_type = self.virt_type
        if virt_type == 'parallels':
            return _VZ_FORMATS[self._option('vz_vm_mode')]
        return _FORMATS[virt_type]

    @property
    def hypervisor_type(self) -> str:
        return _HYPERVISOR_TYPES[self.virt_type]

    @property
    def vm_mode(self) -> str:
        virt_type = self.virt_type
        if virt_type == 'lxc':
            return 'exe'
        if virt_type == 'parallels':
            return self._option('vz_vm_mode')
        return 'hvm'

    @property
    def supports_quiesce(self) -> bool:
        return self.virt_type in ('kvm', 'qemu')
