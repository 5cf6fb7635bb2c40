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

"""Issue 18: an outcome reported as it is (what was read of each image)."""

import io
import json

import fixtures

from nova_snapshot_ext.cmd import main
from nova_snapshot_ext import exception
from nova_snapshot_ext.snapshot import result as result_mod
from tests import base


class TestLeftoverText(base.TestCase):

    def result(self, **status):
        return result_mod.SnapshotResult(
            image_id=None, name='n', status='failed',
            leftover=list(status), leftover_status=dict(status))

    def test_saving_is_never_called_undeletable(self):
        text = self.result(a='saving').leftover_text()
        self.assertNotIn('COULD NOT DELETE', text)
        self.assertIn('a (saving)', text)
        self.assertIn('may still become active', text)

    def test_each_by_what_was_read(self):
        text = self.result(q='queued', u=None, i='importing').leftover_text()
        self.assertIn('COULD NOT DELETE image(s) q (status queued), u '
                      '(status unknown: it could not be read)', text)
        self.assertIn('i (importing) not deleted', text)
        self.assertEqual('', self.result().leftover_text())

    def test_interrupted_after_the_success_names_the_active_image(self):
        stdout = self.useFixture(fixtures.MonkeyPatch(
            'sys.stdout', io.StringIO())).new_value
        stderr = self.useFixture(fixtures.MonkeyPatch(
            'sys.stderr', io.StringIO())).new_value
        err = exception.SnapshotInterrupted(result_mod.SnapshotResult(
            image_id='img-a', name='n', status='active'), KeyboardInterrupt())
        self.assertEqual(130, main._interrupted(err, 'json'))
        self.assertNotIn('cleaned up', stderr.getvalue())
        self.assertIn('img-a was already active', stderr.getvalue())
        self.assertEqual('img-a', json.loads(stdout.getvalue())['image_id'])
        stdout.truncate(0)
        stdout.seek(0)
        err = exception.SnapshotInterrupted(self.result(s='saving'),
                                            KeyboardInterrupt())
        main._interrupted(err, 'json')
        self.assertNotIn('COULD NOT DELETE', stderr.getvalue())
