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

"""The audit of the copies off the primary storage (audit/copies.py)."""

import datetime
import json
import types

from nova_snapshot_ext.audit import copies as copies_audit
from nova_snapshot_ext.audit import report as report_mod
from nova_snapshot_ext.backup import copies
from nova_snapshot_ext.backup import copy_retention as retention
from nova_snapshot_ext import exception
from tests import base
from tests.unit.backup import test_copy_retention as rt

PROJECT = rt.PROJECT
SERVER = rt.SERVER
NOW = rt.NOW
copy = rt.copy
series = rt.series
image_id = rt.image_id


def group(copies_on=True, keep=0, max_age=0, wait=300, chain=6):
    """``conf.snapshot_ext`` as the audit reads it."""
    return types.SimpleNamespace(
        backup_copies=copies_on, backup_copies_keep=keep,
        backup_copies_max_age=max_age, backup_copies_wait=wait,
        backup_copies_chain=chain)


def backup_image(n, snapshots, created_at='2024-05-20T10:00:00Z', **more):
    """An active backup image ``image_id(n)`` of ``snapshots`` (vda...)."""
    mappings = [{'source_type': 'snapshot', 'destination_type': 'volume',
                 'snapshot_id': snap, 'device_name': '/dev/vd%s' % 'abcd'[i],
                 'boot_index': 0 if i == 0 else -1}
                for i, snap in enumerate(snapshots)]
    image = {'id': image_id(n), 'name': 'daily-%d' % n, 'status': 'active',
             'owner': PROJECT, 'instance_uuid': SERVER,
             'backup_type': 'daily', 'image_type': 'backup',
             'created_at': created_at,
             'block_device_mapping': json.dumps(mappings)}
    image.update(more)
    return image


class FakeCinder(rt.FakeCinder):
    """Backups (reads, deletes) and what make_copies asks."""

    def __init__(self, backups=(), snapshots=None, project=PROJECT):
        super().__init__(backups)
        self.project_id = project
        self.snapshots = dict(snapshots or {})
        self.created = []

    def get_snapshot(self, snapshot_id):
        return self.snapshots.get(snapshot_id)

    def create_backup(self, volume_id, snapshot_id, incremental, name,
                      description, metadata):
        backup_id = 'made-%d' % (len(self.created) + 1)
        self.created.append(backup_id)
        self.backups[backup_id] = {
            'id': backup_id, 'volume_id': volume_id,
            'snapshot_id': snapshot_id, 'status': 'creating',
            'metadata': dict(metadata), 'is_incremental': incremental}
        return dict(self.backups[backup_id])


class FakeAuditor:
    """The Glance side: pages of images (filters honoured) and reads."""

    def __init__(self, images=()):
        self.images = {i['id']: dict(i) for i in images}
        self.queries = []

    def pages(self, page_size, **filters):
        self.queries.append(dict(filters))
        hidden = filters.pop('os_hidden', False)
        yield [dict(i) for i in self.images.values()
               if bool(i.get('os_hidden', False)) is hidden and
               all(i.get(k) == v for k, v in filters.items())]

    def get(self, image_id):
        if image_id not in self.images:
            raise exception.GlanceNotFound(operation='get', reason='gone')
        return dict(self.images[image_id])


#: The server's first backup with a copy: copies are owed from it on.
FIRST = 100


def first_copied():
    """``(image, its copy)``: copies were on from 2024-05-19 on."""
    return (backup_image(FIRST, ['s0'], created_at='2024-05-19T10:00:00Z'),
            copy('b0', image_id(FIRST), rt.day(19), snapshot_id='s0'))


def kinds(findings):
    return sorted((f.kind, f.image_id) for f in findings)


