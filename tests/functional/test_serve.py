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


"""``nova-snapshot-ext serve`` as an operator uses it.

serve runs as a subprocess; probe, snapshot and audit run with the
configuration file it wrote; then Ctrl-C (SIGINT) stops it, and nothing it
started or wrote is left.
"""

import json
import os
import shlex
import signal
import subprocess
import sys
import urllib.error
import urllib.request

import fixtures
import testtools

from nova_snapshot_ext.snapshot import request as request_mod
from tests.functional import base as fbase


class TestServe(testtools.TestCase):

    def setUp(self):
        super().setUp()
        if fbase.SKIP_REASON:
            self.skipTest(fbase.SKIP_REASON)
        self.tmp = self.useFixture(fixtures.TempDir()).path

    def cli(self, *args):
        return subprocess.run(
            [sys.executable, '-m', 'nova_snapshot_ext.cmd.main'] +
            list(args), capture_output=True, text=True, timeout=180,
            check=False)

    def start(self, *args, cwd=None):
        stderr = open(os.path.join(self.tmp, 'serve.err'), 'w+')
        self.addCleanup(stderr.close)
        proc = subprocess.Popen(
            [sys.executable, '-m', 'nova_snapshot_ext.cmd.main', 'serve',
             '--format', 'json'] + list(args),
            stdout=subprocess.PIPE, stderr=stderr, text=True, cwd=cwd)

        def kill():
            if proc.poll() is None:
                proc.kill()
                proc.wait(30)
        self.addCleanup(kill)
        line = proc.stdout.readline()
        self.assertTrue(line, 'serve ended early: %s' % self.read(stderr))
        return proc, json.loads(line), stderr

    @staticmethod
    def read(stream):
        stream.flush()
        stream.seek(0)
        return stream.read()

    def test_probe_snapshot_audit_then_ctrl_c(self):
        out_conf = os.path.join(self.tmp, 'serve.conf')
        proc, info, stderr = self.start('--profile', 'no-raw',
                                        '--config-out', out_conf)
        self.assertEqual(out_conf, info['config_file'])
        self.assertTrue(os.path.isfile(out_conf))
        base_dir = os.path.dirname(info['log_file'])
        self.assertTrue(os.path.isdir(base_dir))

        probe = self.cli('probe', '--config-file', out_conf)
        self.assertEqual(0, probe.returncode, probe.stderr)
        self.assertIn('upload qcow2', probe.stdout)
        snap = self.cli('snapshot', '--config-file', out_conf, '--format',
                        'json', request_mod.SAMPLE_REQUEST)
        self.assertEqual(0, snap.returncode, snap.stderr)
        image = json.loads(snap.stdout)['image']
        self.assertEqual(('active', 'qcow2'),
                         (image['status'], image['disk_format']))
        audit = self.cli('audit', '--config-file', out_conf, '--format',
                         'json')
        self.assertEqual(0, audit.returncode, audit.stderr)
        report = json.loads(audit.stdout)
        self.assertEqual(1, report['snapshots'], report)
        self.assertEqual([], report['findings'])
        # Glance's own configuration is named, for --glance-api-conf of
        # the upgrade check; the printed status command runs as printed.
        glance_conf = info['glance_api_conf']
        self.assertEqual(os.path.join(base_dir, 'glance-api.conf'),
                         glance_conf)
        self.assertTrue(os.path.isfile(glance_conf))
        # As printed, from a shell whose PATH lacks this environment's bin
        # (a README user's other terminal after tox -e demo -- serve).
        status_args = shlex.split(info['status_command'])
        self.assertTrue(os.path.isabs(status_args[0]), status_args)
        self.assertIn('--glance-api-conf %s' % glance_conf,
                      info['status_command'])
        status = subprocess.run(
            status_args, capture_output=True, text=True, timeout=180,
            check=False, env=dict(os.environ, PATH=os.defpath))
        # (the table wraps long paths: compare without its whitespace)
        self.assertIn('(from%s:' % glance_conf,
                      ''.join(status.stdout.replace('|', ' ').split()),
                      status.stdout + status.stderr)
        # The printed commands are the ones just run, and run as printed.
        self.assertEqual(3, len(info['commands']))
        self.assertIn('probe --config-file %s' % out_conf,
                      info['commands'][0])
        printed = subprocess.run(
            shlex.split(info['commands'][0]) + ['--no-write-check'],
            capture_output=True, text=True, timeout=180, check=False,
            env=dict(os.environ, PATH=os.defpath))
        self.assertEqual(0, printed.returncode, printed.stderr)
        self.assertIn('upload qcow2', printed.stdout)

        proc.send_signal(signal.SIGINT)
        self.assertEqual(0, proc.wait(60), self.read(stderr))
        self.assertFalse(os.path.exists(out_conf))
        self.assertFalse(os.path.exists(base_dir))
        self.assertFalse(os.path.exists(glance_conf))
        self.assertRaises(urllib.error.URLError, urllib.request.urlopen,
                          info['endpoint'] + '/versions', timeout=5)
        self.assertIn('Glance stopped', self.read(stderr))

    def test_a_relative_config_out_is_printed_as_it_runs_anywhere(self):
        # --config-out given relative to serve's directory: the printed
        # commands run from another one (the operator's other terminal).
        proc, info, stderr = self.start('--config-out', 'rel.conf',
                                        cwd=self.tmp)
        written = os.path.join(self.tmp, 'rel.conf')
        self.assertEqual(written, info['config_file'])
        self.assertIn('--config-file %s' % written, info['commands'][0])
        printed = subprocess.run(
            shlex.split(info['commands'][0]) + ['--no-write-check'],
            capture_output=True, text=True, timeout=180, check=False,
            cwd='/', env=dict(os.environ, PATH=os.defpath))
        self.assertEqual(0, printed.returncode, printed.stderr)
        proc.send_signal(signal.SIGINT)
        self.assertEqual(0, proc.wait(60), self.read(stderr))
        self.assertFalse(os.path.exists(written))

    def test_database_server_stops_before_it_is_said(self):
        # serve --database mariadb: the server is shut down cleanly, its
        # launcher's own lines (pifpaf's "sending SIGKILL") stay off the
        # terminal, and the stop line is printed once it has stopped.
        from nova_snapshot_ext.embedded import database

        reason = database.missing('mariadb')
        if reason:
            self.skipTest(reason)
        proc, info, stderr = self.start('--database', 'mariadb')
        proc.send_signal(signal.SIGINT)
        self.assertEqual(0, proc.wait(120), self.read(stderr))
        text = self.read(stderr)
        self.assertNotIn('SIGKILL', text)
        self.assertNotIn('pifpaf', text)
        self.assertIn('Glance stopped; the mariadb server stopped; %s and '
                      'the temporary directory removed.'
                      % info['config_file'], text)

    def test_bad_arguments_start_nothing(self):
        for args, word in ((['--profile', 'nosuch'], '--profile nosuch'),
                           (['--database', 'oracle'], '--database oracle'),
                           (['--driver', 'vmware'], '--driver vmware'),
                           (['--config-out', '/missing/dir/x.conf'],
                            '--config-out /missing/dir/x.conf'),
                           (['--config-out', ''], '--config-out'),
                           (['--project-id', ''], '--project-id'),
                           (['--roles', ' '], '--roles')):
            proc = self.cli('serve', *args)
            self.assertEqual(2, proc.returncode, args)
            self.assertIn(word, proc.stderr)
            self.assertNotIn('Starting', proc.stderr)
            self.assertNotIn('Traceback', proc.stderr)
            self.assertNotIn('removed', proc.stderr)
        existing = os.path.join(self.tmp, 'exists.conf')
        open(existing, 'w').close()
        proc = self.cli('serve', '--config-out', existing)
        self.assertEqual(2, proc.returncode)
        self.assertIn('exists', proc.stderr)
