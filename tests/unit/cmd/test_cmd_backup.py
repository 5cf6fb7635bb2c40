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

"""``nova-snapshot-ext backup``: input checks and exit codes."""

import json

import fixtures
from oslo_config import types

from nova_snapshot_ext.backup import service as backup_service
from nova_snapshot_ext.cmd import backup as backup_cmd
from nova_snapshot_ext.cmd import checks
from nova_snapshot_ext import exception
from nova_snapshot_ext import opts
from nova_snapshot_ext.snapshot import service as snapshot_service
from tests import base
from tests.unit.cmd import test_cmd


class TestBackupCommand(test_cmd.CLITestCase):

    def request_file(self, **changes):
        data = base.sample_request_dict()
        data.update(changes)
        return self.write('r.json', json.dumps(data))

    def conf_file(self):
        return self.write('c.conf', '')

    def test_negative_rotation_is_bad_input(self):
        code = self.run_main('backup', '--config-file', self.conf_file(),
                             '--rotation', '-1', '--backup-type', 'daily',
                             self.request_file())
        self.assertEqual(2, code)
        self.assertIn('--rotation must be 0 or more', self.stderr.getvalue())

    def test_backup_type_required(self):
        code = self.run_main('backup', '--config-file', self.conf_file(),
                             '--rotation', '1', self.request_file())
        self.assertEqual(2, code)

    def test_conflicting_backup_type_named(self):
        code = self.run_main('backup', '--config-file', self.conf_file(),
                             '--rotation', '1', '--backup-type', 'daily',
                             self.request_file(backup_type='weekly'))
        self.assertEqual(2, code)
        self.assertIn("'weekly'", self.stderr.getvalue())

    def test_blank_backup_type_refused(self):
        code = self.run_main('backup', '--config-file', self.conf_file(),
                             '--rotation', '1', '--backup-type', ' ',
                             self.request_file())
        self.assertEqual(2, code)

    def test_exit_codes_by_cause(self):
        self.assertEqual(0, backup_cmd._exit_code([]))
        unreachable = exception.GlanceUnavailable(operation='delete',
                                                  reason='reset')
        refused = exception.GlanceError(operation='delete', reason='500',
                                        status=500)
        cinder_down = exception.CinderUnavailable(
            operation='delete', snapshot_id='s', reason='refused')
        self.assertEqual(3, backup_cmd._exit_code([unreachable]))
        self.assertEqual(3, backup_cmd._exit_code([cinder_down]))
        self.assertEqual(1, backup_cmd._exit_code([unreachable, refused]))

    def test_no_cinder_credentials_no_client(self):
        self.assertIsNone(backup_cmd.cinder_client(self.conf))

    def test_credentials_through_auth_section_are_used(self):
        # An auth_section naming a section without a plugin: the client
        # is asked for, and refused with the option named (not silently
        # skipped as "no Cinder credentials").
        self.conf.set_override('auth_section', 'cinder_creds',
                               group='snapshot_ext_cinder')
        err = self.assertRaises(exception.ConfigurationError,
                                backup_cmd.cinder_client, self.conf)
        self.assertIn('[cinder_creds] auth_type', err.format_message())
        self.assertIn('[snapshot_ext_cinder] auth_section names this section',
                      err.format_message())


class TestCopierFor(base.TestCase):

    def test_off_is_none_with_or_without_cinder(self):
        cinder = object()
        self.assertIsNone(backup_service.copier_for(self.conf.snapshot_ext,
                                                    None))
        self.assertIsNone(backup_service.copier_for(self.conf.snapshot_ext,
                                                    cinder))

    def test_on_is_the_cinder_client(self):
        self.flags(backup_copies=True)
        cinder = object()
        self.assertIs(cinder, backup_service.copier_for(
            self.conf.snapshot_ext, cinder))

    def test_on_without_cinder_names_the_option(self):
        self.flags(backup_copies=True)
        err = self.assertRaises(exception.ConfigurationError,
                                backup_service.copier_for,
                                self.conf.snapshot_ext, None)
        self.assertEqual(('snapshot_ext', 'backup_copies'),
                         (err.kwargs['group'], err.kwargs['option']))
        self.assertIn('[snapshot_ext] backup_copies', err.format_message())
        self.assertIn('[snapshot_ext_cinder] auth_type',
                      err.format_message())


