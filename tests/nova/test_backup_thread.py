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

import json
import types
from unittest import mock

from nova_snapshot_ext.backup import rotation as rotation_mod
from nova_snapshot_ext.cinder import waits
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

        def wait_copied(glance, cinder, image_ids, deadline):
            self.clock.sleep(backup.ROTATION_POLL_S)

        with mock.patch.object(rotation_mod, 'rotate', rotate), \
                mock.patch.object(backup, '_wait_copied', wait_copied):
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


class TestWaitCopied(base.TestCase):
    """Only the busy images are read again until their copies end."""

    def setUp(self):
        super().setUp()
        self.clock = base.Clock()
        for name, new in (('monotonic', self.clock),
                          ('sleep', self.clock.sleep)):
            patcher = mock.patch('nova_snapshot_ext.nova.backup.time.' + name,
                                 new)
            patcher.start()
            self.addCleanup(patcher.stop)

    def test_until_no_snapshot_is_backing_up_or_the_image_is_gone(self):
        from nova_snapshot_ext import exception

        busy_reads = {'snap-a': 2}
        images = {'old': {'id': 'old', 'block_device_mapping': json.dumps(
            [{'source_type': 'snapshot', 'snapshot_id': 'snap-a',
              'boot_index': 0}])}}

        class Glance:
            reads = []

            def get(self, image_id):
                self.reads.append(image_id)
                if image_id not in images:
                    raise exception.GlanceNotFound(operation='get',
                                                   reason='gone')
                return images[image_id]

        class Cinder:
            def get_snapshot(self, snapshot_id):
                left = busy_reads.get(snapshot_id, 0)
                busy_reads[snapshot_id] = left - 1
                return {'id': snapshot_id,
                        'status': 'backing-up' if left > 0 else 'available'}

        glance = Glance()
        backup._wait_copied(glance, Cinder(), ['gone', 'old'],
                            self.clock() + 60)
        self.assertEqual([backup.ROTATION_POLL_S] * 2, self.clock.slept)
        self.assertEqual({'gone', 'old'}, set(glance.reads))

    def test_gives_up_at_the_deadline(self):
        class Busy:
            def get_snapshot(self, snapshot_id):
                return {'id': snapshot_id, 'status': 'backing-up'}

        glance = mock.Mock()
        glance.get.return_value = {'id': 'old', 'block_device_mapping': (
            '[{"source_type": "snapshot", "snapshot_id": "s", '
            '"boot_index": 0}]')}
        backup._wait_copied(glance, Busy(), ['old'], self.clock() + 5)
        self.assertEqual([backup.ROTATION_POLL_S] * 3, self.clock.slept)


class TestCopyThenRotate(base.TestCase):

    def test_rotation_follows_the_copies_even_when_they_fail(self):
        order = []
        group = types.SimpleNamespace(rotation_full_scan=False,
                                      backup_copies_wait=1)
        action = backup.BackupAction('b', 'daily', 2, {})

        def copies(context, image, grp):
            order.append('copies')
            raise RuntimeError('unexpected')

        def rotate(context, glance, image, act, full_scan, patience=0.0,
                   delete_wait=None):
            order.append(('rotate', patience, delete_wait))

        with mock.patch.object(backup, '_copies', copies), \
                mock.patch.object(backup, '_rotate', rotate):
            self.assertRaises(RuntimeError, backup._copy, None, None,
                              {'id': 'new'}, action, group)
        # In the thread, the rotation watches its deletes (not in the
        # request's answer, where delete_wait stays None).
        self.assertEqual(
            ['copies', ('rotate', 1.0, waits.DELETING_WAIT)], order)
