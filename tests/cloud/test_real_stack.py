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

"""The data comes back: the plugin's images on Ceph, judged by real guests.

The cloud on the real stack (``stack='real'``: Cinder's RBD driver on a
private Ceph, nova-compute's libvirt driver on QEMU/TCG, the plugin in
nova-api with ``driver = libvirt``).  Every server is the marker guest
(:mod:`nova_snapshot_ext.embedded.cloud.guest`) on a root volume made from
its image and a new data volume: its console says the marker it wrote on
each disk.  A server booted from the plugin's image must print, for each
disk at the source's device name, the marker the source wrote there:
nothing else proves that a snapshot holds the data.

``tox -e cloud-real``; the Debian packages are named in doc/source/cloud.rst
(the cloud refuses to start without them and says which).
"""

import json
import os
import subprocess
import threading
import time
import uuid

import fixtures
from oslotest import base as oslotest_base

from nova_snapshot_ext.backup import copies
from nova_snapshot_ext.embedded.cloud import guest
from nova_snapshot_ext.embedded.cloud import host
from nova_snapshot_ext.embedded.cloud import libvirtd
from nova_snapshot_ext.embedded import process
from nova_snapshot_ext_tempest_plugin import judge
from tests.cloud import base
from tests.cloud import test_scenarios

#: Seconds to wait for a guest's console to say everything (a TCG boot
#: takes ~5 s alone, ~15 s on a loaded 2-core machine).
CONSOLE_TIMEOUT = 240.0
#: Seconds a copy off the primary storage may take (a 1 GB volume:
#: ~10-20 s here, more when the machine is loaded).
COPY_TIMEOUT = 300.0
#: Volume API microversion of an in-use extend (3.42).
EXTEND = 'volume 3.42'


