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

"""The embedded glance-api's optional access log (request counting)."""

import os
import time
import uuid

from nova_snapshot_ext.embedded import glance as embedded_glance
from tests.functional import base


def _lines(path):
    with open(path, encoding='utf-8') as fh:
        return fh.read().splitlines()


class TestAccessLog(base.FunctionalTestCase):

    def test_off_by_default(self):
        server = embedded_glance.EmbeddedGlance()
        self.assertFalse(server.access_log)
        self.assertIsNone(server.access_log_file)
        self.assertIsNone(server.profile['access_log_file'])

    def test_one_line_per_request(self):
        server = embedded_glance.from_profile('default', identity='token',
                                              access_log=True)
        self.addCleanup(server.stop)
        server.start()
        log = server.access_log_file
        self.assertEqual(os.path.join(server.base_dir, 'glance-access.log'),
                         log)
        self.assertEqual(log, server.profile['access_log_file'])
        client = server.client(uuid.uuid4().hex, uuid.uuid4().hex,
                               roles=('member', 'reader'))
        image = client.images.create(name='counted', disk_format='raw',
                                     container_format='bare')
        client.images.upload(image['id'], '')
        expected = ['"POST /v2/images HTTP/1.1" 201',
                    '"PUT /v2/images/%s/file HTTP/1.1" 204' % image['id']]
        deadline = time.monotonic() + 10
        while True:
            lines = _lines(log)
            found = [e for e in expected if any(e in line for line in lines)]
            if found == expected or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        self.assertEqual(expected, found)
        # Exactly one line per request: no other create or upload.
        self.assertEqual(1, sum('POST /v2/images ' in line
                                for line in lines))
        self.assertEqual(1, sum('/file ' in line for line in lines))
        server.stop()
        self.assertIsNone(server.access_log_file)
