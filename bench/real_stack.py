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

"""Figures on the real stack (doc/source/benchmark.rst, issue 34).

One cloud on Ceph and libvirt/QEMU per Glance store (``file``, ``rbd``),
with two nova-apis on it: the plugin's and a stock one
(:meth:`~nova_snapshot_ext.embedded.cloud.launcher.Cloud.
start_stock_nova_api`), so the two are measured interleaved on the same
Cinder, Glance, compute and moment, never in separate runs.  On one
running marker guest (root and data volume, QEMU guest agent):

* ``createImage`` N times per nova-api, alternating which goes first:
  the call, and until the image is active;
* M times per nova-api: from the ``createImage`` call until a second
  guest booted from the image has read both markers on its console;
* the cloud's start (warm, or cold then warm with ``--cold``) and the
  memory of every process it runs (RSS from ``/proc``: its process
  groups, and the guests' QEMU).

Prints JSON.  ``python -m bench.real_stack [--stores file,rbd] [-n 20]
[-m 3] [--cold]`` from the ``cloud`` tox env (the Debian packages of
doc/source/cloud.rst installed).
"""

import argparse
import json
import os
import shutil
import sys
import time
import uuid

from nova_snapshot_ext.embedded.cloud import client
from nova_snapshot_ext.embedded.cloud import guest
from nova_snapshot_ext.embedded.cloud import launcher

from bench import cloud as bench_cloud

CONSOLE_TIMEOUT = 240.0


class _NovaAt(object):
    """The cloud as seen through another nova-api endpoint."""

    def __init__(self, cloud, nova_url):
        self.cloud = cloud
        self.nova_url = nova_url
        self.ids = cloud.ids

    def url(self, name):
        return self.nova_url if name == 'nova' else self.cloud.url(name)

    def session(self, user):
        return self.cloud.session(user)


def _console(api, server_id, disks):
    return api.wait('console of %s' % server_id,
                    lambda: guest.read_console(api.console(server_id)),
                    lambda s: s['done'] and set(disks) <= set(s['markers']),
                    timeout=CONSOLE_TIMEOUT)


def _guest_server(api):
    server, _root, _data = api.boot_on_volumes(
        'bench-' + uuid.uuid4().hex[:8], api.cloud.ids['images']['guest'])
    said = _console(api, server['id'], ('vda', 'vdb'))
    return server, {d: m for d, (_how, m) in said['markers'].items()}


def _create_image(api, server_id):
    """``(call seconds, active seconds, image id)``."""
    started = time.monotonic()
    resp = api.action(server_id, {'createImage': {
        'name': 'bench-' + uuid.uuid4().hex[:8]}})
    call = time.monotonic() - started
    image_id = resp.json()['image_id']
    api.wait('image %s' % image_id, lambda: api.image(image_id),
             lambda i: i['status'] == 'active', failed=('killed', 'deleted'))
    return call, time.monotonic() - started, image_id


def _round_trip(api, server_id, markers):
    """Seconds from createImage until a new guest read every marker."""
    started = time.monotonic()
    _call, _active, image_id = _create_image(api, server_id)
    snapshots = [m['snapshot_id'] for m in json.loads(
        api.image(image_id)['block_device_mapping'])]
    for snapshot_id in snapshots:
        api.wait('snapshot %s' % snapshot_id,
                 lambda: api.snapshot(snapshot_id),
                 lambda s: s['status'] == 'available')
    booted = api.boot('bench-copy-' + uuid.uuid4().hex[:6], image=image_id)
    said = _console(api, booted['id'], sorted(markers))
    seconds = time.monotonic() - started
    read = {d: m for d, (how, m) in said['markers'].items() if how == 'READ'}
    if read != markers:
        raise AssertionError('image %s: read %s, wrote %s' % (
            image_id, read, markers))
    api.delete_server(booted['id'])
    return seconds


