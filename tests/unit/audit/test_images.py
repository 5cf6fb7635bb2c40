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

"""The audit's judgement of one image, and its repairs (no Glance)."""

import datetime
import json

from glanceclient import exc as gexc

from nova_snapshot_ext import audit
from nova_snapshot_ext.backup import mark
from nova_snapshot_ext import exception
from nova_snapshot_ext.image import payloads
from nova_snapshot_ext.snapshot import identity
from tests import base
from tests.unit.snapshot import test_service

NOW = datetime.datetime(2026, 11, 30, 12, 0, 0)


def entry(**changes):
    value = {'source_type': 'snapshot', 'destination_type': 'volume',
             'boot_index': 0, 'device_name': '/dev/vda',
             'snapshot_id': 'snap-1', 'volume_size': 10}
    value.update(changes)
    return value


def image(entries=None, **changes):
    value = {'id': 'img-1', 'status': 'active', 'disk_format': 'raw',
             'size': 0, 'min_disk': 0, 'bdm_v2': 'True',
             'root_device_name': '/dev/vda', 'owner': 'p',
             'updated_at': '2026-11-30T11:59:00Z',
             'block_device_mapping': json.dumps(
                 [entry()] if entries is None else entries)}
    value.update(changes)
    return value


def ours(**changes):
    """A queued image as the plugin makes it (fingerprint stamped)."""
    value = image(**changes)
    value.setdefault(identity.FINGERPRINT_PROPERTY, identity.fingerprint_of(
        mark.mapped_snapshot_ids(value)))
    return value


class FakeAuditor:
    def __init__(self, images, data=None):
        self.images = {i['id']: dict(i) for i in images}
        self.data = data or {}
        self.calls = []

    def head_of_data(self, image_id, limit):
        self.calls.append(('download', image_id))
        return self.data[image_id][:limit + 1]

    def get(self, image_id):
        if image_id not in self.images:
            raise exception.GlanceNotFound(operation='get', reason='gone')
        return dict(self.images[image_id])

    def delete(self, image_id):
        self.calls.append(('delete', image_id))
        del self.images[image_id]

    def patch(self, image_id, ops):
        self.calls.append(('patch', image_id, ops))
        for op in ops:
            key = op['path'][1:]
            if op['op'] == 'remove':
                del self.images[image_id][key]
            else:
                self.images[image_id][key] = op['value']