class _RealStack(test_scenarios._Cloud):
    """Helpers for tests on the real stack."""

    stack = 'real'

    def setUp(self):
        super().setUp()
        self.ceph = base.ceph_of(self.cloud)

    def _guest_server(self, data=True, data_snapshot=None):
        """The marker guest on a root volume (+ a data volume), ACTIVE.

        :param data: with a new, empty data volume (``vdb``).
        :param data_snapshot: a Cinder snapshot id: the data volume is made
            from it (its marker is read, not written).
        :returns: ``(server, {'vda': root volume id, 'vdb': data volume
            id}, {'vda': marker, 'vdb': marker})`` once the guest wrote
            or read its markers.
        """
        tag = uuid.uuid4().hex[:8]
        root = self.demo.create_volume(
            image=self.cloud.ids['images']['guest'], name='root-' + tag)
        self.addCleanup(self._delete_volume_when_free, root['id'])
        volumes = {'vda': root['id']}
        if data or data_snapshot:
            vol = self.demo.create_volume(name='data-' + tag,
                                          snapshot=data_snapshot)
            self.addCleanup(self._delete_volume_when_free, vol['id'])
            volumes['vdb'] = vol['id']
        bdm = [{'boot_index': 0 if disk == 'vda' else -1, 'uuid': volume_id,
                'source_type': 'volume', 'destination_type': 'volume',
                'delete_on_termination': False}
               for disk, volume_id in sorted(volumes.items())]
        server = self.demo.boot('guest-' + tag, bdm=bdm)
        self.addCleanup(self.demo.delete_server, server['id'])
        said = self._console(server['id'], sorted(volumes))
        self.assertEqual('WROTE', said['markers']['vda'][0], said)
        self.assertEqual('READ' if data_snapshot else 'WROTE',
                         said['markers'].get('vdb', ('READ',))[0], said)
        markers = {d: said['markers'][d][1] for d in volumes}
        return server, volumes, markers

    def _console(self, server_id, disks, timeout=CONSOLE_TIMEOUT,
                 after=None):
        """What the guest says once it has read or written every disk.

        :param after: a boot id (``read_console()['boot']``): wait for
            another boot's lines (a reboot).
        """
        console = {'text': ''}

        def fetch():
            console['text'] = self.demo.console(server_id)
            return guest.read_console(console['text'])

        try:
            return self.demo.wait(
                'the console of server %s' % server_id, fetch,
                lambda said: said['boot'] != after and said['done'] and
                set(disks) <= set(said['markers']), timeout=timeout)
        except AssertionError:
            self.addDetail('console of ' + server_id,
                           test_scenarios._text(console['text'][-4000:]))
            raise

    def _boot_from_image(self, image_id, name='from-image'):
        """A server from the image, its new volumes cleaned up after."""
        booted = self.demo.boot(name + '-' + uuid.uuid4().hex[:6],
                                image=image_id)
        attached = [v['id'] for v in
                    booted['os-extended-volumes:volumes_attached']]
        for volume_id in attached:
            self.addCleanup(self._delete_volume_when_free, volume_id)
        self.addCleanup(self.demo.delete_server, booted['id'])
        return booted, attached

    def _active_image(self, image_id):
        image = self.demo.wait(
            'image %s' % image_id, lambda: self.demo.image(image_id),
            lambda i: i['status'] == 'active', failed=('killed', 'deleted'))
        for snapshot_id in self._snapshot_ids(image):
            self.addCleanup(self._delete_snapshot, snapshot_id)
        self._wait_snapshots_made(self._snapshot_ids(image))
        return image

    def _mappings(self, image):
        """The image's volume mappings: ``{device name: mapping}``."""
        bdm = image.get('block_device_mapping')
        if isinstance(bdm, str):
            bdm = json.loads(bdm)
        return {m['device_name'].rsplit('/', 1)[-1]: m for m in bdm
                if m.get('snapshot_id')}

    def _rbd_snapshot_ids(self, volume_ids):
        """The Cinder snapshot ids Ceph holds RBD snapshots of, read there.

        :param volume_ids: Cinder volume ids (``volume-<id>`` in the pool).
        """
        found = self.ceph.rbd_images('volumes')
        return {s[len('snapshot-'):] for v in volume_ids
                for s in found.get('volume-%s' % v, ())}

    def _assert_rbd_snapshots(self, image, volumes):
        """Each mapping names an RBD snapshot of the source's volume."""
        for disk, mapping in self._mappings(image).items():
            self.assertIn(mapping['snapshot_id'],
                          self._rbd_snapshot_ids([volumes[disk]]), disk)

    def _assert_round_trip(self, image_id, volumes, markers, sizes=None):
        """A server from the image reads each marker on its own disk."""
        image = self._active_image(image_id)
        self._check_honest(image)
        mappings = self._mappings(image)
        self.assertEqual(sorted(volumes), sorted(mappings), image)
        self._assert_rbd_snapshots(image, volumes)
        booted, attached = self._boot_from_image(image_id)
        self.assertTrue(set(attached).isdisjoint(volumes.values()))
        said = self._console(booted['id'], sorted(volumes))
        self._assert_reads(said, markers)
        for disk, gib in (sizes or {}).items():
            self.assertEqual(gib * 2 * 1024 * 1024, said['disks'][disk])
            self.assertEqual(gib, int(mappings[disk]['volume_size']))
        # The new volumes are RBD clones of the image's snapshots.
        snapshots = {m['snapshot_id'] for m in mappings.values()}
        for volume_id in attached:
            parent = self.ceph.parent('volumes', 'volume-%s' % volume_id)
            self.assertIsNotNone(parent, volume_id)
            self.assertIn(parent.rsplit('@snapshot-', 1)[-1], snapshots)
        return image, booted

    def _assert_reads(self, said, markers):
        for disk, marker in markers.items():
            self.assertEqual(('READ', marker), said['markers'][disk],
                             (disk, said))

    def _copies_of(self, image_id):
        """The Cinder backups recorded as copies of ``image_id``."""
        listed = self.demo.json(
            'cinder', 'GET', self.demo.project_path('/backups/detail'),
            microversion='volume 3.43')['backups']
        return [b for b in listed if (b.get('metadata') or {}).get(
            copies.IMAGE_KEY) == image_id]

    def _wait_copies(self, image_id, count):
        """Until ``count`` copies of the image are available."""
        return self.demo.wait(
            'the %d copies of backup %s' % (count, image_id),
            lambda: {'copies': self._copies_of(image_id)},
            lambda v: len(v['copies']) == count and all(
                b['status'] == 'available' for b in v['copies']),
            timeout=COPY_TIMEOUT)['copies']

    def _delete_copies(self, backup_ids):
        """Delete copies, newest first (an incremental before its base)."""
        for backup_id in backup_ids:
            self.demo.call('cinder', 'DELETE', self.demo.project_path(
                '/backups/%s' % backup_id), ok=None)
            self.demo.wait('backup %s deleted' % backup_id, lambda: {
                'gone': self.demo.call('cinder', 'GET', self.demo.project_path(
                    '/backups/%s' % backup_id), ok=None).status_code == 404},
                lambda v: v['gone'], timeout=COPY_TIMEOUT)

    def _create_backup(self, server_id, name, rotation):
        resp = self.demo.action(server_id, {'createBackup': {
            'name': name, 'backup_type': 'daily', 'rotation': rotation}},
            ok=(202,))
        image_id = resp.json()['image_id']
        self.addCleanup(self._delete_image, image_id)
        return image_id

    def _create_image(self, server_id):
        image_id, seconds = super()._create_image(server_id)
        self.addDetail('createImage', test_scenarios._text('%.2f s'
                                                           % seconds))
        return image_id


