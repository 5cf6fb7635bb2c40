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

"""Leaked volume snapshots: the record, the decision table, the fix."""

import json

import fixtures

from nova_snapshot_ext import audit
from nova_snapshot_ext.audit import volume_snapshots as vs_audit
from nova_snapshot_ext.backup import leaks
from nova_snapshot_ext.cinder import client as cinder_mod
from nova_snapshot_ext import exception
from nova_snapshot_ext.snapshot import tags
from tests import base

SNAP = '9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c01'
IMAGE = '0c1d2e3f-4a5b-4c6d-8e7f-901234567890'
PROJECT = 'project-a'
OTHER = 'project-b'


def snapshot(snap_id=SNAP, image_id=IMAGE, project=PROJECT, owner=PROJECT,
             status='available', name='snapshot for img', **meta_changes):
    meta = leaks.record_of(snap_id, image_id, project)
    meta.update(meta_changes)
    snap = {'id': snap_id, 'status': status, 'name': name,
            'volume_id': 'vol-1', 'metadata': meta}
    if owner is not None:
        snap[cinder_mod.PROJECT_ATTRIBUTE] = owner
    return snap


OWNER_SCOPE = vs_audit.Scope(PROJECT)
ADMIN_SCOPE = vs_audit.Scope('admin-project', admin=True)
OTHER_SCOPE = vs_audit.Scope(OTHER)


class TestRecord(base.TestCase):

    def test_record_binds_snapshot_image_and_project(self):
        rec = leaks.record_of(SNAP, IMAGE, PROJECT)
        self.assertEqual({leaks.IMAGE_KEY, leaks.PROJECT_KEY,
                          leaks.RECORD_KEY}, set(rec))
        self.assertEqual(rec, leaks.record_of(SNAP.upper(), IMAGE, PROJECT))
        for other in (leaks.record_of(SNAP[:-1] + '2', IMAGE, PROJECT),
                      leaks.record_of(SNAP, IMAGE[:-1] + '1', PROJECT),
                      leaks.record_of(SNAP, IMAGE, OTHER)):
            self.assertNotEqual(rec[leaks.RECORD_KEY],
                                other[leaks.RECORD_KEY])
        self.assertIsNone(leaks.record_refusal(snapshot()))

    def test_refusals(self):
        copied = snapshot()
        copied['id'] = SNAP[:-1] + '2'  # metadata copied onto another
        cases = {
            'no record': dict(snapshot(), metadata={}),
            'copied': copied,
            'edited image id': snapshot(**{leaks.IMAGE_KEY: 'x'}),
            'edited project': snapshot(**{leaks.PROJECT_KEY: OTHER}),
            'forged proof': snapshot(**{leaks.RECORD_KEY: 'forged'}),
            'another project': snapshot(owner=OTHER),
            'project not shown': snapshot(owner=None),
        }
        for name, snap in cases.items():
            self.assertIsNotNone(leaks.record_refusal(snap), name)


class TestJudge(base.TestCase):
    """The decision table (doc/source/backups.rst)."""

    def test_table(self):
        nf, vis, unread = (vs_audit.IMAGE_NOT_FOUND, vs_audit.IMAGE_VISIBLE,
                           vs_audit.IMAGE_UNREAD)
        leaked, unnamed = vs_audit.LEAKED, vs_audit.UNNAMED
        rows = [
            # snapshot, named, image state, scope -> kind, fixable
            (snapshot(), False, nf, OWNER_SCOPE, leaked, True),
            (snapshot(), False, nf, ADMIN_SCOPE, leaked, True),
            (snapshot(), False, nf, OTHER_SCOPE, unnamed, False),
            (snapshot(), False, nf, vs_audit.Scope(None), unnamed, False),
            (snapshot(), True, nf, OWNER_SCOPE, None, False),
            (snapshot(), False, vis, OWNER_SCOPE, unnamed, False),
            (snapshot(), False, unread, ADMIN_SCOPE, unnamed, False),
            (snapshot(status='creating'), False, nf, OWNER_SCOPE, leaked,
             False),
            (snapshot(status='deleting'), False, nf, OWNER_SCOPE, leaked,
             False),
            (snapshot(status='error'), False, nf, OWNER_SCOPE, leaked, True),
            # Nova's name, no record: reported, never deleted.
            (dict(snapshot(), metadata={}), False, unread, ADMIN_SCOPE,
             unnamed, False),
            # Neither Nova's name nor a record: not the audit's business.
            (dict(snapshot(name='mine'), metadata={}), False, unread,
             ADMIN_SCOPE, None, False),
            # A forged or foreign record, whatever the name.
            (snapshot(name='mine', **{leaks.RECORD_KEY: 'x'}), False, nf,
             ADMIN_SCOPE, unnamed, False),
            (snapshot(owner=OTHER), False, nf, ADMIN_SCOPE, unnamed, False),
            (snapshot(project=OTHER), False, nf, ADMIN_SCOPE, unnamed,
             False),
        ]
        for i, (snap, named, state, scope, kind, fixable) in enumerate(rows):
            verdict = vs_audit.judge(snap, named, state, scope)
            self.assertEqual((kind, fixable),
                             (verdict.kind, verdict.fixable),
                             'row %d: %s' % (i, verdict.why))
            self.assertTrue(verdict.why)