class TestJudge(base.TestCase):

    def kinds(self, img, auditor=None, **kwargs):
        return [f.kind for f in audit.judge(img, auditor, now=NOW,
                                            **kwargs)]

    def test_healthy_snapshot_has_no_finding(self):
        self.assertEqual([], self.kinds(image(min_disk=10)))

    def test_zero_bytes_under_any_label_but_raw_is_dishonest(self):
        for fmt in ('qcow2', 'vhd', 'vhdx', 'vmdk', 'vdi', 'iso', 'ami',
                    'ploop', 'aki'):
            self.assertEqual(['dishonest-payload'],
                             self.kinds(image(disk_format=fmt)), fmt)

    def test_small_payload_judged_by_the_inspector(self):
        data = {'img-1': payloads.payload('qcow2')}
        auditor = FakeAuditor([], data)
        img = image(disk_format='qcow2', size=len(data['img-1']))
        self.assertEqual([], self.kinds(img, auditor))
        for fmt in ('vhd', 'raw', 'vmdk'):
            img = image(disk_format=fmt, size=len(data['img-1']))
            self.assertEqual(['dishonest-payload'], self.kinds(img, auditor),
                             fmt)
        raw = FakeAuditor([], {'img-1': b'x' * 100})
        self.assertEqual([], self.kinds(image(size=100), raw))

    def test_large_payload_not_downloaded(self):
        auditor = FakeAuditor([])
        skipped = []
        self.assertEqual([], self.kinds(
            image(disk_format='qcow2', size=10 ** 9), auditor,
            not_inspected=skipped))
        self.assertEqual([], auditor.calls)
        self.assertEqual([{'image_id': 'img-1', 'size': 10 ** 9}], skipped)

    def test_queued_leftover_by_age(self):
        old = image(status='queued', size=None,
                    updated_at='2026-11-28T12:00:00Z')
        self.assertEqual(['queued-leftover'], self.kinds(old))
        young = image(status='queued', size=None)
        self.assertEqual([], self.kinds(young))
        self.assertEqual(['queued-leftover'],
                         self.kinds(young, queued_age=30))
        protected = dict(old, protected=True)
        finding = audit.judge(protected, now=NOW)[0]
        self.assertFalse(finding.fixable)

    def test_min_disk_above_the_root_volume(self):
        findings = audit.judge(image(min_disk=160), now=NOW)
        self.assertEqual(['min-disk-above-root'], [f.kind for f in findings])
        self.assertEqual({'op': 'replace', 'path': '/min_disk',
                          'value': 10}, findings[0].fix)
        # The root is the boot_index 0 entry, wherever it is listed.
        img = image([{'source_type': 'blank', 'destination_type': 'local',
                      'boot_index': -1, 'volume_size': 1},
                     entry(boot_index='0', device_name=None, volume_size=4)],
                    min_disk=5)
        self.assertEqual(['min-disk-above-root'], self.kinds(img))
        self.assertEqual([], self.kinds(dict(img, min_disk=4)))
        # A local root (image-backed) has no volume limit.
        local = image([entry(source_type='image', destination_type='local',
                             snapshot_id=None, image_id='i-1')],
                      min_disk=160)
        self.assertEqual([], self.kinds(local))

    def test_borrowed_identity_properties(self):
        for image_type in ('backup', 'base', None):
            img = image(backup_type='daily', instance_uuid='x', user_id='u',
                        os_distro='ubuntu')
            if image_type:
                img['image_type'] = image_type
            findings = audit.judge(img, now=NOW)
            self.assertEqual(
                sorted(['backup_type', 'instance_uuid', 'user_id'] +
                       (['image_type'] if image_type else [])),
                sorted(f.evidence['property'] for f in findings))
            self.assertTrue(all(f.fixable for f in findings))
            self.assertEqual({'borrowed-identity'},
                             {f.evidence['why'] for f in findings})

    def backup(self, **changes):
        fp = identity.fingerprint_of(['snap-1'])
        img = image(image_type='backup', backup_type='daily',
                    instance_uuid='x', user_id='u',
                    **{identity.FINGERPRINT_PROPERTY: fp})
        img[mark.MARKER_PROPERTY] = mark.marker_of(fp, 'x', 'daily',
                                                   img['id'])
        img.update(changes)
        return img

    def test_proven_backup_identity_is_not_borrowed(self):
        # The plugin's own backup must carry them (rotation counts them).
        self.assertEqual([], self.kinds(self.backup(min_disk=10)))

    def test_backup_look_alikes_still_borrowed(self):
        real = self.backup(min_disk=10)
        fp = real[identity.FINGERPRINT_PROPERTY]
        cases = {
            'copied onto another id': dict(real, id='img-2'),
            'holding data': dict(real, size=1048576),
            'no marker': {k: v for k, v in real.items()
                          if k != mark.MARKER_PROPERTY},
            'marker without the id': dict(real, **{
                mark.MARKER_PROPERTY: mark.marker_of(fp, 'x', 'daily',
                                                     '')}),
        }
        for name, img in cases.items():
            findings = [f for f in audit.judge(img, now=NOW)
                        if f.kind == audit.BORROWED_PROPERTY]
            self.assertEqual(
                ['backup_type', 'image_type', 'instance_uuid', 'user_id'],
                sorted(f.evidence['property'] for f in findings), name)

    def test_own_snapshot_identity_is_not_borrowed(self):
        # image_type=snapshot: the snapshot's own stamp (Nova's image-backed
        # path, the plugin's self-description) with its own server and user.
        img = image(image_type='snapshot', instance_uuid='x', user_id='u')
        self.assertEqual([], self.kinds(img))
        img['backup_type'] = 'daily'
        self.assertEqual(['borrowed-property'], self.kinds(img))

    def test_own_fingerprint_is_not_borrowed(self):
        # The plugin's bookkeeping names this image's own volume snapshots.
        own = identity.fingerprint_of(['snap-1'])
        img = image(**{identity.FINGERPRINT_PROPERTY: own})
        self.assertEqual([], self.kinds(img))
        for other in (identity.fingerprint_of(['snap-2']), 'junk'):
            img = image(**{identity.FINGERPRINT_PROPERTY: other})
            findings = audit.judge(img, now=NOW)
            self.assertEqual(
                [(identity.FINGERPRINT_PROPERTY, 'borrowed-identity')],
                [(f.evidence['property'], f.evidence['why'])
                 for f in findings])

    def test_other_never_inherited_kinds_are_borrowed(self):
        img = image(signature_verified='True', image_location='snapshot',
                    boot_roles='admin', owner_user_name='alice',
                    image_name='src')
        findings = audit.judge(img, now=NOW)
        self.assertEqual(
            {('boot_roles', 'server-record'),
             ('image_location', 'borrowed-identity'),
             ('image_name', 'provenance'),
             ('owner_user_name', 'ownership'),
             ('signature_verified', 'status-marker')},
            {(f.evidence['property'], f.evidence['why']) for f in findings})

    def test_remove_path_escapes_slash_and_tilde(self):
        img = image(**{'instance_type_a/b': 'x', 'instance_type_c~d': 'y',
                       'owner_specified.openstack.sha256': 'e3b0'})
        fixes = {f.evidence['property']: f.fix['path']
                 for f in audit.judge(img, now=NOW)}
        self.assertEqual({'instance_type_a/b': '/instance_type_a~1b',
                          'instance_type_c~d': '/instance_type_c~0d',
                          'owner_specified.openstack.sha256':
                          '/owner_specified.openstack.sha256'}, fixes)

    def test_secrets_reported_not_removed(self):
        img = image(cinder_encryption_key_id='k', img_signature='s',
                    vtpm_secret_uuid='v')
        findings = audit.judge(img, now=NOW)
        self.assertEqual(['borrowed-property'] * 3,
                         [f.kind for f in findings])
        self.assertFalse(any(f.fixable for f in findings))

    def test_glance_attributes_and_own_namespace_not_judged(self):
        img = image(os_glance_importing_to_stores='', stores='fs',
                    os_glance_failed_import='',
                    checksum='c', os_hash_value='h', direct_url='file://x')
        self.assertEqual([], self.kinds(img))

    def test_malformed_mappings(self):
        cases = [
            image(block_device_mapping='[{oops'),
            # Anyone may write this property: a hostile one is a finding,
            # not the end of the audit.
            image(block_device_mapping='[' * 5000 + ']' * 5000),
            image(block_device_mapping='{"a": 1}'),
            image(['not an object', entry()]),
            image([entry(snapshot_id=None)]),
            image([entry(connection_info='{}')]),
            image([entry(id=3, instance_uuid='x')]),
            image(bdm_v2='False'),
            image([entry(boot_index=None, device_name='/dev/vdb')]),
        ]
        no_bdm = image()
        del no_bdm['block_device_mapping']
        cases.append(no_bdm)
        for case in cases:
            self.assertEqual(['malformed-mapping'], self.kinds(case),
                             case)
            self.assertFalse(audit.judge(case, now=NOW)[0].fixable)

    def test_legacy_mappings_are_not_malformed(self):
        legacy = image([{'device_name': '/dev/vda', 'snapshot_id': 's',
                         'volume_size': 10, 'delete_on_termination': False}])
        del legacy['bdm_v2']
        self.assertEqual([], self.kinds(legacy))
        legacy['block_device_mapping'] = json.dumps(
            [{'device_name': 'vda', 'connection_info': '{}'}])
        self.assertEqual(['malformed-mapping'], self.kinds(legacy))

    def test_queued_leftover_deletable_only_when_the_plugin_made_it(self):
        old = {'status': 'queued', 'size': None,
               'updated_at': '2026-11-28T12:00:00Z'}
        finding = audit.judge(ours(**old), now=NOW)[0]
        self.assertEqual((audit.QUEUED_LEFTOVER, True, {'op': 'delete'}),
                         (finding.kind, finding.fixable, finding.fix))
        self.assertEqual(audit.MADE_BY_PLUGIN, finding.evidence['made_by'])
        self.assertNotIn('not_deleted', finding.evidence)
        other = identity.fingerprint_of(['snap-of-another-image'])
        not_ours = {
            # Nova's own volume-backed snapshot image (v2 and legacy).
            'nova': image(**old),
            'nova legacy': dict(image(**old), bdm_v2=None),
            'mapping only': {k: v for k, v in image(**old).items()
                             if k != 'bdm_v2'},
            # Fingerprint inherited or copied from another image.
            'copied': image(**dict(old, snapshot_ext_fingerprint=other)),
            'empty stamp': image(**dict(old, snapshot_ext_fingerprint='')),
            # Stamped, but the mapping names no volume snapshot.
            'no snapshot ids': image(
                [entry(snapshot_id=None)],
                **dict(old, snapshot_ext_fingerprint=other)),
            'mapping not json': image(**dict(
                old, block_device_mapping='[{oops',
                snapshot_ext_fingerprint=identity.fingerprint_of(
                    ['snap-1']))),
            # Looks like a backup, is no proven one.
            'backup look-alike': image(**dict(
                old, image_type='backup', backup_type='daily',
                snapshot_ext_backup='x', instance_uuid='u')),
        }
        for title, img in not_ours.items():
            found = [f for f in audit.judge(img, now=NOW)
                     if f.kind == audit.QUEUED_LEFTOVER]
            self.assertEqual(1, len(found), title)
            self.assertFalse(found[0].fixable, title)
            self.assertIsNone(found[0].fix, title)
            self.assertEqual(audit.MADE_BY_OTHER,
                             found[0].evidence['made_by'], title)
            self.assertIn('provably made', found[0].evidence['not_deleted'],
                          title)
            self.assertIn(identity.FINGERPRINT_PROPERTY,
                          found[0].evidence['not_deleted'], title)
            self.assertIn('(not fixable)', found[0].describe(), title)

    def test_authorship_refusal(self):
        self.assertIsNone(audit.authorship_refusal(ours()))
        self.assertIn('has no snapshot_ext_fingerprint',
                      audit.authorship_refusal(image()))
        self.assertIn('does not match', audit.authorship_refusal(
            ours(snapshot_ext_fingerprint=identity.fingerprint_of(['x']))))
        made = ours()
        made['block_device_mapping'] = json.dumps([entry(snapshot_id='s2')])
        self.assertIn('does not match', audit.authorship_refusal(made))

    def test_is_volume_snapshot(self):
        self.assertTrue(audit.is_volume_snapshot({'bdm_v2': 'True'}))
        self.assertTrue(audit.is_volume_snapshot(
            {'block_device_mapping': '[]'}))
        self.assertFalse(audit.is_volume_snapshot({'id': 'x'}))


