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

"""Functional tests proving the embedded glance-api fixture works."""

import concurrent.futures
import functools
import http.server
import io
import os
import stat
import sys
import threading
import time

import fixtures
from glanceclient import exc as glance_exc

from nova_snapshot_ext.embedded import glance as embedded_glance
from tests.functional import base

ZERO = b''


def _children(pid):
    """Return the ids of the direct child processes of ``pid`` (Linux).

    :param pid: the parent process id.
    :returns: a set of process ids.
    """
    found = set()
    for entry in os.listdir('/proc'):
        if not entry.isdigit():
            continue
        try:
            with open('/proc/%s/stat' % entry) as fh:
                fields = fh.read().rsplit(')', 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.add(int(entry))
    return found


def _alive(pid):
    """Tell whether ``pid`` exists and is not a zombie (Linux).

    :param pid: the process id.
    :returns: a bool.
    """
    try:
        with open('/proc/%d/stat' % pid) as fh:
            state = fh.read().rsplit(')', 1)[1].split()[0]
    except OSError:
        return False
    return state != 'Z'


class TestDefaultProfile(base.FunctionalTestCase):

    def _create(self, client, disk_format='raw', name=None, **kwargs):
        image = client.images.create(
            name=name or self.getUniqueString('image'),
            disk_format=disk_format, container_format='bare', **kwargs)
        self.addCleanup(self._delete_quietly, image['id'])
        return image

    def _delete_quietly(self, image_id):
        try:
            self.admin_client().images.delete(image_id)
        except glance_exc.HTTPNotFound:
            pass

    def test_zero_length_raw_upload_goes_active(self):
        client = self.client_for(roles=base.MEMBER_ROLES)
        image = self._create(client, 'raw')
        client.images.upload(image['id'], io.BytesIO(ZERO))
        image = client.images.get(image['id'])
        self.assertEqual('active', image['status'])
        self.assertEqual(0, image['size'])
        self.assertEqual(self.project_id, image['owner'])
        self.assertEqual('d41d8cd98f00b204e9800998ecf8427e',
                         image['checksum'])

    def test_zero_length_qcow2_upload_refused_415(self):
        self.skipUnlessGlanceHas('inspects_uploads')
        client = self.client_for()
        image = self._create(client, 'qcow2')
        error = self.assertRaises(glance_exc.HTTPException,
                                  client.images.upload, image['id'], ZERO)
        self.assertTrue(str(error).startswith('HTTP 415'), str(error))
        self.assertEqual('queued', client.images.get(image['id'])['status'])

    def test_images_are_isolated_by_project(self):
        owner = self.client_for(roles=base.MEMBER_ROLES)
        image = self._create(owner, 'raw', visibility='private')
        other = self.client_for(self.new_project(), self.new_user(),
                                roles=base.MEMBER_ROLES)
        self.assertRaises(glance_exc.HTTPNotFound, other.images.get,
                          image['id'])
        admin_elsewhere = self.client_for(self.new_project(),
                                          self.new_user(),
                                          roles=base.ADMIN_ROLES)
        self.assertEqual(image['id'],
                         admin_elsewhere.images.get(image['id'])['id'])

    def test_concurrent_creates_and_uploads_all_succeed(self):
        client = self.client_for()
        prefix = self.getUniqueString('concurrent')

        def create_and_upload(index):
            image = client.images.create(
                name='%s-%d' % (prefix, index), disk_format='raw',
                container_format='bare')
            self.addCleanup(self._delete_quietly, image['id'])
            client.images.upload(image['id'], io.BytesIO(ZERO))
            return client.images.get(image['id'])['status']

        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            statuses = list(pool.map(create_and_upload, range(8)))
        self.assertEqual(['active'] * 8, statuses)

    def test_assert_no_images_left(self):
        client = self.client_for()
        name = self.getUniqueString('leftover')
        image = self._create(client, 'raw', name=name)
        # a queued image is a leftover, by name and in the global scan
        self.assertRaises(AssertionError, self.assertNoImagesLeft,
                          client, name)
        self.assertRaises(AssertionError, self.assertNoImagesLeft,
                          client, {'owner': self.project_id},
                          only_non_active=True)
        client.images.upload(image['id'], ZERO)
        self.assertNoImagesLeft(client, {'owner': self.project_id},
                                only_non_active=True)
        client.images.delete(image['id'])
        self.assertNoImagesLeft(client, name)

    def test_hidden_images_are_seen(self):
        client = self.client_for()
        name = self.getUniqueString('hidden')
        self._create(client, 'raw', name=name, os_hidden=True)
        self.assertRaises(AssertionError, self.assertNoImagesLeft,
                          client, name)

    def test_profile_describes_settings(self):
        profile = self.glance.profile
        self.assertEqual('default', profile['profile'])
        self.assertEqual(self.glance.endpoint, profile['endpoint'])
        self.assertEqual(list(embedded_glance.DEFAULT_DISK_FORMATS),
                         profile['disk_formats'])
        self.assertEqual('fs:file', profile['enabled_backends'])
        self.assertTrue(profile['require_image_format_match'])


class TestNoRawProfile(base.FunctionalTestCase):

    GLANCE_PROFILE = 'no-raw'

    def test_schema_has_no_raw(self):
        schema = self.client_for().schemas.get('image').raw()
        formats = schema['properties']['disk_format']['enum']
        self.assertNotIn('raw', formats)
        for expected in ('qcow2', 'vmdk', 'vhd', 'vhdx', 'iso'):
            self.assertIn(expected, formats)


class _QuietHandler(http.server.SimpleHTTPRequestHandler):

    def log_message(self, *args):
        pass


class TestLegacyLocationsProfile(base.FunctionalTestCase):
    """http store + allowed_hosts/ports + show_multiple_locations."""

    GLANCE_PROFILE = 'legacy-locations'

    def setUp(self):
        super(TestLegacyLocationsProfile, self).setUp()
        data_dir = self.useFixture(fixtures.TempDir()).path
        with open(os.path.join(data_dir, 'blob'), 'wb') as fh:
            fh.write(b'x' * 65536)
        server = http.server.ThreadingHTTPServer(
            ('127.0.0.1', 0),
            functools.partial(_QuietHandler, directory=data_dir))
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        self.addCleanup(server.server_close)
        self.addCleanup(server.shutdown)
        self.url = 'http://127.0.0.1:%d/blob' % server.server_address[1]

    def _create(self, client):
        image = client.images.create(name=self.getUniqueString('loc'),
                                     disk_format='raw',
                                     container_format='bare')
        self.addCleanup(client.images.delete, image['id'])
        return image

    def test_legacy_patch_location_goes_active(self):
        client = self.client_for()
        image = self._create(client)
        client.images.add_location(image['id'], self.url, {})
        image = client.images.get(image['id'])
        self.assertEqual('active', image['status'])
        self.assertEqual(65536, image['size'])
        self.assertEqual([self.url], [loc['url']
                                      for loc in image['locations']])

    def test_location_api_goes_active(self):
        client = self.client_for()
        image = self._create(client)
        if self.glance_release and not self.glance_release.location_api:
            # glanceclient reads /versions first: no v2.17, no request.
            self.assertRaises(glance_exc.HTTPNotImplemented,
                              client.images.add_image_location,
                              image['id'], self.url, {})
            self.assertEqual('queued',
                             client.images.get(image['id'])['status'])
            return
        client.images.add_image_location(image['id'], self.url, {})
        deadline = time.monotonic() + 30
        while client.images.get(image['id'])['status'] != 'active':
            self.assertLess(time.monotonic(), deadline)
            time.sleep(0.1)


class TestTokenIdentity(base.FunctionalTestCase):

    GLANCE_OVERRIDES = {'identity': 'token'}

    def _token_client(self, token):
        import glanceclient
        return glanceclient.Client('2', endpoint=self.glance.endpoint,
                                   token=token)

    def test_token_client_creates_image_owned_by_project(self):
        project, user = self.new_project(), self.new_user()
        client = self._token_client('%s:%s:admin,member,reader' %
                                    (user, project))
        image = client.images.create(name=self.getUniqueString('tok'),
                                     disk_format='raw',
                                     container_format='bare')
        self.addCleanup(client.images.delete, image['id'])
        self.assertEqual(project, image['owner'])
        client.images.upload(image['id'], ZERO)
        self.assertEqual('active', client.images.get(image['id'])['status'])

    def test_session_helper_uses_token(self):
        client = self.client_for(roles=base.MEMBER_ROLES)
        image = client.images.create(name=self.getUniqueString('tok'),
                                     disk_format='raw',
                                     container_format='bare')
        self.addCleanup(client.images.delete, image['id'])
        self.assertEqual(self.project_id, image['owner'])

    def test_injected_identity_headers_are_ignored(self):
        project, user = self.new_project(), self.new_user()
        client = self._token_client('%s:%s:reader' % (user, project))
        client.http_client.session.headers.update({
            'X-Roles': 'admin,member,reader',
            'X-Project-Id': self.new_project(),
            'X-Service-Roles': 'service'})
        self.assertRaises(glance_exc.HTTPForbidden, client.images.create,
                          name='nope', disk_format='raw',
                          container_format='bare')

    def test_malformed_token_is_401(self):
        client = self._token_client('not-a-fake-token')
        self.assertRaises(glance_exc.HTTPUnauthorized,
                          lambda: list(client.images.list()))


class TestLifecycle(base.FunctionalTestCase):
    """Start/stop of dedicated (not shared) servers."""

    def test_stop_leaves_no_process_and_removes_temp_dir(self):
        server = embedded_glance.EmbeddedGlance()
        self.addCleanup(server.stop)
        with server:
            base_dir = server.base_dir
            master = server.pid
            workers = _children(master)
            self.assertTrue(os.path.isdir(base_dir))
            self.assertTrue(os.path.isfile(server.log_file))
            self.assertTrue(_alive(master))
            self.assertEqual(1, len(workers))
        self.assertFalse(os.path.exists(base_dir))
        self.assertIsNone(server.pid)
        for pid in {master} | workers:
            self.assertFalse(_alive(pid), 'process %d still alive' % pid)
        server.stop()  # idempotent

    def test_caller_base_dir_is_kept(self):
        base_dir = self.useFixture(fixtures.TempDir()).path
        server = embedded_glance.EmbeddedGlance(base_dir)
        self.addCleanup(server.stop)
        server.start()
        self.assertEqual(base_dir, server.base_dir)
        server.stop()
        self.assertTrue(os.path.isfile(
            os.path.join(base_dir, 'glance-api.conf')))
        self.assertTrue(os.path.isfile(
            os.path.join(base_dir, 'glance-api.log')))

    def test_start_failure_raises_with_log_tail(self):
        tmp = self.useFixture(fixtures.TempDir()).path
        fake_python = os.path.join(tmp, 'fake-python')
        with open(fake_python, 'w') as fh:
            fh.write('#!/bin/sh\necho "fake python says boom" >&2\n'
                     'exit 3\n')
        os.chmod(fake_python, stat.S_IRWXU)
        server = embedded_glance.EmbeddedGlance(python=fake_python)
        error = self.assertRaises(embedded_glance.EmbeddedGlanceError,
                                  server.start)
        self.assertIn('fake python says boom', str(error))
        self.assertIsInstance(error, RuntimeError)
        self.assertIsNone(server.pid)
        self.assertIsNone(server.base_dir)

    def test_unknown_identity_rejected(self):
        self.assertRaises(ValueError, embedded_glance.EmbeddedGlance,
                          identity='keystone')

    def test_profiles_are_valid(self):
        for name in embedded_glance.PROFILES:
            server = embedded_glance.from_profile(name)
            self.assertEqual(name, server.profile['profile'])
        self.assertRaises(KeyError, embedded_glance.from_profile, 'nope')
        self.assertEqual(sys.executable, server.python)