class FakeCinder:
    """Cinder's volume snapshots, for an identity of unknown scope."""

    session = auth = None

    def __init__(self, snapshots):
        self.snapshots = {s['id']: s for s in snapshots}
        self.deleted = []
        self.listed_all_projects = []

    def get_snapshot(self, snapshot_id):
        return self.snapshots.get(snapshot_id)

    def list_snapshots(self, all_projects=False):
        self.listed_all_projects.append(all_projects)
        return iter(list(self.snapshots.values()))

    def delete_snapshot(self, snapshot_id, owner):
        self.deleted.append((snapshot_id, owner))
        del self.snapshots[snapshot_id]
        return cinder_mod.DELETED


class FakeGlance:
    def __init__(self, images):
        self.images = images

    def list_images(self, **filters):
        wanted = filters.get('tag', [])
        return [i for i in self.images
                if bool(i.get('os_hidden')) == filters['os_hidden']
                and all(t in i.get('tags', []) for t in wanted)]


class FakeAuditor:
    def __init__(self, images=()):
        self.glance = FakeGlance(list(images))

    def get(self, image_id):
        for image in self.glance.images:
            if image['id'] == image_id:
                return image
        raise exception.GlanceNotFound(operation='get', reason='gone')


class TestScanAndRepair(base.TestCase):

    def findings(self, auditor, cinder, named=()):
        return vs_audit.judge_snapshots(auditor, cinder.list_snapshots(),
                                        set(named), OWNER_SCOPE)

    def test_fix_deletes_only_the_proven_leak(self):
        kept_by_image = snapshot(SNAP[:-1] + '3', image_id='img-live')
        cinder = FakeCinder([snapshot(), kept_by_image,
                             dict(snapshot(SNAP[:-1] + '4'), metadata={}),
                             snapshot(SNAP[:-1] + '5', owner=OTHER)])
        auditor = FakeAuditor([{'id': 'img-live'}])
        report = audit.Report(findings=self.findings(auditor, cinder))
        by_id = {f.image_id: f for f in report.findings}
        self.assertTrue(by_id[SNAP].fixable)
        self.assertEqual({'op': 'delete-volume-snapshot'}, by_id[SNAP].fix)
        self.assertEqual(IMAGE, by_id[SNAP].evidence['recorded_image'])
        self.assertEqual([SNAP], [f.image_id for f in report.findings
                                  if f.fixable])
        dry = vs_audit.repair(cinder, auditor, report, False, OWNER_SCOPE)
        self.assertEqual(['dry-run'], [a.outcome for a in dry])
        self.assertEqual([], cinder.deleted)
        done = vs_audit.repair(cinder, auditor, report, True, OWNER_SCOPE)
        self.assertEqual(['done'], [a.outcome for a in done])
        self.assertEqual([(SNAP, PROJECT)], cinder.deleted)
        self.assertEqual(3, len(cinder.snapshots))

    def test_fix_is_done_only_once_cinder_no_longer_shows_it(self):
        self.useFixture(fixtures.MonkeyPatch('time.sleep', lambda s: None))

        class Failing(FakeCinder):
            # Cinder accepts the delete, then fails it in cinder-volume.
            def delete_snapshot(self, snapshot_id, owner):
                self.deleted.append((snapshot_id, owner))
                self.snapshots[snapshot_id] = dict(
                    self.snapshots[snapshot_id], status='error_deleting')
                return cinder_mod.DELETED

        cinder = Failing([snapshot()])
        auditor = FakeAuditor()
        report = audit.Report(findings=self.findings(auditor, cinder))
        [action] = vs_audit.repair(cinder, auditor, report, True,
                                   OWNER_SCOPE)
        self.assertEqual(('failed', "Cinder's delete failed (status "
                          "error_deleting)"), (action.outcome,
                                               action.reason))

    def test_fix_re_reads_before_the_delete(self):
        cinder = FakeCinder([snapshot()])
        auditor = FakeAuditor()
        report = audit.Report(findings=self.findings(auditor, cinder))
        # Between the scan and the fix, an image tagged with it appears.
        auditor.glance.images.append({'id': 'copy', 'os_hidden': True,
                                      'tags': [tags.tag_of(SNAP)]})
        actions = vs_audit.repair(cinder, auditor, report, True, OWNER_SCOPE)
        self.assertEqual(['skipped'], [a.outcome for a in actions])
        self.assertIn('no longer applies', actions[0].reason)
        self.assertEqual([], cinder.deleted)

    def test_fix_skips_an_edited_record_or_a_gone_snapshot(self):
        cinder = FakeCinder([snapshot(), snapshot(SNAP[:-1] + '6')])
        auditor = FakeAuditor()
        report = audit.Report(findings=self.findings(auditor, cinder))
        cinder.snapshots[SNAP]['metadata'][leaks.PROJECT_KEY] = OTHER
        del cinder.snapshots[SNAP[:-1] + '6']
        actions = vs_audit.repair(cinder, auditor, report, True, OWNER_SCOPE)
        self.assertEqual(['skipped', 'skipped'],
                         [a.outcome for a in actions])
        self.assertEqual([], cinder.deleted)

    def test_named_snapshot_is_no_finding(self):
        cinder = FakeCinder([snapshot()])
        self.assertEqual([], self.findings(FakeAuditor(), cinder,
                                           named=[SNAP]))


