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

"""SnapshotService end to end against a real glance-api 33."""

import io

import fixtures
from glanceclient import exc as gexc
from oslo_serialization import jsonutils
from oslo_utils import uuidutils

from nova_snapshot_ext import driver as driver_mod
from nova_snapshot_ext import exception
from nova_snapshot_ext.image import glance as glance_mod
from nova_snapshot_ext.snapshot import request
from nova_snapshot_ext.snapshot import service
from tests import base
from tests.functional import base as fbase


class SnapshotTestBase(fbase.FunctionalTestCase):

    DRIVER = 'libvirt'

    def setUp(self):
        super().setUp()
        self.conf = self.useFixture(base.PrivateConf()).conf

    def plugin_client(self, project_id=None, roles=fbase.MEMBER_ROLES):
        session = self.glance.session(project_id or self.project_id,
                                      self.user_id, roles=roles)
        return glance_mod.GlanceClient(session,
                                       endpoint_override=self.glance.endpoint)

    def make_service(self, driver=None, **flags):
        for name, value in flags.items():
            self.conf.set_override(name, value, group='snapshot_ext')
        drv = driver_mod.load_driver(self.conf, driver or self.DRIVER)
        return service.SnapshotService(self.conf, driver=drv)

    def make_request(self, requester_project=None, **changes):
        data = base.sample_request_dict()
        data['name'] = 'snap-%s' % uuidutils.generate_uuid()[:8]
        # A fresh snapshot: the host took new volume snapshots (their ids
        # are the snapshot's idempotency key when no image_id is given).
        for bdm in data['block_device_mappings']:
            if bdm.get('snapshot_id'):
                bdm['snapshot_id'] = uuidutils.generate_uuid()
        data['server']['project_id'] = self.project_id
        data['requester'] = {'project_id': requester_project or
                             self.project_id, 'user_id': self.user_id,
                             'roles': ['member', 'reader']}
        data.update(changes)
        return request.SnapshotRequest.from_dict(data)

    def images_named(self, name):
        return self.list_all_images(filters={'name': name})