class TestRepair(base.TestCase):

    def report_for(self, *images):
        report = audit.Report()
        for img in images:
            report.findings += audit.judge(img, now=NOW, queued_age=60)
        return report

    def test_dry_run_changes_nothing(self):
        img = image(min_disk=160, image_type='backup')
        auditor = FakeAuditor([img])
        report = self.report_for(img)
        actions = audit.repair(auditor, report, act=False)
        self.assertEqual(['dry-run', 'dry-run'],
                         [a.outcome for a in actions])
        self.assertEqual([], auditor.calls)

    def test_fix_patches_metadata_only_and_deletes_leftovers(self):
        fixable = image(min_disk=160, image_type='backup')
        queued = ours(id='img-2', status='queued', size=None,
                      updated_at='2026-11-01T00:00:00Z')
        dishonest = image(id='img-3', disk_format='qcow2')
        auditor = FakeAuditor([fixable, queued, dishonest])
        report = self.report_for(fixable, queued, dishonest)
        actions = audit.repair(auditor, report, act=True, queued_age=60)
        self.assertEqual(['done'] * 3, [a.outcome for a in actions])
        self.assertEqual(10, auditor.images['img-1']['min_disk'])
        self.assertNotIn('image_type', auditor.images['img-1'])
        self.assertNotIn('img-2', auditor.images)
        self.assertEqual(dishonest, auditor.images['img-3'])
        self.assertEqual(1, len(report.unrepaired))

    def test_queued_image_that_changed_is_skipped(self):
        queued = ours(status='queued', size=None,
                      updated_at='2026-11-01T00:00:00Z')
        report = self.report_for(queued)
        changes = ({'status': 'active'},
                   {'updated_at': '2026-11-01T00:00:01Z'})
        for change in changes:
            auditor = FakeAuditor([dict(queued, **change)])
            actions = audit.repair(auditor, report, act=True, queued_age=60)
            self.assertEqual('skipped', actions[-1].outcome, change)
            self.assertNotIn(('delete', 'img-1'), auditor.calls)
        auditor = FakeAuditor([])
        actions = audit.repair(auditor, report, act=True, queued_age=60)
        self.assertEqual(('skipped', 'the image is gone'),
                         (actions[-1].outcome, actions[-1].reason))

    def test_queued_image_the_plugin_did_not_make_is_never_deleted(self):
        old = {'status': 'queued', 'size': None,
               'updated_at': '2026-11-01T00:00:00Z'}
        nova = image(id='nova-made', **old)
        copied = image(id='copied', **dict(
            old, snapshot_ext_fingerprint=identity.fingerprint_of(['x'])))
        made = ours(id='made', **old)
        auditor = FakeAuditor([nova, copied, made])
        report = self.report_for(nova, copied, made)
        # (the copied fingerprint is also a borrowed property: not here)
        report.findings = [f for f in report.findings
                           if f.kind == audit.QUEUED_LEFTOVER]
        self.assertEqual(3, len(report.findings))
        for act in (False, True):
            actions = audit.repair(auditor, report, act=act, queued_age=60)
            self.assertEqual(['made'], [a.image_id for a in actions])
        self.assertEqual([('delete', 'made')], auditor.calls)
        self.assertEqual({'nova-made', 'copied'}, set(auditor.images))
        self.assertEqual({'nova-made', 'copied'},
                         {f.image_id for f in report.unrepaired})

    def test_queued_image_restamped_after_the_scan_is_skipped(self):
        # Proven at the scan; the re-read right before the delete no
        # longer proves it (fingerprint removed or changed): not deleted.
        made = ours(status='queued', size=None,
                    updated_at='2026-11-01T00:00:00Z')
        report = self.report_for(made)
        for change in ({identity.FINGERPRINT_PROPERTY: None},
                       {identity.FINGERPRINT_PROPERTY:
                        identity.fingerprint_of(['x'])}):
            auditor = FakeAuditor([dict(made, **change)])
            actions = audit.repair(auditor, report, act=True, queued_age=60)
            self.assertEqual(['skipped'], [a.outcome for a in actions])
            self.assertEqual([], auditor.calls)

    def test_still_same_refuses_an_image_not_provably_ours(self):
        made = ours(status='queued', size=None,
                    updated_at='2026-11-01T00:00:00Z')
        finding = audit.judge(made, now=NOW, queued_age=60)[0]
        self.assertEqual('', audit.images._still_same(
            finding, made, made['updated_at']))
        why = audit.images._still_same(finding, image(**{
            k: v for k, v in made.items()
            if k != identity.FINGERPRINT_PROPERTY}), made['updated_at'])
        self.assertIn('not provably made by nova-snapshot-ext', why)

    def test_kinds_documented(self):
        self.assertEqual({'queued-leftover', 'dishonest-payload',
                          'min-disk-above-root', 'borrowed-property',
                          'malformed-mapping', 'unsafe-mapping',
                          'deletion-hazard', 'backup-snapshot-gone',
                          'unnamed-volume-snapshot',
                          'leaked-volume-snapshot',
                          'untagged-snapshot-reference', 'copy-in-error',
                          'copy-chain-broken', 'copy-past-retention',
                          'copies-incomplete'}, set(audit.KINDS))


