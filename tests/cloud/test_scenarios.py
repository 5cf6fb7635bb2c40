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

"""The plugin on a whole cloud: boot from the image it made.

A server with a root and a data volume, ``createImage``, the image active
and honest (its size and ``disk_format`` are those of its payload), then a
new server booted from that image is ACTIVE on volumes made from exactly
the image's volume snapshots.  Once on a default Glance and once on a
Glance that refuses ``raw``.  Then ``createBackup`` with rotation 2, four
times, in the cells layout.
"""

import json
import os
import subprocess
import sys
import tempfile
import time
import uuid

from oslotest import base as oslotest_base

from nova_snapshot_ext.audit import volume_snapshots as vs_audit
from nova_snapshot_ext.backup import leaks
from nova_snapshot_ext.embedded.cloud import launcher
from nova_snapshot_ext.image import payloads
from tests.cloud import base

#: Seconds between two backups of one server (more than Glance's
#: created_at resolution of one second).
BACKUP_SPACING = 1.1


class _Cloud(object):
    """The set-up and helpers; mixed into a TestCase per cloud."""

    profile = 'default'
    plugin = True
    activation = 'upload'
    glance_proxy = False
    stack = 'fake'
    glance_store = 'file'
    expected_format = None

    def setUp(self):
        super().setUp()
        base.skip_unless_cloud(self, self.profile, self.plugin,
                               self.activation, self.glance_proxy,
                               self.stack, self.glance_store)
        self.cloud = self.useFixture(base.CloudFixture(
            self.profile, self.plugin, self.activation,
            self.glance_proxy, self.stack, self.glance_store)).cloud
        base.attach_errors_on_failure(self, self.cloud)
        self.demo = base.Api(self.cloud, 'demo')
        self.admin = base.Api(self.cloud, 'admin')

    def _conf_file(self, user='demo', project='demo', more=''):
        """The plugin's CLI configuration as ``user`` (Glance, Cinder).

        :param more: more of it (``[snapshot_ext]`` options...).
        """
        keystone = self.cloud.keystone_url
        auth = ('auth_type = password\nauth_url = %s\nusername = %s\n'
                'password = %s\nproject_name = %s\n'
                'user_domain_id = default\nproject_domain_id = default\n'
                % (keystone, user, launcher.PASSWORD, project))
        fd, path = tempfile.mkstemp(suffix='.conf')
        with os.fdopen(fd, 'w') as fh:
            fh.write('[snapshot_ext_glance]\n%s\n[snapshot_ext_cinder]\n%s\n%s'
                     % (auth, auth, more))
        self.addCleanup(os.unlink, path)
        return path

    def _cli(self, command, conf_file, *extra, codes=(0,), timeout=300):
        """``nova-snapshot-ext <command> --format json``: ``(code, JSON)``.

        :param codes: the exit statuses expected (else the test fails with
            its stderr).
        """
        proc = subprocess.run(
            [sys.executable, '-m', 'nova_snapshot_ext.cmd.main', command,
             '--config-file', conf_file, '--format', 'json'] + list(extra),
            capture_output=True, text=True, timeout=timeout, check=False)
        self.addDetail('%s stderr' % command, _text(proc.stderr[-4000:]))
        self.assertIn(proc.returncode, codes, proc.stderr)
        return proc.returncode, json.loads(proc.stdout)

    def _audit(self, conf_file, *extra):
        return self._cli('audit', conf_file, *extra, codes=(0, 1))[1]

    def _volume_server(self):
        """A server on a root volume (from the image) and a data volume."""
        tag = uuid.uuid4().hex[:8]
        root = self.demo.create_volume(
            image=self.cloud.ids['images']['image'], name='root-' + tag)
        self.addCleanup(self._delete_volume_when_free, root['id'])
        data = self.demo.create_volume(name='data-' + tag)
        self.addCleanup(self._delete_volume_when_free, data['id'])
        server = self.demo.boot('vb-' + tag, bdm=[
            {'boot_index': 0, 'uuid': root['id'], 'source_type': 'volume',
             'destination_type': 'volume', 'delete_on_termination': False},
            {'boot_index': -1, 'uuid': data['id'], 'source_type': 'volume',
             'destination_type': 'volume', 'delete_on_termination': False},
        ])
        self.addCleanup(self.demo.delete_server, server['id'])
        return server, (root['id'], data['id'])

    def _delete_volume(self, volume_id):
        self.demo.call('cinder', 'DELETE', self.demo.project_path(
            '/volumes/%s' % volume_id), ok=None)

    def _delete_snapshot(self, snapshot_id):
        # A snapshot cinder-backup is copying (backing-up, the real
        # stack's copies) can be deleted once the copy ends.
        try:
            self.demo.wait('snapshot %s copied' % snapshot_id,
                           lambda: self.demo.snapshot(
                               snapshot_id, ok=(200, 404)) or {},
                           lambda s: s.get('status') != 'backing-up',
                           timeout=300)
        except AssertionError:
            pass
        self.demo.call('cinder', 'DELETE', self.demo.project_path(
            '/snapshots/%s' % snapshot_id), ok=None)
        try:
            self.demo.wait('snapshot %s deleted' % snapshot_id,
                           lambda: {'s': self.demo.snapshot(
                               snapshot_id, ok=(200, 404))},
                           lambda v: v['s'] is None, timeout=60)
        except AssertionError:
            pass

    def _delete_image(self, image_id):
        self.demo.call('glance', 'DELETE', '/v2/images/%s' % image_id,
                       ok=None)

    def _snapshot_ids(self, image):
        bdm = image.get('block_device_mapping')
        if isinstance(bdm, str):
            bdm = json.loads(bdm)
        return sorted(m['snapshot_id'] for m in bdm or ()
                      if m.get('snapshot_id'))

    def _create_image(self, server_id):
        started = time.monotonic()
        resp = self.demo.call('nova', 'POST',
                              '/servers/%s/action' % server_id,
                              microversion=base.COMPUTE,
                              json={'createImage': {
                                  'name': 'snap-' + uuid.uuid4().hex[:8]}})
        seconds = time.monotonic() - started
        image_id = resp.json()['image_id']
        self.addCleanup(self._delete_image, image_id)
        return image_id, seconds

    def _check_honest(self, image):
        payload = self.demo.image_payload(image['id'])
        self.assertEqual(len(payload), image['size'])
        self.assertEqual(image['disk_format'],
                         base.payload_format(payload))
        if self.expected_format:
            self.assertEqual(self.expected_format, image['disk_format'])

    def _wait_snapshots_made(self, snapshot_ids):
        """The volume snapshots, once Cinder has made each.

        nova-api answers before Cinder has made them (no quiesce, no
        wait), and Cinder makes no volume of a snapshot still
        ``creating``.  Made is ``available``, or ``backing-up`` while
        cinder-backup copies it (the real stack's copies): a wait for
        ``available`` alone could miss it and sit out the whole copy.

        :returns: ``{snapshot id: Cinder's snapshot}``.
        :raises AssertionError: on ``error``, or after the wait.
        """
        made = {}
        for snapshot_id in snapshot_ids:
            made[snapshot_id] = self.demo.wait(
                'snapshot %s' % snapshot_id,
                lambda: self.demo.snapshot(snapshot_id),
                lambda s: s['status'] in ('available', 'backing-up'),
                failed=('error',))
        return made

    def _snapshots_of(self, volumes):
        """Ids of the volume snapshots in Cinder of these volumes."""
        return list(self._snapshot_states(volumes))

    def _snapshot_states(self, volumes):
        """``{snapshot id: status}`` of these volumes' snapshots in Cinder."""
        found = self.demo.json('cinder', 'GET', self.demo.project_path(
            '/snapshots'))['snapshots']
        return {s['id']: s['status'] for s in found
                if s['volume_id'] in volumes}

    def _delete_volume_when_free(self, volume_id):
        try:
            self.demo.wait('volume %s detached' % volume_id,
                           lambda: self.demo.volume(volume_id),
                           lambda v: v['status'] in ('available', 'error'),
                           timeout=60)
        except AssertionError:
            pass
        self._delete_volume(volume_id)
        try:
            self.demo.wait('volume %s deleted' % volume_id,
                           lambda: {'v': self.demo.call(
                               'cinder', 'GET', self.demo.project_path(
                                   '/volumes/%s' % volume_id),
                               ok=None).status_code},
                           lambda v: v['v'] == 404, timeout=60)
        except AssertionError:
            pass

    def check_boot_from_snapshot_image(self):
        """createImage, then a server from the image on new volumes.

        The image is honest; the new volumes are made from its volume
        snapshots, one per source volume.
        """
        server, volumes = self._volume_server()
        image_id, create_seconds = self._create_image(server['id'])
        image = self.demo.wait(
            'image %s' % image_id, lambda: self.demo.image(image_id),
            lambda i: i['status'] == 'active',
            failed=('killed', 'deleted'))
        self._check_honest(image)
        snapshots = self._snapshot_ids(image)
        self.assertEqual(2, len(snapshots), image)
        for snapshot_id in snapshots:
            self.addCleanup(self._delete_snapshot, snapshot_id)
        made = self._wait_snapshots_made(snapshots)
        self.assertEqual(sorted(volumes), sorted(
            snap['volume_id'] for snap in made.values()))

        started = time.monotonic()
        booted = self.demo.boot('from-image', image=image_id)
        boot_seconds = time.monotonic() - started
        attached = [v['id'] for v in
                    booted['os-extended-volumes:volumes_attached']]
        new_volumes = [self.demo.volume(v) for v in attached]
        # Cleanups run in reverse order: the server goes first, then the
        # volumes Nova made from the snapshots, then the snapshots.
        for vol in new_volumes:
            self.addCleanup(self._delete_volume_when_free, vol['id'])
        self.addCleanup(self.demo.delete_server, booted['id'])
        self.assertEqual(snapshots, sorted(v['snapshot_id']
                                           for v in new_volumes))
        self.assertTrue(set(attached).isdisjoint(volumes))
        self.addDetail('timings', _text('createImage %.2f s, boot from the '
                                        'image %.2f s' % (create_seconds,
                                                          boot_seconds)))

    def check_create_backup_rotation(self):
        """createBackup, rotation 2, four times, in the cells layout.

        Exactly the 2 newest backups are kept, the rotated ones' volume
        snapshots are deleted in Cinder, and the newest kept backup boots.
        """
        server, volumes = self._volume_server()
        made, snapshots_of = [], {}
        for i in range(4):
            if i:
                # Glance's created_at counts whole seconds, and rotation
                # never rotates a backup made in the same second as the
                # new one (doc/source/backups.rst): a nightly backup is
                # never that close to the last.
                time.sleep(BACKUP_SPACING)
            resp = self.demo.call(
                'nova', 'POST', '/servers/%s/action' % server['id'],
                microversion=base.COMPUTE, ok=None,
                json={'createBackup': {'name': 'backup-%d' % i,
                                       'backup_type': 'daily',
                                       'rotation': 2}})
            self.assertEqual(202, resp.status_code, resp.text)
            image_id = resp.json()['image_id']
            made.append(image_id)
            self.addCleanup(self._delete_image, image_id)
            image = self.demo.wait(
                'backup %s' % image_id, lambda: self.demo.image(
                    image_id, ok=(200, 404)) or {'status': 'deleted'},
                lambda i: i['status'] in ('active', 'deleted'))
            snapshots_of[image_id] = self._snapshot_ids(image)
            self.assertEqual(2, len(snapshots_of[image_id]), image)
            for snapshot_id in snapshots_of[image_id]:
                self.addCleanup(self._delete_snapshot, snapshot_id)
        # Rotation runs after the new backup is active: wait for it.
        self.demo.wait('rotation to 2 backups', lambda: {
            'kept': [i for i in made if self.demo.image(i, ok=(200, 404))]},
            lambda v: v['kept'] == made[2:], timeout=60)
        for image_id in made[:2]:
            for snapshot_id in snapshots_of[image_id]:
                self.demo.wait(
                    'rotated snapshot %s deleted' % snapshot_id,
                    lambda: {'s': self.demo.snapshot(snapshot_id,
                                                     ok=(200, 404))},
                    lambda v: v['s'] is None, timeout=60)
        project = self.demo.session.get_project_id()
        for image_id in made[2:]:
            kept = self._wait_snapshots_made(snapshots_of[image_id])
            for snapshot_id, snap in kept.items():
                self.assertEqual('available', snap['status'])
                # The plugin's createBackup route recorded it (the proof
                # audit --fix needs should the backup be deleted by hand).
                self.assertEqual(
                    leaks.record_of(snapshot_id, image_id, project),
                    {k: snap['metadata'].get(k) for k in (
                        leaks.IMAGE_KEY, leaks.PROJECT_KEY,
                        leaks.RECORD_KEY)})
        booted = self.demo.boot('from-backup', image=made[-1])
        new_volumes = [self.demo.volume(v['id']) for v in
                       booted['os-extended-volumes:volumes_attached']]
        for vol in new_volumes:
            self.addCleanup(self._delete_volume_when_free, vol['id'])
        self.addCleanup(self.demo.delete_server, booted['id'])
        self.assertEqual(snapshots_of[made[-1]],
                         sorted(v['snapshot_id'] for v in new_volumes))


