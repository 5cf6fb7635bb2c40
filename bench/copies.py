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

"""Figures of the copies off the primary storage (doc/source/backups.rst).

One cloud on the real stack (Ceph, libvirt/QEMU, cinder-backup with the
POSIX driver outside Ceph; nova-api with ``[snapshot_ext]
backup_copies``).  On one running marker guest (a 1 GB root and a 1 GB
data volume):

* ``createBackup`` N times: nova-api's answer (it never waits for the
  copies), then until both copies are ``available``: the first round's
  are full, the next ones incremental;
* M restores of the newest set (the last link of the chain) with the
  plugin's :class:`~nova_snapshot_ext.restore.Restore`: the volumes
  only, and the volumes plus a server whose guest reads both markers.

Prints JSON.  ``python -m bench.copies [-n 4] [-m 2]`` from the ``cloud``
tox env (``tox -e bench-copies``).
"""

import argparse
import json
import sys
import time
import uuid

from nova_snapshot_ext.backup import copies
from nova_snapshot_ext.cinder import client as cinder_client
from nova_snapshot_ext.embedded.cloud import client
from nova_snapshot_ext.embedded.cloud import launcher
from nova_snapshot_ext import restore

from bench import cloud as bench_cloud
from bench import real_stack

COPY_TIMEOUT = 600.0


def _copies_of(api, image_id):
    listed = api.json('cinder', 'GET', api.project_path('/backups/detail'),
                      microversion='volume 3.43')['backups']
    return [b for b in listed
            if (b.get('metadata') or {}).get(copies.IMAGE_KEY) == image_id]


def _backup_round(api, server_id, disks):
    """``(answer s, copies available s, incremental flags)``."""
    started = time.monotonic()
    resp = api.action(server_id, {'createBackup': {
        'name': 'bench-' + uuid.uuid4().hex[:8], 'backup_type': 'bench',
        'rotation': 100}})
    answer = time.monotonic() - started
    image_id = resp.json()['image_id']
    found = api.wait('copies of %s' % image_id,
                     lambda: {'copies': _copies_of(api, image_id)},
                     lambda v: len(v['copies']) == disks and all(
                         b['status'] == 'available' for b in v['copies']),
                     timeout=COPY_TIMEOUT)['copies']
    return (answer, time.monotonic() - started,
            sorted(bool(b['is_incremental']) for b in found))


def _restore(cloud, server_id, markers, boot):
    """Seconds of one restore of the server's newest set (and cleanup)."""
    session = cloud.session('demo')
    cinder = cinder_client.CinderClient.for_auth(session,
                                                 interface='public')
    compute = restore.Compute(cinder.sibling('compute')) if boot else None
    runner = restore.Restore(cinder, compute)
    project = cinder.project_id
    chosen = restore.choose(restore.find_sets(cinder.list_backups(),
                                              project), server=server_id)
    result = runner.run(chosen, project, 'bench-r-' + uuid.uuid4().hex[:6],
                        flavor='cloud.tiny' if boot else None,
                        networks='none')
    api = client.Api(cloud, 'demo')
    # The restore's own time: volumes, and the server ACTIVE.
    seconds = result.seconds
    if boot:
        said = real_stack._console(api, result.server_id, sorted(markers))
        read = {d: m for d, (how, m) in said['markers'].items()
                if how == 'READ'}
        if read != markers:
            raise AssertionError('restored %s: read %s, wrote %s' % (
                result.server_id, read, markers))
        api.delete_server(result.server_id)
    for vol in result.volumes:
        api.call('cinder', 'DELETE', api.project_path(
            '/volumes/%s' % vol['volume_id']), ok=None)
    return seconds


def measure(cloud, rounds=4, restores=2):
    api = client.Api(cloud, 'demo')
    server, markers = real_stack._guest_server(api)
    answers, copied, kinds = [], [], []
    for _ in range(rounds):
        answer, done, incremental = _backup_round(api, server['id'],
                                                  len(markers))
        answers.append(answer)
        copied.append(done)
        kinds.append(incremental)
    volumes_only = [_restore(cloud, server['id'], markers, False)
                    for _ in range(restores)]
    with_server = [_restore(cloud, server['id'], markers, True)
                   for _ in range(restores)]
    return {
        'createBackup_answer_p50': bench_cloud.pct(answers, 0.5),
        'createBackup_answer_max': round(max(answers), 2),
        'copies_available_s': [round(v, 1) for v in copied],
        'copies_incremental': kinds,
        'restore_volumes_s': [round(v, 1) for v in volumes_only],
        'restore_server_active_s': [round(v, 1) for v in with_server],
    }


def main(argv=None):
    parser = argparse.ArgumentParser(prog='python -m bench.copies')
    parser.add_argument('-n', type=int, default=4,
                        help='createBackup rounds (the first full)')
    parser.add_argument('-m', type=int, default=2,
                        help='restores of each kind')
    args = parser.parse_args(argv)
    cloud = launcher.Cloud(stack='real')
    cloud.start()
    try:
        row = {'start_s': cloud.timings['start'], 'warm': cloud.warm}
        row.update(measure(cloud, args.n, args.m))
    finally:
        cloud.stop()
    print(json.dumps(row, indent=1))
    return 0


if __name__ == '__main__':
    sys.exit(main())
