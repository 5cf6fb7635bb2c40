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

"""What one piece of the plugin's work costs where it runs.

``python -m bench.ablate --mappings 50 --n 150``

A profiler's figures for small functions are inflated by the profiler,
and a function timed alone in a loop runs with warm caches: neither says
what it costs inside a snapshot, between two HTTP calls.  Here the
plugin's snapshot runs as :mod:`bench.cpu` runs it (one process, this
thread's CPU, call by call) in several variants, interleaved with the
floor, each variant with one piece of work replaced by nothing:

``plugin``
    the snapshot as shipped;
``no-mappings-json``
    the ``block_device_mapping`` JSON text handed over ready-made (the
    floor's own, built once) instead of encoded from the entries;
``no-request-check``
    :meth:`~nova_snapshot_ext.snapshot.request.SnapshotRequest.validate`
    skipped (the request was checked when it was built);
``floor``
    the two HTTP calls alone (:class:`bench.paths.FloorPath`).

The difference between ``plugin`` and a variant is what that piece costs
in place.  The variants are measurements only: an image they register is
the same image (the record differs in nothing Glance checks).  Not part
of ``tox -e bench``; run it in the bench env.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import typing as ty

from bench import paths
from bench import run as bench_run

#: The variants, in the order they run and are printed.
VARIANTS = ('plugin', 'no-mappings-json', 'no-request-check', 'floor')


def main(argv: list[str] | None = None) -> int:
    from nova_snapshot_ext.embedded import glance as embedded
    from nova_snapshot_ext.snapshot import metadata
    from nova_snapshot_ext.snapshot import request as request_mod

    parser = argparse.ArgumentParser(
        prog='python -m bench.ablate', description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--mappings', type=int, default=50,
                        help='mappings per snapshot (default: %(default)s)')
    parser.add_argument('--n', type=int, default=150,
                        help='snapshots per variant (default: %(default)s)')
    args = parser.parse_args(argv)
    if args.n < 1 or args.mappings < 1:
        parser.error('--n and --mappings must be >= 1')

    sample, project, user = bench_run.sample_request()
    request = bench_run.scale_request(sample, args.mappings, None)
    template = bench_run.build_template(request)
    ready_json = template['properties']['block_device_mapping']
    encode = metadata._MAPPINGS_JSON
    validate = request_mod.SnapshotRequest.validate

    def patches(variant: str) -> list[tuple[ty.Any, str, ty.Any]]:
        if variant == 'no-mappings-json':
            return [(metadata, '_MAPPINGS_JSON', lambda mappings: ready_json)]
        if variant == 'no-request-check':
            return [(request_mod.SnapshotRequest, 'validate',
                     lambda self: None)]
        return []

    load0 = os.getloadavg()
    glance = embedded.from_profile('default', identity='token')
    runs: list[tuple[str, paths.BenchPath, list[float]]] = []
    with glance:
        for variant in VARIANTS:
            runs.append((variant, bench_run.local_path(
                'floor' if variant == 'floor' else 'plugin',
                glance.endpoint, request, project, user,
                'ablate-%s-' % variant, template=template), []))
        for i in range(args.n):
            for variant, path, times in runs:
                prepared = path.prepare(3 + i)
                replaced = patches(variant)
                for owner, attr, value in replaced:
                    setattr(owner, attr, value)
                try:
                    t0 = time.thread_time_ns()
                    path.snapshot(prepared)
                    times.append((time.thread_time_ns() - t0) / 1e6)
                finally:
                    metadata._MAPPINGS_JSON = encode
                    request_mod.SnapshotRequest.validate = validate
    medians = {v: statistics.median(t) for v, _p, t in runs}
    floor = medians['floor']
    print('%d mappings, N=%d per variant, interleaved call by call; load '
          'average %.1f at the start, %.1f at the end'
          % (args.mappings, args.n, load0[0], os.getloadavg()[0]))
    for variant in VARIANTS:
        saved = medians['plugin'] - medians[variant]
        print('%-18s %.2f ms  %.2fx the floor%s' % (
            variant, medians[variant], medians[variant] / floor,
            '' if variant in ('plugin', 'floor') else
            '  (the piece: %.2f ms, %.1f%% of the floor)'
            % (saved, 100.0 * saved / floor)))
    return 0


if __name__ == '__main__':
    sys.exit(main())