class _Scenario(_Cloud):
    """The plugin's scenario, on the TestCase's Glance profile."""

    def test_boot_from_snapshot_image(self):
        self.check_boot_from_snapshot_image()


def _text(value):
    from testtools import content

    return content.text_content(value)


class DefaultGlanceTest(_Scenario, oslotest_base.BaseTestCase):
    """On a Glance that allows ``raw``."""

    profile = 'default'

    def test_member_lists_volumes_by_name(self):
        """Cinder's resource filters are the wheel's: a member filters."""
        name = 'by-name-' + uuid.uuid4().hex[:8]
        volume = self.demo.create_volume(name=name)
        self.addCleanup(self._delete_volume_when_free, volume['id'])
        found = self.demo.json('cinder', 'GET', self.demo.project_path(
            '/volumes?name=%s' % name))['volumes']
        self.assertEqual([volume['id']], [v['id'] for v in found])

    def test_create_backup_rotation(self):
        self.check_create_backup_rotation()


class LeakedSnapshotsTest(_Cloud, oslotest_base.BaseTestCase):
    """``audit --fix --yes`` deletes the volume snapshots of a deleted image.

    Only those the plugin recorded taking (Cinder snapshot metadata,
    written by nova-api once the image is active) for an image that is
    gone; a snapshot a visible image names, a hand-made one with Nova's
    description, a forged record, a record copied from another snapshot and
    one naming another project all survive.
    """

    profile = 'default'

    def _hand_snapshot(self, volume_id, name, metadata=None):
        snap = self.demo.json('cinder', 'POST', self.demo.project_path(
            '/snapshots'), json={'snapshot': {
                'volume_id': volume_id, 'name': name, 'force': True,
                'metadata': metadata or {}}})['snapshot']
        self.addCleanup(self._delete_snapshot, snap['id'])
        self.demo.wait('snapshot %s' % snap['id'],
                       lambda: self.demo.snapshot(snap['id']),
                       lambda v: v['status'] == 'available',
                       failed=('error',))
        return snap['id']

    def _active_image(self, server_id):
        image_id, _ = self._create_image(server_id)
        image = self.demo.wait(
            'image %s' % image_id, lambda: self.demo.image(image_id),
            lambda i: i['status'] == 'active', failed=('killed', 'deleted'))
        snapshots = self._snapshot_ids(image)
        for snapshot_id in snapshots:
            self.addCleanup(self._delete_snapshot, snapshot_id)
        return image_id, snapshots

    def test_audit_fix_deletes_only_provable_leaks(self):
        server, volumes = self._volume_server()
        gone_image, leaked = self._active_image(server['id'])
        kept_image, named = self._active_image(server['id'])
        self.assertEqual(2, len(leaked))
        project = self.demo.session.get_project_id()
        # nova-api wrote the record on the volume snapshots it took.
        for snapshot_id in leaked:
            meta = self.demo.snapshot(snapshot_id)['metadata']
            self.assertEqual(
                leaks.record_of(snapshot_id, gone_image, project),
                {k: meta.get(k) for k in (leaks.IMAGE_KEY, leaks.PROJECT_KEY,
                                          leaks.RECORD_KEY)})
        data = volumes[1]
        survivors = {
            'nova-style': self._hand_snapshot(data, 'snapshot for %s'
                                              % gone_image),
            'forged': self._hand_snapshot(
                data, 'snapshot for forged', dict(
                    leaks.record_of(leaked[0], gone_image, project))),
            'another project': self._hand_snapshot(
                data, 'snapshot for other', None),
        }
        other = survivors['another project']
        self.demo.call('cinder', 'POST', self.demo.project_path(
            '/snapshots/%s/metadata' % other), json={'metadata': (
                leaks.record_of(other, gone_image, 'another-project'))})
        # The image is deleted with Glance directly (not the rotation).
        self.demo.call('glance', 'DELETE', '/v2/images/%s' % gone_image)
        # The cloud's admin (project admin) sees the member's leaks: its
        # Cinder listing covers every project, and says so.
        admin = self._audit(self._conf_file('admin', 'admin'))
        self.assertTrue(admin['cinder_coverage']['all_projects'], admin)
        seen = {f['volume_snapshot_id']: f['kind']
                for f in admin['findings'] if 'volume_snapshot_id' in f}
        self.assertEqual({vs_audit.LEAKED}, {seen.get(s) for s in leaked},
                         admin['findings'])
        conf_file = self._conf_file()
        report = self._audit(conf_file)
        cover = dict(report['cinder_coverage'])
        # The copy checks ran too, on the same project (no copy here).
        copies = cover.pop('copies')
        self.assertEqual({'all_projects': False, 'owner': None,
                          'project': project, 'limited_by': 'cinder'},
                         cover)
        self.assertEqual((project, 0), (copies['project'],
                                        copies['copies']))
        by_snapshot = {f['volume_snapshot_id']: f
                       for f in report['findings']
                       if 'volume_snapshot_id' in f}
        for snapshot_id in leaked:
            finding = by_snapshot[snapshot_id]
            self.assertEqual(vs_audit.LEAKED, finding['kind'], finding)
            self.assertTrue(finding['fixable'], finding)
            self.assertEqual(gone_image, finding['image_id'])
        for name, snapshot_id in survivors.items():
            finding = by_snapshot[snapshot_id]
            self.assertEqual(vs_audit.UNNAMED, finding['kind'], name)
            self.assertFalse(finding['fixable'], name)
        for snapshot_id in named:
            self.assertNotIn(snapshot_id, by_snapshot)
        fixed = self._audit(conf_file, '--fix', '--yes')
        done = {a['volume_snapshot_id'] for a in fixed['actions']
                if a['outcome'] == 'done'}
        # Each is acted on once, by the Cinder repair: no Glance "skipped
        # (the image is gone)" beside its "done".
        acted = [a['volume_snapshot_id'] for a in fixed['actions']
                 if a.get('volume_snapshot_id') in leaked]
        self.assertEqual(sorted(leaked), sorted(acted), fixed['actions'])
        self.assertTrue(set(leaked) <= done, fixed['actions'])
        self.assertTrue(done.isdisjoint(set(survivors.values()) |
                                        set(named)))
        for snapshot_id in leaked:
            self.demo.wait('leaked snapshot %s deleted' % snapshot_id,
                           lambda: {'s': self.demo.snapshot(
                               snapshot_id, ok=(200, 404))},
                           lambda v: v['s'] is None, timeout=60)
        for snapshot_id in list(survivors.values()) + named:
            self.assertEqual('available',
                             self.demo.snapshot(snapshot_id)['status'])
        self.assertEqual('active', self.demo.image(kept_image)['status'])


