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

"""The real stack's pieces that need no daemon: configs, checks, parsing.

The daemons themselves (Ceph, libvirtd, the guest) are judged by
``tests/cloud/test_real_stack.py`` on the real stack.
"""

import configparser
import os
import re
import subprocess

import fixtures
import testtools

from nova_snapshot_ext.embedded.cloud import ceph
from nova_snapshot_ext.embedded.cloud import config
from nova_snapshot_ext.embedded.cloud import guest
from nova_snapshot_ext.embedded.cloud import host
from nova_snapshot_ext.embedded.cloud import libvirtd
from nova_snapshot_ext.embedded.cloud import realstack
from nova_snapshot_ext.embedded.cloud import services
from nova_snapshot_ext.embedded import process


def _ini(text):
    parser = configparser.ConfigParser(interpolation=None)
    parser.read_string(text)
    return parser


class ReadConsoleTest(testtools.TestCase):

    BOOT = ('\x1b[2JNSE-BOOT 0011223344556677\n'
            'NSE-DISK vda 2097152\n'
            'NSE-WROTE vda NSEMARK-0123456789abcdef01234567\n'
            'NSE-DISK vdb 4194304\n'
            'NSE-READ vdb NSEMARK-aaaaaaaaaaaaaaaaaaaaaaaa\n')

    def test_one_boot(self):
        said = guest.read_console(self.BOOT + 'NSE-DONE\n')
        self.assertEqual('0011223344556677', said['boot'])
        self.assertTrue(said['done'])
        self.assertEqual({'vda': 2097152, 'vdb': 4194304}, said['disks'])
        self.assertEqual(
            {'vda': ('WROTE', 'NSEMARK-0123456789abcdef01234567'),
             'vdb': ('READ', 'NSEMARK-aaaaaaaaaaaaaaaaaaaaaaaa')},
            said['markers'])

    def test_not_done_until_it_says_so(self):
        self.assertFalse(guest.read_console(self.BOOT)['done'])

    def test_only_the_last_boot_counts(self):
        second = ('NSE-BOOT ffffffffffffffff\nNSE-DISK vda 2097152\n'
                  'NSE-READ vda NSEMARK-0123456789abcdef01234567\n')
        said = guest.read_console(self.BOOT + 'NSE-DONE\n' + second)
        self.assertEqual('ffffffffffffffff', said['boot'])
        self.assertFalse(said['done'])
        self.assertEqual(['vda'], list(said['markers']))
        self.assertEqual('READ', said['markers']['vda'][0])

    def test_freezes_and_thaws_of_the_last_boot(self):
        text = ('NSE-BOOT 0000000000000001\nNSE-FSFREEZE freeze\n'
                'NSE-FSFREEZE thaw\nNSE-BOOT 0000000000000002\n'
                'NSE-AGENT vport0p1\nNSE-FSFREEZE freeze\n'
                'NSE-FSFREEZE thaw\nNSE-FSFREEZE freeze\n'
                'echo "NSE-FSFREEZE $1"\n')
        self.assertEqual(['freeze', 'thaw', 'freeze'],
                         guest.read_console(text)['freezes'])

    def test_records_written_at_each_freeze_and_thaw(self):
        said = guest.read_console(
            'NSE-BOOT 0000000000000001\nNSE-FSFREEZE freeze 17\n'
            'NSE-FSFREEZE thaw 19\nNSE-FSFREEZE freeze\n')
        self.assertEqual(['freeze', 'thaw', 'freeze'], said['freezes'])
        self.assertEqual([17, 19, None], said['written'])

    def test_what_the_log_disk_held_at_boot(self):
        said = guest.read_console(
            self.BOOT + 'NSE-JOURNAL vdb recovery\nNSE-FSCK vdb 4\n'
            'NSE-LOG vdb 340 torn\nNSE-DONE\n')
        self.assertEqual({'vdb': {'journal': 'recovery', 'fsck': 4,
                                  'records': 340, 'log': 'torn'}},
                         said['filesystems'])
        again = guest.read_console(
            self.BOOT + 'NSE-JOURNAL vdb recovery\nNSE-DONE\n'
            'NSE-BOOT 0000000000000002\nNSE-JOURNAL vdb clean\n'
            'NSE-LOG vdb 0 ok\n')
        self.assertEqual({'vdb': {'journal': 'clean', 'records': 0,
                                  'log': 'ok'}}, again['filesystems'])

    def test_a_foreign_log_disk_is_left_alone(self):
        said = guest.read_console(self.BOOT + 'NSE-JOURNAL vdb foreign\n'
                                  'NSE-DONE\n')
        self.assertEqual({'vdb': {'journal': 'foreign'}},
                         said['filesystems'])
        # The guest formats only a disk whose first 64 KiB are zeros.
        script = guest.init_script()
        self.assertIn('bs=65536 count=1', script)
        self.assertIn('elif [ "$used" -eq 0 ]; then\n    %s/mke2fs'
                      % guest._SBIN, script)
        self.assertIn('else\n    echo "NSE-JOURNAL %s foreign"'
                      % guest.LOG_DISK, script)

    def test_a_marker_sector_holding_other_data_is_kept(self):
        script = guest.init_script()
        self.assertIn('NSE-KEPT $name', script)
        self.assertLess(script.index('NSE-KEPT $name'),
                        script.index('seek=%d' % guest.MARKER_SECTOR))
        said = guest.read_console(
            'NSE-BOOT 0000000000000001\nNSE-DISK vdb 8\n'
            'NSE-KEPT vdb: sector 61440 holds other data\nNSE-DONE\n')
        self.assertEqual({}, said['markers'])

    def test_the_writer_progress(self):
        said = guest.read_console(
            self.BOOT + 'NSE-LOG vdb 0 ok\nNSE-DONE\nNSE-WRITTEN vdb 25\n'
            'NSE-WRITTEN vdb 50\n')
        self.assertEqual({'vdb': 50}, said['progress'])
        self.assertEqual({}, guest.read_console(self.BOOT)['progress'])

    def test_filesystem_look_alikes_are_not_read(self):
        said = guest.read_console(
            'NSE-BOOT 0000000000000001\nNSE-JOURNAL vdb dirty\n'
            'NSE-LOG vdb many ok\nNSE-FSCK vdb\n'
            'echo "NSE-LOG %(disk)s $counted"\n')
        self.assertEqual({}, said['filesystems'])

    def test_whole_words_only_and_boots_in_order(self):
        said = guest.read_console(
            'NSE-BOOT 0000000000000001\r\n'
            'NSE-READ vda NSEMARK-0123456789abcdef012345678\n'
            'XNSE-READ vdb NSEMARK-0123456789abcdef01234567\n'
            'NSE-READ vdc NSEMARK-aaaaaaaaaaaaaaaaaaaaaaaa '
            'NSE-BOOT 0000000000000002\x1b[0m NSE-DONE\x1b[0m\r\n')
        self.assertEqual('0000000000000002', said['boot'])
        self.assertEqual({}, said['markers'])
        self.assertTrue(said['done'])
        self.assertEqual(said, guest.read_console(
            'NSE-BOOT 0000000000000001\r\n'
            'NSE-READ vdc NSEMARK-aaaaaaaaaaaaaaaaaaaaaaaa '
            'NSE-BOOT 0000000000000002\x1b[0m NSE-DONE\x1b[0m\r\n'
            .encode()))

    def test_look_alikes_are_not_markers(self):
        said = guest.read_console('NSE-READ vda NSEMARK-short\n'
                                  'echo NSE-READ vdz nothing\n')
        self.assertEqual({}, said['markers'])
        self.assertIsNone(said['boot'])


