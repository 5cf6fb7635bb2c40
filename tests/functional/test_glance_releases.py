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

"""What each real Glance release does, and what the plugin does there.

Run against any Glance: the installed one (``tox -e functional``) or one
major from the package index (``tox -e glance28`` ... ``glance33``, see
:mod:`nova_snapshot_ext.embedded.glance_venv`).  Each test asserts the
behaviour of the release it runs against, as
:data:`~nova_snapshot_ext.embedded.glance_venv.RELEASES` states it (format
inspection of uploads from 30, location API v2.17 from 29), and when
``NOVA_SNAPSHOT_EXT_GLANCE_COMPAT_DIR`` is set records a one-line outcome
there; ``tox -e glance-compat`` turns the records into
``doc/source/glance-compat.rst``.
"""

import io
import os

from glanceclient import exc as gexc

from nova_snapshot_ext import exception
from nova_snapshot_ext.image import capabilities as caps_mod
from nova_snapshot_ext.image import glance as glance_mod
from tests import compat_rst
from tests.functional import base as fbase
from tests.functional import glance_compat_table
from tests.functional import test_locations

RESULTS_ENV = 'NOVA_SNAPSHOT_EXT_GLANCE_COMPAT_DIR'
_BEHAVIOURS = dict(glance_compat_table.BEHAVIOURS)


class ReleaseTestBase(test_locations.LocationTestBase):

    def setUp(self):
        super().setUp()
        if self.glance_release is None:
            self.skipTest('Glance %s is not in glance_venv.RELEASES: its '
                          'behaviour is not stated' %
                          self.glance.glance_version)
        self.rel = self.glance_release

    def record(self, behaviour, outcome):
        """Record what this release did (for the generated table).

        :param behaviour: a key of ``glance_compat_table.BEHAVIOURS``.
        :param outcome: a short text.
        """
        self.assertIn(behaviour, _BEHAVIOURS)
        where = os.environ.get(RESULTS_ENV)
        if where:
            compat_rst.write_result(
                where, 'glance-%s-%s' % (self.glance.glance_version,
                                         behaviour),
                {'glance': self.glance.glance_version,
                 'series': self.rel.series, 'behaviour': behaviour,
                 'outcome': outcome})

    def methods(self, result):
        return [(a.method, a.location_api if a.method == 'location'
                 else a.disk_format, a.outcome) for a in result.attempts]

    def describe(self, result):
        steps = []
        for attempt in result.attempts:
            what = (('%s location API' % attempt.location_api)
                    if attempt.method == 'location'
                    else 'upload %s' % attempt.disk_format)
            if attempt.outcome == 'active':
                steps.append('%s: active' % what)
            else:
                steps.append('%s: %s (deleted)' % (what, attempt.status
                                                   or attempt.outcome))
        image = self.location_client().get(result.image_id)
        return '%s; image %s %s %d B' % (', '.join(steps), image['status'],
                                         image['disk_format'], image['size'])


