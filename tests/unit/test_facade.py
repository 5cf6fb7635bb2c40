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

"""The library facade: initialize, preflight, snapshot_image."""

import types

import fixtures

import nova_snapshot_ext
from nova_snapshot_ext import driver as driver_mod
from nova_snapshot_ext import exception
from nova_snapshot_ext.snapshot import request as request_mod
from nova_snapshot_ext.snapshot import service as service_mod
from tests import base
from tests.unit.snapshot import test_service


class TestFacade(test_service.ServiceTestBase):

    def setUp(self):
        super().setUp()
        self.useFixture(fixtures.MonkeyPatch('nova_snapshot_ext._SERVICE',
                                             None))

    def initialize(self):
        return nova_snapshot_ext.initialize(
            self.conf, driver=driver_mod.load_driver(self.conf, 'libvirt'),
            glance=self.client)

    def test_not_initialized_is_named(self):
        err = self.assertRaises(exception.NotInitialized,
                                nova_snapshot_ext.snapshot_image,
                                base.sample_request_dict())
        self.assertIn('initialize(conf)', str(err))
        self.assertRaises(exception.NotInitialized,
                          nova_snapshot_ext.preflight,
                          base.sample_request_dict())
        self.assertEqual({}, self.fake.images)

    def test_snapshot_from_a_dict(self):
        svc = self.initialize()
        self.assertIsInstance(svc, service_mod.SnapshotService)
        data = base.sample_request_dict()
        prepared = nova_snapshot_ext.preflight(data)
        self.assertEqual({}, self.fake.images)
        result = nova_snapshot_ext.snapshot_image(data)
        self.assertEqual(('active', prepared.record.image_id),
                         (result.status, result.image_id))

    def test_snapshot_from_a_request(self):
        self.initialize()
        result = nova_snapshot_ext.snapshot_image(self.make_request())
        self.assertEqual(('active', test_service.IMAGE_ID),
                         (result.status, result.image_id))

    def test_bad_request_names_the_field(self):
        self.initialize()
        data = base.sample_request_dict()
        del data['server']
        err = self.assertRaises(exception.InvalidRequest,
                                nova_snapshot_ext.snapshot_image, data)
        self.assertIn('server', str(err))
        self.assertEqual({}, self.fake.images)

    def test_facade_names_do_not_shadow_subpackages(self):
        import nova_snapshot_ext.snapshot

        self.assertIsInstance(nova_snapshot_ext.snapshot, types.ModuleType)
        self.assertIs(request_mod,
                      nova_snapshot_ext.snapshot.request)  # type: ignore
