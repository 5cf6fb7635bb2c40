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

"""The fault proxy in front of the embedded real Glance."""

import io

from glanceclient import exc as gexc
import requests

from nova_snapshot_ext.embedded import glance as embedded_glance
from tests.functional import base as fbase
from tests.functional import faultproxy


class FaultGlanceTestCase(fbase.FunctionalTestCase):
    """A functional test case with a fault proxy in front of Glance.

    ``self.proxy`` forwards to ``self.glance``; ``self.proxied_client()``
    talks through it; :meth:`admin_client` and :meth:`list_all_images`
    still talk to Glance directly (the test's own, un-faulted view).
    ``restart`` rules restart ``self.glance`` (same port, same database).
    """

    def setUp(self):
        super().setUp()
        self.proxy = self.useFixture(faultproxy.FaultProxyFixture(
            self.glance.endpoint, restart=self.glance.restart)).proxy

    def proxied_session(self, project_id=None, roles=fbase.MEMBER_ROLES):
        """A keystoneauth session whose endpoint is the proxy."""
        session = self.glance.session(project_id or self.project_id,
                                      self.user_id, roles=roles)
        session.auth.endpoint = self.proxy.endpoint
        return session

    def proxied_client(self, project_id=None, roles=fbase.MEMBER_ROLES):
        """A glanceclient v2 client that talks through the proxy."""
        import glanceclient
        return glanceclient.Client('2', session=self.proxied_session(
            project_id, roles))


class TestFaultProxyGlance(FaultGlanceTestCase):

    def test_forwarding_create_upload_get_delete(self):
        client = self.proxied_client()
        image = client.images.create(name='fp', disk_format='raw',
                                     container_format='bare')
        client.images.upload(image['id'], io.BytesIO(b''))
        self.assertEqual('active', client.images.get(image['id'])['status'])
        client.images.delete(image['id'])
        self.assertEqual(1, self.proxy.count('POST', '^/v2/images$',
                                             status=201))
        self.assertEqual(1, self.proxy.count('PUT', '/file$', status=204))
        self.assertEqual(0, self.proxy.count(fault='any'))

    def test_reset_after_create_leaves_image_in_glance(self):
        self.proxy.add_rule('POST', '^/v2/images$', 'reset_after')
        client = self.proxied_client()
        self.assertRaises(gexc.CommunicationError, client.images.create,
                          name='fp-lost', disk_format='raw',
                          container_format='bare')
        left = self.list_all_images(filters={'name': 'fp-lost'})
        self.assertEqual(['queued'], [i['status'] for i in left])
        self.admin_client().images.delete(left[0]['id'])

    def test_503_and_truncated_schema(self):
        self.proxy.add_rule('GET', '^/v2/schemas/image$', 'status',
                            status=503)
        self.proxy.add_rule('GET', '^/v2/schemas/image$', 'truncate')
        client = self.proxied_client()
        self.assertRaises(gexc.HTTPServiceUnavailable,
                          client.schemas.get, 'image')
        self.assertRaises(requests.exceptions.ChunkedEncodingError,
                          client.schemas.get, 'image')
        self.assertEqual('image', client.schemas.get('image').name)

    def test_restart_holds_request_while_glance_restarts(self):
        direct = self.admin_client()
        before = direct.images.create(name='fp-before', disk_format='raw',
                                      container_format='bare')
        self.addCleanup(direct.images.delete, before['id'])
        pid = self.glance.pid
        self.proxy.add_rule('GET', '^/v2/images/', 'restart')
        client = self.proxied_client(roles=fbase.ADMIN_ROLES)
        self.assertEqual('fp-before', client.images.get(before['id'])['name'])
        self.assertNotEqual(pid, self.glance.pid)
        self.assertTrue(self.glance.running)
        self.assertEqual(1, self.proxy.count('GET', fault='restart',
                                             status=200))

    def test_restart_unstarted_refused(self):
        self.assertRaises(embedded_glance.EmbeddedGlanceError,
                          embedded_glance.EmbeddedGlance().restart)