class Recorder:
    def __init__(self, fail=()):
        self.fail = fail
        self.written = {}

    def set_snapshot_metadata(self, snapshot_id, metadata):
        if snapshot_id in self.fail:
            raise exception.CinderError(operation='set metadata',
                                        snapshot_id=snapshot_id,
                                        reason='refused')
        self.written[snapshot_id] = dict(metadata)


class TestRecordTaken(base.TestCase):

    def test_writes_each_record_and_names_failures(self):
        other = SNAP[:-1] + '7'
        recorder = Recorder(fail=(other,))
        failed = leaks.record_taken(recorder, IMAGE, PROJECT,
                                    [SNAP, other, SNAP])
        self.assertEqual({SNAP: leaks.record_of(SNAP, IMAGE, PROJECT)},
                         recorder.written)
        self.assertEqual([other], list(failed))
        self.assertIn('refused', failed[other])
        # What was written is what the audit accepts as the record.
        snap = {'id': SNAP, 'metadata': recorder.written[SNAP],
                cinder_mod.PROJECT_ATTRIBUTE: PROJECT}
        self.assertIsNone(leaks.record_refusal(snap))


class _Session:
    auth = None

    def get_project_id(self, auth=None):
        return PROJECT


class _OwnerGlance(FakeGlance):
    """Lists with Glance's ``owner`` filter; a project-scoped session."""

    session = _Session()

    def list_images(self, **filters):
        owner = filters.pop('owner', None)
        return [i for i in super().list_images(**filters)
                if owner is None or i.get('owner') == owner]


class _PagedAuditor(FakeAuditor):
    """One page per listing, as :func:`audit.listed_pages` reads them."""

    def __init__(self, images=()):
        self.glance = _OwnerGlance(list(images))

    def pages(self, page_size, **filters):
        yield self.glance.list_images(**filters)


class TestOwnerFilter(base.TestCase):
    """``audit --owner``: it narrows the findings, never the proof."""

    def test_snapshot_named_outside_the_owner_filter_is_kept(self):
        from nova_snapshot_ext.audit import backups as backup_audit

        # Kind: an image the filter leaves out (another project's, or the
        # snapshot's own project when --owner names another) still names
        # the volume snapshot: no finding, nothing deleted.
        naming = {'id': 'copy', 'owner': PROJECT,
                  'block_device_mapping': json.dumps(
                      [{'snapshot_id': SNAP, 'source_type': 'snapshot'}])}
        cinder = FakeCinder([snapshot()])
        auditor = _PagedAuditor([naming])
        for owner in (None, PROJECT, 'another-project'):
            findings, _ = backup_audit.scan(
                auditor, cinder,
                filters={'owner': owner} if owner else None)
            report = audit.Report(findings=findings)
            backup_audit.repair(cinder, auditor, report, act=True)
            self.assertEqual([], cinder.deleted, owner)
            self.assertEqual([], [f.kind for f in findings], owner)

    def test_other_filters_refused(self):
        from nova_snapshot_ext.audit import backups as backup_audit

        self.assertRaises(ValueError, backup_audit.scan, _PagedAuditor(),
                          FakeCinder([]), filters={'visibility': 'public'})


class _Access:
    def __init__(self, roles):
        self.role_names = roles


class _Auth:
    def __init__(self, roles):
        self.roles = roles

    def get_access(self, session):
        return _Access(self.roles)


class _TokenSession:
    """The two things a scope reads of a keystoneauth1 session."""

    def __init__(self, project, roles):
        self.project = project
        self.auth = _Auth(roles)

    def get_project_id(self, auth=None):
        return self.project