class _RoundTrip(_RealStack):
    """createImage of a running server, on this class's Glance."""

    def test_create_image_round_trip(self):
        server, volumes, markers = self._guest_server()
        image_id = self._create_image(server['id'])
        self._assert_round_trip(image_id, volumes, markers)


class FileStoreTest(_RoundTrip, oslotest_base.BaseTestCase):
    """Glance's file store; Cinder copies the guest image into RBD."""

    def test_stopped_server_round_trip(self):
        server, volumes, markers = self._guest_server()
        self.demo.action(server['id'], {'os-stop': None})
        self.demo.wait('server %s stopped' % server['id'],
                       lambda: self.demo.server(server['id']),
                       lambda s: s['status'] == 'SHUTOFF',
                       failed=('ERROR',))
        image_id = self._create_image(server['id'])
        self._assert_round_trip(image_id, volumes, markers)

    def test_extended_volume_round_trip(self):
        server, volumes, markers = self._guest_server()
        self.demo.call('cinder', 'POST', self.demo.project_path(
            '/volumes/%s/action' % volumes['vdb']), microversion=EXTEND,
            json={'os-extend': {'new_size': 2}})
        self.demo.wait('volume %s extended' % volumes['vdb'],
                       lambda: self.demo.volume(volumes['vdb']),
                       lambda v: v['size'] == 2 and v['status'] == 'in-use',
                       failed=('error', 'error_extending'))
        image_id = self._create_image(server['id'])
        self._assert_round_trip(image_id, volumes, markers,
                                sizes={'vda': 1, 'vdb': 2})

    def test_snapshot_while_writing_is_consistent(self):
        """A snapshot of a guest that writes holds a quiesced filesystem.

        The marker guest appends a numbered 64-byte record to a log on an
        ext4 filesystem of its data disk five times a second, never
        syncing, so the newest records are only in its page cache.
        ``createImage`` quiesces it: the agent's freeze writes them out,
        flushes ext4's journal and clears its needs-recovery flag before
        Cinder snapshots the volumes.  A guest booted from the image then
        finds, before mounting, a clean journal, nothing for ``e2fsck
        -fn`` to report, and a log of every record written before the
        freeze (and none after the thaw), none cut short.  Side by side, a
        Cinder snapshot of the same volume taken without the agent (what
        any storage-side snapshot is) holds a filesystem that needs
        journal recovery: the judge tells the two apart.
        """
        server, volumes, markers = self._guest_server()
        # Some seconds of writes, all still in the guest's page cache.
        self.demo.wait(
            'the guest\'s first %d records' % guest.PROGRESS_EVERY,
            lambda: guest.read_console(self.demo.console(server['id'])),
            lambda s: s['progress'].get(guest.LOG_DISK), timeout=60)
        image_id = self._create_image(server['id'])
        source = self.demo.wait(
            'the freeze and thaw of createImage',
            lambda: guest.read_console(self.demo.console(server['id'])),
            lambda s: len(s['freezes']) >= 2, timeout=120)
        self.assertEqual(['freeze', 'thaw'], source['freezes'])
        at_freeze, at_thaw = source['written']
        self.assertGreaterEqual(at_freeze, guest.PROGRESS_EVERY, source)
        _image, booted = self._assert_round_trip(image_id, volumes, markers)
        restored = self._console(booted['id'], sorted(volumes))
        found = restored['filesystems'][guest.LOG_DISK]
        self.addDetail('log disk from the image',
                       test_scenarios._text('%r; records written at the '
                                            'freeze %d, at the thaw %d'
                                            % (found, at_freeze, at_thaw)))
        # The Tempest plugin's judge: one home for what consistent means
        # (a clean journal, e2fsck 0, whole records between the freeze's
        # and the thaw's count).
        self.assertEqual([], judge.consistency_problems(source, restored))

        crash = self.demo.create_snapshot(volumes[guest.LOG_DISK],
                                          name='no-quiesce')
        self.addCleanup(self._delete_snapshot, crash['id'])
        other, _volumes, _markers = self._guest_server(
            data_snapshot=crash['id'])
        said = self._console(other['id'], ['vda', guest.LOG_DISK])
        unquiesced = said['filesystems'][guest.LOG_DISK]
        self.addDetail('log disk from a snapshot without quiesce',
                       test_scenarios._text(repr(unquiesced)))
        # Deterministic: ext4 sets the flag at mount and clears it only
        # at unmount or freeze.  Its log is often torn too (a record
        # whose size was journaled before its data was written back):
        # shown in the detail, not asserted.
        self.assertEqual('recovery', unquiesced['journal'], unquiesced)
        self.assertEqual(markers[guest.LOG_DISK],
                         said['markers'][guest.LOG_DISK][1])

    def test_create_backup_rotation_on_rbd(self):
        """createBackup, rotation 2, four times, on Ceph.

        A server booted from the second backup is an RBD clone of its
        snapshots; when that backup rotates out, Cinder's RBD driver
        flattens the clone (a full copy) and deletes the snapshot: the
        server keeps its data (its guest reads the markers again after a
        hard reboot), and Ceph holds no snapshot of a rotated backup.
        """
        server, volumes, markers = self._guest_server()
        made, mappings = [], {}
        for i in range(4):
            if i:
                time.sleep(test_scenarios.BACKUP_SPACING)
            image_id = self._create_backup(server['id'], 'backup-%d' % i, 2)
            made.append(image_id)
            image = self._active_image(image_id)
            # Its copies off the primary storage end before the next
            # backup: a backup whose snapshots are being copied is not
            # rotated (they cannot be deleted yet).
            copied = [b['id'] for b in
                      self._wait_copies(image_id, len(volumes))]
            self.addCleanup(self._delete_copies, list(reversed(copied)))
            mappings[image_id] = self._mappings(image)
            self._assert_rbd_snapshots(image, volumes)
            if i == 1:
                clone, clone_volumes = self._boot_from_image(image_id)
                said = self._console(clone['id'], sorted(volumes))
                self._assert_reads(said, markers)
                for volume_id in clone_volumes:
                    self.assertIsNotNone(self.ceph.parent(
                        'volumes', 'volume-%s' % volume_id))
        self.demo.wait('rotation to 2 backups', lambda: {
            'kept': [i for i in made if self.demo.image(i, ok=(200, 404))]},
            lambda v: v['kept'] == made[2:], timeout=60)

        rotated = {m['snapshot_id'] for i in made[:2]
                   for m in mappings[i].values()}
        kept = {m['snapshot_id'] for i in made[2:]
                for m in mappings[i].values()}
        self.demo.wait('the rotated backups\' RBD snapshots deleted',
                       lambda: {'left': self._rbd_snapshot_ids(
                           volumes.values()) & rotated},
                       lambda v: not v['left'], timeout=180)
        self.assertEqual(kept, self._rbd_snapshot_ids(volumes.values()))
        for volume_id in clone_volumes:
            self.assertIsNone(self.ceph.parent('volumes',
                                               'volume-%s' % volume_id))
        self.demo.action(clone['id'], {'reboot': {'type': 'HARD'}})
        self._assert_reads(self._console(clone['id'], sorted(volumes),
                                         after=said['boot']), markers)

    def test_pool_read_while_images_are_removed(self):
        """A pool is read whole while its images are being removed.

        Cinder removes RBD images at any moment (volumes, cinder-backup's
        temporary clones); a read of the pool that opened an image just
        removed failed whole (``rbd ls -l``: "error opening ...: (2) No
        such file or directory").  Glance's file store leaves the
        ``images`` pool to this test.
        """
        rbd = ['rbd', '-c', self.ceph.conf]
        names = ['removed-%d-%s' % (i, uuid.uuid4().hex[:6])
                 for i in range(16)]
        for name in names:
            spec = 'images/' + name
            self.addCleanup(subprocess.run, rbd + ['rm', spec],
                            capture_output=True)
            self.addCleanup(subprocess.run, rbd + ['snap', 'purge', spec],
                            capture_output=True)
            subprocess.run(rbd + ['create', '--size', '1M', spec],
                           check=True, capture_output=True)
            subprocess.run(rbd + ['snap', 'create', spec + '@kept'],
                           check=True, capture_output=True)
        self.assertEqual({n: ['kept'] for n in names},
                         self.ceph.rbd_images('images'))

        def remove():
            for name in names:
                for cmd in (['snap', 'purge'], ['rm']):
                    subprocess.run(rbd + cmd + ['images/' + name],
                                   check=True, capture_output=True)
        remover = threading.Thread(target=remove)
        remover.start()
        reads = []
        while remover.is_alive():
            found = self.ceph.rbd_images('images')
            # Each read names only images of this test, whole or gone.
            self.assertLessEqual(set(found), set(names))
            self.assertLessEqual(set(map(tuple, found.values())),
                                 {('kept',), ()})
            reads.append(len(found))
        remover.join()
        self.addDetail('images seen by each read',
                       test_scenarios._text(repr(reads)))
        self.assertGreater(len(reads), 1)
        self.assertEqual({}, self.ceph.rbd_images('images'))