class InitScriptTest(testtools.TestCase):

    def test_modules_in_dependency_order_and_the_sector(self):
        script = guest.init_script()
        self.assertIn(' '.join(guest.MODULES), script)
        self.assertLess(guest.MODULES.index('virtio_ring'),
                        guest.MODULES.index('virtio'))
        self.assertIn('skip=%d' % guest.MARKER_SECTOR, script)
        self.assertIn('seek=%d' % guest.MARKER_SECTOR, script)
        # The marker lies past the boot partition, inside the disk.
        self.assertGreater(guest.MARKER_SECTOR,
                           2048 + guest.PARTITION_KIB * 2)
        self.assertLess(guest.MARKER_SECTOR * 512,
                        guest.DISK_MIB * 1024 * 1024)

    def test_the_agent_runs_on_its_channel_with_the_hook(self):
        script = guest.init_script()
        self.assertIn(guest.AGENT_CHANNEL, script)
        self.assertIn('-F/bin/nse-fsfreeze-hook', script)
        self.assertIn('mount -t ext2 /dev/ram0 /data', script)
        self.assertIn('NSE-FSFREEZE $1 $(cat %s' % guest._RECORDS,
                      guest._HOOK)

    def test_the_log_lies_before_the_marker_and_its_records_fit(self):
        script = guest.init_script()
        self.assertLessEqual(guest.LOG_MIB * 1024 * 1024,
                             guest.MARKER_SECTOR * 512)
        self.assertIn('-L %s /dev/%s' % (guest.LOG_LABEL, guest.LOG_DISK),
                      script)
        self.assertIn(' %dM && mkdir -p /vol' % guest.LOG_MIB, script)
        # Only the filesystem of that label is the guest's (superblock
        # offset 1024 + 0x78, s_volume_name).
        self.assertIn('skip=1144 count=%d' % len(guest.LOG_LABEL), script)
        self.assertLessEqual(len(guest.LOG_LABEL), 16)
        # A record the writer cannot write stops it; its count is
        # replaced whole (the fsfreeze hook never reads it half-written).
        self.assertIn('>>/vol/log || break', script)
        self.assertIn('mv %s.new %s' % (guest._RECORDS, guest._RECORDS),
                      script)
        self.assertIn('length($0) != %d' % (guest.RECORD_BYTES - 1), script)
        line = 'NSEREC %08d ' % 1
        record = re.search(r"printf 'NSEREC %08d %s\\n' \$n (x+)",
                           script)
        self.assertIsNotNone(record, script)
        self.assertEqual(guest.RECORD_BYTES,
                         len(line) + len(record.group(1)) + 1)
        # e2fsprogs' programs are called by path (busybox's shell would
        # run its own journal-less mke2fs for the bare name).
        self.assertIn('%s/mke2fs -q -F -t ext4' % guest._SBIN, script)
        self.assertIn('%s/e2fsck -fn' % guest._SBIN, script)

    def test_shared_libraries_of_a_program(self):
        found = guest.shared_libraries('/bin/ls')
        self.assertTrue(all(os.path.isabs(p) for p in found), found)
        self.assertTrue(any('libc.so' in p for p in found), found)

    def test_the_script_is_valid_shell(self):
        result = subprocess.run(['sh', '-n'], input=guest.init_script(),
                                capture_output=True, text=True)
        self.assertEqual(0, result.returncode, result.stderr)

    def test_the_key_follows_the_recipe(self):
        key = guest.recipe_key('linux-image-6.1.0-57-cloud-amd64', '7.2')
        self.assertNotEqual(key, guest.recipe_key(
            'linux-image-6.1.0-58-cloud-amd64', '7.2'))
        self.assertNotEqual(key, guest.recipe_key(
            'linux-image-6.1.0-57-cloud-amd64', '7.3'))
        self.assertNotEqual(key, guest.recipe_key(
            'linux-image-6.1.0-57-cloud-amd64', '7.2', ['mke2fs 00']))
        self.useFixture(fixtures.MonkeyPatch(
            'nova_snapshot_ext.embedded.cloud.guest.MARKER_SECTOR', 61441))
        self.assertNotEqual(key, guest.recipe_key(
            'linux-image-6.1.0-57-cloud-amd64', '7.2'))