class TestJudgeCopies(base.TestCase):

    def judge(self, backups, policy=retention.Policy()):
        return copies_audit.judge_copies(list(backups), PROJECT, policy, NOW)

    def test_healthy_copies_have_no_finding(self):
        self.assertEqual([], self.judge(series('F', 'I', 'I', 'F', 'I')))

    def test_a_copy_in_error_is_fixable_with_its_reason(self):
        backups = series('F', 'F')
        backups.append(copy('c3', image_id(3), rt.day(3), status='error'))
        backups[-1]['fail_reason'] = 'incomplete backup reset on manager ' \
                                     'restart'
        [finding] = self.judge(backups)
        self.assertEqual((report_mod.COPY_IN_ERROR, 'c3'),
                         (finding.kind, finding.image_id))
        self.assertEqual(report_mod.COPY, finding.subject)
        self.assertTrue(finding.fixable)
        self.assertEqual({'op': 'delete-copy'}, finding.fix)
        self.assertIn('manager restart', finding.evidence['fail_reason'])
        data = finding.to_dict()
        self.assertEqual('c3', data['backup_id'])
        self.assertEqual(image_id(3), data['image_id'])

    def test_backups_the_plugin_did_not_record_are_not_judged(self):
        foreign = copy('x1', image_id(1), rt.day(1), status='error')
        foreign['metadata'] = {}
        other = copy('x2', image_id(2), rt.day(2), status='error',
                     project='project-b')
        forged = copy('x3', image_id(3), rt.day(3), status='error')
        forged['metadata'][copies.SERVER_KEY] = 'another-server'
        self.assertEqual([], self.judge([foreign, other, forged]))

    def test_an_incremental_without_a_full_base_is_a_broken_chain(self):
        backups = series('F', 'I', 'I')
        del backups[0]
        found = self.judge(backups)
        self.assertEqual([(report_mod.COPY_CHAIN_BROKEN, 'c2'),
                          (report_mod.COPY_CHAIN_BROKEN, 'c3')],
                         kinds(found))
        self.assertFalse(any(f.fixable for f in found))

    def test_a_base_in_error_is_no_base(self):
        backups = series('F', 'I')
        backups[0]['status'] = 'error'
        self.assertEqual([(report_mod.COPY_CHAIN_BROKEN, 'c2'),
                          (report_mod.COPY_IN_ERROR, 'c1')],
                         kinds(self.judge(backups)))

    def test_another_volume_s_full_copy_is_no_base(self):
        backups = series('F', volume_id='vol-b', prefix='b') + \
            series('I', first_day=2)
        self.assertEqual([(report_mod.COPY_CHAIN_BROKEN, 'c1')],
                         kinds(self.judge(backups)))

    def test_copies_past_retention_named_with_the_policy(self):
        found = self.judge(series('F', 'F', 'F', 'F'),
                           retention.Policy(keep=2))
        self.assertEqual([(report_mod.COPY_PAST_RETENTION, 'c1'),
                          (report_mod.COPY_PAST_RETENTION, 'c2')],
                         kinds(found))
        self.assertEqual({'op': 'retain', 'server': SERVER,
                          'backup_type': 'daily'}, found[0].fix)
        self.assertEqual([image_id(4), image_id(3)],
                         found[0].evidence['kept_sets'])

    def test_a_copy_a_kept_incremental_needs_is_not_past_retention(self):
        found = self.judge(series('F', 'I', 'I', 'F', 'I'),
                           retention.Policy(keep=1))
        # Set 5 is kept; it needs c4 (its full base): c1..c3 are past.
        self.assertEqual(['c1', 'c2', 'c3'],
                         sorted(f.image_id for f in found))

    def test_a_copy_in_error_past_retention_is_reported_once(self):
        backups = series('F', 'F', 'F')
        backups[0]['status'] = 'error'
        self.assertEqual([(report_mod.COPY_IN_ERROR, 'c1'),
                          (report_mod.COPY_PAST_RETENTION, 'c2')],
                         kinds(self.judge(backups,
                                          retention.Policy(keep=1))))

    def test_a_copy_another_type_needs_is_not_past_retention(self):
        # Cinder chains by volume: a weekly incremental on a daily full.
        backups = [copy('d1', image_id(1), rt.day(1)),
                   copy('d3', image_id(3), rt.day(3)),
                   copy('w4', image_id(4), rt.day(4), incremental=True,
                        backup_type='weekly'),
                   copy('d5', image_id(5), rt.day(5))]
        backups[1]['has_dependent_backups'] = True
        found = self.judge(backups, retention.Policy(keep=1))
        self.assertEqual([(report_mod.COPY_PAST_RETENTION, 'd1')],
                         kinds(found))

    def test_deleting_is_in_progress_error_deleting_is_named(self):
        backups = series('F', 'F', 'F')
        backups[0]['status'] = 'error_deleting'
        backups[1]['status'] = 'deleting'
        for policy in (retention.Policy(), retention.Policy(keep=1)):
            [finding] = self.judge(backups, policy)
            self.assertEqual((report_mod.COPY_IN_ERROR, 'c1'),
                             (finding.kind, finding.image_id))
            self.assertFalse(finding.fixable)
            self.assertEqual('error_deleting', finding.evidence['status'])

    def test_a_full_base_being_restored_is_still_a_base(self):
        backups = series('F', 'I')
        backups[0]['status'] = 'restoring'
        self.assertEqual([], self.judge(backups))

    def test_no_policy_no_retention_finding(self):
        self.assertEqual([], self.judge(series('F', 'F', 'F')))

    def test_age_limit(self):
        found = self.judge(series('F', 'F', 'F', first_day=1),
                           retention.Policy(max_age_days=18))
        # Days 1 and 2 are older than 18 days on the 20th; day 3 is the
        # newest restorable set, kept whatever its age.
        self.assertEqual(['c1', 'c2'], sorted(f.image_id for f in found))


