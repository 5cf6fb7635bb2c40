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

"""The cloud in a box's pure parts: config files, ports, the network
stand-in's answers (no service runs)."""

import configparser
import os
import random
import shutil
import subprocess

import fixtures
import testtools

from nova_snapshot_ext.embedded.cloud import config
from nova_snapshot_ext.embedded.cloud import network
from nova_snapshot_ext.embedded.cloud import venv
from nova_snapshot_ext.embedded import process


def _parse(text):
    parser = configparser.ConfigParser(interpolation=None)
    parser.read_string(text)
    return parser


class NovaConfTest(testtools.TestCase):

    def _conf(self, **kwargs):
        args = dict(base='/b', database='mysql://cell0',
                    api_database='mysql://api', transport_url='rabbit://r',
                    keystone_url='http://k/v3', password='p',
                    glance_url='http://g')
        args.update(kwargs)
        return _parse(config.nova_conf(**args))

    def test_api_on_cell0_with_service_tokens(self):
        conf = self._conf(snapshot_ext={'snapshot_ext': {'driver': 'fake'}})
        self.assertEqual('mysql://cell0', conf['database']['connection'])
        self.assertEqual('mysql://api', conf['api_database']['connection'])
        self.assertEqual('true',
                         conf['service_user']['send_service_user_token'])
        self.assertEqual('fake', conf['snapshot_ext']['driver'])
        self.assertEqual('network', conf['neutron']['service_type'])
        self.assertNotIn('compute_driver', conf['DEFAULT'])

    def test_compute_has_no_api_database(self):
        conf = self._conf(database='mysql://cell1', api_database=None,
                          compute_driver='snapshot_ext_fake.X')
        self.assertFalse(conf.has_section('api_database'))
        self.assertEqual('snapshot_ext_fake.X',
                         conf['DEFAULT']['compute_driver'])

    def test_cinder_conf_service_user_and_driver(self):
        conf = _parse(config.cinder_conf('/c', 'mysql://c', 'rabbit://r',
                                         'http://k/v3', 'p', 'a.b.Driver'))
        self.assertEqual('a.b.Driver', conf['fake']['volume_driver'])
        self.assertEqual('fake', conf['DEFAULT']['enabled_backends'])
        self.assertEqual('true',
                         conf['service_user']['send_service_user_token'])
        self.assertEqual('cinder', conf['keystone_authtoken']['username'])
        self.assertEqual('/c/resource_filters.json',
                         conf['DEFAULT']['resource_query_filters_file'])


class TempestConfTest(testtools.TestCase):

    def test_ids_and_switches(self):
        conf = _parse(config.tempest_conf('http://k/v3', 'pw', 'img',
                                          'img2', 'f1', 'f2', '/locks'))
        self.assertEqual('img', conf['compute']['image_ref'])
        self.assertEqual('img2', conf['compute']['image_ref_alt'])
        self.assertEqual('f1', conf['compute']['flavor_ref'])
        self.assertEqual('f2', conf['compute']['flavor_ref_alt'])
        self.assertEqual('false', conf['service_available']['neutron'])
        self.assertEqual('false', conf['validation']['run_validation'])
        self.assertEqual('true', conf['volume-feature-enabled'][
            'enable_volume_image_dep_tests'])
        self.assertEqual('http://k/v3', conf['identity']['uri_v3'])
        self.assertEqual('false', conf['volume-feature-enabled']['backup'])
        self.assertEqual('false', conf['nova_snapshot_ext']['backup_copies'])
        for section in ('compute', 'image', 'volume'):
            self.assertEqual('120', conf[section]['build_timeout'])

    def test_cinder_backup_and_copies(self):
        conf = _parse(config.tempest_conf(
            'http://k/v3', 'pw', 'img', 'img2', 'f1', 'f2', '/locks',
            cinder_backup=True, backup_copies=True))
        self.assertEqual('true', conf['volume-feature-enabled']['backup'])
        self.assertEqual('true', conf['nova_snapshot_ext']['backup_copies'])
        # Its waits outlast a copy (and a rotation waiting for one).
        for section in ('compute', 'image', 'volume'):
            self.assertEqual('300', conf[section]['build_timeout'])


