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

"""Backups with rotation on a real Glance; faults during the rotation."""

import io
import json
import os
import subprocess
import sys
import time

import testtools.content

from oslo_utils import uuidutils

from nova_snapshot_ext.backup import rotation as rotation_mod
from nova_snapshot_ext.backup import service as backup_mod
from nova_snapshot_ext.cinder import client as cinder_mod
from nova_snapshot_ext.image import glance as glance_mod
from nova_snapshot_ext.snapshot import tags
from tests import base
from tests.functional import base as fbase
from tests.functional import test_faultproxy_glance
from tests.functional import test_snapshot


MiB = 1024 * 1024

#: What a member copies from a real backup onto a look-alike.
COPIED_PROPERTIES = ('image_type', 'backup_type', 'instance_uuid',
                     'block_device_mapping', 'bdm_v2', 'root_device_name',
                     'snapshot_ext_fingerprint', 'snapshot_ext_backup')


class RecordingCinder:
    """Records the volume snapshots the rotation deletes (no Cinder)."""

    def __init__(self):
        self.deleted = []

    def delete_snapshot(self, snapshot_id, owner):
        self.deleted.append(snapshot_id)
        return cinder_mod.DELETED

    def get_snapshot(self, snapshot_id):
        return None if snapshot_id in self.deleted else {
            'id': snapshot_id, 'status': 'available'}


class BackupMixin:

    def setUp(self):
        super().setUp()
        self.server_id = uuidutils.generate_uuid()
        self.cinder = RecordingCinder()

    def backup_request(self, server_id=None, backup_type='daily'):
        req = self.make_request()
        data = req.to_dict()
        data['server']['uuid'] = server_id or self.server_id
        for bdm in data['block_device_mappings']:
            bdm.pop('instance_uuid', None)
        data['backup_type'] = backup_type
        return type(req).from_dict(data)

    def backups(self, server_id=None, backup_type='daily'):
        return sorted(self.list_all_images(filters={
            'instance_uuid': server_id or self.server_id,
            'backup_type': backup_type}), key=lambda i: i['created_at'])

    def run_backup(self, service, client, rotation=2, **kwargs):
        # Glance's created_at moves in whole seconds.
        time.sleep(1.1)
        req = self.backup_request(**kwargs)
        snaps = sorted(b.snapshot_id for b in req.block_device_mappings
                       if b.snapshot_id)
        result = service.backup(req, rotation, glance=client,
                                cinder=self.cinder)
        return result, snaps