class TestRawActivation(SnapshotTestBase):

    def test_sample_request_active_raw_with_mappings(self):
        req = self.make_request()
        client = self.plugin_client()
        result = self.make_service().snapshot(req, glance=client)
        image = client.get(result.image_id)
        self.assertEqual(('active', 'raw', 'bare', 0),
                         (image['status'], image['disk_format'],
                          image['container_format'], image['size']))
        self.assertEqual(self.project_id, image['owner'])
        self.assertEqual('private', image['visibility'])
        # Read back as Nova's consumers parse them (_convert_from_string,
        # _get_image_defined_bdms: bdm_v2 truthy, JSON list).
        mappings = jsonutils.loads(image['block_device_mapping'])
        volume_snapshots = [b.snapshot_id for b in req.block_device_mappings
                            if b.snapshot_id]
        snapshot_ids = dict(zip(['/dev/vda', '/dev/vdb'], volume_snapshots))
        self.assertTrue(image['bdm_v2'])
        self.assertEqual('True', image['bdm_v2'])
        self.assertEqual('/dev/vda', image['root_device_name'])
        self.assertEqual(
            [('blank', 'local', '/dev/vdc', None),
             ('snapshot', 'volume', '/dev/vda', snapshot_ids['/dev/vda']),
             ('snapshot', 'volume', '/dev/vdb', snapshot_ids['/dev/vdb'])],
            [(m['source_type'], m['destination_type'], m['device_name'],
              m['snapshot_id']) for m in mappings])
        self.assertEqual([0], [m['boot_index'] for m in mappings
                               if m['boot_index'] == 0])
        text = image['block_device_mapping']
        self.assertNotIn('connection_info', text)
        self.assertNotIn('auth_password', text)
        # Inherited: image_ properties; dropped: secrets and internals.
        self.assertEqual('ubuntu', image['os_distro'])
        self.assertEqual(512, image['min_ram'])
        self.assertEqual(10, image['min_disk'])
        self.assertEqual('nightly', image['backup_schedule'])
        for key in ('cinder_encryption_key_id', 'password_0',
                    'owner_user_name', 'os_glance_importing_to_stores'):
            self.assertNotIn(key, image)
        self.assertEqual('qemu', image['hypervisor_type'])
        self.assertEqual(b'', client.download(result.image_id))

    def test_glance_refuses_empty_qcow2(self):
        # Proves this Glance enforces format matching: the lie Nova used
        # to tell is refused with 415.
        self.skipUnlessGlanceHas('inspects_uploads')
        client = self.client_for(roles=fbase.MEMBER_ROLES)
        image = client.images.create(name='lie', disk_format='qcow2',
                                     container_format='bare')
        self.addCleanup(client.images.delete, image['id'])
        err = self.assertRaises(gexc.HTTPException, client.images.upload,
                                image['id'], io.BytesIO(b''))
        self.assertIn('HTTP 415', str(err))
        ours = glance_mod.translate(err, 'upload', image['id'], 'qcow2')
        self.assertIsInstance(ours, exception.ImageFormatRejected)

    def test_refusal_after_create_leaves_no_image(self):
        req = self.make_request()
        self.useFixture(fixtures.MockPatchObject(
            glance_mod.GlanceClient, 'upload', side_effect=(
                exception.GlanceBadRequest(operation='upload', status=400,
                                           reason='injected'))))
        err = self.assertRaises(exception.ActivationFailed,
                                self.make_service().snapshot, req,
                                glance=self.plugin_client())
        self.assertEqual([req.image_id or err.result.attempts[0].image_id],
                         err.result.cleaned_up)
        self.assertEqual([], self.images_named(req.name))

    def test_transient_failure_after_create_leaves_the_image_named(self):
        # Another try of this snapshot may be finishing the image: it is
        # left in place, named, and a retry adopts it.
        req = self.make_request()
        with fixtures.MockPatchObject(
                glance_mod.GlanceClient, 'upload', side_effect=(
                    exception.GlanceUnavailable(operation='upload',
                                                reason='injected'))):
            err = self.assertRaises(exception.ActivationFailed,
                                    self.make_service().snapshot, req,
                                    glance=self.plugin_client())
        image_id = req.image_id or err.result.attempts[0].image_id
        self.assertEqual(([], [image_id]), (err.result.cleaned_up,
                                            err.result.left_in_place))
        self.assertEqual([(image_id, 'queued')],
                         [(i['id'], i['status'])
                          for i in self.images_named(req.name)])
        self.assertIn('%s (status queued) left in place' % image_id,
                      err.format_message())
        result = self.make_service().snapshot(req,
                                              glance=self.plugin_client())
        self.assertEqual(('active', image_id, True),
                         (result.status, result.image_id, result.reused))

    def test_retried_create_leaves_one_image(self):
        req = self.make_request(image_id=uuidutils.generate_uuid())
        client = self.plugin_client()
        svc = self.make_service()
        # A first POST that went through but whose answer was lost.
        record = svc.build_record(req)
        client.create(**record.create_kwargs('raw', 'bare'))
        result = svc.snapshot(req, glance=client)
        self.assertTrue(result.reused)
        again = svc.snapshot(req, glance=client)
        self.assertEqual(result.image_id, again.image_id)
        images = self.images_named(req.name)
        self.assertEqual([req.image_id], [i['id'] for i in images])
        self.assertEqual('active', images[0]['status'])

    def test_owner_sharing_adds_member(self):
        admin_project = self.new_project()
        req = self.make_request(requester_project=admin_project)
        client = self.plugin_client(admin_project, roles=fbase.ADMIN_ROLES)
        result = self.make_service().snapshot(req, glance=client)
        self.assertEqual(self.project_id, result.member)
        members = client.list_members(result.image_id)
        self.assertEqual([self.project_id],
                         [m['member_id'] for m in members])
        image = client.get(result.image_id)
        self.assertEqual(('shared', admin_project),
                         (image['visibility'], image['owner']))
        # The server's owner can read it.
        owner = self.client_for(self.project_id, roles=fbase.MEMBER_ROLES)
        self.assertEqual('active', owner.images.get(result.image_id)[
            'status'])

    def test_owner_is_never_its_own_member(self):
        # The requester's project differs from the server's, but the
        # identity creating the image is the server's project (an admin
        # token of it): Glance makes that project the owner, which needs
        # no membership -- and the result must not claim a share.
        req = self.make_request(requester_project=self.new_project())
        client = self.plugin_client()
        svc = self.make_service()
        for _ in range(2):  # the second run reuses the active image
            result = svc.snapshot(req, glance=client)
            self.assertIsNone(result.member)
            self.assertNotIn('shared with', result.describe())
        image = client.get(result.image_id)
        # Nova keeps a snapshot owned by the server's project private:
        # never shared with no member (Glance: a private image has none).
        self.assertEqual(('active', self.project_id, 'private'),
                         (image['status'], image['owner'],
                          image['visibility']))

    def test_retry_with_changed_mapping_is_a_changed_record(self):
        # Same volume snapshots (same derived id), another volume_size:
        # refused as this snapshot's image from another record, untouched.
        req = self.make_request()
        client = self.plugin_client()
        svc = self.make_service()
        first = svc.snapshot(req, glance=client)
        before = client.get(first.image_id)
        req.block_device_mappings[0].volume_size = 99
        err = self.assertRaises(exception.SnapshotExtException,
                                svc.snapshot, req, glance=client)
        self.assertIn('an earlier try of this snapshot',
                      err.format_message())
        self.assertIn('block_device_mapping', err.format_message())
        self.assertNotIn('another image', err.format_message())
        self.assertEqual(before, client.get(first.image_id))
        self.assertEqual([first.image_id],
                         [i['id'] for i in self.images_named(req.name)])

    def test_reserved_user_metadata_refused_nothing_created(self):
        req = self.make_request(metadata={'os_glance_x': 'y'})
        self.assertRaises(exception.ReservedProperty,
                          self.make_service().snapshot, req,
                          glance=self.plugin_client())
        self.assertEqual([], self.images_named(req.name))


