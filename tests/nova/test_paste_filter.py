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

"""The filter loaded from an ``api-paste.ini`` in front of Nova's real API.

The pipeline is Nova's own (``pipeline_factory_v21`` with
``compute_req_id faultwrap keystonecontext``, then the plugin's filter,
then ``APIRouterV21``), loaded with ``paste.deploy.loadapp``.  Requests are
WSGI calls (webob) with the identity headers keystonemiddleware would
set; the database, policy and RPC are Nova's test fixtures, Cinder is
``CinderFixture``, Glance is real (refuses ``raw``).
"""

import os
import uuid

import fixtures
from oslo_serialization import jsonutils
from paste import deploy
import webob

from tests.nova import base

API_PASTE_INI = """\
[composite:openstack_compute_api_v21]
use = call:nova.api.auth:pipeline_factory_v21
keystone = compute_req_id faultwrap keystonecontext
    snapshot_ext osapi_compute_app_v21

[filter:snapshot_ext]
paste.filter_factory = nova_snapshot_ext.nova.filter:filter_factory

[filter:compute_req_id]
paste.filter_factory = nova.api.compute_req_id:ComputeReqIdMiddleware.factory

[filter:faultwrap]
paste.filter_factory = nova.api.openstack:FaultWrapper.factory

[filter:keystonecontext]
paste.filter_factory = nova.api.auth:NovaKeystoneContext.factory

[app:osapi_compute_app_v21]
paste.app_factory = nova.api.openstack.compute:APIRouterV21.factory
"""


class TestPasteFilter(base.NovaServerTestCase):

    def setUp(self):
        super().setUp()
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'api-paste.ini')
        with open(path, 'w') as f:
            f.write(API_PASTE_INI)
        self.app = deploy.loadapp('config:%s' % path,
                                  name='openstack_compute_api_v21')

    def request(self, method, path, body=None, roles=base.MEMBER_ROLES,
                version='2.45'):
        req = webob.Request.blank(path, method=method)
        req.headers.update({
            'X-User-Id': self.user_id, 'X-Project-Id': self.project_id,
            'X-Roles': ','.join(roles),
            'X-Auth-Token': self.glance.token(self.project_id,
                                              self.user_id, roles),
            'OpenStack-API-Version': 'compute %s' % version,
            'Accept': 'application/json'})
        if body is not None:
            req.content_type = 'application/json'
            req.body = jsonutils.dump_as_bytes(body)
        return req.get_response(self.app)

    def create_image(self, server_id, name, metadata=None):
        body = {'createImage': {'name': name}}
        if metadata is not None:
            body['createImage']['metadata'] = metadata
        return self.request('POST', '/servers/%s/action' % server_id, body)

    def test_filter_in_pipeline(self):
        from nova_snapshot_ext.nova import filter as filter_mod
        from nova_snapshot_ext.nova import hook

        found, app = [], self.app
        while app is not None and not found:
            if isinstance(app, filter_mod.SnapshotExtMiddleware):
                found.append(app)
            app = getattr(app, 'application', None)
        self.assertEqual(1, len(found))
        self.assertTrue(hook.installed())

    def test_reserved_metadata_refused_before_any_snapshot(self):
        server = self.create_server()
        name = 'early-%s' % uuid.uuid4().hex[:8]
        resp = self.create_image(server.uuid, name, {'os_glance_x': 'y'})
        self.assertEqual(403, resp.status_int, resp.text)
        body = jsonutils.loads(resp.body)
        self.assertEqual(['forbidden'], list(body))
        self.assertEqual(403, body['forbidden']['code'])
        self.assertIn('os_glance_x', body['forbidden']['message'])
        self.assertEqual({}, dict(self.cinder.volume_snapshots))
        self.assertEqual([], self.images_named(name))

    def test_long_property_name_refused_bad_request(self):
        server = self.create_server()
        name = 'early400-%s' % uuid.uuid4().hex[:8]
        resp = self.create_image(server.uuid, name, {'k' * 256: 'v'})
        self.assertEqual(400, resp.status_int, resp.text)
        body = jsonutils.loads(resp.body)
        self.assertEqual(['badRequest'], list(body))
        self.assertEqual(400, body['badRequest']['code'])
        self.assertEqual({}, dict(self.cinder.volume_snapshots))
        self.assertEqual([], self.images_named(name))

    def test_valid_request_goes_to_nova_and_image_is_active(self):
        server = self.create_server()
        name = 'through-%s' % uuid.uuid4().hex[:8]
        resp = self.create_image(server.uuid, name, {'purpose': 'test'})
        self.assertEqual(202, resp.status_int, resp.text)
        image_id = jsonutils.loads(resp.body)['image_id']
        image = self.admin_glance().images.get(image_id)
        self.assertEqual(('active', 'qcow2', 'test'),
                         (image['status'], image['disk_format'],
                          image['purpose']))
        self.assertEqual(1, len(self.cinder.volume_snapshots))

    def test_preflight_crash_passes_through_to_nova(self):
        self.useFixture(fixtures.MockPatch(
            'nova_snapshot_ext.snapshot.service.SnapshotService.preflight',
            side_effect=RuntimeError('injected')))
        server = self.create_server()
        name = 'crash-%s' % uuid.uuid4().hex[:8]
        resp = self.create_image(server.uuid, name)
        self.assertEqual(202, resp.status_int, resp.text)
        self.assertEqual(1, len(self.cinder.volume_snapshots))
        self.assertIn('passing the request to Nova',
                      self.stdlog.logger.output)

    def test_image_backed_server_not_checked(self):
        spy = self.useFixture(fixtures.MockPatch(
            'nova_snapshot_ext.snapshot.service.SnapshotService.preflight'))
        self.useFixture(fixtures.MockPatch(
            'nova.compute.api.API.snapshot',
            return_value={'id': str(uuid.uuid4())}))
        server = self.create_server(volume_backed=False)
        resp = self.create_image(server.uuid, 'img-backed',
                                 {'os_glance_x': 'y'})
        self.assertEqual(202, resp.status_int, resp.text)
        spy.mock.assert_not_called()

    def test_other_requests_not_checked(self):
        spy = self.useFixture(fixtures.MockPatch(
            'nova_snapshot_ext.snapshot.service.SnapshotService.preflight'))
        server = self.create_server()
        resp = self.request('POST', '/servers/%s/metadata' % server.uuid,
                            {'metadata': {'os_glance_x': 'y'}})
        self.assertEqual(200, resp.status_int, resp.text)
        self.assertEqual({'os_glance_x': 'y'},
                         jsonutils.loads(resp.body)['metadata'])
        spy.mock.assert_not_called()

    def test_caller_without_access_gets_novas_answer(self):
        spy = self.useFixture(fixtures.MockPatch(
            'nova_snapshot_ext.snapshot.service.SnapshotService.preflight'))
        server = self.create_server()
        # Another project's member: Nova answers 404, the plugin says
        # nothing.
        self.project_id = uuid.uuid4().hex
        resp = self.create_image(server.uuid, 'x', {'os_glance_x': 'y'})
        self.assertEqual(404, resp.status_int, resp.text)
        spy.mock.assert_not_called()
