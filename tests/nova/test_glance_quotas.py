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

"""Glance's quotas refuse a ``createImage`` before any volume snapshot.

The paste filter's early refusal runs the same preflight as the plugin,
which reads ``GET /v2/info/usage``.  Glance answers that document with
limits only with ``[DEFAULT] use_keystone_limits = True``, which needs a
Keystone holding the limits (oslo.limit asks Keystone on every check);
Nova's test fixtures fake Keystone (header identity and a fake token), so
a Keystone-backed Glance does not fit them (tests/functional/
test_keystone.py drives the same preflight against a real Keystone).
Here the real Glance sits behind the fault proxy, whose ``answer`` rule
gives ``GET /v2/info/usage`` a usage document with no headroom (the
shape Glance 33 answers); every other request reaches the real Glance.

Nova answers an ``OverQuota`` on ``createImage`` with 403 and its fault
body ``{"forbidden": {"code": 403, "message": ...}}``
(``ServersController._create_image``): the refusal has that shape, and
neither a Cinder snapshot (``CinderFixture``) nor an image exists.
"""

import uuid

from oslo_serialization import jsonutils

from tests.functional import faultproxy
from tests.nova import base
from tests.nova import test_paste_filter

USAGE_PATH = r'^/v2/info/usage$'


def _usage(**limits):
    return jsonutils.dump_as_bytes({'usage': {
        name: {'usage': used, 'limit': limit}
        for name, (used, limit) in limits.items()}})


#: Room for everything but the limit a test fills.
ROOMY = {'image_count_total': (2, 100), 'image_count_uploading': (0, 10),
         'image_size_total': (1, 1000), 'image_stage_total': (0, 1000)}


class TestQuotaRefusal(test_paste_filter.PastePipelineMixin,
                       base.NovaServerTestCase):

    def setUp(self):
        super().setUp()
        self.proxy = faultproxy.FaultProxy(self.glance.endpoint).start()
        self.addCleanup(self.proxy.stop)
        self.flags(endpoint_override=self.proxy.endpoint, group='glance')

    def answer_usage(self, **full):
        self.proxy.add_rule('GET', USAGE_PATH, 'answer', times='always',
                            status=200, body=_usage(**dict(ROOMY, **full)))

    def assert_refused(self, resource, metadata=None):
        server = self.create_server()
        name = 'quota-%s' % uuid.uuid4().hex[:8]
        resp = self.create_image(server.uuid, name, metadata)
        self.assertEqual(403, resp.status_int, resp.text)
        body = jsonutils.loads(resp.body)
        self.assertEqual(['forbidden'], list(body))
        self.assertEqual(403, body['forbidden']['code'])
        message = body['forbidden']['message']
        self.assertIn("Glance's quota %s" % resource, message)
        self.assertIn('nothing was created', message)
        self.assertEqual({}, dict(self.cinder.volume_snapshots))
        self.assertEqual([], self.images_named(name))
        self.assertEqual(0, self.proxy.count('POST', r'^/v2/images$'))
        self.assertGreaterEqual(self.proxy.count('GET', USAGE_PATH), 1)
        return message

    def test_count_total_full(self):
        self.answer_usage(image_count_total=(5, 5))
        message = self.assert_refused('image_count_total')
        self.assertIn('uses 5 of 5 images', message)
        # pending_delete is named only where the listed images show it
        # (tests/unit/image/test_quotas.py): not claimed from this usage.

    def test_no_upload_allowed(self):
        # The plan is uploads only (no location configured): a limit of 0
        # on image_count_uploading refuses every attempt.
        self.answer_usage(image_count_uploading=(0, 0))
        self.assert_refused('image_count_uploading')

    def test_size_total_over(self):
        self.answer_usage(image_size_total=(1001, 1000))
        self.assert_refused('image_size_total')

    def test_headroom_left_goes_to_nova(self):
        # The same server and filter with room: Nova snapshots the volume
        # and the image is activated (the refusals above are the quota's).
        self.answer_usage()
        server = self.create_server()
        resp = self.create_image(server.uuid, 'room-%s' % uuid.uuid4().hex[:8])
        self.assertEqual(202, resp.status_int, resp.text)
        self.assertEqual(1, len(self.cinder.volume_snapshots))
        image_id = jsonutils.loads(resp.body)['image_id']
        self.assertEqual('active',
                         self.admin_glance().images.get(image_id)['status'])

    def test_hook_alone_answers_overquota(self):
        # Without the filter's early refusal (Nova's compute API called
        # directly), the activation hook meets the same quota once Nova has
        # snapshotted the volumes: Nova's OverQuota (403 on createImage),
        # and no image.  The filter is what keeps the volume snapshots
        # from being taken (the tests above).
        from nova.compute import api as compute_api
        from nova import exception as nova_exc

        from nova_snapshot_ext.nova import filter as filter_mod

        self.assertIsNotNone(filter_mod.load_plugin())
        self.answer_usage(image_count_total=(5, 5))
        instance = self.create_server()
        name = 'hook-%s' % uuid.uuid4().hex[:8]
        err = self.assertRaises(
            nova_exc.OverQuota, compute_api.API().snapshot_volume_backed,
            self.context, instance, name, extra_properties={})
        self.assertIn("Glance's quota image_count_total",
                      err.format_message())
        self.assertEqual([], self.images_named(name))
        self.assertEqual(0, self.proxy.count('POST', r'^/v2/images$'))
