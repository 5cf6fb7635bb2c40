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

"""Contract and driver-specific tests for every in-tree driver."""

from __future__ import annotations

import json
import os

import fixtures
from oslo_config import cfg
import testtools

from nova_snapshot_ext import driver as base_driver
from nova_snapshot_ext.drivers import fake
from nova_snapshot_ext.drivers import hyperv
from nova_snapshot_ext.drivers import ironic
from nova_snapshot_ext.drivers import libvirt
from nova_snapshot_ext.drivers import vmwareapi
from nova_snapshot_ext.drivers import xenapi
from nova_snapshot_ext.drivers import zvm
from nova_snapshot_ext import exception
from tests.unit.drivers import contract


def _write_config(test: testtools.TestCase, text: str) -> str:
    tmp = test.useFixture(fixtures.TempDir()).path
    path = os.path.join(tmp, 'snapshot-ext.conf')
    with open(path, 'w') as f:
        f.write(text)
    return path


class TestFakeDriver(contract.DriverContractMixin, testtools.TestCase):
    driver_class = fake.FakeDriver

    def test_defaults(self) -> None:
        drv = self.make_driver()
        self.assertEqual(('raw', 'qcow2'), drv.disk_formats)
        self.assertIsNone(drv.hypervisor_type)
        self.assertEqual({}, drv.image_properties())
        self.assertFalse(drv.supports_quiesce)

    def test_options_drive_declaration(self) -> None:
        self.flags(
            disk_formats=['vhd', 'raw'],
            hypervisor_type='xen', vm_mode='xen', supports_quiesce=True)
        drv = self.make_driver()
        self.assertEqual(('vhd', 'raw'), drv.disk_formats)
        self.assertEqual({'hypervisor_type': 'xen', 'vm_mode': 'xen'},
                         drv.image_properties())
        self.assertTrue(drv.supports_quiesce)

    def test_unknown_disk_format(self) -> None:
        self.flags(disk_formats=['raw', 'qcow3'])
        exc = self.assertRaises(exception.ConfigurationError,
                                self.make_driver)
        self.assertEqual('disk_formats', exc.kwargs['option'])
        self.assertEqual('snapshot_ext_fake', exc.kwargs['group'])
        self.assertIn('qcow3', str(exc))

    def test_empty_disk_formats(self) -> None:
        self.flags(disk_formats=[])
        exc = self.assertRaises(exception.ConfigurationError,
                                self.make_driver)
        self.assertEqual('disk_formats', exc.kwargs['option'])

    def test_duplicate_disk_formats(self) -> None:
        self.flags(disk_formats=['raw', 'qcow2', 'raw'])
        exc = self.assertRaises(exception.ConfigurationError,
                                self.make_driver)
        self.assertEqual('disk_formats', exc.kwargs['option'])

    def test_unknown_hypervisor_type(self) -> None:
        self.flags(hypervisor_type='virtualbox')
        exc = self.assertRaises(exception.ConfigurationError,
                                self.make_driver)
        self.assertEqual('hypervisor_type', exc.kwargs['option'])

    def test_bad_choice_in_config_file(self) -> None:
        path = _write_config(self, '[snapshot_ext_fake]\nvm_mode = pv\n')
        self.conf(args=['--config-file', path], default_config_files=[],
                  default_config_dirs=[])
        exc = self.assertRaises(exception.ConfigurationError,
                                self.make_driver)
        self.assertEqual('vm_mode', exc.kwargs['option'])
        self.assertEqual('snapshot_ext_fake', exc.kwargs['group'])


