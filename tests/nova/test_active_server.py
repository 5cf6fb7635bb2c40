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

"""createImage of an ACTIVE volume-backed server: Nova quiesces it first.

As Nova's own functional tests do, a nova-compute service runs in the test
(``start_service('compute', host='compute1')``) with Nova's fake virt
driver (``fake.SmallFakeDriver``); the server lives on that host, so
``snapshot_volume_backed`` makes its real ``quiesce_instance`` RPC call
(Nova's RPC fixture, fake transport) and later casts
``unquiesce_instance``.  The fake driver's ``quiesce`` is wrapped to see
the call arrive, or made to raise ``InstanceQuiesceNotSupported`` as
libvirt does without a guest agent.  The request goes through the paste
pipeline with the plugin's filter; Glance is real and refuses ``raw``.
"""

import time
import uuid

import fixtures
from oslo_serialization import jsonutils

from tests.nova import base
from tests.nova import test_paste_filter


class TestActiveServer(test_paste_filter.PastePipelineMixin,
                       base.NovaServerTestCase):

    def setUp(self):
        super().setUp()
        # No placement service here: the compute service's periodic
        # resource update logs an error; quiesce does not need placement.
        self.start_service('compute', host='compute1')

    def _wait_for(self, predicate, attempts=200):
        for _ in range(attempts):
            if predicate():
                return True
            time.sleep(0.05)
        return predicate()

    def test_active_server_quiesced_then_image_active(self):
        quiesce = self.useFixture(fixtures.MockPatch(
            'nova.virt.fake.FakeDriver.quiesce', autospec=True))
        unquiesce = self.useFixture(fixtures.MockPatch(
            'nova.virt.fake.FakeDriver.unquiesce', autospec=True))
        server = self.create_server(vm_state='active')
        name = 'active-%s' % uuid.uuid4().hex[:8]
        resp = self.create_image(server.uuid, name)
        self.assertEqual(202, resp.status_int, resp.text)
        # The quiesce RPC call reached the compute host's driver.
        self.assertEqual(1, quiesce.mock.call_count)
        self.assertIn(server.uuid, [getattr(arg, 'uuid', None)
                                    for arg in quiesce.mock.call_args[0]])
        image = self.admin_glance().images.get(
            jsonutils.loads(resp.body)['image_id'])
        self.assertEqual(('active', 'qcow2'),
                         (image['status'], image['disk_format']))
        self.assertEqual(1, len(self.cinder.volume_snapshots))
        # The unquiesce cast arrives once the snapshots are available.
        self.assertTrue(self._wait_for(lambda: unquiesce.mock.called))

    def test_require_quiesce_refused_when_quiesce_unsupported(self):
        from nova import exception as nova_exc

        self.useFixture(fixtures.MockPatch(
            'nova.virt.fake.FakeDriver.quiesce',
            side_effect=nova_exc.InstanceQuiesceNotSupported(
                instance_id='x', reason='no guest agent')))
        server = self.create_server(
            vm_state='active',
            system_metadata={'image_os_require_quiesce': 'yes'})
        name = 'require-%s' % uuid.uuid4().hex[:8]
        resp = self.create_image(server.uuid, name)
        # Nova's answer (InstanceQuiesceNotSupported is an Invalid: 400),
        # before any volume snapshot or image.
        self.assertEqual(400, resp.status_int, resp.text)
        self.assertIn('badRequest', resp.json_body)
        self.assertEqual({}, dict(self.cinder.volume_snapshots))
        self.assertEqual([], self.images_named(name))

    def test_unsupported_quiesce_skipped_without_require(self):
        from nova import exception as nova_exc

        quiesce = self.useFixture(fixtures.MockPatch(
            'nova.virt.fake.FakeDriver.quiesce',
            side_effect=nova_exc.InstanceQuiesceNotSupported(
                instance_id='x', reason='no guest agent')))
        server = self.create_server(vm_state='active')
        name = 'skip-%s' % uuid.uuid4().hex[:8]
        resp = self.create_image(server.uuid, name)
        self.assertEqual(202, resp.status_int, resp.text)
        self.assertEqual(1, quiesce.mock.call_count)
        image = self.admin_glance().images.get(
            jsonutils.loads(resp.body)['image_id'])
        self.assertEqual('active', image['status'])
