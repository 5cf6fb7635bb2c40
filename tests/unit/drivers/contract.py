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

"""Contract every snapshot driver keeps.

Mix :class:`DriverContractMixin` into a ``testtools.TestCase`` and set
``driver_class``; override :meth:`DriverContractMixin.configure` to set
options on ``self.conf`` before the driver is built::

    class TestMyDriver(DriverContractMixin, testtools.TestCase):
        driver_class = mydriver.MyDriver
"""

from __future__ import annotations

import json
import typing as ty

import fixtures
from oslo_config import cfg
from oslo_config import fixture as config_fixture

from nova_snapshot_ext import driver as base_driver

if ty.TYPE_CHECKING:
    import testtools

    _Base = testtools.TestCase
else:
    _Base = object


def use_private_conf(test: ty.Any) -> None:
    """Give ``test`` a private ``ConfigOpts`` as ``test.conf``.

    Exception message-format errors are made fatal too.
    """
    test.useFixture(fixtures.MonkeyPatch(
        'nova_snapshot_ext.exception.FATAL_FORMAT_ERRORS', True))
    test.conf = cfg.ConfigOpts()
    test.conf_fixture = test.useFixture(config_fixture.Config(test.conf))


class DriverContractMixin(_Base):
    """Tests that hold for every :class:`SnapshotDriver` subclass."""

    #: The driver class under test; set by the concrete TestCase.
    driver_class: type[base_driver.SnapshotDriver]

    def setUp(self) -> None:
        super().setUp()
        use_private_conf(self)

    def flags(self, group: str | None = None, **kw: ty.Any) -> None:
        """Override options; ``group`` defaults to the driver's group.

        Registers the driver's options first (idempotent), so it can run
        before the driver is built.
        """
        self.driver_class.register_opts(self.conf)
        self.conf_fixture.config(
            group=group or self.driver_class.group_name(), **kw)

    def configure(self, conf: cfg.ConfigOpts) -> None:
        """Hook: set options on ``conf`` before the driver is built."""

    def make_driver(self) -> base_driver.SnapshotDriver:
        self.configure(self.conf)
        return self.driver_class(self.conf)

    # -- class-level declarations ----------------------------------------

    def test_contract_is_snapshot_driver(self) -> None:
        self.assertTrue(issubclass(self.driver_class,
                                   base_driver.SnapshotDriver))

    def test_contract_name(self) -> None:
        name = self.driver_class.name
        self.assertIsInstance(name, str)
        self.assertRegex(name, r'^[a-z][a-z0-9_]*$')
        self.assertEqual('snapshot_ext_' + name,
                         self.driver_class.group_name())

    def test_contract_hypervisor_types_declared(self) -> None:
        hv_types = self.driver_class.hypervisor_types
        self.assertIsInstance(hv_types, tuple)
        self.assertNotEqual((), hv_types)
        self.assertEqual(len(hv_types), len(set(hv_types)))
        for hv_type in hv_types:
            self.assertIn(hv_type, base_driver.HYPERVISOR_TYPES)

    def test_contract_config_opts_readable_from_class(self) -> None:
        opts = self.driver_class.CONFIG_OPTS
        self.assertIsInstance(opts, list)
        for opt in opts:
            self.assertIsInstance(opt, cfg.Opt)
            self.assertTrue(opt.help, '%s has no help' % opt.name)
        names = [opt.dest for opt in opts]
        self.assertEqual(len(names), len(set(names)))
        group = self.driver_class.opt_group()
        self.assertIsInstance(group, cfg.OptGroup)
        self.assertEqual(self.driver_class.group_name(), group.name)

    # -- construction ----------------------------------------------------

    def test_contract_constructs_without_config(self) -> None:
        drv = self.driver_class(cfg.ConfigOpts())
        self.assertIsInstance(drv, base_driver.SnapshotDriver)

    def test_contract_keeps_conf_and_group(self) -> None:
        drv = self.make_driver()
        self.assertIs(self.conf, drv.conf)
        for opt in self.driver_class.CONFIG_OPTS:
            self.assertEqual(self.conf[drv.group_name()][opt.dest],
                             getattr(drv.group_conf, opt.dest))

    def test_contract_construct_twice_same_conf(self) -> None:
        first = self.make_driver()
        second = self.driver_class(self.conf)
        self.assertEqual(first.capabilities(), second.capabilities())

    def test_contract_options_in_driver_group(self) -> None:
        self.make_driver()
        group = 'snapshot_ext_' + self.driver_class.name
        for opt in self.driver_class.CONFIG_OPTS:
            # Raises NoSuchOptError if registered anywhere else.
            self.conf[group][opt.dest]

    def test_contract_global_conf_untouched(self) -> None:
        self.make_driver()
        self.assertRaises((cfg.NoSuchOptError, cfg.NoSuchGroupError),
                          cfg.CONF.__getitem__,
                          self.driver_class.group_name())

    # -- the declaration -------------------------------------------------

    def test_contract_disk_formats(self) -> None:
        formats = self.make_driver().disk_formats
        self.assertIsInstance(formats, tuple)
        self.assertNotEqual((), formats)
        self.assertEqual(len(formats), len(set(formats)), formats)
        for fmt in formats:
            self.assertIn(fmt, base_driver.GLANCE_DISK_FORMATS)

    def test_contract_hypervisor_type(self) -> None:
        drv = self.make_driver()
        hv_type = drv.hypervisor_type
        if hv_type is not None:
            self.assertIn(hv_type, base_driver.HYPERVISOR_TYPES)
            self.assertIn(hv_type, drv.hypervisor_types)

    def test_contract_image_properties(self) -> None:
        drv = self.make_driver()
        props = drv.image_properties()
        self.assertIsInstance(props, dict)
        for key, value in props.items():
            self.assertIn(key, base_driver.IMAGE_PROPERTY_KEYS)
            self.assertIsInstance(value, str)
        self.assertEqual(drv.hypervisor_type, props.get('hypervisor_type'))
        if 'vm_mode' in props:
            self.assertIn(props['vm_mode'], base_driver.VM_MODES)

    def test_contract_supports_quiesce_is_bool(self) -> None:
        self.assertIsInstance(self.make_driver().supports_quiesce, bool)

    def test_contract_capabilities(self) -> None:
        drv = self.make_driver()
        caps = drv.capabilities()
        self.assertEqual(caps, json.loads(json.dumps(caps)))
        self.assertEqual(
            {'name', 'hypervisor_types', 'hypervisor_type', 'disk_formats',
             'supports_quiesce', 'image_properties'}, set(caps))
        self.assertEqual(drv.name, caps['name'])
        self.assertEqual(list(drv.hypervisor_types),
                         caps['hypervisor_types'])
        self.assertEqual(drv.hypervisor_type, caps['hypervisor_type'])
        self.assertEqual(list(drv.disk_formats), caps['disk_formats'])
        self.assertEqual(drv.supports_quiesce, caps['supports_quiesce'])
        self.assertEqual(drv.image_properties(), caps['image_properties'])
