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

import configparser
import importlib
import importlib.metadata
import io
import logging
import os

import fixtures
from oslo_config import cfg
from stevedore import driver as sd_driver
from stevedore import exception as sd_exception
from stevedore import extension as sd_extension
import testtools

from nova_snapshot_ext import driver
from nova_snapshot_ext.drivers import fake
from nova_snapshot_ext.drivers import hyperv
from nova_snapshot_ext.drivers import libvirt
from nova_snapshot_ext.drivers import vmwareapi
from nova_snapshot_ext.drivers import zvm
from nova_snapshot_ext import exception
from tests.unit.drivers import contract


def _setup_cfg_drivers() -> dict[str, type]:
    """The ``nova_snapshot_ext.drivers`` entry points of setup.cfg."""
    parser = configparser.ConfigParser()
    parser.read(os.path.join(os.path.dirname(__file__), '..', '..',
                             'setup.cfg'))
    found = {}
    for line in parser['entry_points'][driver.NAMESPACE].strip().splitlines():
        name, _, target = (part.strip() for part in line.partition('='))
        module, _, attr = target.partition(':')
        found[name] = getattr(importlib.import_module(module), attr)
    return found


#: The entry points of setup.cfg, by name (read from it: adding a driver
#: is its module and its entry point, nothing here).
IN_TREE = _setup_cfg_drivers()


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


class TestHVDriver(driver.SnapshotDriver):
    """A test-only hypervisor: one module, one (test) entry point."""

    name = 'testhv'
    hypervisor_types = ('qemu',)
    compute_drivers = ('testhv',)
    CONFIG_OPTS = [cfg.BoolOpt('turbo', default=False, help='Test only.')]

    @property
    def disk_formats(self) -> tuple[str, ...]:
        return ('qcow2', 'raw')

    @property
    def hypervisor_type(self) -> str | None:
        return 'qemu'


class TestOneModuleOneEntryPoint(_Base):
    """Kind: adding a hypervisor needs its module and its entry point only.

    The test driver is served by a test-only entry point (stevedore test
    instances): it is inferred from ``compute_driver``, listed, in the
    matrix, in the options reference and in the CLI's help, with no other
    edit anywhere.
    """

    def setUp(self) -> None:
        super().setUp()
        self.useFixture(StevedoreDrivers(dict(IN_TREE, testhv=TestHVDriver)))

    def test_inferred(self) -> None:
        self.register_compute_driver('testhv.driver.TestHVDriver')
        choice = driver.choose_driver(self.conf)
        self.assertEqual(('testhv', 'inferred'),
                         (choice.name, choice.source))
        self.assertEqual('testhv', driver.infer_driver_name(self.conf))
        drv = driver.load_driver(self.conf)
        self.assertIsInstance(drv, TestHVDriver)
        self.assertEqual({'hypervisor_type': 'qemu'},
                         drv.image_properties())

    def test_listed(self) -> None:
        from nova_snapshot_ext import opts

        self.assertIn('testhv', driver.driver_names())
        self.assertEqual('testhv', driver.compute_driver_map()['testhv'])
        groups = [group.name for group, _ in opts.list_opts()]
        self.assertIn('snapshot_ext_testhv', groups)

    def test_matrixed(self) -> None:
        from nova_snapshot_ext.embedded import matrix

        self.assertIn(('testhv', 'testhv', {}), matrix.driver_variants())
        self.assertIn(('testhv', 'testhv', {}), matrix.DRIVER_VARIANTS)
        # A driver's own variants come from its class.
        self.assertIn(('libvirt (lxc)', 'libvirt', {'virt_type': 'lxc'}),
                      matrix.DRIVER_VARIANTS)

    def test_documented(self) -> None:
        from nova_snapshot_ext.cmd import main
        from nova_snapshot_ext import opts

        (core, core_opts), = [item for item in opts.list_opts()
                              if item[0].name == 'snapshot_ext']
        (help_text,) = [o.help for o in core_opts if o.dest == 'driver']
        self.assertIn('``testhv``', help_text)
        self.assertIn('``libvirt``', help_text)
        out = self.useFixture(fixtures.MonkeyPatch(
            'sys.stdout', io.StringIO())).new_value
        self.assertRaises(SystemExit, main.parse, ['demo', '--help'])
        self.assertIn('testhv', ' '.join(out.getvalue().split()))