class NoRawGlanceTest(_Scenario, oslotest_base.BaseTestCase):
    """On a Glance whose disk_formats lack ``raw`` (stock Nova 34 fails)."""

    profile = 'no-raw'
    expected_format = 'qcow2'


class StockNovaNoRawTest(_Cloud, oslotest_base.BaseTestCase):
    """Side by side: stock Nova 34 (no plugin) on the Glance without raw.

    Nova 34 always asks for ``disk_format=raw`` (doc/source/nova.rst):
    glanceclient refuses it against this Glance's schema, nova-api answers
    500, and the volume snapshots it already took are left in Cinder. The
    plugin's run of the same scenario is :class:`NoRawGlanceTest`.
    """

    profile = 'no-raw'
    plugin = False

    def test_stock_nova_fails_and_leaks_the_snapshots(self):
        server, volumes = self._volume_server()
        before = self._snapshots_of(volumes)
        resp = self.demo.call('nova', 'POST',
                              '/servers/%s/action' % server['id'],
                              microversion=base.COMPUTE, ok=None,
                              json={'createImage': {'name': 'stock'}})
        self.assertEqual(500, resp.status_code, resp.text)
        leaked = sorted(set(self._snapshots_of(volumes)) - set(before))
        for snapshot_id in leaked:
            self.addCleanup(self._delete_snapshot, snapshot_id)
        self.assertEqual(len(volumes), len(leaked))


