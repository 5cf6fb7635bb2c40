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

"""Audit with Cinder: unrestorable backups and leaked volume snapshots."""

from nova_snapshot_ext.audit import backups as backup_audit
from tests import base
from tests.unit.backup import test_rotation


class Auditor:
    def __init__(self, images):
        self.images = images

    def pages(self, page_size, **filters):
        hidden = filters.get('os_hidden', False)
        yield [i for i in self.images
               if bool(i.get('os_hidden', False)) == hidden]


class Cinder:
    session = auth = None

    def __init__(self, snapshots):
        self.snapshots = {s['id']: s for s in snapshots}

    def get_snapshot(self, snapshot_id):
        return self.snapshots.get(snapshot_id)

    def list_snapshots(self, all_projects=False):
        return iter(self.snapshots.values())


class TestBackupAudit(base.TestCase):

    def test_findings(self):
        images = [test_rotation.backup_image(1),
                  test_rotation.backup_image(2),
                  dict(test_rotation.backup_image(3), os_hidden=True)]
        cinder = Cinder([
            {'id': 'snap-01', 'name': 'snapshot for daily-1'},
            {'id': 'snap-03', 'name': 'snapshot for daily-3'},
            {'id': 'snap-09', 'name': 'snapshot for deleted backup'},
            {'id': 'snap-10', 'name': 'my own snapshot'}])
        findings, _ = backup_audit.scan(Auditor(images), cinder)
        kinds = sorted((f.kind, f.image_id) for f in findings)
        self.assertEqual([('backup-snapshot-gone', 'img-02'),
                          ('unnamed-volume-snapshot', 'snap-09')], kinds)
        gone = [f for f in findings if f.kind == 'backup-snapshot-gone'][0]
        self.assertEqual(['snap-02'], gone.evidence['volume_snapshots_gone'])

    def test_a_snapshot_named_in_another_spelling_is_not_a_leak(self):
        # Cinder finds a snapshot by its id in any case: an image naming
        # 'SNAP-09' uses snap-09, which is then no leak to delete.
        image = {'id': 'img-x', 'status': 'active',
                 'block_device_mapping':
                 '[{"snapshot_id": "SNAP-09"}, {"snapshot_id": " snap-10 "}]'}
        cinder = Cinder([
            {'id': 'snap-09', 'name': 'snapshot for x'},
            {'id': 'snap-10', 'name': 'snapshot for y'}])
        self.assertEqual([], backup_audit.scan(Auditor([image]), cinder)[0])