class TestImageLeftInPlace(test_service.ServiceTestBase):
    """What an error says of an image left in place is what audit does.

    A transient upload fault leaves the snapshot's image queued, named
    (doc/source/faults.rst); the error says ``audit --fix --yes``
    deletes it if nothing claims it, once it stayed queued longer than
    ``--queued-older-than``.
    """

    def left_image(self):
        self.fake.fail('upload', gexc.HTTPServiceUnavailable('busy'))
        err = self.assertRaises(exception.ActivationFailed,
                                self.make_service().snapshot,
                                self.make_request())
        self.assertEqual([test_service.IMAGE_ID], err.result.left_in_place)
        self.assertIn('audit --fix --yes', err.format_message())
        self.assertIn('--queued-older-than', err.format_message())
        return dict(self.fake.images[test_service.IMAGE_ID])

    def test_audit_fix_deletes_it_past_the_threshold(self):
        left = dict(self.left_image(), updated_at='2026-11-29T11:00:00Z')
        self.assertTrue(audit.is_volume_snapshot(left))
        findings = audit.judge(left, now=NOW)
        self.assertEqual([(audit.QUEUED_LEFTOVER, True)],
                         [(f.kind, f.fixable) for f in findings])
        report = audit.Report()
        report.findings += findings
        auditor = FakeAuditor([left])
        actions = audit.repair(auditor, report, act=True)
        self.assertEqual(['done'], [a.outcome for a in actions])
        self.assertEqual([('delete', left['id'])], auditor.calls)

    def test_audit_leaves_it_before_the_threshold_or_once_claimed(self):
        left = self.left_image()
        young = dict(left, updated_at='2026-11-30T11:30:00Z')
        self.assertEqual([], audit.judge(young, now=NOW))
        old = dict(left, updated_at='2026-11-29T11:00:00Z')
        report = audit.Report()
        report.findings += audit.judge(old, now=NOW)
        # a retry adopted and activated it after the scan
        auditor = FakeAuditor([dict(old, status='active', size=0)])
        actions = audit.repair(auditor, report, act=True)
        self.assertEqual(['skipped'], [a.outcome for a in actions])
        self.assertEqual([], auditor.calls)