class TestJudgeImages(base.TestCase):

    def judge(self, images, backups=(), owed_after=600.0):
        image, its_copy = first_copied()
        return copies_audit.judge_images(
            [image] + list(images), [its_copy] + list(backups), PROJECT,
            owed_after, datetime.datetime(2024, 5, 20, 12, 0, 0))

    def test_backups_before_the_first_copy_or_never_copied_pass(self):
        older = backup_image(1, ['s1'], created_at='2024-05-18T10:00:00Z')
        other = backup_image(2, ['s2'], instance_uuid='another-server')
        weekly = backup_image(3, ['s3'], backup_type='weekly')
        self.assertEqual([], self.judge([older, other, weekly]))
        # Without any copy of the server, nothing is owed.
        self.assertEqual([], copies_audit.judge_images(
            [backup_image(4, ['s4'])], [], PROJECT, 600.0, NOW))

    def test_an_image_without_copies_is_incomplete(self):
        [finding] = self.judge([backup_image(1, ['s1', 's2'])])
        self.assertEqual((report_mod.COPIES_INCOMPLETE, image_id(1)),
                         (finding.kind, finding.image_id))
        self.assertEqual(['/dev/vda', '/dev/vdb'], [
            d['device_name'] for d in finding.evidence['disks_without_copy']])
        self.assertEqual({'op': 'copy'}, finding.fix)
        self.assertEqual(report_mod.IMAGE, finding.subject)

    def test_a_copy_being_made_or_made_counts_one_in_error_does_not(self):
        backups = [copy('b1', image_id(1), rt.day(20), snapshot_id='s1',
                        status='creating'),
                   copy('b2', image_id(1), rt.day(20), snapshot_id='s2',
                        status='error', device='/dev/vdb', boot_index=-1,
                        set_size=3),
                   copy('b3', image_id(1), rt.day(20), snapshot_id='s3',
                        device='/dev/vdc', boot_index=-1, set_size=3)]
        [finding] = self.judge([backup_image(1, ['s1', 's2', 's3'])],
                               backups)
        self.assertEqual(['s2'], [d['snapshot_id'] for d in
                                  finding.evidence['disks_without_copy']])

    def test_copies_owed_since_the_oldest_record_even_its_image_gone(self):
        # The first copied backup was rotated away; its copy remains.
        old = copy('b1', image_id(1), rt.day(17), snapshot_id='s1')
        images = [backup_image(n, ['s%d' % n],
                               created_at='2024-05-%02dT10:00:00Z' % n)
                  for n in (16, 18, 19)]
        found = copies_audit.judge_images(images, [old], PROJECT, 600.0,
                                          NOW)
        self.assertEqual([image_id(18), image_id(19)],
                         sorted(f.image_id for f in found))

    def test_complete_young_inactive_foreign_or_plain_images_pass(self):
        backups = [copy('b1', image_id(1), rt.day(20), snapshot_id='s1')]
        images = [
            backup_image(1, ['s1']),
            backup_image(2, ['s2'], created_at='2024-05-20T11:55:00Z'),
            backup_image(3, ['s3'], status='queued'),
            backup_image(4, ['s4'], owner='project-b'),
            backup_image(5, ['s5'], image_type='snapshot'),
            backup_image(6, ['s6'], created_at='not a date'),
        ]
        self.assertEqual([], self.judge(images, backups))

    def test_a_copy_of_another_image_is_not_this_one_s(self):
        backups = [copy('b1', image_id(9), rt.day(20), snapshot_id='s1')]
        self.assertEqual(1, len(self.judge([backup_image(1, ['s1'])],
                                           backups)))


