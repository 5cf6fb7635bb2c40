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


"""Issue 21, point 5: each item is a test that failed before the fix."""

import json
import logging
import os
import re
from unittest import mock

import fixtures
from glanceclient import exc as gexc
from keystoneauth1 import exceptions as ks_exc

from nova_snapshot_ext.cmd import checks
from nova_snapshot_ext.cmd import connection
from nova_snapshot_ext.cmd import errors
from nova_snapshot_ext.cmd import main
from nova_snapshot_ext.cmd import snapshot as snapshot_cmd
from nova_snapshot_ext.cmd import streams
from nova_snapshot_ext.snapshot import result as result_mod
from tests import base
from tests.unit.cmd import test_cmd
from tests.unit.snapshot import test_service

DOC_SOURCE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__))))), 'doc', 'source')


class NoNetwork(fixtures.Fixture):
    """``checks.connect`` fails the test if anything tries the network."""

    def _setUp(self):
        self.useFixture(fixtures.MonkeyPatch(
            'nova_snapshot_ext.cmd.checks.connect',
            mock.Mock(side_effect=AssertionError('network reached'))))


class TestConfigurationBeforeNetwork(test_cmd.CLITestCase):

    def setUp(self):
        super().setUp()
        self.useFixture(NoNetwork())

    def conf_file(self, text):
        return self.write('c.conf', text + '\n[snapshot_ext_glance]\n'
                          'auth_type = none\n'
                          'endpoint_override = http://127.0.0.1:9\n')

    def test_bad_value_names_the_section(self):
        # The same option name in another section of the file too.
        for section, option, value in (
                ('snapshot_ext_glance', 'timeout', 'abc'),
                ('snapshot_ext_glance', 'connect_retries', 'many'),
                ('snapshot_ext_glance', 'collect_timing', 'perhaps'),
                ('snapshot_ext', 'activation_timeout', 'soon')):
            self.stderr.seek(0)
            self.stderr.truncate()
            path = self.write('c.conf', '[%s]\n%s = %s\n%s' % (
                section, option, value, '' if section ==
                'snapshot_ext_glance' else '[snapshot_ext_glance]\n') +
                'auth_type = none\nendpoint_override = http://127.0.0.1:9\n')
            self.assertEqual(2, self.run_main('--config-file', path,
                                              'probe'), option)
            text = self.stderr.getvalue()
            self.assertIn('option [%s] %s' % (section, option), text)
            self.assertIn(path, text)
            self.assertNotIn('LocationInfo', text)

    def test_transport_number_out_of_range_names_the_option(self):
        # keystoneauth registers these unbounded: urllib3 refused the
        # timeout only at the first request, reported as Glance at fault.
        for option, value in (('timeout', '-5'), ('timeout', '0'),
                              ('connect_retries', '-2'),
                              ('status_code_retry_delay', '-1')):
            self.stderr.seek(0)
            self.stderr.truncate()
            path = self.write('c.conf', '[snapshot_ext_glance]\n%s = %s\n'
                              'auth_type = none\nendpoint_override = '
                              'http://127.0.0.1:9\n' % (option, value))
            self.assertEqual(2, self.run_main('--config-file', path,
                                              'probe'), option)
            text = self.stderr.getvalue()
            self.assertIn('[snapshot_ext_glance] %s' % option, text)
            self.assertNotIn('Glance', text.replace(
                'snapshot_ext_glance', ''))

    def test_mistyped_driver_is_exit_2_naming_the_option(self):
        for command in (['probe'], ['audit']):
            self.stderr.seek(0)
            self.stderr.truncate()
            path = self.conf_file('[snapshot_ext]\ndriver = libvrt')
            self.assertEqual(2, self.run_main('--config-file', path,
                                              *command))
            text = self.stderr.getvalue()
            self.assertIn("'libvrt'", text)
            self.assertIn('[snapshot_ext] driver', text)
            self.assertNotIn('unreachable', text)

    def test_mistyped_driver_in_snapshot(self):
        path = self.conf_file('[snapshot_ext]\ndriver = vmware')
        req = self.write('r.json', json.dumps(base.sample_request_dict()))
        self.assertEqual(2, self.run_main('--config-file', path, 'snapshot',
                                          req))
        self.assertIn('[snapshot_ext] driver', self.stderr.getvalue())

    def test_audit_yes_without_fix_refused_before_network(self):
        path = self.conf_file('')
        self.assertEqual(2, self.run_main('--config-file', path, 'audit',
                                          '--yes'))
        self.assertIn('--yes only goes with --fix', self.stderr.getvalue())


