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

"""A failure names the step that failed, never one that did not happen.

Kind: the create (refused, or the id held by an image from another
record, e.g. a request reusing another snapshot's volume snapshot ids),
the member add, the adoption of an earlier try's image -- each fails
before any payload or location is sent, so no message may say "upload
raw:" (or "location ...:") as if it had been; and the exit status follows
the cause.
"""

from glanceclient import exc as gexc

from nova_snapshot_ext.cmd import checks
from nova_snapshot_ext import exception
from nova_snapshot_ext.snapshot import request
from tests import base
from tests.unit.snapshot import test_attempts
from tests.unit.snapshot import test_service

IMAGE_ID = test_service.IMAGE_ID


class TestFailedStepIsNamed(test_attempts.AttemptTestBase):

    def reused_ids_request(self, **changes):
        """Another server's request naming the same volume snapshots."""
        data = base.sample_request_dict()
        data.pop('image_id', None)
        data.update(changes)
        data['server']['uuid'] = '11111111-2222-4333-8444-555555555555'
        for bdm in data['block_device_mappings']:
            bdm['instance_uuid'] = data['server']['uuid']
        return request.SnapshotRequest.from_dict(data)

    def assertNoActivationStepNamed(self, err):
        message = err.format_message()
        for words in ('upload raw:', 'upload qcow2:', 'location raw:'):
            self.assertNotIn(words, message)
        for attempt in err.result.attempts:
            self.assertNotIn(attempt.step, ('upload', 'location add'))
            self.assertIn('(nothing uploaded)', attempt.describe())

    def test_reused_snapshot_ids_name_the_create_and_the_mappings(self):
        first = self.snapshot(self.make_request(image_id=None))
        self.fake.calls.clear()
        for changes in ({'name': 'another-server-snapshot'},
                        {'metadata': {'tier': 'other'}},
                        {'name': 'x', 'metadata': {}}):
            with self.subTest(changes=changes):
                err = self.fails(self.reused_ids_request(**changes))
                message = err.format_message()
                self.assertNoActivationStepNamed(err)
                self.assertIn('create of image %s (attempt upload raw)'
                              % first.image_id, message)
                for bdm in base.sample_request_dict()[
                        'block_device_mappings']:
                    if bdm.get('snapshot_id'):
                        self.assertIn(bdm['snapshot_id'], message)
                self.assertIn('block_device_mappings snapshot_id', message)
                # Bad input: every retry of this request meets it.
                self.assertEqual(checks.EXIT_INPUT,
                                 checks.activation_failure(err)[1])
        self.assertNotIn('upload', self.fake.calls)
        self.assertNotIn('delete', self.fake.calls)
        self.assertEqual([first.image_id], self.active_ids())

    def test_image_id_of_another_image_is_bad_input(self):
        self.snapshot(self.other_snapshot('a'))
        err = self.fails(self.make_request())
        self.assertIsInstance(err.__cause__,
                              exception.SnapshotImageConflict)
        self.assertNoActivationStepNamed(err)
        self.assertIn('create of image %s' % IMAGE_ID, err.format_message())
        self.assertEqual(checks.EXIT_INPUT,
                         checks.activation_failure(err)[1])

    def test_refused_create_names_the_create(self):
        self.fake.fail('create', gexc.HTTPForbidden('policy'))
        err = self.fails()
        self.assertNoActivationStepNamed(err)
        self.assertIn('create of image %s (attempt upload raw)' % IMAGE_ID,
                      err.format_message())

    def test_member_add_failure_names_the_member_add(self):
        req = self.make_request()
        req = request.SnapshotRequest.from_dict(
            dict(req.to_dict(), requester={'project_id': 'other'}))
        for fault in (gexc.HTTPForbidden('policy'),
                      gexc.HTTPServiceUnavailable('busy')):
            with self.subTest(fault=type(fault).__name__):
                self.fake.images.clear()
                self.fake.used_ids.clear()
                self.fake.members.clear()
                self.fake.fail('add_member', fault)
                err = self.fails(req)
                self.assertNoActivationStepNamed(err)
                self.assertIn('member add to image %s (attempt upload raw)'
                              % IMAGE_ID, err.format_message())

    def test_an_upload_that_failed_is_still_called_the_upload(self):
        self.fake.fail('upload', gexc.HTTPForbidden('policy'), times=20)
        err = self.fails()
        self.assertIn('upload raw: ', err.format_message())
        self.assertEqual('upload', err.result.attempts[0].step)
        self.assertNotIn('nothing uploaded',
                         err.result.attempts[0].describe())