class TestScan(base.TestCase):

    def test_scan_reads_the_project_s_backups_and_backup_images(self):
        backups = series('F', 'F')
        backups[0]['status'] = 'error'
        first, its_copy = first_copied()
        cinder = FakeCinder(backups + [its_copy])
        auditor = FakeAuditor([first, backup_image(7, ['s7']),
                               backup_image(8, ['s8'], os_hidden=True)])
        found, cover = copies_audit.scan(auditor, cinder, group(), now=NOW)
        self.assertEqual([(report_mod.COPIES_INCOMPLETE, image_id(7)),
                          (report_mod.COPIES_INCOMPLETE, image_id(8)),
                          (report_mod.COPY_IN_ERROR, 'c1')], kinds(found))
        self.assertEqual({'project': PROJECT, 'copies': 3,
                          'images_judged': True,
                          'retention': {'keep': 0, 'max_age_days': 0}},
                         cover)
        self.assertIn('no retention in this configuration',
                      copies_audit.describe_coverage(cover))
        self.assertEqual([{'image_type': 'backup', 'owner': PROJECT,
                           'os_hidden': False},
                          {'image_type': 'backup', 'owner': PROJECT,
                           'os_hidden': True}], auditor.queries)

    def test_copies_off_images_not_judged(self):
        auditor = FakeAuditor([backup_image(7, ['s7'])])
        found, cover = copies_audit.scan(auditor, FakeCinder(),
                                         group(copies_on=False), now=NOW)
        self.assertEqual(([], []), (found, auditor.queries))
        self.assertIn('backup_copies is off',
                      copies_audit.describe_coverage(cover))

    def test_another_owner_asked_no_finding_of_this_project(self):
        cinder = FakeCinder([copy('c1', image_id(1), rt.day(1),
                                  status='error')])
        found, cover = copies_audit.scan(FakeAuditor(), cinder, group(),
                                         owner='project-b', now=NOW)
        self.assertEqual([], found)
        self.assertEqual(1, cover['copies'])
        self.assertIn('none was judged',
                      copies_audit.describe_coverage(cover))

    def test_unreadable_backups_or_no_project_said_not_raised(self):
        cinder = FakeCinder()
        cinder.list_error = exception.CinderError(
            operation='list', snapshot_id='', reason='Cinder is down')
        found, cover = copies_audit.scan(FakeAuditor(), cinder, group())
        self.assertEqual([], found)
        self.assertIn('Cinder is down', cover['error'])
        self.assertIn('not done: ', copies_audit.describe_coverage(cover))

        class Unscoped(FakeCinder):
            @property
            def project_id(self):
                raise exception.ConfigurationError(
                    group='snapshot_ext_cinder', option='auth_type',
                    reason='these credentials act in no project')

            @project_id.setter
            def project_id(self, value):
                pass

        found, cover = copies_audit.scan(FakeAuditor(), Unscoped(), group())
        self.assertEqual([], found)
        self.assertIn('auth_type', cover['error'])

    def test_describe_coverage(self):
        self.assertIn('not run', copies_audit.describe_coverage(None))
        text = copies_audit.describe_coverage(copies_audit.coverage(
            'p1', [copy('c%d' % n, image_id(n), rt.day(n), project='p1')
                   for n in (1, 2, 3)], True, retention.Policy(keep=2)))
        self.assertIn("project p1's copies", text)
        self.assertIn('(3 recorded)', text)
        self.assertIn('keep 2, max age 0 days', text)


