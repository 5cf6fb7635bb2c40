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

"""The quota usage read (``GET /v2/info/usage``) answered oddly.

The fault proxy answers the usage read in front of a real Glance; the
snapshot runs through the CLI (``nova-snapshot-ext snapshot``).  A usage
document of another shape, a negative ("unlimited") limit, or a transient
fault of the read never crashes the snapshot nor fails it at that read:
it is logged and the snapshot goes on (doc/source/troubleshoot.rst).
"""

import json

from tests.functional import test_faults as tf

USAGE = r'^/v2/info/usage$'


def document(**entries):
    return json.dumps({'usage': entries}).encode()


class TestQuotaUsageAnswers(tf.FaultTestBase):

    def snapshot(self):
        data = tf.fresh_request_dict(self.project_id, self.user_id)
        return self.run_cli('upload', self.write_request(data))

    def assert_snapshot_goes_on(self, title, warned=True):
        proc, image_id = self.snapshot()
        self.assertEqual(0, proc.returncode, '%s: %s' % (title, proc.stderr))
        self.assertNotIn('Traceback', proc.stderr, title)
        self.assertEqual('active', json.loads(proc.stdout)['result'][
            'status'], title)
        self.assertIsNotNone(image_id, title)
        if warned:
            self.assertIn('quotas are not checked', proc.stderr, title)
        self.assertGreaterEqual(self.proxy.count('GET', USAGE), 1, title)

    def test_malformed_documents_are_unreadable_usage(self):
        bodies = {
            'usage null': b'{"usage": null}',
            'usage a list': b'{"usage": []}',
            'top-level list': b'[1, 2]',
            'no usage member': b'{"limits": {}}',
            'usage of an entry null': document(
                image_count_total={'usage': None, 'limit': 10}),
            'limit a word': document(
                image_count_total={'usage': 1, 'limit': 'unlimited'}),
            'entry without usage': document(image_count_total={'limit': 10}),
            'entry an int': document(image_count_total=5),
        }
        for title, body in bodies.items():
            self.proxy.clear()
            self.proxy.add_rule('GET', USAGE, 'answer', times='always',
                                status=200, body=body)
            self.assert_snapshot_goes_on(title)

    def test_partly_usable_document_checks_the_rest(self):
        self.proxy.add_rule('GET', USAGE, 'answer', times='always',
                            status=200, body=document(
                                image_count_total={'usage': 5, 'limit': 5},
                                image_size_total={'usage': None,
                                                  'limit': 10}))
        proc, image_id = self.snapshot()
        self.assertNotEqual(0, proc.returncode, proc.stderr)
        self.assertIsNone(image_id)
        self.assertNotIn('Traceback', proc.stderr)
        self.assertIn('image_count_total', proc.stdout)
        self.assertIn('image_size_total has usage None', proc.stderr)
        self.assertEqual([], self.glance_view())

    def test_negative_limit_is_unlimited(self):
        self.proxy.add_rule('GET', USAGE, 'answer', times='always',
                            status=200, body=document(**{
                                name: {'usage': 10 ** 6, 'limit': -1}
                                for name in ('image_count_total',
                                             'image_count_uploading',
                                             'image_size_total',
                                             'image_stage_total')}))
        self.assert_snapshot_goes_on('limit -1', warned=False)

    def test_transient_faults_of_an_answering_glance(self):
        for title, action, kwargs in (
                ('503 always', 'status', {'status': 503}),
                ('cut mid-body', 'truncate', {}),
                ('trickled', 'trickle', {})):
            self.proxy.clear()
            self.proxy.add_rule('GET', USAGE, action, times='always',
                                **kwargs)
            self.assert_snapshot_goes_on(title)