ARMED = {'cinder_encryption_key_id': 'key-1',
         'cinder_encryption_key_deletion_policy': 'on_image_deletion'}


class TestRecordSafety(base.TestCase):
    """Issue 28: images unsafe to boot (unsafe-mapping) or to delete."""

    def kinds(self, img):
        return [f.kind for f in audit.judge(img, now=NOW)]

    def test_unsafe_mappings_flagged(self):
        root = entry()
        cases = {
            'live volume, no destination': {
                'source_type': 'volume', 'destination_type': None,
                'volume_id': 'vol-live', 'boot_index': -1},
            'volume entry with a snapshot id': {
                'source_type': 'volume', 'destination_type': 'volume',
                'volume_id': 'vol-live', 'snapshot_id': 'snap-9'},
            'local disk naming a volume': {
                'source_type': 'blank', 'destination_type': 'local',
                'volume_id': 'vol-live'},
            'snapshot to local': {
                'source_type': 'snapshot', 'destination_type': 'local',
                'snapshot_id': 'snap-9'},
            'no destination at all': {'source_type': 'blank'},
            'snapshot entry naming a volume': {
                'source_type': 'snapshot', 'destination_type': 'volume',
                'volume_id': 'vol-live', 'snapshot_id': 'snap-9'},
        }
        for name, bad in cases.items():
            findings = audit.judge(image([root, bad]), now=NOW)
            self.assertEqual(['unsafe-mapping'],
                             [f.kind for f in findings], name)
            self.assertFalse(findings[0].fixable)
            self.assertIn('entry 1', findings[0].evidence['problems'][0])

    def test_nova_entries_not_flagged(self):
        swap = {'source_type': 'blank', 'destination_type': 'local',
                'guest_format': 'swap', 'boot_index': -1, 'volume_size': 1}
        masked = {'source_type': 'volume', 'no_device': True,
                  'device_name': '/dev/vdc'}
        self.assertEqual([], self.kinds(image([swap, entry(), masked])))

    def test_no_device_entry_naming_a_volume_flagged(self):
        # Nova never writes a no_device entry into a snapshot image
        # (snapshot_volume_backed skips them), and a boot reserves any
        # entry's volume_id, no_device or not (compute API
        # _get_volumes_for_bdms and _validate_bdm).
        masked = {'source_type': 'volume', 'no_device': True,
                  'volume_id': 'vol-live', 'device_name': '/dev/vdc'}
        self.assertEqual(['unsafe-mapping'],
                         self.kinds(image([entry(), masked])))

    def test_legacy_volume_without_snapshot_flagged(self):
        legacy = dict(image([{'device_name': '/dev/vda',
                              'volume_id': 'vol-live'}]))
        del legacy['bdm_v2']
        self.assertEqual(['unsafe-mapping'], self.kinds(legacy))
        ok = dict(image([{'device_name': '/dev/vda',
                          'snapshot_id': 'snap-1'}]))
        del ok['bdm_v2']
        self.assertEqual([], self.kinds(ok))

    def test_legacy_entries_naming_a_volume_flagged(self):
        # Nova's from_legacy copies volume_id whatever branch it takes
        # (snapshot_id first; virtual_name only for swap/ephemeralN), and
        # _validate_bdm attaches any volume_id: each hands the volume over.
        for bad in ({'device_name': '/dev/vda', 'snapshot_id': 'snap-1',
                     'volume_id': 'vol-live'},
                    {'device_name': '/dev/vda', 'virtual_name': 'root',
                     'volume_id': 'vol-live'},
                    {'device_name': '/dev/vda', 'snapshot_id': ' ',
                     'volume_id': 'vol-live'}):
            legacy = dict(image([bad]))
            del legacy['bdm_v2']
            self.assertEqual(['unsafe-mapping'], self.kinds(legacy), bad)
        swap = dict(image([{'device_name': '/dev/vdb',
                            'virtual_name': 'swap'}]))
        del swap['bdm_v2']
        self.assertEqual([], self.kinds(swap))

    def test_deletion_hazard_flagged_not_fixable(self):
        findings = audit.judge(image(**ARMED), now=NOW)
        hazard = [f for f in findings if f.kind == 'deletion-hazard']
        self.assertEqual(1, len(hazard))
        self.assertFalse(hazard[0].fixable)
        self.assertEqual('cinder_encryption_key_deletion_policy',
                         hazard[0].evidence['property'])
        other = dict(ARMED, cinder_encryption_key_deletion_policy='x')
        self.assertNotIn('deletion-hazard',
                         self.kinds(image(**other)))

    def test_armed_queued_leftover_never_deleted(self):
        old = dict(ARMED, status='queued', size=None,
                   updated_at='2026-11-28T12:00:00Z')
        armed = ours(**old)
        finding = [f for f in audit.judge(armed, now=NOW)
                   if f.kind == audit.QUEUED_LEFTOVER][0]
        self.assertFalse(finding.fixable)
        self.assertIn('key-manager secret', finding.evidence['not_deleted'])
        # Armed after the scan: the re-read before the delete refuses.
        plain = ours(status='queued', size=None,
                     updated_at='2026-11-28T12:00:00Z')
        report = audit.Report(findings=audit.judge(plain, now=NOW))
        auditor = FakeAuditor([dict(plain, **ARMED)])
        actions = audit.repair(auditor, report, act=True)
        self.assertEqual(['skipped'], [a.outcome for a in actions])
        self.assertEqual([], auditor.calls)
