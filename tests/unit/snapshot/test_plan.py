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

"""The plan after the driver's formats: every other honest format."""

import logging

import fixtures

from nova_snapshot_ext import driver as driver_mod
from nova_snapshot_ext import exception
from nova_snapshot_ext.image import capabilities
from nova_snapshot_ext.snapshot import plan
from tests import base
from tests.unit import fake_glanceclient


def caps(formats):
    doc = fake_glanceclient.FakeGlance(disk_formats=formats).schema()
    return capabilities.GlanceCapabilities.from_documents(doc)


class TestFallbackFormats(base.TestCase):

    def driver(self, name, formats_only=None):
        conf = base.private_conf()
        if formats_only is not None:
            conf.set_override('driver_formats_only', formats_only,
                              group='snapshot_ext')
        return driver_mod.load_driver(conf, name)

    def formats(self, attempts):
        return [(a.disk_format, a.fallback) for a in attempts]

    def test_vmware_on_qcow2_only_glance(self):
        attempts = plan.build_plan(caps(['qcow2']), self.driver('vmwareapi'))
        self.assertEqual([('qcow2', True)], self.formats(attempts))
        self.assertIn('not a driver format', attempts[0].describe())
        self.assertIn('driver_formats_only', attempts[0].fallback_note())

    def test_413_has_a_smaller_payload_to_go_to(self):
        # libvirt (kvm) on qcow2,vdi,vmdk: driver formats first, then the
        # others smallest first.
        attempts = plan.build_plan(caps(['qcow2', 'vdi', 'vmdk']),
                                   self.driver('libvirt'))
        order = [a.disk_format for a in attempts]
        self.assertEqual('qcow2', order[0])
        self.assertLess(order.index('qcow2'), order.index('vdi'))
        sizes = {a.disk_format: a.size for a in attempts}
        self.assertLess(sizes['vdi'], sizes['qcow2'])
        self.assertEqual({'qcow2', 'vdi', 'vmdk'}, set(sizes))

    def test_fallbacks_smallest_first(self):
        attempts = plan.build_plan(
            caps(['vhdx', 'iso', 'vdi', 'qcow2', 'vmdk', 'vhd', 'ploop']),
            self.driver('zvm'))
        self.assertTrue(all(a.fallback for a in attempts))
        sizes = [a.size for a in attempts]
        self.assertEqual(sorted(sizes), sizes)

    def test_every_cell_of_the_field_report_has_a_plan(self):
        # qcow2-only, vdi-only, vhdx-only, ploop-only, vmdk+iso Glances x
        # every driver: never empty.
        for formats in (['qcow2'], ['vdi'], ['vhdx'], ['ploop'],
                        ['vmdk', 'iso']):
            for name in ('libvirt', 'vmwareapi', 'hyperv', 'xenapi',
                         'ironic', 'zvm'):
                self.assertTrue(
                    plan.build_plan(caps(formats), self.driver(name)),
                    (formats, name))

    def test_driver_formats_only_keeps_the_limit(self):
        drv = self.driver('vmwareapi', formats_only=True)
        self.assertEqual([], plan.build_plan(caps(['qcow2']), drv))
        self.assertIn('driver_formats_only',
                      plan.explain_empty_plan(caps(['qcow2']), drv))
        # An explicit argument wins over the configuration.
        self.assertEqual(['qcow2'], [a.disk_format for a in plan.build_plan(
            caps(['qcow2']), drv, driver_formats_only=False)])

    def test_pinned_formats_are_a_limit(self):
        attempts = plan.build_plan(caps(['qcow2', 'vdi']),
                                   self.driver('libvirt'), pinned=['qcow2'])
        self.assertEqual([('qcow2', False)], self.formats(attempts))

    def test_no_format_at_all(self):
        drv = self.driver('zvm')
        self.assertEqual([], plan.build_plan(caps(['aki', 'ari']), drv))
        self.assertIn('no other format',
                      plan.explain_empty_plan(caps(['aki', 'ari']), drv))

    def test_warning_when_no_driver_format_is_possible(self):
        # Only at DEBUG: a plan activates nothing (the engine warns once
        # the fallback activated the image, issue 28 item 6).
        log = self.useFixture(fixtures.FakeLogger(
            name='nova_snapshot_ext.snapshot.plan', level=logging.DEBUG))
        plan.build_plan(caps(['qcow2']), self.driver('vmwareapi'))
        self.assertIn('planned fallback: activated as qcow2, a format the '
                      'driver does not read', log.output)
        plan.build_plan(caps(['qcow2', 'vmdk']), self.driver('vmwareapi'))
        self.assertEqual(1, log.output.count('activated as'))
        warnings = self.useFixture(fixtures.FakeLogger(
            name='nova_snapshot_ext.snapshot.plan', level=logging.WARNING))
        plan.build_plan(caps(['qcow2']), self.driver('vmwareapi'))
        self.assertEqual('', warnings.output)


class TestPlanPolicy(TestFallbackFormats):
    """plan.decide: the one home of location-first, fallback, refusal."""

    URL = 'http://objects.example/empty.qcow2'

    def location(self):
        return plan.location_attempt('qcow2', 1536, 'new', self.URL)

    def decide(self, formats, method, location=None, why_not=(),
               driver='libvirt', pinned=()):
        return plan.decide(caps(formats), self.driver(driver), list(pinned),
                           method, location, list(why_not), self.URL)

    def test_usable_location_first(self):
        decision = self.decide(['raw', 'qcow2'], 'location-first',
                               self.location())
        self.assertEqual(('location', [], None, None), (
            decision.attempts[0].method, decision.notes, decision.refused,
            decision.error))

    def test_location_first_unusable_is_refused(self):
        decision = self.decide(['raw'], 'location-first',
                               why_not=['no read-only store'])
        self.assertIsInstance(decision.error, exception.LocationUnusable)
        self.assertIn('location-first and the location cannot be used: '
                      'no read-only store', decision.refused)
        self.assertIn('no read-only store', decision.error.format_message())

    def test_fallback_unusable_is_a_note_and_uploads(self):
        decision = self.decide(['raw'], 'location-fallback',
                               why_not=['object is empty'])
        self.assertIsNone(decision.error)
        self.assertEqual(['upload'], [a.method for a in decision.attempts])
        self.assertEqual(['location %s not used: object is empty'
                          % self.URL], decision.notes)

    def test_empty_plan_is_refused_saying_why(self):
        decision = self.decide(['ami'], 'upload', driver='vmwareapi')
        self.assertEqual([], decision.attempts)
        self.assertIsInstance(decision.error, exception.FormatNotAllowed)
        self.assertIn(decision.refused, decision.error.format_message())

    def test_empty_plan_and_unusable_location_names_both(self):
        decision = self.decide(['ami'], 'location-fallback',
                               why_not=['object is empty'],
                               driver='vmwareapi')
        self.assertIsInstance(decision.error, exception.LocationUnusable)
        self.assertIn('object is empty; and no upload is possible either',
                      decision.refused)