class TestBackupRotation(BackupMixin, test_snapshot.SnapshotTestBase):

    def test_rotation_two_four_times_keeps_two_newest(self):
        service = backup_mod.BackupService(self.make_service())
        client = self.plugin_client()
        other, _ = self.run_backup(service, client, rotation=1,
                                   server_id=uuidutils.generate_uuid())
        weekly, _ = self.run_backup(service, client, rotation=1,
                                    backup_type='weekly')
        # Another project's backup of "this" server (a look-alike by
        # Nova's filter) and a hand-made image claiming to be one.
        foreign_client = self.plugin_client(project_id=self.new_project())
        foreign, _ = self.run_backup(service, foreign_client, rotation=0)
        glance = self.client_for(roles=fbase.MEMBER_ROLES)
        fake = glance.images.create(name='fake', image_type='backup',
                                    backup_type='daily',
                                    instance_uuid=self.server_id)
        # Queued on purpose: deleted afterwards (the Glance is shared by
        # every test of this process).
        self.addCleanup(glance.images.delete, fake['id'])
        ids, snaps = [], []
        for _ in range(4):
            result, used = self.run_backup(service, client)
            ids.append(result.snapshot.image_id)
            snaps.append(used)
            self.assertTrue(result.rotation.complete,
                            result.rotation.describe())
        mine = {i['id'] for i in self.backups()
                if i['owner'] == self.project_id}
        self.assertEqual({ids[2], ids[3], fake['id']}, mine)
        self.assertEqual(sorted(snaps[0] + snaps[1]),
                         sorted(self.cinder.deleted))
        all_ids = {i['id'] for i in self.list_all_images()}
        for kept in (other, weekly, foreign):
            self.assertIn(kept.snapshot.image_id, all_ids)

    def test_copied_backup_properties_do_not_make_a_backup(self):
        # The breaker's scenario: a member copies backup B1's properties
        # onto a raw image holding 1 MiB of data (the "golden" image).
        service = backup_mod.BackupService(self.make_service())
        client = self.plugin_client()
        b1, b1_snaps = self.run_backup(service, client)
        b1_id = b1.snapshot.image_id
        real = client.get(b1_id)
        time.sleep(1.1)
        glance = self.client_for(roles=fbase.MEMBER_ROLES)
        copied = {key: real[key] for key in COPIED_PROPERTIES}
        golden = glance.images.create(name='golden', disk_format='raw',
                                      container_format='bare', **copied)
        glance.images.upload(golden['id'], io.BytesIO(b'\x5a' * MiB))
        self.assertEqual(MiB, client.get(golden['id'])['size'])
        b2, _ = self.run_backup(service, client)
        # The golden image takes no slot: B1 is still one of the two.
        self.assertEqual([], b2.rotation.deleted)
        self.assertIn(golden['id'], b2.rotation.left)
        self.assertIn(b1_id, b2.rotation.kept)
        b3, _ = self.run_backup(service, client)
        self.assertEqual([b1_id], b3.rotation.deleted)
        self.assertIn(golden['id'], b3.rotation.left)
        survivor = client.get(golden['id'])
        self.assertEqual('active', survivor['status'])
        self.assertEqual({golden['id'], b2.snapshot.image_id,
                          b3.snapshot.image_id},
                         {i['id'] for i in self.backups()})
        # The golden image still names B1's volume snapshots: they stay.
        for snap in b1_snaps:
            self.assertNotIn(snap, self.cinder.deleted)

    def test_retry_rotates_nothing_twice(self):
        service = backup_mod.BackupService(self.make_service())
        client = self.plugin_client()
        reqs = []
        for _ in range(3):
            time.sleep(1.1)
            req = self.backup_request()
            reqs.append(req)
            service.backup(req, 3, glance=client, cinder=self.cinder)
        before = {i['id'] for i in self.backups()}
        again = service.backup(reqs[1], 1, glance=client, cinder=self.cinder)
        self.assertTrue(again.snapshot.reused)
        # Relative to backup 2: backup 1 goes, backup 3 (newer) stays.
        self.assertEqual(1, len(again.rotation.deleted))
        self.assertEqual(before - set(again.rotation.deleted),
                         {i['id'] for i in self.backups()})
        third = service.backup(reqs[1], 1, glance=client, cinder=self.cinder)
        self.assertEqual([], third.rotation.deleted)


class TestRotationFaults(BackupMixin, test_snapshot.SnapshotTestBase,
                         test_faultproxy_glance.FaultGlanceTestCase):

    def proxied_glance(self):
        return glance_mod.GlanceClient(self.proxied_session(),
                                       endpoint_override=self.proxy.endpoint)

    def test_fault_during_rotation_loses_no_backup_that_stays(self):
        service = backup_mod.BackupService(self.make_service())
        client = self.plugin_client()
        ids = []
        for _ in range(3):
            result, _ = self.run_backup(service, client, rotation=5)
            ids.append(result.snapshot.image_id)
        # The first DELETE of the rotation is refused with a 503, the
        # second connection is reset after Glance acted.
        self.proxy.add_rule('DELETE', r'^/v2/images/[^/]+$', 'status',
                            status=503, nth=1)
        self.proxy.add_rule('DELETE', r'^/v2/images/[^/]+$', 'reset_after',
                            nth=2)
        result, _ = self.run_backup(service, self.proxied_glance(),
                                    rotation=1)
        new = result.snapshot.image_id
        left = {i['id'] for i in self.backups()}
        self.assertIn(new, left)
        self.assertFalse(result.rotation.complete)
        # Every image not named as deleted is still there; nothing the
        # rule keeps was touched.
        for image_id in ids:
            if image_id not in result.rotation.deleted:
                self.assertIn(image_id, left)
        self.assertTrue(set(result.rotation.not_deleted) <= set(ids))
        self.assertTrue(result.rotation.not_deleted)
        # Volume snapshots of an image not deleted are never deleted.
        self.assertNotIn(new, result.rotation.deleted)


