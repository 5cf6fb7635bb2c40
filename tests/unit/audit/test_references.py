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

"""Images naming a tagged volume snapshot without the tag."""

from nova_snapshot_ext import audit
from nova_snapshot_ext.audit import references
from nova_snapshot_ext.snapshot import tags
from tests import base
from tests.unit.audit import test_images as test_audit

SNAP = '9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c01'
OTHER = '9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c02'


def tagged(image_id, snap=SNAP):
    return test_audit.image(id=image_id, entries=[test_audit.entry(
        snapshot_id=snap)], tags=['mine', tags.tag_of(snap)])


def untagged(image_id, snap=SNAP):
    return test_audit.image(id=image_id, entries=[test_audit.entry(
        snapshot_id=snap)])


class PagingAuditor(test_audit.FakeAuditor):

    def pages(self, page_size, os_hidden=False, **filters):
        yield [dict(i) for i in self.images.values()
               if bool(i.get('os_hidden')) == os_hidden]


class TestUntaggedReferences(base.TestCase):

    def findings(self, *images):
        refs = references.UntaggedReferences()
        for img in images:
            refs.add(img)
        return refs.findings()

    def test_untagged_copy_of_a_tagged_snapshot_found(self):
        found = self.findings(tagged('plugin'), untagged('copy'),
                              untagged('legacy', OTHER))
        self.assertEqual([{'image_id': 'copy', 'owner': 'p', 'name': None,
                           'snapshot_id': SNAP,
                           'tag': tags.tag_of(SNAP)}], found)

    def test_order_and_spelling_do_not_matter(self):
        found = self.findings(untagged('copy', SNAP.upper()),
                              tagged('plugin'))
        self.assertEqual(['copy'], [f['image_id'] for f in found])

    def test_no_finding_without_a_tagged_image(self):
        # Legacy (untagged) plugin images and Nova's own: no rotation
        # asks by tag about their snapshots.
        self.assertEqual([], self.findings(untagged('a'), untagged('b')))
        self.assertEqual([], self.findings(tagged('a'), tagged('b')))

    def test_audit_scan_reports_it_hidden_too(self):
        auditor = PagingAuditor([tagged('plugin'),
                                 dict(untagged('copy'), os_hidden=True)])
        report = audit.scan(auditor)
        found = [f for f in report.findings
                 if f.kind == references.KIND]
        self.assertEqual(1, len(found))
        self.assertEqual('copy', found[0].image_id)
        self.assertEqual(tags.tag_of(SNAP),
                         found[0].evidence['missing_tag'])
        self.assertFalse(found[0].fixable)