class TestBackupCopiesRefusedBeforeGlance(test_cmd.CLITestCase):
    """Copies' configuration refused before anything is asked of Glance."""

    def setUp(self):
        super().setUp()
        self.connected = []
        self.useFixture(fixtures.MonkeyPatch(
            'nova_snapshot_ext.cmd.checks.connect', self.connect))

    def connect(self, conf):
        # Glance reached: what these tests must never see (the control
        # below shows it is where the command goes next).
        self.connected.append(conf)
        raise checks.CLIError('checks.connect reached',
                              checks.EXIT_UNREACHABLE)

    def backup(self, conf_text):
        request = self.write('r.json', json.dumps(base.sample_request_dict()))
        return self.run_main('backup', '--config-file',
                             self.write('c.conf', conf_text),
                             '--rotation', '1', '--backup-type', 'daily',
                             request)

    def test_control_good_configuration_reaches_connect(self):
        self.assertEqual(3, self.backup(''))
        self.assertEqual(1, len(self.connected))
        self.assertIn('checks.connect reached', self.stderr.getvalue())

    def test_control_copies_with_cinder_reach_connect(self):
        cinder = object()
        self.useFixture(fixtures.MonkeyPatch(
            'nova_snapshot_ext.cmd.backup.cinder_client',
            lambda conf: cinder))
        self.assertEqual(3, self.backup('[snapshot_ext]\n'
                                        'backup_copies = true\n'))
        self.assertEqual(1, len(self.connected))

    def test_copies_without_cinder_credentials_exit_2(self):
        code = self.backup('[snapshot_ext]\nbackup_copies = true\n')
        self.assertEqual(2, code)
        self.assertEqual([], self.connected)
        stderr = self.stderr.getvalue()
        self.assertIn('option [snapshot_ext] backup_copies:', stderr)
        self.assertIn('[snapshot_ext_cinder] auth_type', stderr)
        self.assertNotIn('checks.connect reached', stderr)

    def test_copies_without_cinder_credentials_json(self):
        request = self.write('r.json', json.dumps(base.sample_request_dict()))
        code = self.run_main('--format', 'json', 'backup', '--config-file',
                             self.write('c.conf', '[snapshot_ext]\n'
                                        'backup_copies = true\n'),
                             '--rotation', '1', '--backup-type', 'daily',
                             request)
        self.assertEqual(2, code)
        document = json.loads(self.stdout.getvalue())
        self.assertEqual(2, document['exit_code'])
        self.assertIn('[snapshot_ext] backup_copies', document['error'])
        self.assertEqual([], self.connected)

    def test_bad_copies_keep_exit_2_naming_it(self):
        code = self.backup('[snapshot_ext]\nbackup_copies_keep = -1\n')
        self.assertEqual(2, code)
        self.assertEqual([], self.connected)
        self.assertIn('option [snapshot_ext] backup_copies_keep:',
                      self.stderr.getvalue())

    def test_every_bad_copies_option_exit_2_naming_it(self):
        for option, value in (('backup_copies_keep', '-1'),
                              ('backup_copies_max_age', '-3'),
                              ('backup_copies_chain', '-1'),
                              ('backup_copies_wait', '0'),
                              ('backup_copies', 'maybe')):
            self.stderr.seek(0)
            self.stderr.truncate()
            code = self.backup('[snapshot_ext]\n%s = %s\n'
                               % (option, value))
            self.assertEqual(2, code, option)
            self.assertIn('option [snapshot_ext] %s:' % option,
                          self.stderr.getvalue(), option)
        self.assertEqual([], self.connected)

    def test_bad_option_named_even_with_copies_off(self):
        # Read at start-up whether copies are on or not: a value that
        # would fail later is named now.
        code = self.backup('[snapshot_ext]\nbackup_copies = false\n'
                           'backup_copies_keep = -1\n')
        self.assertEqual((2, []), (code, self.connected))
        self.assertIn('backup_copies_keep', self.stderr.getvalue())


class TestCheckOptionsReadsBackupOptions(test_cmd.CLITestCase):

    def test_every_backup_option_read_at_start(self):
        self.assertIn('backup_copies_keep',
                      [opt.dest for opt in opts.backup_opts])
        for opt in opts.backup_opts:
            bad = 'maybe' if isinstance(opt.type, types.Boolean) else '-7'
            conf = base.private_conf([self.write(
                'c.conf', '[snapshot_ext]\n%s = %s\n' % (opt.dest, bad))])
            err = self.assertRaises(exception.ConfigurationError,
                                    snapshot_service.check_options, conf)
            self.assertEqual(opt.dest, err.kwargs['option'])
            self.assertIn('[snapshot_ext] %s:' % opt.dest,
                          err.format_message())

    def test_good_values_pass(self):
        conf = base.private_conf([self.write(
            'c.conf', '[snapshot_ext]\nbackup_copies = true\n'
            'backup_copies_keep = 0\nbackup_copies_wait = 1\n'
            'backup_copies_chain = 0\nbackup_copies_max_age = 0\n')])
        self.assertIsNone(snapshot_service.check_options(conf))