class LocationActivationTest(_Scenario, oslotest_base.BaseTestCase):
    """``activation_method = location-first``: no upload at all.

    Glance's http store reads the plugin's valid empty qcow2 at
    ``location_url`` (served on 127.0.0.1 by the cloud, the stand-in for
    an operator's web server); the image carries that location, and a
    server boots from it on exactly its volume snapshots.
    """

    activation = 'location-first'
    expected_format = 'qcow2'

    def test_image_is_the_location(self):
        server, _volumes = self._volume_server()
        image_id, _seconds = self._create_image(server['id'])
        image = self.demo.wait(
            'image %s' % image_id, lambda: self.demo.image(image_id),
            lambda i: i['status'] == 'active',
            failed=('killed', 'deleted'))
        for snapshot_id in self._snapshot_ids(image):
            self.addCleanup(self._delete_snapshot, snapshot_id)
        self._check_honest(image)
        # Glance shows the location it read (show_image_direct_url).
        self.assertEqual(self.cloud.location_url, image.get('direct_url'))
        self.assertEqual(len(payloads.payload('qcow2')), image['size'])


class FailedActivationTest(_Cloud, oslotest_base.BaseTestCase):
    """The activation fails after Nova took the volume snapshots.

    nova-api reaches Glance through a fault proxy, which answers every
    image upload (``PUT /v2/images/{id}/file``) itself; the preflight and
    the image create are Glance's own answers.  Nova's own path leaves the
    volume snapshots it took whatever fails (:class:`StockNovaNoRawTest`);
    with the plugin each one is deleted, or left and named with why.
    """

    glance_proxy = True
    upload = r'^/v2/images/[^/]+/file$'

    def _create_image_failing(self, server, name):
        before = set(self._snapshots_of(self.volumes))
        resp = self.demo.call('nova', 'POST',
                              '/servers/%s/action' % server['id'],
                              microversion=base.COMPUTE, ok=None,
                              json={'createImage': {'name': name}})
        return resp, before

    def _images_named(self, name):
        return self.admin.json('glance', 'GET', '/v2/images?name=%s' % name
                               )['images']

    def test_refused_upload_deletes_the_volume_snapshots(self):
        server, self.volumes = self._volume_server()
        self.cloud.fault_proxy.add_rule('PUT', self.upload, 'status',
                                        status=400, times='always')
        name = 'refused-' + uuid.uuid4().hex[:8]
        resp, before = self._create_image_failing(server, name)
        self.assertEqual(400, resp.status_code, resp.text)
        message = resp.json()['badRequest']['message']
        self.assertIn('volume snapshot(s) ', message)
        self.assertIn(' deleted', message)
        # Nothing of this request is left: no image, no volume snapshot.
        self.assertEqual([], self._images_named(name))
        self.assertEqual(before, set(self._snapshots_of(self.volumes)))

    def test_unanswered_upload_leaves_and_names_them(self):
        server, self.volumes = self._volume_server()
        self.cloud.fault_proxy.add_rule('PUT', self.upload, 'status',
                                        status=503, times='always')
        name = 'unanswered-' + uuid.uuid4().hex[:8]
        resp, before = self._create_image_failing(server, name)
        self.assertGreaterEqual(resp.status_code, 500, resp.text)
        left = sorted(set(self._snapshots_of(self.volumes)) - before)
        for snapshot_id in left:
            self.addCleanup(self._delete_snapshot, snapshot_id)
        images = self._images_named(name)
        for image in images:
            self.addCleanup(self._delete_image, image['id'])
        # The image Glance may still finish is left in place, queued, and
        # with it the volume snapshots it names: each named in the log.
        self.assertEqual(['queued'], [i['status'] for i in images])
        self.assertEqual(len(self.volumes), len(left))
        self.assertEqual(left, self._snapshot_ids(images[0]))
        with open(self.cloud.procs.log_path('nova-api')) as fh:
            log = fh.read()
        for snapshot_id in left:
            self.assertIn('volume snapshot %s left: an image left in place'
                          % snapshot_id, log)