class TestCinderCoverage(base.TestCase):
    """Every project's only with two admins; the report says which."""

    def _scan(self, cinder, glance_roles=None):
        from nova_snapshot_ext.audit import backups as backup_audit

        auditor = _PagedAuditor()
        if glance_roles is not None:
            auditor.glance.session = _TokenSession('admin-project',
                                                   glance_roles)
        findings, cover = backup_audit.scan(auditor, cinder)
        return cover, backup_audit.describe_coverage(cover)

    def test_two_admins_list_every_project(self):
        cinder = FakeCinder([snapshot()])
        cinder.session = _TokenSession('admin-project', ['admin', 'member'])
        cover, text = self._scan(cinder, glance_roles=['admin'])
        self.assertEqual([True], cinder.listed_all_projects)
        self.assertTrue(cover['all_projects'])
        self.assertIn("every project's volume snapshots", text)

    def test_cinder_admin_with_a_glance_member_lists_its_project(self):
        # Listing every project's would report each healthy snapshot of
        # a project the Glance identity cannot read as not provably named.
        cinder = FakeCinder([snapshot()])
        cinder.session = _TokenSession('admin-project', ['admin'])
        cover, text = self._scan(cinder, glance_roles=['member'])
        self.assertEqual([False], cinder.listed_all_projects)
        self.assertEqual('glance', cover['limited_by'])
        self.assertIn('the Glance identity has no admin role', text)

    def test_member_lists_its_project_and_says_so(self):
        cinder = FakeCinder([snapshot()])
        cinder.session = _TokenSession(PROJECT, ['member', 'reader'])
        cover, text = self._scan(cinder, glance_roles=['admin'])
        self.assertEqual([False], cinder.listed_all_projects)
        self.assertEqual((False, PROJECT, 'cinder'),
                         (cover['all_projects'], cover['project'],
                          cover['limited_by']))
        self.assertIn("project %s's volume snapshots only" % PROJECT, text)
        self.assertIn("other projects' are not seen", text)

    def test_unknown_identity_never_asks_for_every_project(self):
        cinder = FakeCinder([snapshot()])
        cover, text = self._scan(cinder)
        self.assertEqual([False], cinder.listed_all_projects)
        self.assertIn('(unknown)', text)

    def test_not_run_is_said(self):
        from nova_snapshot_ext.audit import backups as backup_audit

        self.assertIn('not run', backup_audit.describe_coverage(None))

    def test_owner_filter_is_said(self):
        from nova_snapshot_ext.audit import backups as backup_audit

        admin = vs_audit.Scope('a', admin=True)
        text = backup_audit.describe_coverage(
            backup_audit.coverage(admin, admin, 'p9'))
        self.assertIn('findings of project p9 (--owner)', text)
        self.assertNotIn('none of its', text)
        # A member asked about another project: nothing of it was listed.
        member = vs_audit.Scope('p1')
        text = backup_audit.describe_coverage(
            backup_audit.coverage(member, member, 'p9'))
        self.assertIn('none of its volume snapshots were listed', text)


class TestSnapshotFindingsNamedAsSnapshots(base.TestCase):
    """A volume snapshot's finding is named so, and Cinder's to repair."""

    def _report(self):
        from nova_snapshot_ext.audit import backups as backup_audit

        cinder = FakeCinder([snapshot()])
        auditor = _PagedAuditor()
        findings, _ = backup_audit.scan(auditor, cinder)
        return cinder, auditor, audit.Report(findings=findings)

    def test_json_names_the_snapshot_and_its_image(self):
        _, _, report = self._report()
        [finding] = report.to_dict()['findings']
        self.assertEqual(vs_audit.LEAKED, finding['kind'])
        self.assertEqual(SNAP, finding['volume_snapshot_id'])
        self.assertEqual(IMAGE, finding['image_id'])
        self.assertIn('volume snapshot %s ' % SNAP,
                      report.findings[0].describe())

    def test_glance_repair_leaves_it_to_cinder_repair(self):
        from nova_snapshot_ext.audit import backups as backup_audit

        cinder, auditor, report = self._report()
        self.assertEqual([], audit.repair(auditor, report, act=True))
        backup_audit.repair(cinder, auditor, report, act=True)
        self.assertEqual([(SNAP, PROJECT)], cinder.deleted)
        [action] = report.to_dict()['actions']
        self.assertEqual(('done', SNAP, IMAGE),
                         (action['outcome'], action['volume_snapshot_id'],
                          action['image_id']))
        self.assertNotIn('recorded_image', action)
        self.assertEqual('volume snapshot %s leaked-volume-snapshot: '
                         'delete-volume-snapshot: done' % SNAP,
                         report.actions[0].describe())
        self.assertIn('volume snapshot %s ' % SNAP,
                      report.actions[0].describe())
        self.assertEqual([], report.unrepaired)