class RbdStoreTest(_RoundTrip, oslotest_base.BaseTestCase):
    """Glance's RBD store: Cinder clones the guest image inside Ceph."""

    glance_store = 'rbd'

    def test_guest_image_lives_in_ceph(self):
        image_id = self.cloud.ids['images']['guest']
        self.assertIn('snap', self.ceph.rbd_images('images')[image_id])


class NoRawGlanceTest(_RoundTrip, oslotest_base.BaseTestCase):
    """A Glance that refuses ``raw``: the plugin's non-raw payload.

    nova-api reaches Glance through the fault proxy (rules cleared after
    each test), so the same cloud also shows what a failed activation
    leaves in Ceph itself: no RBD snapshot that nothing names.
    """

    profile = 'no-raw'
    expected_format = 'qcow2'
    glance_proxy = True
    upload = test_scenarios.FailedActivationTest.upload

    def _failing_create_image(self, server_id, status):
        self.cloud.fault_proxy.add_rule('PUT', self.upload, 'status',
                                        status=status, times='always')
        name = 'failing-' + uuid.uuid4().hex[:8]
        resp = self.demo.call('nova', 'POST',
                              '/servers/%s/action' % server_id,
                              microversion=base.COMPUTE, ok=None,
                              json={'createImage': {'name': name}})
        images = self.admin.json('glance', 'GET',
                                 '/v2/images?name=%s' % name)['images']
        for image in images:
            self.addCleanup(self._delete_image, image['id'])
        return resp, images

    def test_refused_upload_leaves_no_rbd_snapshot(self):
        server, volumes, _markers = self._guest_server()
        resp, images = self._failing_create_image(server['id'], 400)
        self.assertEqual(400, resp.status_code, resp.text)
        self.assertEqual([], images)
        self.demo.wait('no RBD snapshot of volumes %s' % volumes, lambda: {
            'left': self._rbd_snapshot_ids(volumes.values())},
            lambda v: not v['left'], timeout=120)

    def test_unanswered_upload_leaves_only_named_rbd_snapshots(self):
        server, volumes, _markers = self._guest_server()
        resp, images = self._failing_create_image(server['id'], 503)
        self.assertGreaterEqual(resp.status_code, 500, resp.text)
        self.assertEqual(['queued'], [i['status'] for i in images])
        named = set(self._snapshot_ids(images[0]))
        for snapshot_id in named:
            self.addCleanup(self._delete_snapshot, snapshot_id)
        self.assertEqual(len(volumes), len(named))
        # Every RBD snapshot of the server's volumes is one the image Glance
        # may still finish names (nova-api's log names each, as on the fake
        # stack): none unnamed.
        self.demo.wait('the RBD snapshots made', lambda: {
            'rbd': self._rbd_snapshot_ids(volumes.values())},
            lambda v: v['rbd'] == named, timeout=120)

    def test_quiesce_thaws_after_every_outcome(self):
        """The guest is frozen for each snapshot and thawed after each.

        The marker guest runs the QEMU guest agent (its image has
        ``hw_qemu_guest_agent=yes``) with a filesystem to freeze; its
        fsfreeze hook prints each freeze and thaw on the console.  After
        ``createImage`` and the plugin's ``createBackup``, each when it
        succeeds, when Glance refuses the upload and when Glance does not
        answer, the console shows one more freeze then its thaw, and the
        agent says ``thawed``.
        """
        server, volumes, _markers = self._guest_server()
        name = self.admin.server(server['id'])[
            'OS-EXT-SRV-ATTR:instance_name']
        said = self._console(server['id'], sorted(volumes))
        self.assertEqual([], said['freezes'])
        rounds = 0
        for action in ('createImage', 'createBackup'):
            for status in (None, 400, 503):
                if status:
                    self.cloud.fault_proxy.add_rule(
                        'PUT', self.upload, 'status', status=status,
                        times='always')
                body = {'name': 'quiesce-' + uuid.uuid4().hex[:8]}
                if action == 'createBackup':
                    body.update(backup_type='quiesce', rotation=10)
                resp = self.demo.action(server['id'], {action: body},
                                        ok=None)
                images = self.admin.json('glance', 'GET',
                                         '/v2/images?name=%s' % body['name']
                                         )['images']
                for image in images:
                    self.addCleanup(self._delete_image, image['id'])
                    for snapshot_id in self._snapshot_ids(image):
                        self.addCleanup(self._delete_snapshot, snapshot_id)
                self.cloud.fault_proxy.clear()
                rounds += 1
                what = '%s with upload answer %s: HTTP %s %s' % (
                    action, status or 'Glance\'s', resp.status_code,
                    resp.text[:300])
                self.assertEqual(status is None,
                                 resp.status_code in (200, 202), what)
                said = self.demo.wait(
                    'the thaw after ' + what,
                    lambda: guest.read_console(
                        self.demo.console(server['id'])),
                    lambda s: len(s['freezes']) >= 2 * rounds,
                    timeout=120)
                self.assertEqual(['freeze', 'thaw'] * rounds,
                                 said['freezes'], what)
                self.assertEqual('thawed',
                                 base.agent_status(self.cloud, name), what)


