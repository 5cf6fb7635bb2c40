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

from nova_snapshot_ext.cmd import backup as backup_cmd
from nova_snapshot_ext import exception
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