class TestUnknownAuthType(test_cmd.CLITestCase):

    def test_no_warning_about_the_plugin_options(self):
        path = self.write('c.conf', '[snapshot_ext_glance]\n'
                          'auth_type = admin_tokn\n'
                          'endpoint = http://127.0.0.1:9292\n'
                          'token = secret\nusernme = x\n')
        conf = main.parse(['--config-file', path, 'probe'])
        self.assertEqual([], main.warn_configuration(conf))
        self.useFixture(NoNetwork())
        self.assertEqual(2, self.run_main('--config-file', path, 'probe'))
        text = self.stderr.getvalue()
        self.assertIn('[snapshot_ext_glance] auth_type', text)
        self.assertNotIn('unknown option', text)


class TestReason(base.TestCase):

    def test_long_reason_cut_at_a_word_boundary_and_marked(self):
        words = ' '.join('word%03d' % i for i in range(100))
        text = errors.reason_of(Exception(words))
        self.assertTrue(text.endswith(' [...]'), text)
        kept = text[:-len(' [...]')]
        self.assertLessEqual(len(kept), errors.REASON_LIMIT)
        self.assertTrue(words.startswith(kept + ' '))
        self.assertIn(kept.split()[-1], words.split())

    def test_unreachable_keystone_message_has_whole_words(self):
        long_url = 'https://keystone.example.org/' + 'v3/' * 150
        err = ks_exc.ConnectFailure(
            'Unable to establish connection to %s: refused' % long_url)
        session = mock.Mock()
        session.get_auth_headers.side_effect = err
        conf = mock.Mock()
        with mock.patch.object(connection, 'group_value',
                               side_effect=lambda c, n: {
                                   'auth_url': 'https://k/v3',
                                   'auth_type': 'password'}[n]):
            raised = self.assertRaises(checks.CLIError,
                                       checks.authenticate, conf, session)
        self.assertEqual(checks.EXIT_UNREACHABLE, raised.code)
        self.assertTrue(raised.message.endswith('[...]'), raised.message)

    def test_short_reason_unchanged(self):
        self.assertEqual('a b', errors.reason_of(Exception(' a\n b ')))


class TestProbeNeverCreated(base.TestCase):

    def test_refused_create_is_not_called_deleted(self):
        glance = test_cmd.FakePermGlance(
            create=test_cmd.exception.GlanceForbidden(
                operation='create', reason='policy', status=403))
        permissions = checks.check_permissions(glance, 'raw')
        self.assertFalse(permissions['created'])
        text = checks.permissions_text(permissions)
        self.assertIn('not created', text)
        self.assertNotIn('deleted', text)

    def test_created_and_deleted(self):
        permissions = checks.check_permissions(test_cmd.FakePermGlance(),
                                               'raw')
        self.assertIn(', deleted)', checks.permissions_text(permissions))


class TestHashOfAFreshUpload(base.TestCase):

    def test_json_result_carries_glance_hash(self):
        stdout = self.useFixture(fixtures.MonkeyPatch(
            'sys.stdout', test_cmd.io.StringIO())).new_value
        result = result_mod.SnapshotResult(image_id='img-1', name='s',
                                           status='active')
        fake = mock.Mock()
        fake.snapshot.return_value = result
        fake.glance.get.return_value = {
            'id': 'img-1', 'status': 'active', 'os_hash_algo': 'sha512',
            'os_hash_value': 'cf83e1'}
        with mock.patch.object(snapshot_cmd.service_mod, 'SnapshotService',
                               return_value=fake):
            snapshot_cmd.run_snapshot(self.conf, mock.Mock(), 'json')
        out = json.loads(stdout.getvalue())
        self.assertEqual('sha512', out['result']['os_hash_algo'])
        self.assertEqual('cf83e1', out['result']['os_hash_value'])

    def test_hash_of_another_image_not_taken(self):
        result = result_mod.SnapshotResult(image_id='img-1', name='s',
                                           status='active')
        snapshot_cmd._hash_from_image(
            result, {'id': 'img-2', 'os_hash_value': 'x'})
        self.assertIsNone(result.os_hash_value)