class TestLibvirtDriver(contract.DriverContractMixin, testtools.TestCase):
    driver_class = libvirt.LibvirtDriver

    def _set(self, **kw: object) -> None:
        self.flags(**kw)

    def _register_nova_virt_type(self, value: str | None) -> None:
        # What nova.conf.libvirt registers in nova-api (simplified).
        self.conf_fixture.register_opt(
            cfg.StrOpt('virt_type', default='kvm'), group='libvirt')
        self.conf_fixture.config(group='libvirt', virt_type=value)

    def test_default_is_kvm(self) -> None:
        drv = self.make_driver()
        self.assertEqual('kvm', drv.virt_type)
        self.assertEqual('qemu', drv.hypervisor_type)
        self.assertEqual({'hypervisor_type': 'qemu', 'vm_mode': 'hvm'},
                         drv.image_properties())
        self.assertEqual(
            ('qcow2', 'raw', 'vmdk', 'vdi', 'vhdx', 'vhd', 'iso'),
            drv.disk_formats)
        self.assertTrue(drv.supports_quiesce)

    def test_qemu(self) -> None:
        self._set(virt_type='qemu')
        drv = self.make_driver()
        self.assertEqual('qemu', drv.hypervisor_type)
        self.assertEqual('qcow2', drv.disk_formats[0])
        self.assertTrue(drv.supports_quiesce)

    def test_lxc(self) -> None:
        self._set(virt_type='lxc')
        drv = self.make_driver()
        self.assertEqual({'hypervisor_type': 'lxc', 'vm_mode': 'exe'},
                         drv.image_properties())
        self.assertEqual(('raw', 'qcow2'), drv.disk_formats)
        self.assertFalse(drv.supports_quiesce)

    def test_parallels_vm(self) -> None:
        self._set(virt_type='parallels')
        drv = self.make_driver()
        self.assertEqual('vz', drv.hypervisor_type)
        self.assertEqual('ploop', drv.disk_formats[0])
        self.assertEqual(('ploop', 'qcow2', 'raw'), drv.disk_formats)
        self.assertEqual({'hypervisor_type': 'vz', 'vm_mode': 'hvm'},
                         drv.image_properties())
        self.assertFalse(drv.supports_quiesce)

    def test_parallels_container(self) -> None:
        self._set(virt_type='parallels', vz_vm_mode='exe')
        drv = self.make_driver()
        self.assertEqual({'hypervisor_type': 'vz', 'vm_mode': 'exe'},
                         drv.image_properties())
        self.assertEqual(('ploop', 'raw'), drv.disk_formats)
        self.assertFalse(drv.supports_quiesce)

    def test_follows_nova_virt_type(self) -> None:
        self._register_nova_virt_type('parallels')
        drv = self.make_driver()
        self.assertEqual('parallels', drv.virt_type)
        self.assertEqual('vz', drv.hypervisor_type)
        self.assertEqual('ploop', drv.disk_formats[0])

    def test_follows_nova_virt_type_lxc(self) -> None:
        self._register_nova_virt_type('lxc')
        self.assertEqual('exe', self.make_driver().vm_mode)

    def test_own_option_wins_over_nova(self) -> None:
        self._register_nova_virt_type('lxc')
        self._set(virt_type='qemu')
        self.assertEqual('qemu', self.make_driver().virt_type)

    def test_nova_virt_type_unsupported(self) -> None:
        self._register_nova_virt_type('uml')
        exc = self.assertRaises(exception.ConfigurationError,
                                self.make_driver)
        self.assertEqual('libvirt', exc.kwargs['group'])
        self.assertEqual('virt_type', exc.kwargs['option'])
        self.assertIn('snapshot_ext_libvirt', str(exc))

    def test_nova_group_without_virt_type(self) -> None:
        self.conf_fixture.register_opt(cfg.StrOpt('images_type'),
                                       group='libvirt')
        self.assertEqual('kvm', self.make_driver().virt_type)

    def test_bad_virt_type_in_config_file(self) -> None:
        path = _write_config(
            self, '[snapshot_ext_libvirt]\nvirt_type = xen\n')
        self.conf(args=['--config-file', path], default_config_files=[],
                  default_config_dirs=[])
        exc = self.assertRaises(exception.ConfigurationError,
                                self.make_driver)
        self.assertEqual('virt_type', exc.kwargs['option'])
        self.assertEqual('snapshot_ext_libvirt', exc.kwargs['group'])

    def test_bad_vz_vm_mode_in_config_file(self) -> None:
        path = _write_config(
            self, '[snapshot_ext_libvirt]\nvirt_type = parallels\n'
                  'vz_vm_mode = uml\n')
        self.conf(args=['--config-file', path], default_config_files=[],
                  default_config_dirs=[])
        exc = self.assertRaises(exception.ConfigurationError,
                                self.make_driver)
        self.assertEqual('vz_vm_mode', exc.kwargs['option'])

    def test_capabilities_sample(self) -> None:
        caps = self.make_driver().capabilities()
        self.assertEqual({
            'name': 'libvirt',
            'hypervisor_types': ['kvm', 'qemu', 'lxc', 'vz'],
            'hypervisor_type': 'qemu',
            'disk_formats': ['qcow2', 'raw', 'vmdk', 'vdi', 'vhdx', 'vhd',
                             'iso'],
            'supports_quiesce': True,
            'image_properties': {'hypervisor_type': 'qemu',
                                 'vm_mode': 'hvm'},
        }, json.loads(json.dumps(caps)))


class TestVMwareAPIDriver(contract.DriverContractMixin, testtools.TestCase):
    driver_class = vmwareapi.VMwareAPIDriver

    def test_declaration(self) -> None:
        drv = self.make_driver()
        self.assertEqual(('vmdk', 'iso'), drv.disk_formats)
        self.assertEqual({'hypervisor_type': 'vmware', 'vm_mode': 'hvm'},
                         drv.image_properties())
        self.assertFalse(drv.supports_quiesce)


class TestHyperVDriver(contract.DriverContractMixin, testtools.TestCase):
    driver_class = hyperv.HyperVDriver

    def test_declaration(self) -> None:
        drv = self.make_driver()
        self.assertEqual(('vhdx', 'vhd', 'iso'), drv.disk_formats)
        self.assertEqual({'hypervisor_type': 'hyperv', 'vm_mode': 'hvm'},
                         drv.image_properties())
        self.assertFalse(drv.supports_quiesce)