class HostTest(testtools.TestCase):

    def test_missing_named_with_the_install_command(self):
        err = self.assertRaises(
            process.CloudError, host.require, 'the cloud',
            {'sh': 'dash', '/no/such/file': 'pkg-b',
             'no-such-program-x': 'pkg-a'})
        self.assertEqual(
            'the cloud needs Debian packages that are not installed: '
            'pkg-a, pkg-b; install them with: apt-get install '
            '--no-install-recommends pkg-a pkg-b', str(err))

    def test_only_files_count(self):
        self.assertEqual(['a', 'b', 'c', 'd'], host.missing_packages(
            {'': 'a', '.': 'b', '/': 'c', 'bin/sh': 'd'}))

    def test_command_line(self):
        from nova_snapshot_ext.embedded.cloud import debian

        self.assertEqual(2, debian.main(['real', 'extra']))
        self.assertEqual(2, debian.main(['xen']))
        real = debian.program_maps('real')
        fake = debian.program_maps('fake')
        # The real stack needs what the fake one does, and Ceph's,
        # libvirtd's and the guest's programs besides.
        self.assertEqual(fake, real[:len(fake)])
        for programs in realstack.PROGRAM_MAPS:
            for program, package in programs.items():
                self.assertIn((program, package), [
                    item for extra in real[len(fake):]
                    for item in extra.items()])
        self.assertNotIn('ceph', repr(fake))

    def test_nothing_missing(self):
        self.assertIsNone(host.require('x', {'sh': 'dash'}))
        self.assertEqual([], host.missing_packages({'sh': 'dash'}))

    def test_every_map_names_a_package_per_program(self):
        for programs in (guest.PROGRAMS, ceph.PROGRAMS, libvirtd.PROGRAMS):
            for program, package in programs.items():
                self.assertTrue(program and package, programs)

    def test_the_cloud_refuses_before_making_anything(self):
        from nova_snapshot_ext.embedded.cloud import launcher

        self.useFixture(fixtures.MonkeyPatch(
            'nova_snapshot_ext.embedded.cloud.services.PROGRAMS',
            {'no-such-program-x': 'mariadb-server'}))
        made = self.useFixture(fixtures.MockPatch(
            'tempfile.mkdtemp')).mock
        cloud = launcher.Cloud()
        err = self.assertRaises(process.CloudError, cloud.start)
        self.assertIn('apt-get install --no-install-recommends '
                      'mariadb-server', str(err))
        made.assert_not_called()
        self.assertIsNone(cloud.base_dir)


