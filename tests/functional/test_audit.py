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

"""``nova-snapshot-ext audit`` against a real Glance seeded with each kind.

The Glance runs without format enforcement (profile ``no-enforcement``),
as Glances before 30 did, so the dishonest payloads old Novas uploaded
(zero bytes labelled qcow2) can be seeded as they exist in clouds.
"""

import gc
import io
import json
import subprocess
import sys
import tracemalloc
import urllib.parse
import uuid
import weakref

from nova_snapshot_ext import audit
from nova_snapshot_ext.backup import mark
from nova_snapshot_ext.image import glance as glance_mod
from nova_snapshot_ext.image import payloads
from nova_snapshot_ext.snapshot import identity
from tests.functional import base as fbase


def mapping(volume_size=8, **changes):
    entry = {'source_type': 'snapshot', 'destination_type': 'volume',
             'boot_index': 0, 'device_name': '/dev/vda',
             'snapshot_id': str(uuid.uuid4()), 'volume_size': volume_size,
             'delete_on_termination': False, 'disk_bus': 'virtio',
             'device_type': 'disk'}
    entry.update(changes)
    return json.dumps([entry])


class TestAudit(fbase.FunctionalTestCase):

    GLANCE_PROFILE = 'no-enforcement'
    GLANCE_OVERRIDES = {'identity': 'token'}

    def setUp(self):
        super().setUp()
        self.conf_file = self.write_cli_config('audit.conf', 'libvirt',
                                               roles=fbase.ADMIN_ROLES)
        self.client = self.client_for(roles=fbase.MEMBER_ROLES)

    def run_cli(self, *args):
        return subprocess.run(
            [sys.executable, '-m', 'nova_snapshot_ext.cmd.main', 'audit',
             '--config-file', self.conf_file, '--owner', self.project_id,
             '--format', 'json'] + list(args),
            capture_output=True, text=True, timeout=120, check=False)

    def seed(self, data=b'', disk_format='raw', activate=True, **props):
        props.setdefault('bdm_v2', 'True')
        props.setdefault('block_device_mapping', mapping())
        props.setdefault('root_device_name', '/dev/vda')
        # None: leave the property out (e.g. bdm_v2 of a legacy mapping)
        props = {k: v for k, v in props.items() if v is not None}
        image = self.client.images.create(
            name='audit-%s' % uuid.uuid4().hex[:8], disk_format=disk_format,
            container_format='bare', **props)
        if activate:
            if data:
                self.client.images.upload(image['id'], io.BytesIO(data),
                                          image_size=len(data))
            else:
                self.client.images.upload(image['id'], '')
        return image['id']

    def seed_ours(self, **props):
        """A queued image stamped as the plugin stamps its own."""
        props.setdefault('block_device_mapping', mapping())
        props.setdefault(identity.FINGERPRINT_PROPERTY,
                         identity.fingerprint_of(
                             mark.mapped_snapshot_ids(props)))
        return self.seed(activate=False, **props)

    def seed_every_kind(self):
        ids = {
            'healthy': self.seed(min_disk=8),
            'queued': self.seed_ours(),
            'zero_qcow2': self.seed(disk_format='qcow2'),
            'zero_vhd': self.seed(disk_format='vhd'),
            'raw_as_vmdk': self.seed(b'not a vmdk' * 100,
                                     disk_format='vmdk'),
            'min_disk': self.seed(min_disk=160),
            'borrowed': self.seed(image_type='backup', backup_type='daily',
                                  instance_uuid=str(uuid.uuid4()),
                                  os_distro='ubuntu'),
            'not_json': self.seed(block_device_mapping='[{oops'),
            'connection_info': self.seed(block_device_mapping=mapping(
                connection_info='{"data": {}}')),
        }
        # Not a volume-backed snapshot: never judged, although dishonest.
        self.other = self.client.images.create(
            name='plain', disk_format='qcow2', container_format='bare')
        self.client.images.upload(self.other['id'], '')
        return ids

    def kinds(self, report):
        return sorted((f['image_id'], f['kind']) for f in report['findings'])

    def test_finds_exactly_the_seeded_kinds_and_fixes_the_fixable(self):
        ids = self.seed_every_kind()
        proc = self.run_cli('--queued-older-than', '0')
        self.assertEqual(1, proc.returncode, proc.stderr)
        report = json.loads(proc.stdout)
        self.assertEqual(10, report['scanned'])
        self.assertEqual(9, report['snapshots'])
        expected = sorted([
            (ids['queued'], 'queued-leftover'),
            (ids['zero_qcow2'], 'dishonest-payload'),
            (ids['zero_vhd'], 'dishonest-payload'),
            (ids['raw_as_vmdk'], 'dishonest-payload'),
            (ids['min_disk'], 'min-disk-above-root'),
            (ids['borrowed'], 'borrowed-property'),
            (ids['borrowed'], 'borrowed-property'),
            (ids['borrowed'], 'borrowed-property'),
            (ids['not_json'], 'malformed-mapping'),
            (ids['connection_info'], 'malformed-mapping'),
        ])
        self.assertEqual(expected, self.kinds(report))
        borrowed = sorted(f['evidence']['property']
                          for f in report['findings']
                          if f['kind'] == 'borrowed-property')
        self.assertEqual(['backup_type', 'image_type', 'instance_uuid'],
                         borrowed)
        payload = {f['image_id']: f['evidence'] for f in report['findings']
                   if f['kind'] == 'dishonest-payload'}
        self.assertEqual('the data is raw',
                         payload[ids['raw_as_vmdk']]['inspector'])
        self.assertEqual(0, payload[ids['zero_qcow2']]['size'])
        min_disk = [f for f in report['findings']
                    if f['kind'] == 'min-disk-above-root'][0]
        self.assertEqual({'min_disk': 160, 'root_volume_size': 8,
                          'root_device_name': '/dev/vda'},
                         min_disk['evidence'])

        # Dry run: every fix listed, nothing changed.
        before = {k: self.client.images.get(v) for k, v in ids.items()}
        proc = self.run_cli('--queued-older-than', '0', '--fix')
        self.assertEqual(1, proc.returncode, proc.stderr)
        report = json.loads(proc.stdout)
        self.assertEqual(['dry-run'] * 5,
                         [a['outcome'] for a in report['actions']])
        for key, image_id in ids.items():
            self.assertEqual(dict(before[key]),
                             dict(self.client.images.get(image_id)), key)

        # Act.
        proc = self.run_cli('--queued-older-than', '0', '--fix', '--yes')
        self.assertEqual(1, proc.returncode, proc.stderr)
        report = json.loads(proc.stdout)
        self.assertEqual(['done'] * 5,
                         [a['outcome'] for a in report['actions']])
        self.assertEqual(5, report['unrepaired'])
        self.assertEqual([], [i for i in self.client.images.list(
            filters={'owner': self.project_id}) if i['id'] == ids['queued']])
        fixed = self.client.images.get(ids['min_disk'])
        self.assertEqual(8, fixed['min_disk'])
        fixed = self.client.images.get(ids['borrowed'])
        for key in ('image_type', 'backup_type', 'instance_uuid'):
            self.assertNotIn(key, fixed)
        self.assertEqual('ubuntu', fixed['os_distro'])
        # Images whose data is in question are never touched.
        for key in ('zero_qcow2', 'zero_vhd', 'raw_as_vmdk', 'not_json',
                    'connection_info', 'healthy'):
            self.assertEqual(dict(before[key]),
                             dict(self.client.images.get(ids[key])), key)

        # What is left is exactly the unfixable.
        proc = self.run_cli('--queued-older-than', '0')
        report = json.loads(proc.stdout)
        self.assertEqual(sorted([
            (ids['zero_qcow2'], 'dishonest-payload'),
            (ids['zero_vhd'], 'dishonest-payload'),
            (ids['raw_as_vmdk'], 'dishonest-payload'),
            (ids['not_json'], 'malformed-mapping'),
            (ids['connection_info'], 'malformed-mapping'),
        ]), self.kinds(report))
        self.assertFalse(any(f['fixable'] for f in report['findings']))

    def test_queued_image_the_plugin_did_not_make_is_never_deleted(self):
        # The shape of Nova's own volume-backed snapshot image (one Nova
        # may still be activating), of one with a fingerprint copied from
        # another image, and of another tool's image: reported, kept.
        other = identity.fingerprint_of([str(uuid.uuid4())])
        foreign = {
            'nova': self.seed(activate=False),
            'legacy': self.seed(activate=False, bdm_v2=None),
            'copied': self.seed(activate=False,
                                snapshot_ext_fingerprint=other),
        }
        ours = self.seed_ours()
        proc = self.run_cli('--queued-older-than', '0', '--fix', '--yes')
        self.assertEqual(1, proc.returncode, proc.stderr)
        report = json.loads(proc.stdout)
        queued = {f['image_id']: f for f in report['findings']
                  if f['kind'] == 'queued-leftover'}
        self.assertEqual(set(foreign.values()) | {ours}, set(queued))
        for title, image_id in foreign.items():
            finding = queued[image_id]
            self.assertFalse(finding['fixable'], title)
            self.assertIn('not provably nova-snapshot-ext',
                          finding['evidence']['made_by'], title)
            self.assertIn('snapshot_ext_fingerprint',
                          finding['evidence']['not_deleted'], title)
            self.assertEqual('queued',
                             self.client.images.get(image_id)['status'],
                             title)
        self.assertEqual('nova-snapshot-ext', queued[ours]['evidence'][
            'made_by'])
        self.assertEqual(
            [(ours, 'queued-leftover', 'done')],
            [(a['image_id'], a['kind'], a['outcome'])
             for a in report['actions'] if a['kind'] == 'queued-leftover'])
        self.assertEqual([], [i for i in self.client.images.list(
            filters={'owner': self.project_id}) if i['id'] == ours])

    def test_young_queued_image_is_not_a_leftover(self):
        queued = self.seed(activate=False)
        proc = self.run_cli('--fix', '--yes')
        self.assertEqual(0, proc.returncode, proc.stderr)
        report = json.loads(proc.stdout)
        self.assertEqual([], report['findings'])
        self.assertEqual('queued', self.client.images.get(queued)['status'])

    def test_pages_and_progress(self):
        for _ in range(5):
            self.seed(min_disk=8)
        proc = self.run_cli('--page-size', '2')
        self.assertEqual(0, proc.returncode, proc.stderr)
        report = json.loads(proc.stdout)
        self.assertEqual((5, 5, []), (report['scanned'], report['snapshots'],
                                      report['findings']))
        # 3 pages not hidden (2, 2, 1), 1 (empty) hidden: 4 requests.
        self.assertEqual(4, report['pages'])
        # JSON into a pipe: the report alone.
        self.assertNotIn('audit: ', proc.stderr)
        proc = self.run_cli('--page-size', '2', '--format', 'text')
        self.assertEqual(0, proc.returncode, proc.stderr)
        self.assertIn('5 images scanned: 5 volume-backed snapshot images, '
                      '0 problems.', proc.stdout)
        self.assertNotIn('audit: ', proc.stderr)
        # Asked for: at most one line a second, then the final line.
        proc = self.run_cli('--page-size', '2', '--progress')
        self.assertEqual(0, proc.returncode, proc.stderr)
        progress = [line for line in proc.stderr.splitlines()
                    if line.startswith('audit: ')]
        self.assertTrue(progress[-1].startswith(
            'audit: read 5 images in 4 pages, '), proc.stderr)
        self.assertEqual(5, json.loads(proc.stdout)['scanned'])

    def test_scan_holds_one_page_of_images(self):
        """Memory follows the page, not the images read (issue 29).

        Every image the auditor hands over is a weakly referenced dict:
        after each page the images still alive are counted (after a
        collection), and what ``nova_snapshot_ext/audit/images.py`` itself has
        allocated and still holds is measured with tracemalloc.  Neither
        may grow with the pages read.
        """
        for i in range(24):
            if i % 2:
                self.seed(min_disk=8)
            else:
                self.client.images.create(name='plain-%d' % i)
        refs = []

        class Image(dict):
            pass

        class Counted(audit.AuditGlance):
            def pages(self, page_size=audit.DEFAULT_PAGE_SIZE, **filters):
                for page in super().pages(page_size, **filters):
                    images = [Image(image) for image in page]
                    refs.extend(weakref.ref(image) for image in images)
                    yield images

        source = audit.images.__file__
        held, alive = [], []

        def progress(report):
            # urlsplit's cache (128 entries) keeps each page's URL, a
            # string audit/images.py built: bounded, but it would show here.
            urllib.parse.clear_cache()
            gc.collect()
            alive.append(sum(1 for ref in refs if ref() is not None))
            snap = tracemalloc.take_snapshot().filter_traces(
                [tracemalloc.Filter(True, source)])
            held.append(sum(s.size for s in snap.statistics('filename')))

        glance = glance_mod.GlanceClient(self.glance.session(
            self.project_id, 'auditor', fbase.ADMIN_ROLES),
            endpoint_override=self.glance.endpoint)
        tracemalloc.start()
        self.addCleanup(tracemalloc.stop)
        report = audit.scan(Counted(glance), page_size=3,
                            filters={'owner': self.project_id},
                            progress=progress)
        self.assertEqual((24, 12, []), (report.scanned, report.snapshots,
                                        report.findings))
        # 8 full pages, an empty last one, one empty hidden page.
        self.assertEqual(10, report.pages)
        self.assertEqual(10, len(alive))
        # At most the page in hand (3 images); after the last pages, the
        # one image scan's loop variable still names.
        self.assertLessEqual(max(alive), 3, alive)
        self.assertLessEqual(alive[-1], 1, alive)
        # What audit/images.py holds after page 2 and after page 8 (both full
        # pages in hand): equal but for allocator noise, far below one
        # image per page read (a set of 18 more ids would be 1 KiB+).
        self.assertLess(held[7] - held[1], 512, held)

    def test_payload_above_download_limit_is_reported_not_judged(self):
        big = self.seed(payloads.payload('qcow2'), disk_format='vmdk')
        proc = self.run_cli('--max-download', '100')
        self.assertEqual(0, proc.returncode, proc.stderr)
        report = json.loads(proc.stdout)
        self.assertEqual([], report['findings'])
        self.assertEqual([{'image_id': big,
                           'size': len(payloads.payload('qcow2'))}],
                         report['not_inspected'])
        proc = self.run_cli()
        self.assertEqual([(big, 'dishonest-payload')],
                         self.kinds(json.loads(proc.stdout)))

    def test_text_report_and_bad_arguments(self):
        self.seed(min_disk=160)
        proc = subprocess.run(
            [sys.executable, '-m', 'nova_snapshot_ext.cmd.main', 'audit',
             '--owner', self.project_id, '--config-file', self.conf_file],
            capture_output=True, text=True, timeout=120, check=False)
        self.assertEqual(1, proc.returncode, proc.stderr)
        self.assertIn('min-disk-above-root: min_disk=160', proc.stdout)
        self.assertIn('Run with --fix', proc.stdout)
        proc = self.run_cli('--yes')
        self.assertEqual(2, proc.returncode)
        self.assertIn('--yes only goes with --fix', proc.stderr)
        self.assertEqual(2, json.loads(proc.stdout)['exit_code'])

    def test_fix_removes_names_with_slash_and_tilde(self):
        # Borrowed properties whose JSON-patch paths must be escaped.
        image_id = self.seed(**{
            'instance_type_a/b': 'x', 'instance_type_c~d': 'y',
            'owner_specified.openstack.sha256': 'e3b0c442',
            'os_distro': 'ubuntu'})
        proc = self.run_cli('--fix', '--yes')
        self.assertEqual(0, proc.returncode, proc.stdout + proc.stderr)
        report = json.loads(proc.stdout)
        self.assertEqual(
            ['done'] * 3, [a['outcome'] for a in report['actions']
                           if a['image_id'] == image_id])
        image = self.client.images.get(image_id)
        for key in ('instance_type_a/b', 'instance_type_c~d',
                    'owner_specified.openstack.sha256'):
            self.assertNotIn(key, image)
        self.assertEqual('ubuntu', image['os_distro'])

    def test_unsafe_mapping_and_deletion_hazard_reported_never_deleted(self):
        live = str(uuid.uuid4())
        entries = json.loads(mapping())
        entries.append({'source_type': 'volume', 'destination_type': None,
                        'volume_id': live, 'boot_index': -1,
                        'device_name': '/dev/vdb'})
        unsafe = self.seed(block_device_mapping=json.dumps(entries))
        armed = {'cinder_encryption_key_id': str(uuid.uuid4()),
                 'cinder_encryption_key_deletion_policy':
                 'on_image_deletion'}
        hazard = self.seed(**armed)
        armed_leftover = self.seed_ours(**armed)
        proc = self.run_cli('--queued-older-than', '0', '--fix', '--yes')
        self.assertEqual(1, proc.returncode, proc.stderr)
        report = json.loads(proc.stdout)
        found = self.kinds(report)
        self.assertIn((unsafe, 'unsafe-mapping'), found)
        self.assertIn((hazard, 'deletion-hazard'), found)
        self.assertIn((armed_leftover, 'deletion-hazard'), found)
        leftover = [f for f in report['findings']
                    if f['image_id'] == armed_leftover and
                    f['kind'] == 'queued-leftover'][0]
        self.assertFalse(leftover['fixable'])
        self.assertIn('key-manager secret',
                      leftover['evidence']['not_deleted'])
        problems = [f for f in report['findings']
                    if f['kind'] == 'unsafe-mapping'][0]['evidence']
        self.assertIn(live, problems['problems'][0])
        # Nothing of these was deleted.
        for image_id in (unsafe, hazard, armed_leftover):
            self.client.images.get(image_id)

    def test_entries_naming_a_volume_reported(self):
        # A boot attaches any entry's volume_id (Nova's _validate_bdm): a
        # snapshot entry with one, and a legacy entry with one beside its
        # snapshot_id or a virtual_name, hand that volume over.
        live = str(uuid.uuid4())
        v2 = self.seed(block_device_mapping=mapping(volume_id=live))
        legacy = self.seed(bdm_v2=None, block_device_mapping=json.dumps([
            {'device_name': '/dev/vda', 'snapshot_id': str(uuid.uuid4()),
             'volume_id': live}]))
        proc = self.run_cli()
        self.assertEqual(1, proc.returncode, proc.stderr)
        found = self.kinds(json.loads(proc.stdout))
        self.assertIn((v2, 'unsafe-mapping'), found)
        self.assertIn((legacy, 'unsafe-mapping'), found)