class TestXenAPIDriver(contract.DriverContractMixin, testtools.TestCase):
    driver_class = xenapi.XenAPIDriver

    def test_declaration(self) -> None:
        drv = self.make_driver()
        self.assertEqual(('vhd', 'raw', 'iso'), drv.disk_formats)
        self.assertEqual({'hypervisor_type': 'xen', 'vm_mode': 'hvm'},
                         drv.image_properties())
        self.assertFalse(drv.supports_quiesce)

    def test_paravirtual(self) -> None:
        self.flags(vm_mode='xen')
        self.assertEqual('xen', self.make_driver().vm_mode)

    def test_bad_vm_mode_in_config_file(self) -> None:
        path = _write_config(self, '[snapshot_ext_xenapi]\nvm_mode = exe\n')
        self.conf(args=['--config-file', path], default_config_files=[],
                  default_config_dirs=[])
        exc = self.assertRaises(exception.ConfigurationError,
                                self.make_driver)
        self.assertEqual('vm_mode', exc.kwargs['option'])
        self.assertEqual('snapshot_ext_xenapi', exc.kwargs['group'])


class TestIronicDriver(contract.DriverContractMixin, testtools.TestCase):
    driver_class = ironic.IronicDriver

    def test_declaration(self) -> None:
        drv = self.make_driver()
        self.assertEqual(('raw', 'qcow2', 'iso'), drv.disk_formats)
        self.assertEqual('baremetal', drv.hypervisor_type)
        self.assertFalse(drv.supports_quiesce)


class TestZVMDriver(contract.DriverContractMixin, testtools.TestCase):
    driver_class = zvm.ZVMDriver

    def test_declaration(self) -> None:
        drv = self.make_driver()
        self.assertEqual(('raw',), drv.disk_formats)
        self.assertEqual('zvm', drv.hypervisor_type)
        self.assertNotIn('zvm', base_driver.METADEF_HYPERVISOR_TYPES)
        self.assertFalse(drv.supports_quiesce)


class _BrokenDriver(base_driver.SnapshotDriver):
    """Declares nothing readable: violates the invariants."""

    name = 'broken'
    hypervisor_types = ('kvm',)

    formats: tuple[str, ...] = ()
    hv_type: str | None = None

    @property
    def disk_formats(self) -> tuple[str, ...]:
        return self.formats

    @property
    def hypervisor_type(self) -> str | None:
        return self.hv_type


class TestBaseInvariants(testtools.TestCase):

    def _make(self, **attrs: object) -> base_driver.SnapshotDriver:
        cls = type('Broken', (_BrokenDriver,), attrs)
        return cls(cfg.ConfigOpts())

    def test_no_formats(self) -> None:
        exc = self.assertRaises(exception.ConfigurationError, self._make)
        self.assertEqual('snapshot_ext_broken', exc.kwargs['group'])
        self.assertEqual('disk_formats', exc.kwargs['option'])

    def test_formats_not_a_tuple(self) -> None:
        self.assertRaises(exception.ConfigurationError, self._make,
                          formats=['raw'])
        self.assertRaises(exception.ConfigurationError, self._make,
                          formats='raw')

    def test_formats_option_named(self) -> None:
        exc = self.assertRaises(exception.ConfigurationError, self._make,
                                formats=('qcow2', 'bogus'),
                                formats_option='virt_type')
        self.assertEqual('virt_type', exc.kwargs['option'])

    def test_bad_hypervisor_type(self) -> None:
        exc = self.assertRaises(exception.ConfigurationError, self._make,
                                formats=('raw',), hv_type='KVM')
        self.assertEqual('hypervisor_type', exc.kwargs['option'])

    def test_non_string_property(self) -> None:
        exc = self.assertRaises(
            exception.ConfigurationError, self._make, formats=('raw',),
            image_properties=lambda self: {'vm_mode': 1})
        self.assertEqual('vm_mode', exc.kwargs['option'])

    def test_unknown_property_key(self) -> None:
        exc = self.assertRaises(
            exception.ConfigurationError, self._make, formats=('raw',),
            image_properties=lambda self: {'hw_machine_type': 'q35'})
        self.assertEqual('hw_machine_type', exc.kwargs['option'])

    def test_bad_vm_mode(self) -> None:
        exc = self.assertRaises(
            exception.ConfigurationError, self._make, formats=('raw',),
            vm_mode=property(lambda self: 'pv'))
        self.assertEqual('vm_mode', exc.kwargs['option'])

    def test_name_required(self) -> None:
        self.assertRaises(TypeError, self._make, formats=('raw',), name='')

    def test_abstract(self) -> None:
        self.assertRaises(TypeError, base_driver.SnapshotDriver,
                          cfg.ConfigOpts())
