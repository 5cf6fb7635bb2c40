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

"""The cloud as an ordered list of services: what each declares and the
order the launcher runs their phases in (no service runs)."""

import json
import os

import fixtures
import testtools

from nova_snapshot_ext.embedded.cloud import launcher
from nova_snapshot_ext.embedded.cloud import services
from nova_snapshot_ext.embedded.cloud.services import base
from nova_snapshot_ext.embedded import digest


class DeclarationsTest(testtools.TestCase):

    def test_names_and_ports_are_each_one_service_s(self):
        names = [cls.name for cls in services.SERVICES]
        self.assertEqual(len(names), len(set(names)))
        ports = [port for cls in services.SERVICES for port in cls.ports]
        self.assertEqual(len(ports), len(set(ports)))
        for cls in services.SERVICES:
            self.assertTrue(cls.name and cls.words, cls)

    def test_backing_services_come_first(self):
        backing = [cls.backing for cls in services.SERVICES]
        self.assertEqual(sorted(backing, reverse=True), backing)

    def test_the_cloud_gathers_what_services_declare(self):
        self.assertEqual(
            ('keystone', 'placement', 'cinder', 'nova_api', 'nova_cell0',
             'nova_cell1'), launcher.Cloud.gather('databases'))
        self.assertEqual(('placement', 'glance', 'cinder', 'nova'),
                         launcher.Cloud.gather('user'))
        self.assertIn(('cinderv3', 'volumev3'),
                      launcher.Cloud.gather('catalog_entries'))

    def test_the_catalog_of_this_start(self):
        cloud = launcher.Cloud()
        cloud.base_dir = self.useFixture(fixtures.TempDir()).path
        names = [p for cls in services.SERVICES if cls.wanted(cloud)
                 for p in cls.ports]
        cloud.ports = {name: 20000 + i for i, name in enumerate(names)}
        cloud.services = [cls(cloud) for cls in services.SERVICES
                          if cls.wanted(cloud)]
        catalog = cloud.catalog()
        # Every type Keystone is seeded with gets this start's URL.
        self.assertEqual(
            {kind for _name, kind in launcher.Cloud.gather(
                'catalog_entries')} | {'identity'}, set(catalog))
        self.assertEqual(cloud.url('nova'), catalog['compute'])
        self.assertEqual(cloud.url('cinder') + '/$(project_id)s',
                         catalog['volumev3'])

    def test_a_new_service_is_one_line(self):
        class Backup(base.CloudService):
            name = 'cinder-backup'
            words = 'cinder-backup'
            user = 'backup'
            databases = ('backup',)
            catalog_entries = (('freezer', 'backup'),)

        self.useFixture(fixtures.MonkeyPatch(
            'nova_snapshot_ext.embedded.cloud.services.SERVICES',
            services.SERVICES + (Backup,)))
        self.assertEqual('backup', launcher.Cloud.gather('user')[-1])
        self.assertEqual('backup', launcher.Cloud.gather('databases')[-1])
        self.assertEqual(('freezer', 'backup'),
                         launcher.Cloud.gather('catalog_entries')[-1])

    def test_the_stacks_programs(self):
        fake = services.program_maps('fake')
        real = services.program_maps('real')
        self.assertIn('qemu-img', fake[0])
        self.assertTrue(any('ceph-mon' in repr(m) for m in real))
        self.assertFalse(any('ceph-mon' in repr(m) for m in fake))


class TemplateRecordTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.dir = self.useFixture(fixtures.TempDir()).path
        self.useFixture(fixtures.MonkeyPatch(
            'nova_snapshot_ext.embedded.cloud.venv.pins',
            lambda: ['nova==34.0.0']))

    def _write(self, record):
        with open(os.path.join(self.dir, 'template.json'), 'w') as fh:
            json.dump(record, fh)

    def test_a_record_of_this_list_is_read(self):
        self._write(launcher._template_record({'projects': {'demo': 'x'}}))
        self.assertEqual({'projects': {'demo': 'x'}},
                         launcher._read_template(self.dir)['ids'])

    def test_another_list_of_services_makes_a_new_template(self):
        record = launcher._template_record({})
        record['services'] = record['services'][:-1]
        self._write(record)
        self.assertIsNone(launcher._read_template(self.dir))

    def test_other_pins_or_none_make_a_new_template(self):
        record = launcher._template_record({})
        record['requirements'] = ['nova==33.0.0']
        self._write(record)
        self.assertIsNone(launcher._read_template(self.dir))
        os.remove(os.path.join(self.dir, 'template.json'))
        self.assertIsNone(launcher._read_template(self.dir))

    def test_a_template_built_by_other_code_is_not_reused(self):
        record = launcher._template_record({})
        record['builder'] = '0' * 64
        self._write(record)
        self.assertIsNone(launcher._read_template(self.dir))
        del record['builder']
        self._write(record)
        self.assertIsNone(launcher._read_template(self.dir))


