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

"""How long Glance's ``location_import`` takes (``bench.location_timing``).

Measures what the location-mode poll schedule
(:func:`nova_snapshot_ext.image.locations.poll_delays`) is fitted to: on
one embedded real Glance (profile ``http-store``), ``c`` threads each
create a queued image, ``POST /v2/images/{id}/locations`` the valid empty
qcow2 served on loopback (with sha512 validation data, as the plugin
sends), then read the image every 5 ms until it is ``active``.  Reported:
the time from the 202 to the first read that saw ``importing`` and to the
first that saw ``active`` (p10/p50/p90/max, ms), per concurrency.

The 5 ms reads add load of their own, so the figures at concurrency 16
are an upper bound of what a gentler poller sees.  Not part of the test
run or of ``tox -e bench``; run it in the bench env::

    .tox/bench/bin/python -m bench.location_timing --n 40 --concurrency 1 16
"""

from __future__ import annotations

import argparse
import concurrent.futures
import hashlib
import json
import sys
import time
import typing as ty
import uuid

from bench import paths
from bench import report

_READ_EVERY_S = 0.005


def _one(session: ty.Any, endpoint: str, url: str,
         validation: dict[str, str],
         every: float = _READ_EVERY_S) -> dict[str, ty.Any]:
    resp = session.post(endpoint + '/v2/images', json={
        'name': 'timing-%s' % uuid.uuid4().hex[:8], 'disk_format': 'qcow2',
        'container_format': 'bare'})
    image_id = resp.json()['id']
    resp = session.post(endpoint + '/v2/images/%s/locations' % image_id,
                        json={'url': url, 'validation_data': validation},
                        raise_exc=False)
    accepted = time.perf_counter()
    if resp.status_code != 202:
        return {'error': 'POST locations answered %d' % resp.status_code}
    seen: dict[str, float] = {}
    reads = 0
    while time.perf_counter() - accepted < 60:
        status = session.get(endpoint + '/v2/images/%s' % image_id).json()[
            'status']
        reads += 1
        seen.setdefault(status, time.perf_counter() - accepted)
        if status == 'active':
            break
        time.sleep(every)
    return {'seen_s': seen, 'reads': reads}


def measure(n: int, concurrency: int, session: ty.Any, endpoint: str,
            url: str, validation: dict[str, str],
            every: float = _READ_EVERY_S) -> dict[str, ty.Any]:
    """``n`` location activations on ``concurrency`` threads."""
    with concurrent.futures.ThreadPoolExecutor(concurrency) as pool:
        results = list(pool.map(
            lambda _: _one(session, endpoint, url, validation, every),
            range(n)))
    out: dict[str, ty.Any] = {'concurrency': concurrency, 'n': n,
                              'read_every_ms': 1000.0 * every,
                              'reads': report.percentile(
                                  [r.get('reads', 0) for r in results], 50),
                              'errors': [r['error'] for r in results
                                         if 'error' in r]}
    for status in ('queued', 'importing', 'active'):
        values = [1000.0 * r['seen_s'][status] for r in results
                  if status in r.get('seen_s', {})]
        out[status + '_ms'] = {
            'count': len(values),
            'p10': report.percentile(values, 10),
            'p50': report.percentile(values, 50),
            'p90': report.percentile(values, 90),
            'max': max(values) if values else None}
    return out


def main(argv: list[str] | None = None) -> int:
    from nova_snapshot_ext.embedded import demo
    from nova_snapshot_ext.embedded import glance as embedded
    from nova_snapshot_ext.embedded import tokenauth
    from nova_snapshot_ext.image import payloads

    parser = argparse.ArgumentParser(prog='python -m bench.location_timing')
    parser.add_argument('--n', type=int, default=40)
    parser.add_argument('--concurrency', type=int, nargs='+',
                        default=[1, 16])
    parser.add_argument('--no-validation-data', action='store_true',
                        help='send no validation_data ([snapshot_ext] '
                             'location_hash_algo = none)')
    parser.add_argument('--every-ms', type=float, nargs='+', default=[5.0],
                        help='read the image every this many ms (each '
                             'value measured in turn)')
    args = parser.parse_args(argv)
    data = payloads.payload('qcow2')
    validation = {'os_hash_algo': 'sha512',
                  'os_hash_value': hashlib.sha512(data).hexdigest()}
    if args.no_validation_data:
        validation = {}
    project, user = uuid.uuid4().hex, uuid.uuid4().hex
    token = tokenauth.make_token(user, project, ('member', 'reader'))
    objects = demo.ObjectServer({'/t/empty.qcow2': data})
    glance = embedded.from_profile('http-store', identity='token')
    results = []
    with objects, glance:
        session = paths.token_session(glance.endpoint, token)
        url = objects.url('/t/empty.qcow2')
        _one(session, glance.endpoint, url, validation)  # warm up
        for c in args.concurrency:
            for every in args.every_ms:
                results.append(measure(args.n, c, session, glance.endpoint,
                                       url, validation, every / 1000.0))
    print(json.dumps(results, indent=1))
    return 1 if any(r['errors'] for r in results) else 0


if __name__ == '__main__':
    sys.exit(main())