class TestRepair(base.TestCase):

    def report(self, findings):
        return report_mod.Report(findings=list(findings))

    def test_dry_run_touches_nothing(self):
        backups = series('F', 'F', 'F')
        backups[0]['status'] = 'error'
        cinder = FakeCinder(backups)
        found = copies_audit.judge_copies(list(cinder.list_backups()),
                                          PROJECT, retention.Policy(keep=1),
                                          NOW)
        report = self.report(found)
        actions = copies_audit.repair(cinder, FakeAuditor(), report,
                                      group(keep=1), act=False)
        self.assertEqual({'dry-run'}, {a.outcome for a in actions})
        self.assertEqual([], cinder.deleted)
        self.assertEqual(len(found), len(report.unrepaired))

    def test_error_copy_deleted_after_it_is_read_again(self):
        backups = [copy('c1', image_id(1), rt.day(1), status='error'),
                   copy('c2', image_id(2), rt.day(2), status='error'),
                   copy('c3', image_id(3), rt.day(3), status='error'),
                   copy('c4', image_id(4), rt.day(4), status='error')]
        cinder = FakeCinder(backups)
        report = self.report(copies_audit.judge_copies(
            list(cinder.list_backups()), PROJECT, retention.Policy(), NOW))
        # Since the scan: c2 was reset to available, c3 got an
        # incremental made on it, c4 was deleted.
        cinder.backups['c2']['status'] = 'available'
        cinder.backups['c3']['has_dependent_backups'] = True
        del cinder.backups['c4']
        actions = {a.image_id: a for a in copies_audit.repair(
            cinder, FakeAuditor(), report, group(), act=True)}
        self.assertEqual(['c1'], cinder.deleted)
        self.assertEqual('done', actions['c1'].outcome)
        self.assertEqual(('skipped', 'no longer in error (status '
                          'available)'),
                         (actions['c2'].outcome, actions['c2'].reason))
        self.assertEqual(('skipped', retention.DEPENDED_ON),
                         (actions['c3'].outcome, actions['c3'].reason))
        self.assertEqual(('skipped', 'the copy is gone'),
                         (actions['c4'].outcome, actions['c4'].reason))
        self.assertEqual(image_id(1), actions['c1'].to_dict()['image_id'])
        self.assertEqual(['c2', 'c3', 'c4'],
                         sorted(f.image_id for f in report.unrepaired))

    def test_a_refused_delete_is_named(self):
        cinder = FakeCinder([copy('c1', image_id(1), rt.day(1),
                                  status='error')])
        cinder.delete_errors['c1'] = exception.CinderError(
            operation='delete', snapshot_id='c1', reason='policy refuses')
        report = self.report(copies_audit.judge_copies(
            list(cinder.list_backups()), PROJECT, retention.Policy(), NOW))
        [action] = copies_audit.repair(cinder, FakeAuditor(), report,
                                       group(), act=True)
        self.assertEqual('failed', action.outcome)
        self.assertIn('policy refuses', action.reason)

    def test_retention_runs_once_per_server_and_type(self):
        cinder = FakeCinder(series('F', 'F', 'F', 'F'))
        report = self.report(copies_audit.judge_copies(
            list(cinder.list_backups()), PROJECT, retention.Policy(keep=2),
            NOW))
        cinder.delete_errors['c1'] = exception.CinderError(
            operation='delete', snapshot_id='c1', reason='busy')
        actions = {a.image_id: a for a in copies_audit.repair(
            cinder, FakeAuditor(), report, group(keep=2), act=True)}
        self.assertEqual(['c2'], cinder.deleted)
        self.assertEqual('done', actions['c2'].outcome)
        self.assertEqual('skipped', actions['c1'].outcome)
        self.assertIn('busy', actions['c1'].reason)
        self.assertEqual([None], cinder.listed[1:])

    def test_retention_deletes_only_what_the_audit_reported(self):
        cinder = FakeCinder(series('F', 'F', 'F'))
        report = self.report(copies_audit.judge_copies(
            list(cinder.list_backups()), PROJECT, retention.Policy(keep=2),
            NOW))
        self.assertEqual(['c1'], [f.image_id for f in report.findings])
        # A newer backup since the scan: c2 is past retention too, but
        # was never reported.
        cinder.backups['c4'] = copy('c4', image_id(4), rt.day(4))
        [action] = copies_audit.repair(cinder, FakeAuditor(), report,
                                       group(keep=2), act=True)
        self.assertEqual(('c1', 'done'), (action.image_id, action.outcome))
        self.assertEqual(['c1'], cinder.deleted)
        self.assertIn('c2', cinder.backups)

    def test_a_disk_whose_copy_failed_to_delete_has_none(self):
        first, its_copy = first_copied()
        stuck = copy('b1', image_id(1), rt.day(20), snapshot_id='s1',
                     status='error_deleting')
        snapshots = {'s1': {'id': 's1', 'volume_id': 'vol-s1',
                            'status': 'available',
                            'created_at': '2024-05-20T10:00:00'}}
        cinder = FakeCinder([its_copy, stuck], snapshots=snapshots)
        images = [first, backup_image(1, ['s1'])]
        report = self.report(copies_audit.judge_images(
            images, list(cinder.list_backups()), PROJECT, 600.0, NOW))
        self.assertEqual([image_id(1)],
                         [f.image_id for f in report.findings])
        [action] = copies_audit.repair(cinder, FakeAuditor(images), report,
                                       group(), act=True)
        # The copier agrees: the disk had no copy, one is made.
        self.assertEqual(('done', 1), (action.outcome, len(cinder.created)))

    def test_missing_copies_made_once_for_a_still_active_image(self):
        snapshots = {s: {'id': s, 'volume_id': 'vol-' + s,
                         'status': 'available',
                         'created_at': '2024-05-20T10:00:00'}
                     for s in ('s1', 's2')}
        first, its_copy = first_copied()
        cinder = FakeCinder([its_copy], snapshots=snapshots)
        images = [first, backup_image(1, ['s1', 's2']),
                  backup_image(2, ['s1'])]
        auditor = FakeAuditor(images)
        report = self.report(copies_audit.judge_images(
            images, [its_copy], PROJECT, 600.0, NOW))
        auditor.images[image_id(2)]['status'] = 'deleted'
        actions = {a.image_id: a for a in copies_audit.repair(
            cinder, auditor, report, group(), act=True)}
        self.assertEqual('done', actions[image_id(1)].outcome)
        self.assertEqual(('skipped', 'no longer an active backup image of '
                          'project %s' % PROJECT),
                         (actions[image_id(2)].outcome,
                          actions[image_id(2)].reason))
        self.assertEqual(2, len(cinder.created))
        made = [cinder.backups[b] for b in cinder.created]
        self.assertEqual([None, None], [copies.record_refusal(b, PROJECT)
                                        for b in made])
        # Run again: the copies are there, none is made twice.
        report = self.report(copies_audit.judge_images(
            images[:2], list(cinder.list_backups()), PROJECT, 600.0, NOW))
        self.assertEqual([], report.findings)

    def test_an_image_gone_or_emptied_since_the_scan_is_skipped(self):
        first, its_copy = first_copied()
        cinder = FakeCinder([its_copy])
        images = [first, backup_image(1, ['s1']), backup_image(2, ['s2'])]
        auditor = FakeAuditor(images)
        report = self.report(copies_audit.judge_images(
            images, [its_copy], PROJECT, 600.0, NOW))
        del auditor.images[image_id(1)]
        auditor.images[image_id(2)]['block_device_mapping'] = '[]'
        actions = {a.image_id: (a.outcome, a.reason)
                   for a in copies_audit.repair(cinder, auditor, report,
                                                group(), act=True)}
        self.assertEqual({image_id(1): ('skipped', 'the image is gone'),
                          image_id(2): ('skipped', 'the image names no '
                                        'volume snapshot any more')},
                         actions)
        self.assertEqual([], cinder.created)

    def test_a_delete_that_fails_in_cinder_is_failed_not_done(self):
        cinder = FakeCinder([copy('c1', image_id(1), rt.day(1),
                                  status='error')])
        report = self.report(copies_audit.judge_copies(
            list(cinder.list_backups()), PROJECT, retention.Policy(), NOW))
        # Cinder takes the delete, then its delete fails: error again.
        cinder.lingering['c1'] = None

        def failed_delete(backup_id):
            cinder.deleted.append(backup_id)
            cinder.backups[backup_id]['status'] = 'error_deleting'
            return 'deleted'

        cinder.delete_backup = failed_delete
        [action] = copies_audit.repair(cinder, FakeAuditor(), report,
                                       group(), act=True)
        self.assertEqual('failed', action.outcome)
        self.assertIn('error_deleting', action.reason)

    def test_a_copy_that_cannot_be_made_is_named(self):
        first, its_copy = first_copied()
        cinder = FakeCinder([its_copy])  # the snapshots are gone
        images = [first, backup_image(1, ['s1'])]
        report = self.report(copies_audit.judge_images(
            images, [its_copy], PROJECT, 600.0, NOW))
        [action] = copies_audit.repair(cinder, FakeAuditor(images), report,
                                       group(), act=True)
        self.assertEqual('failed', action.outcome)
        self.assertIn('/dev/vda: ', action.reason)
        self.assertIn('does not show the snapshot', action.reason)