class PortsTest(testtools.TestCase):

    def test_below_ephemeral_and_distinct(self):
        ports = process.free_ports(10, rng=random.Random(1),
                                   is_free=lambda p: True)
        self.assertEqual(10, len(set(ports)))
        self.assertTrue(all(p < 32768 for p in ports))

    def test_skips_busy_and_taken(self):
        busy = set(range(20000, 20010))
        ports = process.free_ports(
            3, taken=(20010,), rng=random.Random(2),
            port_range=(20000, 20020), is_free=lambda p: p not in busy)
        self.assertTrue(set(ports).isdisjoint(busy | {20010}))

    def test_not_enough(self):
        self.assertRaises(process.CloudError, process.free_ports, 2,
                          port_range=(20000, 20001),
                          is_free=lambda p: False)


class NetworkStandInTest(testtools.TestCase):

    def test_answers(self):
        self.assertEqual(200, network.answer('GET', '/')[0])
        self.assertEqual((200, {'security_groups': []}), network.answer(
            'GET', '/v2.0/security-groups?tenant_id=x'))
        self.assertEqual((200, {'ports': []}),
                         network.answer('GET', '/v2.0/ports.json?x=1'))
        status, body = network.answer('GET', '/v2.0/quotas/abc')
        self.assertEqual(-1, body['quota']['port'])
        self.assertEqual((204, None),
                         network.answer('DELETE', '/v2.0/ports/1'))
        self.assertEqual(404, network.answer('GET', '/v2.0/ports/1')[0])
        self.assertEqual(400, network.answer('POST', '/v2.0/ports')[0])


class VenvTest(testtools.TestCase):

    def test_pins_exact_and_keyed(self):
        pins = venv.pins()
        self.assertIn('nova==34.0.0', pins)
        self.assertTrue(all('==' in p for p in pins))
        rel = venv.release()
        self.assertTrue(rel.dirname.startswith('cloud-'))
        self.assertEqual('nova==34.0.0', rel.requirements()[0])


class EnsurePluginTest(testtools.TestCase):
    """The checkout goes into the cloud's venv without the index first."""

    def setUp(self):
        super().setUp()
        self.venv = self.useFixture(fixtures.TempDir()).path
        self.python = os.path.join(self.venv, 'bin', 'python')
        self.root = self.useFixture(fixtures.TempDir()).path
        with open(os.path.join(self.root, 'setup.cfg'), 'w') as fh:
            fh.write('[metadata]\nname = x\n')
        self.calls = []
        self.codes = []

        def run(cmd, **kwargs):
            self.calls.append(cmd[1:])
            return subprocess.CompletedProcess(cmd, self.codes.pop(0),
                                               'out', 'err')
        self.useFixture(fixtures.MonkeyPatch('subprocess.run', run))

    def test_without_build_isolation_then_marked_done(self):
        self.codes = [0]
        self.assertTrue(venv.ensure_plugin(self.python, self.root))
        self.assertEqual([['install', '--no-build-isolation', self.root]],
                         self.calls)
        self.assertFalse(venv.ensure_plugin(self.python, self.root))
        self.assertEqual(1, len(self.calls))

    def test_isolated_build_when_the_venv_cannot_build(self):
        self.codes = [1, 0]
        self.assertTrue(venv.ensure_plugin(self.python, self.root))
        self.assertEqual([['install', '--no-build-isolation', self.root],
                          ['install', self.root]], self.calls)

    def test_both_failing_say_both(self):
        self.codes = [1, 2]
        err = self.assertRaises(venv.CloudVenvError, venv.ensure_plugin,
                                self.python, self.root)
        self.assertIn('install --no-build-isolation %s exited 1' % self.root,
                      str(err))
        self.assertIn('install %s exited 2' % self.root, str(err))
        # Nothing marked done: the next cloud tries again.
        self.codes = [0]
        self.assertTrue(venv.ensure_plugin(self.python, self.root))


class PluginCliConfTest(testtools.TestCase):
    """The cloud's nova-snapshot-ext.conf loads as the CLI loads it."""

    def test_glance_and_cinder_auth_load(self):
        import tempfile

        from keystoneauth1 import loading as ks_loading
        from oslo_config import cfg

        from nova_snapshot_ext import opts

        text = config.plugin_cli_conf('http://127.0.0.1:20001/v3', 's3cret')
        with tempfile.NamedTemporaryFile('w', suffix='.conf') as fh:
            fh.write(text)
            fh.flush()
            conf = cfg.ConfigOpts()
            opts.register_opts(conf)
            opts.register_cinder_opts(conf)
            conf([], default_config_files=[fh.name])
        self.assertEqual('fake', conf.snapshot_ext.driver)
        for group in (opts.GLANCE_GROUP, opts.CINDER_GROUP):
            auth = ks_loading.load_auth_from_conf_options(conf, group)
            self.assertEqual('http://127.0.0.1:20001/v3', auth.auth_url)
            self.assertEqual('admin', getattr(conf, group).username)
            self.assertEqual('admin', getattr(conf, group).project_name)


