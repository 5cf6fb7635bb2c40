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

"""Tests for driver discovery and loading (``nova_snapshot_ext.driver``).

Loading goes through stevedore test instances
(``DriverManager.make_test_instance`` / ``ExtensionManager.
make_test_instance``) injected at the module's two manager seams, so these
tests do not need the package's entry points installed.  One test uses the
real entry points and skips when they are not installed.
"""

from __future__ import annotations

import importlib.metadata
import logging

import fixtures
from oslo_config import cfg
from stevedore import driver as sd_driver
from stevedore import exception as sd_exception
from stevedore import extension as sd_extension
import testtools

from nova_snapshot_ext import driver
from nova_snapshot_ext.drivers import fake
from nova_snapshot_ext.drivers import hyperv
from nova_snapshot_ext.drivers import ironic
from nova_snapshot_ext.drivers import libvirt
from nova_snapshot_ext.drivers import vmwareapi
from nova_snapshot_ext.drivers import xenapi
from nova_snapshot_ext.drivers import zvm
from nova_snapshot_ext import exception
from tests.unit.drivers import contract

#: The entry points of setup.cfg, by name.
IN_TREE = {
    'fake': fake.FakeDriver,
    'libvirt': libvirt.LibvirtDriver,
    'vmwareapi': vmwareapi.VMwareAPIDriver,
    'hyperv': hyperv.HyperVDriver,
    'xenapi': xenapi.XenAPIDriver,
    'ironic': ironic.IronicDriver,
    'zvm': zvm.ZVMDriver,
}


def _extension(name: str, plugin: object) -> sd_extension.Extension:
    module = getattr(plugin, '__module__', 'tests')
    qualname = getattr(plugin, '__qualname__', 'plugin')
    ep = importlib.metadata.EntryPoint(
        name=name, value='%s:%s' % (module, qualname),
        group=driver.NAMESPACE)
    return sd_extension.Extension(name, ep, plugin, None)


class StevedoreDrivers(fixtures.Fixture):
    """Serve ``plugins`` ({name: class}) from stevedore test instances.

    ``failures`` maps a name to the exception its import would raise; it is
    fed to the loader's ``on_load_failure_callback`` as stevedore does.
    """

    def __init__(self, plugins: dict[str, object],
                 failures: dict[str, Exception] | None = None,
                 duplicates: tuple[str, ...] = ()) -> None:
        super().__init__()
        self.plugins = plugins
        self.failures = failures or {}
        self.duplicates = duplicates

    def _driver_manager(self, name: str) -> sd_driver.DriverManager:
        if name in self.failures:
            ep = _extension(name, object).entry_point
            driver._raise_load_error(None, ep, self.failures[name])
        if name in self.duplicates:
            raise sd_exception.MultipleMatches(
                'Multiple %r drivers found' % name)
        if name not in self.plugins:
            raise sd_exception.NoMatches(
                'No %r driver found, looking for %r'
                % (driver.NAMESPACE, name))
        return sd_driver.DriverManager.make_test_instance(
            _extension(name, self.plugins[name]),
            namespace=driver.NAMESPACE)

    def _extension_manager(self) -> sd_extension.ExtensionManager:
        return sd_extension.ExtensionManager.make_test_instance(
            [_extension(n, p) for n, p in self.plugins.items()],
            namespace=driver.NAMESPACE)

    def _setUp(self) -> None:
        self.useFixture(fixtures.MonkeyPatch(
            'nova_snapshot_ext.driver._driver_manager',
            self._driver_manager))
        self.useFixture(fixtures.MonkeyPatch(
            'nova_snapshot_ext.driver._extension_manager',
            self._extension_manager))


class _Base(testtools.TestCase):

    def setUp(self) -> None:
        super().setUp()
        contract.use_private_conf(self)

    def register_compute_driver(self, value: str | None) -> None:
        # Nova registers [DEFAULT] compute_driver (no default).
        self.conf_fixture.register_opt(cfg.StrOpt('compute_driver'))
        self.conf_fixture.config(compute_driver=value)

    def register_core_driver_opt(self, value: str | None) -> None:
        # opts.py registers [snapshot_ext] driver.
        self.conf_fixture.register_opt(cfg.StrOpt('driver'),
                                       group='snapshot_ext')
        self.conf_fixture.config(group='snapshot_ext', driver=value)