class TestRotationCost(BackupMixin, test_snapshot.SnapshotTestBase,
                       test_faultproxy_glance.FaultGlanceTestCase):
    """A rotation's Glance requests do not grow with unrelated images.

    Every request of the rotation goes through the (rule-less) fault
    proxy, which records it: the count is Glance's, not the client's.
    """

    def proxied_glance(self):
        return glance_mod.GlanceClient(self.proxied_session(),
                                       endpoint_override=self.proxy.endpoint)

    def add_unrelated(self, count):
        glance = self.client_for(roles=fbase.MEMBER_ROLES)
        for n in range(count):
            image = glance.images.create(
                name='unrelated-%d' % n, os_hidden=bool(n % 2),
                tags=['unrelated'],
                block_device_mapping=json.dumps(
                    [{'snapshot_id': uuidutils.generate_uuid()}]))
            self.addCleanup(glance.images.delete, image['id'])

    def counting_glance(self):
        """The plugin's client through the proxy, counting image records.

        :returns: (client, list of record counts, one per listing).
        """
        proxied = self.proxied_glance()
        records = []
        real_list = proxied.list_images

        def list_images(**filters):
            images = real_list(**filters)
            records.append(len(images))
            return images

        proxied.list_images = list_images
        return proxied, records

    def rotation_cost(self, service, client):
        """Two backups of a new server, then one rotation, counted.

        :returns: ((requests, listing requests, image records read) of
            the rotation, image records a full scan reads).
        """
        self.server_id = uuidutils.generate_uuid()
        old, old_snaps = self.run_backup(service, client, rotation=5)
        new, _ = self.run_backup(service, client, rotation=5)
        self.assertEqual(tags.tags_of(old_snaps),
                         sorted(client.get(old.snapshot.image_id)['tags']))
        self.proxy.clear()
        proxied, records = self.counting_glance()
        result = rotation_mod.rotate(
            proxied, proxied.get(new.snapshot.image_id), 1, 'daily',
            self.cinder)
        self.assertTrue(result.complete, result.describe())
        self.assertEqual([old.snapshot.image_id], result.deleted)
        self.assertEqual(old_snaps, sorted(result.snapshots_deleted))
        self.assertEqual(rotation_mod.CHECK_TAGS, result.snapshot_check)
        cost = (self.proxy.count(), self.proxy.count('GET', r'^/v2/images'),
                sum(records))
        self.addDetail('rotation-requests-%d' % len(self.proxy.seen),
                       testtools.content.text_content('\n'.join(
                           '%s %s' % (r.method, r.path)
                           for r in self.proxy.seen)))
        del records[:]
        rotation_mod.named_snapshot_ids(proxied)
        return cost, sum(records)

    def test_request_count_does_not_depend_on_unrelated_images(self):
        service = backup_mod.BackupService(self.make_service())
        client = self.plugin_client()
        self.add_unrelated(5)
        few, scan_few = self.rotation_cost(service, client)
        self.add_unrelated(195)
        many, scan_many = self.rotation_cost(service, client)
        # The same requests, and the same image records read, with 5 and
        # with 200 unrelated images ...
        self.assertEqual(few, many)
        # ... where the full scan the rotation no longer makes reads
        # every one of them.
        self.assertGreaterEqual(scan_many - scan_few, 195)
        # 1 read of the new backup, glanceclient's one read of the image
        # schema (its first listing), 2 backup listings, 1 re-read and 1
        # delete of the old one, 2 fingerprint listings, 2 tag listings
        # per volume snapshot (the sample request has two).
        self.assertEqual(1 + 1 + 2 + 2 + 2 + 2 * 2, few[0])
        self.assertEqual(2 + 2 + 2 * 2, few[1] - 2)
        # The two backup listings read the two backups; nothing else.
        self.assertEqual(2, few[2])

    def test_hidden_tagged_image_keeps_the_snapshot(self):
        service = backup_mod.BackupService(self.make_service())
        client = self.plugin_client()
        old, old_snaps = self.run_backup(service, client, rotation=5)
        glance = self.client_for(roles=fbase.MEMBER_ROLES)
        keeper = glance.images.create(
            name='keeper', os_hidden=True,
            tags=[tags.tag_of(old_snaps[0].upper())])
        self.addCleanup(glance.images.delete, keeper['id'])
        new, _ = self.run_backup(service, client, rotation=1)
        self.assertEqual([old.snapshot.image_id], new.rotation.deleted)
        self.assertEqual(rotation_mod.CHECK_TAGS,
                         new.rotation.snapshot_check)
        self.assertIn(keeper['id'],
                      new.rotation.snapshots_left[old_snaps[0]])
        self.assertEqual(old_snaps[1:], self.cinder.deleted)

    def test_untagged_backup_rotates_with_a_full_scan(self):
        # A backup made before the plugin tagged its images: its tags
        # removed by hand.  An image naming its snapshot without tag or
        # fingerprint (Nova-style) is found by the full scan.
        service = backup_mod.BackupService(self.make_service())
        client = self.plugin_client()
        old, old_snaps = self.run_backup(service, client, rotation=5)
        glance = self.client_for(roles=fbase.MEMBER_ROLES)
        for tag in client.get(old.snapshot.image_id)['tags']:
            glance.image_tags.delete(old.snapshot.image_id, tag)
        nova_style = glance.images.create(
            name='nova-style', block_device_mapping=json.dumps(
                [{'snapshot_id': old_snaps[1]}]))
        self.addCleanup(glance.images.delete, nova_style['id'])
        new, _ = self.run_backup(service, client, rotation=1)
        self.assertEqual([old.snapshot.image_id], new.rotation.deleted)
        self.assertEqual(rotation_mod.CHECK_LEGACY_SCAN,
                         new.rotation.snapshot_check)
        self.assertEqual('another image names it',
                         new.rotation.snapshots_left[old_snaps[1]])
        self.assertEqual(old_snaps[:1], self.cinder.deleted)


