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

"""Where a path's client CPU goes: ``python -m bench.profile``.

Sets one bench path up exactly as its worker does (:mod:`bench.paths`),
against an embedded real Glance (profile ``http-store``), makes the
first three snapshots unprofiled (capability discovery, glanceclient's
schema download, warm-up), then runs ``--n`` steady snapshots on one
thread under :mod:`cProfile` (timer: process CPU time, so waiting for
Glance does not count) and prints the top functions by own time and by
cumulative time, and the process CPU per snapshot with and without the
profiler.  Not part of the test run or of ``tox -e bench``; run it in
the bench env::

    .tox/bench/bin/python -m bench.profile --path plugin --n 200
    .tox/bench/bin/python -m bench.profile --path plugin --mappings 50
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import sys
import time

from bench import paths
from bench import run as bench_run


def main(argv: list[str] | None = None) -> int:
    from nova_snapshot_ext.embedded import demo
    from nova_snapshot_ext.embedded import glance as embedded
    from nova_snapshot_ext.image import payloads

    parser = argparse.ArgumentParser(
        prog='python -m bench.profile', description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--path', default='plugin', choices=list(paths.PATHS),
                        help='the path to profile (default: %(default)s)')
    parser.add_argument('--n', type=int, default=200,
                        help='profiled snapshots (default: %(default)s)')
    parser.add_argument('--top', type=int, default=25,
                        help='functions listed (default: %(default)s)')
    parser.add_argument('--mappings', type=int, default=None,
                        help='volume mappings per snapshot (default: the '
                             'sample request\'s)')
    parser.add_argument('--properties', type=int, default=None,
                        help='extra image properties per snapshot')
    parser.add_argument('--output', default=None,
                        help='also write the raw profile (pstats) here')
    args = parser.parse_args(argv)

    request, project, user = bench_run.sample_request()
    request = bench_run.scale_request(request, args.mappings,
                                      args.properties)
    objects = demo.ObjectServer({'/bench/empty.qcow2':
                                 payloads.payload('qcow2')})
    glance = embedded.from_profile('http-store', identity='token')
    with objects, glance:
        path = bench_run.local_path(
            args.path, glance.endpoint, request, project, user,
            'profile-%s-' % args.path,
            location_url=objects.url('/bench/empty.qcow2'),
            glance_db=os.path.join(glance.base_dir, 'glance.sqlite'))
        timings = {}
        for label, profiled in (('plain', False), ('profiled', True)):
            inputs = [path.prepare(i + 3 + (args.n if profiled else 0))
                      for i in range(args.n)]
            profiler = (cProfile.Profile(time.process_time) if profiled
                        else None)
            cpu0 = time.process_time()
            if profiler:
                profiler.enable()
            for prepared in inputs:
                path.snapshot(prepared)
            if profiler:
                profiler.disable()
            timings[label] = 1000.0 * (time.process_time() - cpu0) / args.n
    print('%s: client CPU %.2f ms/snapshot (%.2f under cProfile), N=%d' % (
        args.path, timings['plain'], timings['profiled'], args.n))
    assert profiler is not None
    if args.output:
        profiler.dump_stats(args.output)
    for key in ('tottime', 'cumulative'):
        out = io.StringIO()
        stats = pstats.Stats(profiler, stream=out)
        stats.strip_dirs().sort_stats(key).print_stats(args.top)
        print('\n'.join(line for line in out.getvalue().splitlines()
                        if line.strip())[:12000])
    return 0


if __name__ == '__main__':
    sys.exit(main())