class TestNoRawGlance(SnapshotTestBase):

    GLANCE_PROFILE = 'no-raw'

    def test_raw_only_plan_refused_before_create(self):
        req = self.make_request()
        svc = self.make_service(disk_formats=['raw'])
        err = self.assertRaises(exception.FormatNotAllowed, svc.snapshot,
                                req, glance=self.plugin_client())
        self.assertIn('qcow2, vmdk, vhd, vhdx, iso', err.format_message())
        self.assertEqual([], self.images_named(req.name))

    def test_driver_without_allowed_format_refused(self):
        req = self.make_request()
        err = self.assertRaises(
            exception.FormatNotAllowed,
            self.make_service('zvm', driver_formats_only=True).snapshot,
            req, glance=self.plugin_client())
        self.assertIn("driver 'zvm' reads raw", err.format_message())
        self.assertEqual([], self.images_named(req.name))

    def test_driver_without_allowed_format_gets_a_fallback(self):
        result = self.make_service('zvm').snapshot(
            self.make_request(), glance=self.plugin_client())
        self.assertEqual(('active', 'qcow2', 1536),
                         (result.status, result.disk_format, result.size))


class TestConcurrentTries(SnapshotTestBase):
    """Several tries of one snapshot at once (a host retrying in parallel)."""

    def _run_threads(self, svc, req, count=8):
        import threading

        results, errors = [], []
        start = threading.Barrier(count)

        def one():
            client = self.plugin_client()
            start.wait()
            try:
                results.append(svc.snapshot(req, glance=client))
            except exception.SnapshotExtException as err:
                errors.append(err)

        threads = [threading.Thread(target=one) for _ in range(count)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        return results, errors

    def test_same_image_id_ends_with_one_active_image(self):
        req = self.make_request(image_id=uuidutils.generate_uuid())
        results, errors = self._run_threads(self.make_service(), req)
        self.assertEqual([], [e.format_message() for e in errors])
        self.assertEqual({req.image_id}, {r.image_id for r in results})
        images = self.images_named(req.name)
        self.assertEqual([(req.image_id, 'active')],
                         [(i['id'], i['status']) for i in images])

    def test_first_attempt_refused_still_one_image(self):
        # Every try's first attempt is refused with a real 415 (a payload
        # that is not what its label says, injected); they all move on to
        # the next attempt and meet on one image.
        self.skipUnlessGlanceHas('inspects_uploads')
        req = self.make_request(image_id=uuidutils.generate_uuid())
        svc = self.make_service(disk_formats=['qcow2', 'raw'])
        real_payload = service.payloads.payload

        def lying_payload(disk_format):
            if disk_format == 'qcow2':
                return b'\0' * 1536
            return real_payload(disk_format)

        self.useFixture(fixtures.MonkeyPatch(
            'nova_snapshot_ext.snapshot.service.payloads.payload',
            lying_payload))
        results, errors = self._run_threads(svc, req)
        self.assertEqual([], [e.format_message() for e in errors])
        self.assertEqual(1, len({r.image_id for r in results}))
        images = self.images_named(req.name)
        self.assertEqual([('active', 'raw')],
                         [(i['status'], i['disk_format']) for i in images])
