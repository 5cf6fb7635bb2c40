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

import logging
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


class PastePipelineMixin(object):
    """Nova's pipeline with the filter (``self.app``) and without it."""

    def setUp(self):
        super().setUp()
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'api-paste.ini')
        with open(path, 'w') as f:
            f.write(API_PASTE_INI)
        self.app = deploy.loadapp('config:%s' % path,
                                  name='openstack_compute_api_v21')
        # The same pipeline without the plugin: what Nova alone answers.
        alone = os.path.join(os.path.dirname(path), 'nova-alone.ini')
        with open(alone, 'w') as f:
            f.write(API_PASTE_INI.replace(' snapshot_ext ', ' '))
        self.nova_alone = deploy.loadapp('config:%s' % alone,
                                         name='openstack_compute_api_v21')

    def request(self, method, path, body=None, roles=base.MEMBER_ROLES,
                version='2.45', app=None):
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
        return req.get_response(app or self.app)

    def create_image(self, server_id, name, metadata=None):
        body = {'createImage': {'name': name}}
        if metadata is not None:
            body['createImage']['metadata'] = metadata
        return self.request('POST', '/servers/%s/action' % server_id, body)


class TestPasteFilter(PastePipelineMixin, base.NovaServerTestCase):

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

    def test_live_volume_mapping_refused_before_any_snapshot(self):
        # Issue 28: a volume BDM without destination_type would be copied
        # as it is by Nova's snapshot_volume_backed, handing every server
        # booted from the image this server's in-use volume.
        live = str(uuid.uuid4())
        server = self.create_server(extra_bdms=[dict(
            source_type='volume', destination_type=None, volume_id=live,
            boot_index=-1, device_name='/dev/vdc')])
        name = 'live-%s' % uuid.uuid4().hex[:8]
        resp = self.create_image(server.uuid, name)
        self.assertEqual(400, resp.status_int, resp.text)
        message = jsonutils.loads(resp.body)['badRequest']['message']
        # Nova lists the BDMs in its own order: the index is its.
        self.assertRegex(message, r'block_device_mappings\[\d\]\.snapshot_id')
        self.assertIn(live, message)
        self.assertEqual({}, dict(self.cinder.volume_snapshots))
        self.assertEqual([], self.images_named(name))

    def test_key_deleting_metadata_refused_before_any_snapshot(self):
        server = self.create_server()
        name = 'armed-%s' % uuid.uuid4().hex[:8]
        resp = self.create_image(server.uuid, name, {
            'cinder_encryption_key_id': str(uuid.uuid4()),
            'cinder_encryption_key_deletion_policy': 'on_image_deletion'})
        self.assertEqual(400, resp.status_int, resp.text)
        message = jsonutils.loads(resp.body)['badRequest']['message']
        self.assertIn('metadata.cinder_encryption_key_deletion_policy',
                      message)
        self.assertEqual({}, dict(self.cinder.volume_snapshots))
        self.assertEqual([], self.images_named(name))

    def test_database_refusal_before_any_snapshot(self):
        # Keys one in Glance's MySQL/MariaDB table (utf8mb3_general_ci):
        # Glance on MariaDB would answer 500 after the volume snapshots;
        # the preflight refuses them first, whatever Glance's database.
        for metadata in ({'Foo': '1', 'foo': '2'},
                         {'tag': '1', 'tag ': '2'}):
            server = self.create_server()
            name = 'db-%s' % uuid.uuid4().hex[:8]
            resp = self.create_image(server.uuid, name, metadata)
            self.assertEqual(400, resp.status_int, resp.text)
            message = jsonutils.loads(resp.body)['badRequest']['message']
            for key in metadata:
                self.assertIn("'%s'" % key, message)
            self.assertEqual({}, dict(self.cinder.volume_snapshots))
            self.assertEqual([], self.images_named(name))

    def test_long_property_name_refused_bad_request(self):
        # Nova's own createImage schema refuses a 256-character key: Nova
        # answers (the plugin's preflight is not reached).
        spy = self.useFixture(fixtures.MockPatch(
            'nova_snapshot_ext.snapshot.service.SnapshotService.preflight'))
        server = self.create_server()
        name = 'early400-%s' % uuid.uuid4().hex[:8]
        resp = self.create_image(server.uuid, name, {'k' * 256: 'v'})
        self.assertEqual(400, resp.status_int, resp.text)
        body = jsonutils.loads(resp.body)
        self.assertEqual(['badRequest'], list(body))
        self.assertEqual(400, body['badRequest']['code'])
        self.assertEqual({}, dict(self.cinder.volume_snapshots))
        self.assertEqual([], self.images_named(name))
        spy.mock.assert_not_called()

    def test_name_cinder_would_refuse_refused_before_any_snapshot(self):
        # Nova names each volume snapshot "snapshot for <name>"; above
        # Cinder's 255 characters it would get Cinder's 400 about a name
        # the user never typed, after quiescing the guest.
        server = self.create_server()
        longest = 255 - len('snapshot for ')
        resp = self.create_image(server.uuid, 'n' * (longest + 1))
        self.assertEqual(400, resp.status_int, resp.text)
        message = jsonutils.loads(resp.body)['badRequest']['message']
        self.assertIn("field 'name'", message)
        self.assertIn('256 characters', message)
        self.assertIn('at most %d characters' % longest, message)
        self.assertEqual({}, dict(self.cinder.volume_snapshots))
        self.assertEqual([], self.images_named('n' * (longest + 1)))
        resp = self.create_image(server.uuid, 'n' * longest)
        self.assertEqual(202, resp.status_int, resp.text)
        self.assertEqual(1, len(self.cinder.volume_snapshots))

    def test_refusal_carries_novas_version_headers(self):
        server = self.create_server()
        for version in ('2.1', '2.45', 'latest'):
            resp = self.request(
                'POST', '/servers/%s/action' % server.uuid,
                {'createImage': {'name': 'v', 'metadata': {
                    'os_glance_x': 'y'}}}, version=version)
            self.assertEqual(403, resp.status_int, resp.text)
            # Nova's own error for the same version (unknown server).
            nova = self.request(
                'POST', '/servers/%s/action' % uuid.uuid4(),
                {'createImage': {'name': 'v'}}, version=version)
            self.assertEqual(404, nova.status_int, nova.text)
            for header in ('OpenStack-API-Version',
                           'X-OpenStack-Nova-API-Version', 'Vary',
                           'Content-Type'):
                self.assertEqual(nova.headers.get(header),
                                 resp.headers.get(header), header)
            self.assertIsNotNone(resp.headers.get('OpenStack-API-Version'))
            if version != 'latest':
                self.assertEqual('compute %s' % version,
                                 resp.headers['OpenStack-API-Version'])

    def _nova_answers_first(self, path, name='n', vm_state='stopped',
                            version='2.45', server_id=None):
        spy = self.useFixture(fixtures.MockPatch(
            'nova_snapshot_ext.snapshot.service.SnapshotService.preflight'))
        server = self.create_server(vm_state=vm_state)
        path = path.format(server=server_id or server.uuid,
                           project=self.project_id, other=uuid.uuid4().hex)
        body = {'createImage': {'name': name,
                                'metadata': {'os_glance_x': 'y'}}}
        resp = self.request('POST', path, body, version=version)
        nova = self.request('POST', path, body, version=version,
                            app=self.nova_alone)
        self.assertEqual((nova.status_int, nova.json_body),
                         (resp.status_int, resp.json_body))
        self.assertNotEqual(403, resp.status_int, resp.text)
        spy.mock.assert_not_called()
        self.assertEqual({}, dict(self.cinder.volume_snapshots))
        # The plugin's own lines: another library's ERROR (stevedore's
        # optional-backend line) is not the plugin's and must not decide.
        self.assertEqual([], self.plugin_log.tracebacks())
        self.assertEqual([], self.plugin_log.at_least(logging.ERROR))
        return resp

    def test_nova_answers_foreign_project_segment(self):
        resp = self._nova_answers_first('/{other}/servers/{server}/action')
        self.assertEqual(400, resp.status_int)

    def test_nova_answers_non_hex_project_segment(self):
        self._nova_answers_first('/not-a-project!/servers/{server}/action')

    def test_nova_answers_bad_server_id(self):
        resp = self._nova_answers_first('/servers/{server}/action',
                                        server_id='not-a-uuid')
        self.assertEqual(404, resp.status_int)

    def test_nova_answers_empty_name(self):
        resp = self._nova_answers_first('/servers/{server}/action', name='')
        self.assertEqual(400, resp.status_int)

    def test_nova_answers_name_too_long(self):
        resp = self._nova_answers_first('/servers/{server}/action',
                                        name='n' * 256)
        self.assertEqual(400, resp.status_int)

    def test_nova_answers_server_in_error_state(self):
        resp = self._nova_answers_first('/servers/{server}/action',
                                        vm_state='error')
        self.assertEqual(409, resp.status_int)

    def test_nova_answers_unsupported_version(self):
        resp = self._nova_answers_first('/servers/{server}/action',
                                        version='9.999')
        self.assertEqual(406, resp.status_int)

    def test_own_project_segment_is_checked(self):
        server = self.create_server()
        resp = self.request(
            'POST', '/%s/servers/%s/action' % (self.project_id, server.uuid),
            {'createImage': {'name': 'p', 'metadata': {'os_glance_x': 'y'}}})
        self.assertEqual(403, resp.status_int, resp.text)
        self.assertEqual({}, dict(self.cinder.volume_snapshots))

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