class TestMemberConflict(test_service.ServiceTestBase):

    def test_already_a_member_is_said_above_debug(self):
        logs = self.useFixture(fixtures.FakeLogger(
            name='nova_snapshot_ext.snapshot.attempts', level=logging.INFO))
        self.fake.fail('add_member', gexc.HTTPConflict('already a member'))
        req = self.make_request()
        req.requester.project_id = 'someone-else'
        result = self.make_service().snapshot(req)
        self.assertEqual('active', result.status)
        self.assertEqual(req.server.project_id, result.member)
        self.assertIn('already a member', logs.output)
        self.assertTrue(any('already a member' in n for n in result.notes))


class TestDebugHelp(test_cmd.CLITestCase):

    def test_help_says_the_true_default_level(self):
        self.assertRaises(SystemExit, main.parse, ['--help'])
        text = ' '.join(self.stdout.getvalue().split())
        self.assertNotIn('default INFO level', text)
        self.assertIn('(level WARNING)', text)
        with open(os.path.join(DOC_SOURCE, 'configure.rst')) as f:
            docs = ' '.join(f.read().split())
        self.assertIn('only warnings and errors', docs)


class TestDocs(base.TestCase):

    def test_no_build_machine_path(self):
        pattern = re.compile(r'/root/|/work/|/home/[a-z]|\.pyenv/versions')
        for name in sorted(os.listdir(DOC_SOURCE)):
            if name.endswith('.rst'):
                with open(os.path.join(DOC_SOURCE, name)) as f:
                    for n, line in enumerate(f, 1):
                        self.assertIsNone(pattern.search(line),
                                          '%s:%d: %s' % (name, n, line))

    def test_help_rendered_into_the_docs_has_no_build_machine_path(self):
        root = os.path.dirname(os.path.dirname(os.path.dirname(
            os.path.abspath(main.__file__))))
        texts = {}
        for command in ('snapshot', 'serve', 'demo', 'probe', 'audit'):
            stdout = self.useFixture(fixtures.MonkeyPatch(
                'sys.stdout', test_cmd.io.StringIO())).new_value
            self.assertRaises(SystemExit, main.parse, [command, '--help'])
            # argparse wraps at hyphens: join the wrapped words again.
            texts[command] = ''.join(stdout.getvalue().split())
            self.assertNotIn(root, texts[command], command)
        self.assertIn('nova_snapshot_ext/data/snapshot-request.schema.json',
                      texts['snapshot'])

    def test_sample_config_generated_into_the_docs(self):
        with open(os.path.join(DOC_SOURCE, 'conf.py')) as f:
            conf_py = f.read()
        self.assertIn('oslo_config.sphinxconfiggen', conf_py)
        self.assertIn('oslo_config.sphinxext', conf_py)
        generator = os.path.join(
            os.path.dirname(DOC_SOURCE), '..', 'etc', 'nova_snapshot_ext',
            'nova-snapshot-ext-config-generator.conf')
        self.assertTrue(os.path.isfile(generator))
        self.assertIn('nova-snapshot-ext-config-generator.conf', conf_py)
        with open(os.path.join(DOC_SOURCE, 'sample-config.rst')) as f:
            self.assertIn('literalinclude', f.read())


class TestReaderGone(base.TestCase):
    """A reader that stops reading (``| head -1``) changes no outcome."""

    def test_writes_after_the_reader_left_are_dropped(self):
        read_end, write_end = os.pipe()
        os.close(read_end)
        stream = os.fdopen(write_end, 'w')
        self.addCleanup(stream.close)
        out = streams.ReaderGone(stream)
        self.assertEqual(5, out.write('x' * 5))
        out.flush()
        self.assertTrue(out.gone)
        self.assertEqual(3, out.write('abc'))
        out.flush()

    def test_console_script_exits_by_its_outcome(self):
        import subprocess
        import sys

        read_end, write_end = os.pipe()
        os.close(read_end)  # the reader is gone before the first line
        try:
            proc = subprocess.run(
                [sys.executable, '-c', 'import sys; from nova_snapshot_ext'
                 '.cmd import main; sys.exit(main.console_main())',
                 '--version'],
                stdout=write_end, stderr=subprocess.PIPE, timeout=120,
                check=False)
        finally:
            os.close(write_end)
        self.assertEqual(0, proc.returncode, proc.stderr)
        self.assertNotIn(b'Traceback', proc.stderr)
        self.assertNotIn(b'BrokenPipe', proc.stderr)
