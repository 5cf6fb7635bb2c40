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

"""``serve --cloud``'s printed parts."""

import os
import shutil
import subprocess
import tempfile

from nova_snapshot_ext.cmd import serve
from nova_snapshot_ext.embedded.cloud import launcher
from tests import base


class TestCloudExports(base.TestCase):
    """serve --cloud's OS_* lines run in a shell as printed."""

    def test_exports_are_shell_quoted_and_sorted(self):
        text = serve.cloud_exports({'OS_USERNAME': 'demo',
                                    'OS_PASSWORD': "it's secret",
                                    'OS_AUTH_URL': 'http://127.0.0.1:1/v3'})
        lines = text.splitlines()
        self.assertEqual(['export OS_AUTH_URL=http://127.0.0.1:1/v3',
                          "export OS_PASSWORD='it'\"'\"'s secret'",
                          'export OS_USERNAME=demo'], lines)
        out = subprocess.run(['sh', '-c', text + '; printf %s "$OS_PASSWORD"'],
                             capture_output=True, text=True, check=True)
        self.assertEqual("it's secret", out.stdout)


class TestCloudStoppedLine(base.TestCase):
    """The stop line says what became of the directory (issue 27)."""

    def test_removed_kept_or_none(self):
        kept = tempfile.mkdtemp()
        self.addCleanup(os.rmdir, kept)
        self.assertIn('%s is kept' % kept, serve.cloud_stopped_line(kept))
        self.assertNotIn('removed', serve.cloud_stopped_line(kept))
        gone = os.path.join(kept, 'gone')
        self.assertEqual('The cloud is stopped and %s removed.' % gone,
                         serve.cloud_stopped_line(gone))
        self.assertNotIn('removed', serve.cloud_stopped_line(None))


class TestInterruptedStart(base.TestCase):
    """Ctrl-C during the start: everything stopped, the directory gone."""

    def test_interrupt_removes_the_directory(self):
        cloud = launcher.Cloud()

        def interrupted():
            raise KeyboardInterrupt

        cloud._start = interrupted
        self.assertRaises(KeyboardInterrupt, cloud.start)
        self.assertFalse(cloud.keep)
        cloud.stop()
        self.assertFalse(os.path.exists(cloud.base_dir))

    def test_failure_keeps_the_logs(self):
        cloud = launcher.Cloud()

        def failed():
            raise RuntimeError('mariadbd did not answer')

        cloud._start = failed
        err = self.assertRaises(launcher.CloudError, cloud.start)
        self.addCleanup(shutil.rmtree, cloud.base_dir, True)
        self.assertIn(cloud.base_dir, str(err))
        cloud.stop()
        self.assertTrue(os.path.isdir(cloud.base_dir))


class TestImageList(base.TestCase):

    def test_each_image_by_its_glance_name(self):
        self.assertEqual(
            'cloud-guest (id g1), cloud-image (id i1), other (id o1)',
            serve.image_list({'image': 'i1', 'guest': 'g1', 'other': 'o1'}))


class TestActivationRefusals(base.TestCase):
    """Kind: an --activation serve cannot run, refused before any start."""

    def serve(self, *args):
        import shlex

        argv = shlex.split(serve.console_command(*serve.MAIN_SCRIPT))
        return subprocess.run(argv + ['serve'] + list(args),
                              capture_output=True, text=True, timeout=120,
                              check=False)

    def test_refused_with_exit_2_naming_the_option(self):
        for args, words in (
                (('--cloud', '--activation', 'bogus'),
                 ('--activation bogus', 'location-first')),
                (('--activation', 'location-first'),
                 ('--activation', '--cloud')),
                (('--stock-nova',), ('--stock-nova', '--cloud')),
                (('--cloud', '--stock-nova', '--activation',
                  'location-first'), ('--activation', '--stock-nova')),
                (('--cloud', '--stack', 'xen'), ('--stack xen', 'real')),
                (('--stack', 'real'), ('--stack', '--cloud')),
                (('--glance-store', 'rbd'), ('--glance-store', '--cloud')),
                (('--cloud', '--glance-store', 'rbd'),
                 ('--glance-store rbd', '--stack real')),
                (('--cloud', '--stack', 'real', '--glance-store', 'swift'),
                 ('--glance-store swift', 'file, rbd'))):
            proc = self.serve(*args)
            self.assertEqual(2, proc.returncode, (args, proc.stderr))
            for word in words:
                self.assertIn(word, proc.stderr, args)
            self.assertNotIn('Starting the cloud', proc.stderr, args)


class TestStartLine(base.TestCase):
    """run_cloud up to the start, on each stack (a stub cloud)."""

    def run_cloud(self, failure=None, **given):
        import io
        import types

        import fixtures

        from nova_snapshot_ext.cmd import checks

        made = {}

        class StubCloud(object):
            running = False

            def __init__(self, **kwargs):
                made.update(kwargs)
                self.base_dir = None

            def start(self):
                raise failure or launcher.CloudError('stub: not started')

            def stop(self):
                pass

        self.useFixture(fixtures.MonkeyPatch(
            'nova_snapshot_ext.embedded.cloud.launcher.Cloud', StubCloud))
        err = self.useFixture(fixtures.MonkeyPatch('sys.stderr',
                                                   io.StringIO())).new_value
        args = dict(profile='default', database=serve.SQLITE,
                    config_out=None, activation=None, stock_nova=False,
                    stack=None, glance_store=None)
        args.update(given)
        conf = types.SimpleNamespace(command=types.SimpleNamespace(**args),
                                     format='text')
        failure = self.assertRaises(checks.CLIError, serve.run_cloud, conf)
        return made, err.getvalue(), failure

    def test_fake_stack_by_default(self):
        made, said, failure = self.run_cloud()
        self.assertEqual(('fake', 'file'),
                         (made['stack'], made['glance_store']))
        self.assertIn('fake storage and hypervisor', said)
        self.assertIn('stub: not started', str(failure))

    def test_real_stack_and_its_store(self):
        made, said, _failure = self.run_cloud(stack='real',
                                              glance_store='rbd')
        self.assertEqual(('real', 'rbd'),
                         (made['stack'], made['glance_store']))
        self.assertIn('Ceph RBD (Glance store rbd) and libvirt/QEMU', said)

    def test_a_missing_package_is_configuration_exit_2(self):
        from nova_snapshot_ext.embedded.cloud import host

        _made, _said, failure = self.run_cloud(failure=host.MissingPackages(
            'the cloud needs Debian packages that are not installed: '
            'mariadb-server; install them with: apt-get install '
            '--no-install-recommends mariadb-server'))
        self.assertEqual(2, failure.code)
        self.assertIn('apt-get install --no-install-recommends '
                      'mariadb-server', str(failure))
        _made, _said, failure = self.run_cloud()
        self.assertEqual(3, failure.code)

    def test_empty_values_are_refused_not_defaulted(self):
        for name in ('stack', 'glance_store', 'activation'):
            made, said, failure = self.run_cloud(**{name: ''})
            self.assertEqual(({}, ''), (made, said), name)
            self.assertIn('--%s  is not' % name.replace('_', '-'),
                          str(failure))
            self.assertEqual(2, failure.code)