class TestLoadDriver(_Base):

    def setUp(self) -> None:
        super().setUp()
        self.useFixture(StevedoreDrivers(dict(IN_TREE)))

    def test_load_each_by_name(self) -> None:
        for name, cls in IN_TREE.items():
            drv = driver.load_driver(self.conf, name)
            self.assertIs(cls, type(drv))
            self.assertEqual(name, drv.name)
            self.assertIs(self.conf, drv.conf)
            # Options landed on the consumer's conf, in the driver group.
            for opt in cls.CONFIG_OPTS:
                self.conf['snapshot_ext_' + name][opt.dest]

    def test_load_twice_same_conf(self) -> None:
        first = driver.load_driver(self.conf, 'libvirt')
        second = driver.load_driver(self.conf, 'libvirt')
        self.assertEqual(first.capabilities(), second.capabilities())

    def test_unknown_name(self) -> None:
        exc = self.assertRaises(exception.DriverNotFound,
                                driver.load_driver, self.conf, 'virtualbox')
        self.assertEqual('virtualbox', exc.kwargs['name'])
        self.assertEqual(sorted(IN_TREE), exc.kwargs['available'])
        self.assertIn('virtualbox', str(exc))
        self.assertIn('vmwareapi', str(exc))

    def test_configured_driver_option(self) -> None:
        self.register_core_driver_opt('hyperv')
        self.register_compute_driver('libvirt.LibvirtDriver')
        drv = driver.load_driver(self.conf)
        self.assertIsInstance(drv, hyperv.HyperVDriver)

    def test_configured_driver_unset_infers(self) -> None:
        self.register_core_driver_opt(None)
        self.register_compute_driver('vmwareapi.VMwareVCDriver')
        drv = driver.load_driver(self.conf)
        self.assertIsInstance(drv, vmwareapi.VMwareAPIDriver)

    def test_nothing_configured_is_libvirt(self) -> None:
        drv = driver.load_driver(self.conf)
        self.assertIsInstance(drv, libvirt.LibvirtDriver)

    def test_explicit_name_wins(self) -> None:
        self.register_core_driver_opt('hyperv')
        drv = driver.load_driver(self.conf, 'zvm')
        self.assertIsInstance(drv, zvm.ZVMDriver)

    def test_configuration_error_propagates(self) -> None:
        self.register_core_driver_opt('fake')
        fake.FakeDriver.register_opts(self.conf)
        self.conf_fixture.config(group='snapshot_ext_fake',
                                 disk_formats=['floppy'])
        exc = self.assertRaises(exception.ConfigurationError,
                                driver.load_driver, self.conf)
        self.assertEqual('disk_formats', exc.kwargs['option'])

    def test_driver_names(self) -> None:
        self.assertEqual(sorted(IN_TREE), driver.driver_names())

    def test_driver_classes(self) -> None:
        classes = driver.driver_classes()
        self.assertEqual(sorted(IN_TREE), list(classes))
        for name, cls in classes.items():
            self.assertIs(IN_TREE[name], cls)
            self.assertEqual(name, cls.name)


class TestLoadFailures(_Base):

    def test_import_error(self) -> None:
        self.useFixture(StevedoreDrivers(
            {}, failures={'libvirt': ImportError('No module named x')}))
        exc = self.assertRaises(exception.DriverLoadError,
                                driver.load_driver, self.conf, 'libvirt')
        self.assertEqual('libvirt', exc.kwargs['name'])
        self.assertIn('No module named x', str(exc))
        self.assertIsInstance(exc.__cause__, ImportError)

    def test_ambiguous(self) -> None:
        self.useFixture(StevedoreDrivers({}, duplicates=('fake',)))
        self.assertRaises(exception.DriverLoadError,
                          driver.load_driver, self.conf, 'fake')

    def test_not_a_driver(self) -> None:
        self.useFixture(StevedoreDrivers({'fake': dict}))
        exc = self.assertRaises(exception.DriverLoadError,
                                driver.load_driver, self.conf, 'fake')
        self.assertIn('SnapshotDriver', str(exc))

    def test_constructor_crash(self) -> None:
        class Crashing(fake.FakeDriver):
            def __init__(self, conf: cfg.ConfigOpts) -> None:
                raise RuntimeError('boom')

        self.useFixture(StevedoreDrivers({'fake': Crashing}))
        exc = self.assertRaises(exception.DriverLoadError,
                                driver.load_driver, self.conf, 'fake')
        self.assertIn('boom', str(exc))

    def test_none_installed(self) -> None:
        self.useFixture(StevedoreDrivers({}))
        exc = self.assertRaises(exception.DriverNotFound,
                                driver.load_driver, self.conf, 'libvirt')
        self.assertEqual([], exc.kwargs['available'])

    def test_driver_classes_skips_non_drivers(self) -> None:
        logger = self.useFixture(fixtures.FakeLogger(level=logging.WARNING))
        self.useFixture(StevedoreDrivers(
            {'zvm': zvm.ZVMDriver, 'junk': dict, 'fake': fake.FakeDriver}))
        self.assertEqual({'fake': fake.FakeDriver, 'zvm': zvm.ZVMDriver},
                         driver.driver_classes())
        self.assertIn('junk', logger.output)

    def test_load_failure_callbacks(self) -> None:
        ep = _extension('x', object).entry_point
        self.assertRaises(exception.DriverLoadError,
                          driver._raise_load_error, None, ep,
                          SyntaxError('bad'))
        logger = self.useFixture(fixtures.FakeLogger(level=logging.WARNING))
        driver._log_load_error(None, ep, ImportError('gone'))
        self.assertIn('gone', logger.output)