class StandInSudoTest(testtools.TestCase):

    def _sudo(self, *args):
        bin_dir = self.useFixture(fixtures.TempDir()).path
        sudo = realstack.write_sudo(bin_dir)
        return subprocess.run([sudo] + list(args), capture_output=True,
                              text=True, timeout=30).stdout

    def test_options_and_rootwrap_dropped(self):
        self.assertEqual('a b\n', self._sudo(
            '-E', '-n', 'cinder-rootwrap', '/etc/cinder/rootwrap.conf',
            'echo', 'a', 'b'))

    def test_option_values_and_plain_commands(self):
        self.assertEqual('x\n', self._sudo('-u', 'root', 'echo', 'x'))
        self.assertEqual('-n\n', self._sudo('--', 'printf', '%s\\n', '-n'))
        for option in ('--user', '-D', '-R', '-T', '-g'):
            self.assertEqual('y\n', self._sudo(option, 'v', 'echo', 'y'))

    def test_what_it_cannot_run_is_said(self):
        bin_dir = self.useFixture(fixtures.TempDir()).path
        sudo = realstack.write_sudo(bin_dir)
        for args, words in (((), 'no command'), (('-s',), '-s is not'),
                            (('-i',), '-i is not'),
                            (('cinder-rootwrap',), 'needs a config'),
                            (('nova-rootwrap-daemon', '/c'), 'daemon')):
            result = subprocess.run([sudo] + list(args), capture_output=True,
                                    text=True, timeout=30)
            self.assertEqual(1, result.returncode, args)
            self.assertIn(words, result.stderr, args)