class TestDefaultGlance(ReleaseTestBase):
    """Default ``disk_formats``, http store enabled."""

    def test_versions_as_discovered(self):
        caps = caps_mod.discover(self.location_client())
        self.assertEqual(self.rel.location_api, caps.location_api,
                         caps.to_dict())
        newest = max(caps.api_versions, key=lambda v: tuple(
            int(p) for p in v.lstrip('v').split('.')))
        self.record('versions', '%s (newest %s)' % (
            'listed' if caps.location_api else 'not listed', newest))

    def test_zero_bytes_as_qcow2(self):
        client = self.client_for(roles=fbase.MEMBER_ROLES)
        image = client.images.create(name='zero-qcow2', disk_format='qcow2',
                                     container_format='bare')
        self.addCleanup(client.images.delete, image['id'])
        if not self.rel.inspects_uploads:
            client.images.upload(image['id'], io.BytesIO(b''))
            image = client.images.get(image['id'])
            self.assertEqual(('active', 0), (image['status'],
                                             image['size']))
            self.record('zero-qcow2', 'accepted: active qcow2 0 B (not '
                        'inspected)')
            return
        err = self.assertRaises(gexc.HTTPException, client.images.upload,
                                image['id'], io.BytesIO(b''))
        self.assertIn('HTTP 415', str(err))
        ours = glance_mod.translate(err, 'upload', image['id'], 'qcow2')
        self.assertIsInstance(ours, exception.ImageFormatRejected)
        self.assertEqual('queued', client.images.get(image['id'])['status'])
        reason = 'does not match stream data' in str(err)
        self.record('zero-qcow2', '415, image left queued; reason %s the '
                    'answer' % ('in' if reason else 'not in'))

    def test_plugin_upload(self):
        req = self.make_request()
        client = self.location_client()
        result = self.make_service().snapshot(req, glance=client)
        image = client.get(result.image_id)
        self.assertEqual(('active', 'raw', 0), (
            image['status'], image['disk_format'], image['size']))
        self.assertNothingLeftFor(req)
        self.record('plugin-default', self.describe(result))

    def test_location_auto(self):
        # show_multiple_locations is off: the legacy API answers 403.
        req = self.make_request()
        client = self.location_client()
        result = self.location_service().snapshot(req, glance=client)
        if self.rel.location_api:
            self.assertActiveAtLocation(result, client)
        else:
            self.assertEqual(
                [('location', 'legacy', 'failed'), ('upload', 'raw',
                                                    'active')],
                self.methods(result))
            self.assertEqual(403, result.attempts[0].status)
            self.assertTrue(result.attempts[0].cleaned_up)
        self.assertNothingLeftFor(req)
        self.record('location-auto', self.describe(result))

    def test_location_new_only(self):
        req = self.make_request()
        client = self.location_client()
        svc = self.location_service(location_api='new')
        if self.rel.location_api:
            result = svc.snapshot(req, glance=client)
            self.assertActiveAtLocation(result, client)
            self.assertNothingLeftFor(req)
            self.record('location-new', self.describe(result))
            return
        err = self.assertRaises(exception.LocationUnusable, svc.snapshot,
                                req, glance=client)
        self.assertIn('does not list API v2.17', err.format_message())
        self.assertEqual([], self.images_named(req.name))
        # Refused from /versions alone: the object was not even read.
        self.assertEqual([], self.objects.requests)
        self.assertNoImagesLeftByThisTest()
        self.record('location-new', 'refused before anything is created '
                    '(no v2.17 in /versions); nothing left')

    def test_legacy_only_while_off(self):
        req = self.make_request()
        result = self.location_service(location_api='legacy').snapshot(
            req, glance=self.location_client())
        self.assertEqual([('location', 'legacy', 'failed'),
                          ('upload', 'raw', 'active')],
                         self.methods(result))
        self.assertEqual(403, result.attempts[0].status)
        self.assertNothingLeftFor(req)
        self.record('location-legacy-off', self.describe(result))


class TestNoRawGlance(ReleaseTestBase):

    GLANCE_PROFILE = 'no-raw'

    def test_plugin_upload(self):
        req = self.make_request()
        client = self.location_client()
        result = self.make_service().snapshot(req, glance=client)
        image = client.get(result.image_id)
        self.assertEqual('active', image['status'])
        self.assertIn(image['disk_format'],
                      self.glance.profile['disk_formats'])
        self.assertGreater(image['size'], 0)
        self.assertNothingLeftFor(req)
        self.record('plugin-no-raw', self.describe(result))


class TestLegacyLocationsOn(ReleaseTestBase):

    GLANCE_PROFILE = 'legacy-locations'

    def test_location_auto(self):
        req = self.make_request()
        client = self.location_client()
        result = self.location_service().snapshot(req, glance=client)
        api = 'new' if self.rel.location_api else 'legacy'
        self.assertEqual([('location', api, 'active')],
                         self.methods(result))
        image = client.get(result.image_id)
        self.assertEqual(('active', 1536, self.url), (
            image['status'], image['size'], image['direct_url']))
        self.assertNothingLeftFor(req)
        self.record('location-auto-legacy-on', self.describe(result))

    def test_legacy_only(self):
        req = self.make_request()
        client = self.location_client()
        result = self.location_service(location_api='legacy').snapshot(
            req, glance=client)
        self.assertEqual([('location', 'legacy', 'active')],
                         self.methods(result))
        image = client.get(result.image_id)
        self.assertEqual(('active', 1536), (image['status'],
                                            image['size']))
        self.assertNothingLeftFor(req)
        self.record('location-legacy', self.describe(result))