class TestBackupCLI(fbase.FunctionalTestCase):

    GLANCE_OVERRIDES = {'identity': 'token'}

    def cli_backups(self, conf_file, server_id, count):
        """``nova-snapshot-ext backup --rotation 2`` ``count`` times."""
        ids, outs = [], []
        for n in range(count):
            time.sleep(1.1)
            data = base.sample_request_dict()
            data['server']['uuid'] = server_id
            data['server']['project_id'] = self.project_id
            data['requester']['project_id'] = self.project_id
            for bdm in data['block_device_mappings']:
                bdm.pop('instance_uuid', None)
                if bdm.get('snapshot_id'):
                    bdm['snapshot_id'] = uuidutils.generate_uuid()
            path = os.path.join(self.tmp, 'r%d.json' % n)
            with open(path, 'w', encoding='utf-8') as f:
                json.dump(data, f)
            proc = subprocess.run(
                [sys.executable, '-m', 'nova_snapshot_ext.cmd.main',
                 'backup', '--config-file', conf_file, '--rotation', '2',
                 '--backup-type', 'nightly', '--format', 'json', path],
                capture_output=True, text=True, timeout=120, check=False)
            self.assertEqual(0, proc.returncode, proc.stderr)
            out = json.loads(proc.stdout)
            outs.append(out)
            ids.append(out['image_id'])
        return ids, outs

    def run_audit(self, conf_file):
        proc = subprocess.run(
            [sys.executable, '-m', 'nova_snapshot_ext.cmd.main', 'audit',
             '--config-file', conf_file, '--owner', self.project_id,
             '--format', 'json'],
            capture_output=True, text=True, timeout=120, check=False)
        return proc, json.loads(proc.stdout)

    def test_audit_knows_the_backups_from_look_alikes(self):
        conf_file = self.write_cli_config('backup.conf', 'libvirt')
        server_id = uuidutils.generate_uuid()
        ids, _ = self.cli_backups(conf_file, server_id, 3)
        proc, report = self.run_audit(conf_file)
        self.assertEqual(0, proc.returncode, proc.stdout + proc.stderr)
        self.assertEqual([], [f for f in report['findings']
                              if f['image_id'] in ids])
        # A member's copy of a kept backup's properties on a data image.
        glance = self.client_for(roles=fbase.MEMBER_ROLES)
        real = dict(glance.images.get(ids[-1]))
        alike = glance.images.create(
            name='alike', disk_format='raw', container_format='bare',
            **{key: real[key] for key in COPIED_PROPERTIES})
        glance.images.upload(alike['id'], io.BytesIO(b'\x5a' * MiB))
        proc, report = self.run_audit(conf_file)
        self.assertEqual(1, proc.returncode, proc.stderr)
        borrowed = sorted(
            f['evidence']['property'] for f in report['findings']
            if f['image_id'] == alike['id'] and
            f['kind'] == 'borrowed-property')
        self.assertEqual(['backup_type', 'image_type', 'instance_uuid'],
                         borrowed)
        self.assertEqual([], [f for f in report['findings']
                              if f['image_id'] in ids])

    def test_backup_command_rotates(self):
        conf_file = self.write_cli_config('backup.conf', 'libvirt')
        server_id = uuidutils.generate_uuid()
        ids, outs = self.cli_backups(conf_file, server_id, 3)
        self.assertEqual([ids[0]], outs[2]['rotation']['deleted'])
        # No [snapshot_ext_cinder] credentials: the volume snapshots are
        # named, not deleted.
        self.assertEqual(2, len(outs[2]['rotation']['snapshots_left']))
        left = {i['id'] for i in self.list_all_images(filters={
            'instance_uuid': server_id})}
        self.assertEqual({ids[1], ids[2]}, left)