class ErrorLinesTest(testtools.TestCase):
    """What a failed cloud test attaches: error lines since a mark."""

    LINE = '2026-12-03 05:33:40.123 %d %s cinder.volume.manager [-] %s\n'

    def setUp(self):
        super().setUp()
        self.base = self.useFixture(fixtures.TempDir()).path
        self.procs = process.Processes(self.base)
        self.other = os.path.join(self.base, 'glance.log')
        self.procs.other_logs.append(self.other)

    def _write(self, path, *lines):
        with open(path, 'a') as fh:
            fh.writelines(lines)

    def test_only_errors_written_after_the_mark(self):
        volume = self.procs.log_path('cinder-volume')
        self._write(volume, self.LINE % (7, 'ERROR', 'before the mark'))
        self._write(self.other, self.LINE % (8, 'ERROR', 'glance before'))
        marks = self.procs.log_marks()
        self._write(volume,
                    self.LINE % (7, 'INFO', 'an info line'),
                    self.LINE % (7, 'ERROR', 'Traceback (most recent)'),
                    self.LINE % (7, 'CRITICAL', 'the cause'),
                    'a line with ERROR in its text only\n')
        self._write(self.procs.log_path('nova-api'),
                    self.LINE % (9, 'WARNING', 'a warning'))
        self._write(self.other, self.LINE % (8, 'ERROR', 'glance after'))
        self.assertEqual({
            'cinder-volume.log': (
                self.LINE % (7, 'ERROR', 'Traceback (most recent)') +
                self.LINE % (7, 'CRITICAL', 'the cause')),
            'glance.log': self.LINE % (8, 'ERROR', 'glance after'),
        }, self.procs.errors_since(marks))

    def test_a_log_new_since_the_mark_is_read_whole_and_capped(self):
        marks = self.procs.log_marks()
        lines = [self.LINE % (3, 'ERROR', 'line %d' % n) for n in range(30)]
        self._write(self.procs.log_path('nova-compute'), *lines)
        self.assertEqual({'nova-compute.log': ''.join(lines[-5:])},
                         self.procs.errors_since(marks, lines=5))

    def test_the_formats_the_logs_use_and_no_look_alike(self):
        marks = self.procs.log_marks()
        gunicorn = '[2026-12-03 05:00:00 +0000] [4242] [CRITICAL] WORKER\n'
        worker = '[2026-12-03 05:00:00 +0000] [4242] [ERROR] Exception\n'
        mariadb = '2026-12-03  5:00:00 0 [ERROR] InnoDB: no space\n'
        debug = ('2026-12-03 05:00:00.1 7 DEBUG x [-] RESP: [500] 500 '
                 'ERROR body\n')
        self._write(self.procs.log_path('glance-api'), gunicorn, worker,
                    debug)
        self._write(self.procs.log_path('mariadb-error'), mariadb)
        self.assertEqual({'glance-api.log': gunicorn + worker,
                          'mariadb-error.log': mariadb},
                         self.procs.errors_since(marks))

    def test_a_log_cut_or_truncated_around_the_mark(self):
        api = self.procs.log_path('nova-api')
        first = self.LINE % (9, 'ERROR', 'an old error')
        self._write(api, first, '2026-12-03 05:33:40.123 9 ERR')
        marks = self.procs.log_marks()
        # The line being written at the mark is read whole.
        self._write(api, 'OR nova [-] the new one\n')
        self.assertEqual(
            {'nova-api.log': '2026-12-03 05:33:40.123 9 ERROR nova [-] '
             'the new one\n'}, self.procs.errors_since(marks))
        # Truncated below its mark (rotated): all of it is new.
        with open(api, 'w') as fh:
            fh.write(self.LINE % (9, 'ERROR', 'after truncation'))
        self.assertEqual(
            {'nova-api.log': self.LINE % (9, 'ERROR', 'after truncation')},
            self.procs.errors_since(marks))

    def test_the_directory_removed_is_no_error(self):
        marks = self.procs.log_marks()
        shutil.rmtree(self.procs.log_dir)
        self.assertEqual({}, self.procs.errors_since(marks))

    def test_nothing_when_no_error(self):
        marks = self.procs.log_marks()
        self._write(self.procs.log_path('nova-api'),
                    self.LINE % (9, 'INFO', 'fine'))
        self.assertEqual({}, self.procs.errors_since(marks))