class TestAuditExitStatus(base.TestCase):
    """An audit whose copy checks could not run exits with their cause."""

    def run_audit(self, cinder, argv=()):
        import io
        from unittest import mock

        import fixtures

        from nova_snapshot_ext import audit
        from nova_snapshot_ext.audit import backups as backup_audit
        from nova_snapshot_ext.audit import volume_snapshots as vs_audit
        from nova_snapshot_ext.cmd import audit as audit_cmd
        from nova_snapshot_ext.cmd import backup as backup_cmd
        from nova_snapshot_ext.cmd import main

        stdout = self.useFixture(fixtures.MonkeyPatch(
            'sys.stdout', io.StringIO())).new_value
        self.useFixture(fixtures.MonkeyPatch('sys.stderr', io.StringIO()))

        def cinder_scan(auditor, cinder, progress=None, **kwargs):
            return [], backup_audit.coverage(vs_audit.Scope(PROJECT),
                                             vs_audit.Scope(PROJECT), None)

        conf = main.parse(['audit', '--format', 'json'] + list(argv))
        with mock.patch.object(audit, 'scan',
                               lambda auditor, **kw: audit.Report()), \
                mock.patch.object(backup_cmd, 'cinder_client',
                                  return_value=cinder), \
                mock.patch.object(backup_audit, 'scan', cinder_scan), \
                mock.patch.object(copies_audit.images_mod, 'listed_pages',
                                  lambda *a: iter(())):
            code = audit_cmd.run(conf, mock.Mock())
        return code, json.loads(stdout.getvalue())

    def test_each_cause_its_status_the_report_printed(self):
        class Unscoped(FakeCinder):
            @property
            def project_id(self):
                raise exception.ConfigurationError(
                    group='snapshot_ext_cinder', option='auth_type',
                    reason='these credentials act in no project')

            @project_id.setter
            def project_id(self, value):
                pass

        down = FakeCinder()
        down.list_error = exception.CinderUnavailable(
            operation='list', resource='backups', reason='refused')
        refused = FakeCinder()
        refused.list_error = exception.CinderError(
            operation='list', resource='backups', reason='HTTP 500')
        for cinder, code, cause in ((Unscoped(), 2, 'configuration'),
                                    (down, 3, 'unreachable'),
                                    (refused, 1, 'failed')):
            got, report = self.run_audit(cinder)
            self.assertEqual(code, got, cause)
            self.assertEqual(cause, report['cinder_coverage']['copies'][
                'cause'])

    def test_checks_done_or_skipped_for_another_owner_exit_0(self):
        cinder = FakeCinder([copy('c1', image_id(1), rt.day(1))])
        self.assertEqual(0, self.run_audit(cinder)[0])
        code, report = self.run_audit(cinder, ['--owner', 'project-b'])
        self.assertEqual(0, code)
        self.assertIn('none was judged',
                      report['cinder_coverage']['copies']['skipped'])