class StockNovaNoRawTest(_RealStack, oslotest_base.BaseTestCase):
    """Side by side: stock Nova 34 on the same Glance without ``raw``.

    The plugin's run is :class:`NoRawGlanceTest`.  Nova asks for ``raw``,
    nova-api answers 500, and the RBD snapshots it took stay in Ceph
    with no image naming them.
    """

    profile = 'no-raw'
    plugin = False

    def test_stock_nova_fails_and_leaves_rbd_snapshots(self):
        server, volumes, _markers = self._guest_server()
        resp = self.demo.action(server['id'], {'createImage': {
            'name': 'stock-' + uuid.uuid4().hex[:8]}}, ok=None)
        self.assertEqual(500, resp.status_code, resp.text)
        left = sorted(set(self._snapshots_of(list(volumes.values()))))
        for snapshot_id in left:
            self.addCleanup(self._delete_snapshot, snapshot_id)
        self.assertEqual(len(volumes), len(left))
        self.demo.wait('the RBD snapshots stock Nova took', lambda: {
            'rbd': self._rbd_snapshot_ids(volumes.values())},
            lambda v: v['rbd'] == set(left), timeout=120)


class LocationActivationTest(_RoundTrip, oslotest_base.BaseTestCase):
    """``activation_method = location-first``: no upload at all."""

    activation = 'location-first'
    expected_format = 'qcow2'


