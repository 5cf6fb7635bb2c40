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

"""What ``serve`` prints runs as printed, from any shell."""

import os
import shlex
import subprocess
from unittest import mock

import fixtures

from nova_snapshot_ext.cmd import serve
from tests import base


class TestConsoleCommand(base.TestCase):
    """Kind: the printed commands' first word is on no PATH of the user's.

    ``tox -e demo -- serve`` (or a virtualenv not activated in the other
    terminal) puts the console scripts in a ``bin`` only the serve
    process has on its ``PATH``.
    """

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path
        self.bin = os.path.join(self.tmp, 'venv dir', 'bin')
        os.makedirs(self.bin)
        self.python = os.path.join(self.bin, 'python3')
        self.useFixture(fixtures.MonkeyPatch('sys.executable', self.python))
        self.useFixture(fixtures.MockPatch(
            'sysconfig.get_path', return_value=self.bin))

    def script(self, name, mode=0o755):
        path = os.path.join(self.bin, name)
        with open(path, 'w') as f:
            f.write('#!/bin/sh\n')
        os.chmod(path, mode)
        return path

    def test_installed_script_by_absolute_path(self):
        for name, module in (serve.MAIN_SCRIPT, serve.STATUS_SCRIPT):
            path = self.script(name)
            printed = serve.console_command(name, module)
            self.assertEqual([path], shlex.split(printed))
            self.assertTrue(os.path.isabs(shlex.split(printed)[0]))

    def test_without_the_script_this_interpreter_runs_the_module(self):
        self.script(serve.MAIN_SCRIPT[0], mode=0o644)  # not executable
        for name, module in (serve.MAIN_SCRIPT, serve.STATUS_SCRIPT):
            self.assertEqual([self.python, '-m', module], shlex.split(
                serve.console_command(name, module)))

    def test_beside_the_interpreter_when_the_scheme_says_elsewhere(self):
        with mock.patch('sysconfig.get_path',
                        return_value=os.path.join(self.tmp, 'nowhere')):
            path = self.script(serve.MAIN_SCRIPT[0])
            self.assertEqual([path], shlex.split(
                serve.console_command(*serve.MAIN_SCRIPT)))

    def test_printed_commands_quote_every_path(self):
        prog = serve.console_command(*serve.MAIN_SCRIPT)
        conf = os.path.join(self.tmp, 'my conf', 'x.conf')
        request = os.path.join(self.tmp, "it's", 'r.json')
        lines = serve.commands(prog, conf, request)
        self.assertEqual(
            [[self.python, '-m', serve.MAIN_SCRIPT[1], 'probe',
              '--config-file', conf],
             [self.python, '-m', serve.MAIN_SCRIPT[1], 'snapshot',
              '--config-file', conf, request],
             [self.python, '-m', serve.MAIN_SCRIPT[1], 'audit',
              '--config-file', conf]],
            [shlex.split(line) for line in lines])
        status = serve.status_command(
            serve.console_command(*serve.STATUS_SCRIPT), conf,
            os.path.join(self.tmp, 'g dir', 'glance-api.conf'))
        self.assertEqual(
            [self.python, '-m', serve.STATUS_SCRIPT[1], '--config-file',
             conf, '--glance-api-conf',
             os.path.join(self.tmp, 'g dir', 'glance-api.conf'), 'upgrade',
             'check'], shlex.split(status))


class TestPrintedCommandsRun(base.TestCase):
    """The real interpreter: the printed commands run with an empty PATH."""

    def test_help_runs_as_printed(self):
        for name, module in (serve.MAIN_SCRIPT, serve.STATUS_SCRIPT):
            argv = shlex.split(serve.console_command(name, module))
            self.assertTrue(os.path.isabs(argv[0]), argv)
            proc = subprocess.run(
                argv + ['--help'], capture_output=True, text=True,
                timeout=120, check=False,
                env=dict(os.environ, PATH=os.defpath))
            self.assertEqual(0, proc.returncode, (argv, proc.stderr))
            self.assertIn('usage: %s' % name, proc.stdout)


class TestOutputPaths(base.TestCase):
    """Kind: an output path serve cannot write, found before any start."""

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path

    def refused(self, path):
        err = self.assertRaises(serve.checks.CLIError,
                                serve.check_output_path, '--config-out',
                                path)
        self.assertEqual(2, err.code)
        self.assertIn('--config-out', err.message)
        return err.message

    def test_missing_directory(self):
        path = os.path.join(self.tmp, 'missing', 'dir', 'x.conf')
        self.assertIn('does not exist', self.refused(path))

    def test_directory_is_a_file(self):
        afile = os.path.join(self.tmp, 'afile')
        open(afile, 'w').close()
        self.assertIn('is not a directory',
                      self.refused(os.path.join(afile, 'x.conf')))

    def test_existing_and_blank(self):
        existing = os.path.join(self.tmp, 'x.conf')
        open(existing, 'w').close()
        self.assertIn('exists', self.refused(existing))
        self.assertIn('empty', self.refused(''))
        self.assertIn('empty', self.refused('  '))

    def test_unwritable_directory(self):
        if os.geteuid() == 0:
            self.skipTest('root writes anywhere')
        locked = os.path.join(self.tmp, 'locked')
        os.mkdir(locked, 0o500)
        self.assertIn('no permission', self.refused(
            os.path.join(locked, 'x.conf')))

    def test_writable_path_passes(self):
        serve.check_output_path('--config-out',
                                os.path.join(self.tmp, 'x.conf'))


class TestStopSentence(base.TestCase):
    """Kind: the stop line claims only what was done."""

    def args(self, config_out=None, database='sqlite'):
        return mock.Mock(config_out=config_out, database=database)

    def test_nothing_written_nothing_claimed(self):
        glance = mock.Mock()
        text = serve._stop(glance, self.args('/missing/dir/x.conf'), None,
                           started=True)
        glance.stop.assert_called_once_with()
        self.assertNotIn('x.conf', text)
        self.assertEqual('Glance stopped; the temporary directory removed.',
                         text)
        text = serve._stop(mock.Mock(), self.args(), None, started=False)
        self.assertEqual('Glance did not start.', text)

    def test_written_file_removed_is_named(self):
        tmp = self.useFixture(fixtures.TempDir()).path
        out = os.path.join(tmp, 'x.conf')
        open(out, 'w').close()
        text = serve._stop(mock.Mock(), self.args(out), out, started=True)
        self.assertFalse(os.path.exists(out))
        self.assertIn('%s and the temporary directory removed' % out, text)

    def test_database_server_stopped_before_it_is_said(self):
        stopped = []
        module = mock.Mock(stop_shared=lambda: stopped.append(True))
        with mock.patch.object(serve, '_database_module',
                               return_value=module):
            text = serve._stop(mock.Mock(), self.args(database='mariadb'),
                               None, started=True)
        self.assertEqual([True], stopped)
        self.assertIn('the mariadb server stopped', text)