class BindingsTest(testtools.TestCase):

    def test_links_only_the_venv_abi_and_one_pth(self):
        root = self.useFixture(fixtures.TempDir()).path
        dist = os.path.join(root, 'dist')
        os.makedirs(dist)
        for name in ('rados.cpython-311-x86_64-linux-gnu.so',
                     'rados.cpython-312-x86_64-linux-gnu.so',
                     'rbd.cpython-311-x86_64-linux-gnu.so', 'libvirt.py',
                     'yaml.py'):
            open(os.path.join(dist, name), 'w').close()
        venv = os.path.join(root, 'venv')
        site = os.path.join(venv, 'lib', 'python3.11', 'site-packages')
        os.makedirs(site)
        os.makedirs(os.path.join(venv, 'bin'))
        with open(os.path.join(venv, 'pyvenv.cfg'), 'w') as fh:
            fh.write('home = /usr/bin\nversion = 3.11.7\n')
        python = os.path.join(venv, 'bin', 'python')
        folder = realstack.link_bindings(python, dist_packages=dist)
        self.assertEqual(['libvirt.py',
                          'rados.cpython-311-x86_64-linux-gnu.so',
                          'rbd.cpython-311-x86_64-linux-gnu.so'],
                         sorted(os.listdir(folder)))
        with open(os.path.join(site, realstack._PTH_NAME)) as fh:
            self.assertEqual(folder + '\n', fh.read())
        # Idempotent.
        self.assertEqual(folder, realstack.link_bindings(
            python, dist_packages=dist))

    def test_no_binding_for_the_abi_is_named(self):
        root = self.useFixture(fixtures.TempDir()).path
        venv = os.path.join(root, 'venv')
        os.makedirs(os.path.join(venv, 'bin'))
        with open(os.path.join(venv, 'pyvenv.cfg'), 'w') as fh:
            fh.write('version = 3.13.1\n')
        err = self.assertRaises(
            process.CloudError, realstack.link_bindings,
            os.path.join(venv, 'bin', 'python'), dist_packages=root)
        self.assertIn('cpython-313', str(err))


class CephReadsTest(testtools.TestCase):
    """Reads of a pool whose images Cinder removes at any moment."""

    def setUp(self):
        super().setUp()
        self.cluster = ceph.Ceph.of_conf('/c/ceph/ceph.conf')
        self.answers = {}
        self.useFixture(fixtures.MonkeyPatch(
            'subprocess.run', self._run))

    def _run(self, cmd, **kwargs):
        rc, out = self.answers[tuple(cmd[3:])]
        return subprocess.CompletedProcess(cmd, rc, out, 'rbd: said %d' % rc)

    def test_an_image_removed_between_the_reads_is_left_out(self):
        self.answers = {
            ('ls', '--format', 'json', 'volumes'): (0, '["a", "b"]'),
            ('snap', 'ls', '--format', 'json', 'volumes/a'): (2, ''),
            ('snap', 'ls', '--format', 'json', 'volumes/b'): (
                0, '[{"id": 4, "name": "snapshot-1", "size": 1}]'),
        }
        self.assertEqual({'b': ['snapshot-1']},
                         self.cluster.rbd_images('volumes'))

    def test_another_failure_is_an_error_with_what_rbd_said(self):
        self.answers = {
            ('ls', '--format', 'json', 'volumes'): (0, '["a"]'),
            ('snap', 'ls', '--format', 'json', 'volumes/a'): (13, ''),
        }
        err = self.assertRaises(process.CloudError,
                                self.cluster.rbd_images, 'volumes')
        self.assertIn('exited with 13: rbd: said 13', str(err))


class _Ports(object):
    ports = {'ceph_v2': 20001, 'ceph_v1': 20002, 'libvirt': 20003}


class ConfigsTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.base = self.useFixture(fixtures.TempDir()).path
        self.stack = realstack.RealStack(None, self.base, _Ports.ports)

    def test_ceph_conf_cephx_private_paths_and_ports(self):
        conf = _ini(ceph.ceph_conf('/d', 'fsid-1', 20001, 20002))
        self.assertEqual('[v2:127.0.0.1:20001,v1:127.0.0.1:20002]',
                         conf['global']['mon_host'])
        for key in ('auth_cluster_required', 'auth_service_required',
                    'auth_client_required'):
            self.assertEqual('cephx', conf['global'][key])
        self.assertEqual('/d/ceph.$name.keyring', conf['client']['keyring'])
        for section in conf.sections():
            for value in conf[section].values():
                self.assertNotIn('/var/lib/ceph', value)
                self.assertNotIn('/etc/ceph', value)

    def test_cinder_on_rbd_with_the_restricted_user(self):
        conf = _ini(config.cinder_conf(
            '/c', 'mysql://', 'rabbit://', 'http://k', 'pw', 'fake.Driver',
            backend=self.stack.cinder_backend()))
        self.assertEqual('ceph', conf['DEFAULT']['enabled_backends'])
        self.assertNotIn('fake', conf.sections())
        backend = conf['ceph']
        self.assertEqual('cinder.volume.drivers.rbd.RBDDriver',
                         backend['volume_driver'])
        self.assertEqual('cinder', backend['rbd_user'])
        self.assertEqual(self.stack.ceph.fsid, backend['rbd_secret_uuid'])
        self.assertEqual('false',
                         backend['rbd_flatten_volume_from_snapshot'])

    def test_the_fake_backend_stays_the_default(self):
        conf = _ini(config.cinder_conf(
            '/c', 'mysql://', 'rabbit://', 'http://k', 'pw', 'fake.Driver'))
        self.assertEqual('fake', conf['DEFAULT']['enabled_backends'])
        self.assertEqual('fake.Driver', conf['fake']['volume_driver'])

    def test_nova_compute_on_the_private_libvirtd(self):
        conf = _ini(config.nova_conf(
            '/n', 'db', None, 'rabbit://', 'http://k', 'pw', 'http://g',
            compute_driver='fake.FakeDriver',
            extra=self.stack.nova_compute_options()))
        self.assertEqual('libvirt.LibvirtDriver',
                         conf['DEFAULT']['compute_driver'])
        self.assertEqual('3', conf['DEFAULT']['shutdown_timeout'])
        self.assertEqual('127.0.0.1', conf['DEFAULT']['my_ip'])
        self.assertEqual('qemu', conf['libvirt']['virt_type'])
        self.assertEqual('qemu+tcp://127.0.0.1:20003/system',
                         conf['libvirt']['connection_uri'])

    def test_plugin_cli_conf_names_the_libvirt_driver(self):
        conf = _ini(config.plugin_cli_conf('http://k', 'pw',
                                           driver='libvirt'))
        self.assertEqual('libvirt', conf['snapshot_ext']['driver'])
        self.assertEqual('qemu', conf['snapshot_ext_libvirt']['virt_type'])

    def test_glance_rbd_store_only_when_asked(self):
        self.assertIsNone(self.stack.glance_rbd_store())
        rbd = realstack.RealStack(None, self.base, _Ports.ports,
                                  glance_store='rbd')
        self.assertEqual({'pool': 'images', 'ceph_conf': rbd.ceph.conf,
                          'user': 'cinder'}, rbd.glance_rbd_store())
        self.assertRaises(KeyError, realstack.RealStack, None, self.base,
                          _Ports.ports, glance_store='swift')

    def test_libvirtd_conf_loopback_only(self):
        text = libvirtd.LIBVIRTD_CONF % {'port': 20003}
        self.assertIn('listen_addr = "127.0.0.1"', text)
        self.assertIn('listen_tls = 0', text)
        self.assertIn('tcp_port = "20003"', text)


