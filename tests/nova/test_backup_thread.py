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

"""nova-api's createBackup after the answer: copies, then the rotation.

The whole path runs inside Nova in ``tests/nova`` and on the real stack
(``tests/cloud``); here the sequencing alone, Nova's Cinder and the
rotation faked.
"""

import types
from unittest import mock

from nova_snapshot_ext.backup import rotation as rotation_mod
from nova_snapshot_ext.nova import backup
from tests import base


def result(copying=()):
    made = rotation_mod.RotationResult('new', 2)
    made.copying = list(copying)
    made.left = {image_id: 'cinder-backup is copying its volume snapshots'
                 for image_id in copying}
    return made


class TestRotateWithPatience(base.TestCase):

    def setUp(self):
        super().setUp()
        self.clock = base.Clock()
        self.patch('nova_snapshot_ext.nova.backup.time.monotonic',
                   self.clock)
        self.patch('nova_snapshot_ext.nova.backup.time.sleep',
                   self.clock.sleep)
        self.patch(
            'nova_snapshot_ext.nova.backup.nova_api.NovaCinder',
            mock.Mock())
        self.action = backup.BackupAction('b', 'daily', 2, {})

    def patch(self, target, new):
        patcher = mock.patch(target, new)
        patcher.start()
        self.addCleanup(patcher.stop)

    def rotate(self, answers, patience):
        rotate = mock.Mock(side_effect=answers)
        with mock.patch.object(rotation_mod, 'rotate', rotate):
            done = backup._rotate(None, mock.Mock(), {'id': 'new'},
                                  self.action, False, patience=patience)
        return done, rotate.call_count

    def test_without_patience_one_rotation(self):
        done, calls = self.rotate([result(['old'])], 0.0)
        self.assertEqual((['old'], 1), (done.copying, calls))
        self.assertEqual([], self.clock.slept)

    def test_rotated_again_until_the_copy_ends(self):
        done, calls = self.rotate(
            [result(['old']), result(['old']), result()], 300.0)
        self.assertEqual(([], 3), (done.copying, calls))
        self.assertEqual([backup.ROTATION_POLL_S] * 2, self.clock.slept)

    def test_gives_up_at_the_deadline_and_names_what_it_left(self):
        answers = [result(['old'])] * 10
        with self.assertLogs(backup.LOG.logger, 'WARNING') as logs:
            done, calls = self.rotate(answers, 5.0)
        self.assertEqual(['old'], done.copying)
        self.assertEqual(4, calls)  # at 0, 2, 4 and 6 s
        self.assertIn('old', '\n'.join(logs.output))


class TestCopyThenRotate(base.TestCase):

    def test_rotation_follows_the_copies_even_when_they_fail(self):
        order = []
        group = types.SimpleNamespace(rotation_full_scan=False,
                                      backup_copies_wait=1)
        action = backup.BackupAction('b', 'daily', 2, {})

        def copies(context, image, grp):
            order.append('copies')
            raise RuntimeError('unexpected')

        def rotate(context, glance, image, act, full_scan, patience=0.0):
            order.append(('rotate', patience))

        with mock.patch.object(backup, '_copies', copies), \
                mock.patch.object(backup, '_rotate', rotate):
            self.assertRaises(RuntimeError, backup._copy, None, None,
                              {'id': 'new'}, action, group)
        self.assertEqual(['copies', ('rotate', 1.0)], order)