class TestInferDriverName(_Base):

    COMPUTE_DRIVERS = {
        'libvirt.LibvirtDriver': 'libvirt',
        'vmwareapi.VMwareVCDriver': 'vmwareapi',
        'ironic.IronicDriver': 'ironic',
        'hyperv.HyperVDriver': 'hyperv',
        'compute_hyperv.driver.HyperVDriver': 'hyperv',
        'zvm.ZVMDriver': 'zvm',
        'xenapi.XenAPIDriver': 'xenapi',
        'fake.FakeDriver': 'fake',
        'fake.SmallFakeDriver': 'fake',
        ' Libvirt.LibvirtDriver ': 'libvirt',
        'powervm.PowerVMDriver': 'libvirt',
        'powervm_ext.driver.PowerVMDriver': 'libvirt',
        'somevendor.Driver': 'libvirt',
    }

    def test_compute_driver_values(self) -> None:
        self.useFixture(fixtures.FakeLogger(level=logging.WARNING))
        self.register_compute_driver(None)
        for value, expected in self.COMPUTE_DRIVERS.items():
            self.conf_fixture.config(compute_driver=value)
            self.assertEqual(expected, driver.infer_driver_name(self.conf),
                             value)

    def test_unknown_family_warns(self) -> None:
        logger = self.useFixture(fixtures.FakeLogger(level=logging.WARNING))
        self.register_compute_driver('powervm.PowerVMDriver')
        self.assertEqual('libvirt', driver.infer_driver_name(self.conf))
        self.assertIn('powervm.PowerVMDriver', logger.output)

    def test_option_absent(self) -> None:
        self.assertEqual('libvirt', driver.infer_driver_name(self.conf))

    def test_option_unset(self) -> None:
        self.register_compute_driver(None)
        self.assertEqual('libvirt', driver.infer_driver_name(self.conf))
        self.conf_fixture.config(compute_driver='')
        self.assertEqual('libvirt', driver.infer_driver_name(self.conf))

    def test_default_is_libvirt(self) -> None:
        self.assertEqual('libvirt', driver.DEFAULT_DRIVER)

    def test_configured_driver_name(self) -> None:
        self.assertIsNone(driver.configured_driver_name(self.conf))
        self.register_core_driver_opt(None)
        self.assertIsNone(driver.configured_driver_name(self.conf))
        self.conf_fixture.config(group='snapshot_ext', driver='zvm')
        self.assertEqual('zvm', driver.configured_driver_name(self.conf))


class TestRealEntryPoints(_Base):
    """Goes through stevedore and the installed ``setup.cfg`` entry points."""

    def setUp(self) -> None:
        super().setUp()
        eps = importlib.metadata.entry_points(group=driver.NAMESPACE)
        if not list(eps):
            self.skipTest('nova_snapshot_ext.drivers entry points are not '
                          'installed (pip install -e .)')

    def test_in_tree_drivers_load(self) -> None:
        self.assertEqual(sorted(IN_TREE), driver.driver_names())
        for name, cls in IN_TREE.items():
            self.assertIs(cls, driver.driver_classes()[name])
            self.assertIs(cls, type(driver.load_driver(self.conf, name)))

    def test_unknown_name(self) -> None:
        exc = self.assertRaises(exception.DriverNotFound,
                                driver.load_driver, self.conf, 'nope')
        self.assertEqual(sorted(IN_TREE), exc.kwargs['available'])