class EmbeddedGlanceRbdTest(testtools.TestCase):

    def test_rbd_is_the_default_backend(self):
        from nova_snapshot_ext.embedded import glance

        base = self.useFixture(fixtures.TempDir()).path
        server = glance.EmbeddedGlance(base, rbd_store={
            'pool': 'images', 'ceph_conf': '/c/ceph.conf', 'user': 'cinder'})
        server._prepare_base_dir()
        server._write_config()
        conf = _ini(open(os.path.join(base, 'glance-api.conf')).read())
        self.assertEqual('ceph:rbd,fs:file',
                         conf['DEFAULT']['enabled_backends'])
        self.assertEqual('ceph', conf['glance_store']['default_backend'])
        self.assertEqual('images', conf['ceph']['rbd_store_pool'])
        self.assertEqual('cinder', conf['ceph']['rbd_store_user'])

    def test_file_store_by_default(self):
        from nova_snapshot_ext.embedded import glance

        base = self.useFixture(fixtures.TempDir()).path
        server = glance.EmbeddedGlance(base)
        server._prepare_base_dir()
        server._write_config()
        conf = _ini(open(os.path.join(base, 'glance-api.conf')).read())
        self.assertEqual('fs', conf['glance_store']['default_backend'])
        self.assertNotIn('ceph', conf.sections())


class CloudChoicesTest(testtools.TestCase):

    def test_each_step_said_as_it_begins(self):
        from nova_snapshot_ext.embedded.cloud import launcher

        lines = []
        cloud = launcher.Cloud(progress=lines.append)
        self.assertEqual(7, cloud.step('mariadb', lambda: 7))
        self.assertEqual(['MariaDB'], lines)
        self.assertIn('mariadb', cloud.timings)
        words = cloud._step_words('venv')
        self.assertIn('minutes', words)
        self.assertIn('.log', words)
        # Every step the start runs has its words: the cloud's own and
        # every service's.
        import inspect
        sources = [launcher.Cloud._start] + [
            cls for cls in services.SERVICES]
        steps = set()
        for source in sources:
            steps.update(re.findall(r"step\('(\w+)'",
                                    inspect.getsource(source)))
        self.assertEqual(set(), steps - set(launcher.STEP_WORDS) - {'venv'})
        for cls in services.SERVICES:
            self.assertTrue(cls.words, cls)
            self.assertNotEqual(cls.name, cloud._step_words(cls.name))

    def test_unknown_stack_and_store_refused(self):
        from nova_snapshot_ext.embedded.cloud import launcher

        self.assertRaises(KeyError, launcher.Cloud, stack='xen')
        self.assertRaises(KeyError, launcher.Cloud, stack='real',
                          glance_store='swift')
        err = self.assertRaises(KeyError, launcher.Cloud,
                                glance_store='rbd')
        self.assertIn('needs the real stack', str(err))


class MountedAnywhereTest(testtools.TestCase):

    def _proc(self, tables):
        root = self.useFixture(fixtures.TempDir()).path
        for pid, lines in tables.items():
            os.makedirs(os.path.join(root, pid))
            with open(os.path.join(root, pid, 'mountinfo'), 'w') as fh:
                fh.write(''.join(lines))
        os.makedirs(os.path.join(root, 'self'))
        return root

    def test_a_mount_in_any_namespace_is_seen(self):
        line = ('1337 29 0:55 /tmp/cloud/libvirt/run /run/libvirt '
                'rw,relatime - tmpfs tmpfs rw\n')
        other = '25 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n'
        root = self._proc({'100': [other], '200': [other, line]})
        self.assertTrue(libvirtd.mounted_anywhere('/run/libvirt', root))
        self.assertFalse(libvirtd.mounted_anywhere('/run/libvirt/x', root))

    def test_none_and_vanished_processes(self):
        root = self._proc({'100': ['25 1 8:1 / / rw - ext4 /dev/sda1 rw\n']})
        os.makedirs(os.path.join(root, '300'))  # ended: no mountinfo
        self.assertFalse(libvirtd.mounted_anywhere('/run/libvirt', root))

    def test_the_mark_lies_in_the_mount_point(self):
        self.assertEqual(libvirtd.RUN_DIR,
                         os.path.dirname(libvirtd.RUN_DIR_MARK))
        self.assertIn(libvirtd.RUN_DIR, [m[0] for m in libvirtd.MOUNTS])
