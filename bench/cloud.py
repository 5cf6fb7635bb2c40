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

"""End-to-end figures on the cloud in a box (doc/source/benchmark.rst).

Brings a cloud up twice (``--cold`` first removes the template: the first
start migrates everything; the second is warm) or measures one already
running (``--describe FILE``, the JSON of ``serve --cloud --format
json``), then on one volume-backed server (root and data volume):
``createImage`` N times (the API call, and until the image is active) and
boots M servers from those images (POST until ACTIVE).  Prints JSON.

    python -m bench.cloud [--profile no-raw] [--stock-nova] [--cold] \
        [-n 10] [-m 3] [--describe FILE]
"""

import argparse
import json
import shutil
import statistics
import sys
import time
import uuid

from nova_snapshot_ext.embedded.cloud import client
from nova_snapshot_ext.embedded.cloud import launcher


def pct(values, q):
    """The ``q`` quantile (0-1) of ``values`` (nearest rank), or None."""
    values = sorted(values)
    if not values:
        return None
    return round(values[min(len(values) - 1, int(q * len(values)))], 3)


def measure(cloud, images=10, boots=3):
    """createImage and boot-from-image times on ``cloud``.

    :returns: a dict of seconds lists and percentiles.
    """
    demo = client.Api(cloud, 'demo')
    tag = uuid.uuid4().hex[:8]
    server, _root, _data = demo.boot_on_volumes(
        'bench-' + tag, cloud.ids['images']['image'])
    calls, actives, made, failures = [], [], [], []
    for i in range(images):
        started = time.monotonic()
        resp = demo.call('nova', 'POST', '/servers/%s/action' % server['id'],
                         microversion=client.COMPUTE, ok=None,
                         json={'createImage': {'name': 'bench-%d' % i}})
        calls.append(time.monotonic() - started)
        if resp.status_code != 202:
            failures.append('%s %s' % (resp.status_code, resp.text[:200]))
            continue
        image_id = resp.json()['image_id']
        demo.wait('image', lambda: demo.image(image_id),
                  lambda img: img['status'] == 'active',
                  failed=('killed', 'deleted'))
        actives.append(time.monotonic() - started)
        made.append(image_id)
    boot_times = []
    for image_id in made[:boots]:
        started = time.monotonic()
        demo.boot('bench-from-' + tag, image=image_id)
        boot_times.append(time.monotonic() - started)
    return {
        'createImage_call_s': [round(v, 3) for v in calls],
        'createImage_active_s': [round(v, 3) for v in actives],
        'createImage_call_p50': pct(calls, 0.5),
        'createImage_active_p50': pct(actives, 0.5),
        'boot_from_image_s': [round(v, 3) for v in boot_times],
        'boot_from_image_median': (round(statistics.median(boot_times), 3)
                                   if boot_times else None),
        'failures': failures,
    }


def main(argv=None):
    parser = argparse.ArgumentParser(prog='python -m bench.cloud')
    parser.add_argument('--profile', default='default')
    parser.add_argument('--stock-nova', action='store_true')
    parser.add_argument('--cold', action='store_true',
                        help='remove the template first (a cold start), '
                        'then start again warm')
    parser.add_argument('-n', type=int, default=10, help='createImage calls')
    parser.add_argument('-m', type=int, default=3, help='boots')
    parser.add_argument('--describe', help='measure a running cloud')
    args = parser.parse_args(argv)
    result = {'profile': args.profile, 'plugin': not args.stock_nova}
    if args.describe:
        from tests.cloud import base

        result.update(measure(base._External(args.describe), args.n,
                              args.m))
        print(json.dumps(result, indent=1))
        return 0
    if args.cold:
        shutil.rmtree(launcher.template_dir(), ignore_errors=True)
        cloud = launcher.Cloud(profile=args.profile,
                               plugin=not args.stock_nova)
        cloud.start()
        result['cold_start_s'] = cloud.timings['start']
        result['cold_timings'] = dict(cloud.timings)
        started = time.monotonic()
        cloud.stop()
        result['stop_s'] = round(time.monotonic() - started, 1)
    cloud = launcher.Cloud(profile=args.profile, plugin=not args.stock_nova)
    cloud.start()
    try:
        result['warm_start_s' if cloud.warm else 'start_s'] = \
            cloud.timings['start']
        result['timings'] = dict(cloud.timings)
        result.update(measure(cloud, args.n, args.m))
    finally:
        cloud.stop()
    print(json.dumps(result, indent=1))
    return 0


if __name__ == '__main__':
    sys.exit(main())