class TestStampsOnlyFromKnowledge(_Base):
    """Issue 21 point 2: a guessed driver stamps nothing, and says so."""

    def setUp(self) -> None:
        super().setUp()
        self.useFixture(StevedoreDrivers(dict(IN_TREE)))
        self.useFixture(fixtures.MonkeyPatch(
            'nova_snapshot_ext.driver._WARNED', set()))
        self.logger = self.useFixture(
            fixtures.FakeLogger(level=logging.WARNING))

    def test_unconfigured_host_is_a_guess_that_stamps_nothing(self) -> None:
        for compute in (None, ''):
            self.register_compute_driver(compute)
            choice = driver.choose_driver(self.conf)
            self.assertEqual(('libvirt', 'guessed', False),
                             (choice.name, choice.source, choice.known))
            self.assertIn('no hypervisor_type or vm_mode is stamped',
                          choice.reason)
            drv = driver.load_driver(self.conf)
            self.assertIsInstance(drv, libvirt.LibvirtDriver)
            self.assertEqual({}, drv.image_properties())
            self.assertEqual({}, drv.capabilities()['image_properties'])
            # Its formats still give the plan.
            self.assertIn('qcow2', drv.disk_formats)

    def test_option_absent_is_a_guess(self) -> None:
        self.assertEqual('guessed', driver.choose_driver(self.conf).source)
        self.assertFalse(driver.load_driver(self.conf).stamps)

    def test_mistyped_compute_driver_is_a_guess_not_an_inference(self):
        for typo in ('libvrt.LibvirtDriver', 'vmware.VMwareVCDriver',
                     'powervm.PowerVMDriver'):
            self.register_compute_driver(typo)
            choice = driver.choose_driver(self.conf)
            self.assertEqual('guessed', choice.source, typo)
            self.assertIn('%s names no installed snapshot driver' % typo,
                          choice.reason)
            self.assertNotIn('inferred', choice.reason)
            self.assertEqual({}, driver.load_driver(
                self.conf).image_properties())

    def test_warned_once_per_process(self) -> None:
        self.register_compute_driver(None)
        for _ in range(3):
            driver.load_driver(self.conf)
        self.assertEqual(1, self.logger.output.count(
            'Snapshot driver libvirt is guessed, not known'),
            self.logger.output)

    def test_knowledge_stamps(self) -> None:
        # Inferred from a compute_driver a driver claims.
        self.register_compute_driver('vmwareapi.VMwareVCDriver')
        drv = driver.load_driver(self.conf)
        self.assertEqual({'hypervisor_type': 'vmware', 'vm_mode': 'hvm'},
                         drv.image_properties())
        self.assertEqual('inferred', driver.choose_driver(self.conf).source)
        # Configured.
        self.register_core_driver_opt('libvirt')
        choice = driver.choose_driver(self.conf)
        self.assertEqual(('libvirt', 'configured'),
                         (choice.name, choice.source))
        self.assertEqual({'hypervisor_type': 'qemu', 'vm_mode': 'hvm'},
                         driver.load_driver(self.conf).image_properties())
        # Named by the caller.
        self.assertTrue(driver.load_driver(self.conf, 'hyperv').stamps)
        self.assertNotIn('guessed', self.logger.output)

    def test_probe_says_so(self) -> None:
        from nova_snapshot_ext.cmd import snapshot as snapshot_cmd

        self.register_compute_driver(None)
        self.assertIn('no hypervisor_type or vm_mode is stamped',
                      snapshot_cmd.driver_source(self.conf))
        info = {'glance': {'endpoint': 'http://g', 'disk_formats': ['raw'],
                           'container_formats': ['bare'],
                           'location_api': False, 'stores': None},
                'driver': dict(driver.load_driver(self.conf).capabilities(),
                               stamps=False),
                'location': {'activation_method': 'upload',
                             'api_2_17': False, 'read_only_stores': None,
                             'legacy': 'x', 'url': None, 'usable': False,
                             'reasons': ['upload']},
                'plan': [], 'refused': None}
        self.assertIn('Driver libvirt: guessed: stamps no hypervisor_type',
                      snapshot_cmd._plan_text(info))