class BuilderDigestTest(testtools.TestCase):
    """The digest follows the files' names and contents, nothing else."""

    def setUp(self):
        super().setUp()
        self.root = self.useFixture(fixtures.TempDir()).path
        os.makedirs(os.path.join(self.root, 'pkg', 'sub', '__pycache__'))
        self._put('pkg/a.py', 'a = 1\n')
        self._put('pkg/sub/b.py', 'b = 2\n')

    def _put(self, name, text):
        with open(os.path.join(self.root, name), 'w') as fh:
            fh.write(text)

    def _digest(self):
        return digest.tree_digest(self.root, ('pkg',))

    def test_contents_and_names_change_it_compiled_files_do_not(self):
        first = self._digest()
        self._put('pkg/sub/__pycache__/b.cpython-311.pyc', 'x')
        self._put('pkg/a.pyc', 'x')
        self.assertEqual(first, self._digest())
        self._put('pkg/sub/b.py', 'b = 3\n')
        changed = self._digest()
        self.assertNotEqual(first, changed)
        os.rename(os.path.join(self.root, 'pkg', 'sub', 'b.py'),
                  os.path.join(self.root, 'pkg', 'sub', 'c.py'))
        self.assertNotIn(self._digest(), (first, changed))

    def test_hidden_files_left_out_suffixes_honoured(self):
        first = self._digest()
        self._put('pkg/.#a.py', 'an editor lock')
        os.makedirs(os.path.join(self.root, 'pkg', '.hidden'))
        self._put('pkg/.hidden/c.py', 'c = 1\n')
        self.assertEqual(first, self._digest())
        self._put('pkg/notes.txt', 'text')
        self.assertNotEqual(first, self._digest())
        self.assertEqual(first, digest.tree_digest(self.root, ('pkg',),
                                                   suffixes=('.py',)))

    def test_names_and_contents_do_not_run_together(self):
        self._put('pkg/a.py', 'xy')
        one = self._digest()
        os.remove(os.path.join(self.root, 'pkg', 'a.py'))
        self._put('pkg/a.pyx', 'y')
        self.assertNotEqual(one, self._digest())

    def test_the_builder_is_the_embedded_package(self):
        here = os.path.dirname(os.path.abspath(digest.__file__))
        self.assertEqual(
            digest.tree_digest(os.path.dirname(here), ('embedded',),
                               suffixes=('.py',)),
            digest.builder_digest())
        self.assertEqual(64, len(digest.builder_digest()))


class PhaseOrderTest(testtools.TestCase):
    """The launcher runs each phase over the list, in order."""

    def setUp(self):
        super().setUp()
        self.calls = []
        calls = self.calls

        def recorder(service_name, is_backing):
            class Recorded(base.CloudService):
                name = service_name
                words = service_name
                ports = (service_name,)
                backing = is_backing

                def configure(self, template):
                    calls.append(('configure', self.name, template))

                def initialise(self):
                    calls.append(('initialise', self.name))

                def save(self, directory):
                    calls.append(('save', self.name))

                def rehome(self):
                    calls.append(('rehome', self.name))

                def start(self):
                    calls.append(('start', self.name))

                def settle(self):
                    calls.append(('settle', self.name))

                def stop(self):
                    calls.append(('stop', self.name))
            return Recorded

        listed = (recorder('db', True), recorder('epmd', True),
                  recorder('api', False), recorder('worker', False))
        self.tmpl = os.path.join(self.useFixture(fixtures.TempDir()).path,
                                 'template')
        for target, value in (
                ('services.SERVICES', listed),
                ('venv.ensure', lambda: '/venv/bin/python'),
                ('venv.ensure_plugin', lambda python: None),
                ('venv.pins', lambda: ['x==1']),
                ('launcher.template_dir', lambda: self.tmpl),
                ('launcher.resources.make', lambda cloud: {}),
                ('launcher.proc_mod.start_watchdog', lambda *a: None),
                ('launcher.Cloud.write_tempest_conf', lambda self: None),
                ('launcher.Cloud.write_plugin_conf', lambda self: None)):
            self.useFixture(fixtures.MonkeyPatch(
                'nova_snapshot_ext.embedded.cloud.' + target, value))

    def _start(self):
        cloud = launcher.Cloud()
        cloud.base_dir = self.useFixture(fixtures.TempDir()).path
        cloud.procs = launcher.proc_mod.Processes(cloud.base_dir)
        cloud._start()
        return cloud

    def test_cold_start_then_warm_start(self):
        cloud = self._start()
        self.assertEqual([
            ('configure', 'db', None), ('start', 'db'),
            ('configure', 'epmd', None), ('start', 'epmd'),
            ('configure', 'api', None), ('configure', 'worker', None),
            ('initialise', 'db'), ('initialise', 'epmd'),
            ('initialise', 'api'), ('initialise', 'worker'),
            ('save', 'db'), ('save', 'epmd'), ('save', 'api'),
            ('save', 'worker'),
            ('rehome', 'db'), ('rehome', 'epmd'), ('rehome', 'api'),
            ('rehome', 'worker'),
            ('start', 'api'), ('start', 'worker'),
            ('settle', 'db'), ('settle', 'epmd'), ('settle', 'api'),
            ('settle', 'worker')], self.calls)
        self.assertFalse(cloud.warm)
        cloud._stop_services()
        self.assertEqual([('stop', 'worker'), ('stop', 'api'),
                          ('stop', 'epmd'), ('stop', 'db')],
                         self.calls[-4:])
        del self.calls[:]
        cloud = self._start()
        self.assertTrue(cloud.warm)
        self.assertEqual([
            ('configure', 'db', self.tmpl), ('start', 'db'),
            ('configure', 'epmd', self.tmpl), ('start', 'epmd'),
            ('configure', 'api', self.tmpl),
            ('configure', 'worker', self.tmpl),
            ('rehome', 'db'), ('rehome', 'epmd'), ('rehome', 'api'),
            ('rehome', 'worker'),
            ('start', 'api'), ('start', 'worker'),
            ('settle', 'db'), ('settle', 'epmd'), ('settle', 'api'),
            ('settle', 'worker')], self.calls)
        # Each service's start is a timed step of its name.
        self.assertLessEqual({'db', 'epmd', 'api', 'worker', 'rewrite'},
                             set(cloud.timings))