class TwoLibvirtdsTest(oslotest_base.BaseTestCase):
    """Two clouds' libvirtds on one host: the first to stop spares the other.

    Each runs in a mount namespace with its own directory bound on
    ``/run/libvirt``.  Removing that mount point on the host detaches the
    other namespace's mount (Linux 3.18 and later): a cloud that stopped
    first once took the running one's ``virtlogd-sock`` away, and its
    nova-compute could start no guest.  Without a whole cloud: the two
    daemons alone, about 10 s.  It tells the fixed code from the old only
    on a host where no other cloud runs (``tox -e cloud-real --
    TwoLibvirtdsTest``): beside the clouds the other tests of its process
    keep until the end, ``/run/libvirt`` is theirs and stays, and the
    test checks that it is left as it was found.
    """

    def setUp(self):
        super().setUp()
        missing = host.missing_packages(libvirtd.PROGRAMS)
        if missing or os.geteuid() != 0:
            self.skipTest('needs root and %s' % (', '.join(missing) or
                                                 'nothing more'))
        self.had_run_dir = os.path.isdir(libvirtd.RUN_DIR)
        self.had_mount = libvirtd.mounted_anywhere(libvirtd.RUN_DIR)

    def _daemon(self, port):
        base_dir = self.useFixture(fixtures.TempDir()).path
        procs = process.Processes(base_dir)
        daemon = libvirtd.Libvirtd(procs, base_dir, port)
        self.addCleanup(procs.stop_all)
        self.addCleanup(daemon.stop)
        return daemon.start()

    def test_the_first_to_stop_spares_the_other(self):
        first_port, second_port = process.free_ports(2)
        first = self._daemon(first_port)
        second = self._daemon(second_port)
        first.stop()
        self.assertTrue(libvirtd.mounted_anywhere(libvirtd.RUN_DIR))
        pid = second.service.process.pid
        with open('/proc/%d/mountinfo' % pid) as fh:
            points = [line.split(' ')[4] for line in fh]
        self.assertIn(libvirtd.RUN_DIR, points)
        self.assertEqual('', second.virsh('list', '--all', '--name').strip())
        second.stop()
        self.assertEqual(self.had_mount,
                         libvirtd.mounted_anywhere(libvirtd.RUN_DIR))
        self.assertEqual(self.had_run_dir, os.path.isdir(libvirtd.RUN_DIR))