def rss_mb(cloud):
    """Memory of every process of the cloud: ``{name: MB}`` and total.

    The members of each started process group, the QEMU processes of the
    guests (their pid files under the cloud's directory), and any other
    process whose command line names that directory (Glance, RabbitMQ).
    """
    groups = {s.pid: s.name for s in cloud.procs.services if s.pid}
    qemu_run = os.path.join(cloud.base_dir, 'libvirt', 'run', 'qemu')
    qemu = set()
    for name in os.listdir(qemu_run) if os.path.isdir(qemu_run) else ():
        if name.endswith('.pid'):
            with open(os.path.join(qemu_run, name)) as fh:
                qemu.add(int(fh.read().split()[0]))
    found = {}
    for pid in os.listdir('/proc'):
        if not pid.isdigit():
            continue
        try:
            with open('/proc/%s/stat' % pid) as fh:
                pgrp = int(fh.read().rsplit(')', 1)[1].split()[2])
            with open('/proc/%s/status' % pid) as fh:
                rss = [int(line.split()[1]) for line in fh
                       if line.startswith('VmRSS:')]
            with open('/proc/%s/cmdline' % pid, 'rb') as fh:
                cmdline = fh.read().decode('utf-8', 'replace').split('\0')
        except (OSError, ValueError, IndexError):
            continue
        name = groups.get(pgrp) or ('qemu (guests)' if int(pid) in qemu
                                    else None)
        if name is None and cloud.base_dir in ' '.join(cmdline):
            name = 'glance' if 'glance' in ' '.join(cmdline) else \
                os.path.basename(cmdline[0]) or 'other'
            if 'rabbit' in ' '.join(cmdline) or name in ('beam.smp',
                                                         'epmd'):
                name = 'rabbitmq'
            elif name not in ('glance',):
                name = 'other: ' + name
        if name and rss:
            found[name] = found.get(name, 0) + rss[0]
    result = {k: round(v / 1024.0) for k, v in sorted(found.items())}
    result['total'] = sum(result.values())
    return result


def measure(cloud, images=20, trips=3):
    """Interleaved plugin / stock Nova figures on one running cloud."""
    stock_url = cloud.start_stock_nova_api()
    apis = {'plugin': client.Api(cloud, 'demo'),
            'stock': client.Api(_NovaAt(cloud, stock_url), 'demo')}
    server, markers = _guest_server(apis['plugin'])
    figures = {v: {'call': [], 'active': [], 'round_trip': []}
               for v in apis}
    for i in range(images):
        order = ('plugin', 'stock') if i % 2 == 0 else ('stock', 'plugin')
        for variant in order:
            call, active, _image = _create_image(apis[variant], server['id'])
            figures[variant]['call'].append(call)
            figures[variant]['active'].append(active)
    for i in range(trips):
        order = ('plugin', 'stock') if i % 2 == 0 else ('stock', 'plugin')
        for variant in order:
            figures[variant]['round_trip'].append(
                _round_trip(apis[variant], server['id'], markers))
    memory = rss_mb(cloud)
    result = {}
    for variant, values in figures.items():
        result[variant] = {
            'createImage_call_p50': bench_cloud.pct(values['call'], 0.5),
            'createImage_call_p95': bench_cloud.pct(values['call'], 0.95),
            'createImage_active_p50': bench_cloud.pct(values['active'],
                                                      0.5),
            'createImage_active_p95': bench_cloud.pct(values['active'],
                                                      0.95),
            'round_trip_s': [round(v, 1) for v in values['round_trip']],
        }
    result['memory_mb'] = memory
    return result


def main(argv=None):
    parser = argparse.ArgumentParser(prog='python -m bench.real_stack')
    parser.add_argument('--stores', default='file,rbd',
                        help='Glance stores, comma separated')
    parser.add_argument('--cold', action='store_true',
                        help='remove the template first (one cold start)')
    parser.add_argument('-n', type=int, default=20,
                        help='createImage calls per nova-api')
    parser.add_argument('-m', type=int, default=3,
                        help='round trips per nova-api')
    args = parser.parse_args(argv)
    if args.cold:
        shutil.rmtree(launcher.template_dir(), ignore_errors=True)
    result = {}
    for store in args.stores.split(','):
        cloud = launcher.Cloud(stack='real', glance_store=store)
        cloud.start()
        try:
            row = {'start_s': cloud.timings['start'], 'warm': cloud.warm,
                   'timings': dict(cloud.timings)}
            row.update(measure(cloud, args.n, args.m))
        finally:
            started = time.monotonic()
            cloud.stop()
            row['stop_s'] = round(time.monotonic() - started, 1)
        result[store] = row
        print(json.dumps({store: row}), file=sys.stderr, flush=True)
    print(json.dumps(result, indent=1))
    return 0


if __name__ == '__main__':
    sys.exit(main())
