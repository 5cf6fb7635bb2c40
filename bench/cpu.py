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

"""Client CPU of two paths, interleaved call by call in one process.

``python -m bench.cpu --paths plugin floor --mappings 1 10 50 --n 200``

On a shared, loaded machine the wall clock and even a batch's process CPU
move with the neighbours (caches, frequency).  Here every path is set up
in this one process and the paths take turns snapshot by snapshot, each
call timed with ``time.thread_time`` (this thread's CPU, user + system,
nanoseconds; the calls run on the main thread, no other thread works):
whatever slows the machine slows both alike, and the median per call is
compared.  Prints, per workload, each path's median and p10/p90 CPU ms
per snapshot and the ratio of the first path's median to the second's,
plus the load average at the start and the end.  Not part of ``tox -e
bench``; run it in the bench env.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from bench import paths
from bench import run as bench_run


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q / 100.0 * len(ordered)))]


def main(argv: list[str] | None = None) -> int:
    from nova_snapshot_ext.embedded import demo
    from nova_snapshot_ext.embedded import glance as embedded
    from nova_snapshot_ext.image import payloads

    parser = argparse.ArgumentParser(
        prog='python -m bench.cpu', description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--paths', nargs=2, default=['plugin', 'floor'],
                        choices=list(paths.PATHS), metavar='PATH',
                        help='exactly two paths; the ratio is the first\'s '
                             'to the second\'s (default: plugin floor)')
    parser.add_argument('--mappings', type=int, nargs='+',
                        default=[1, 10, 50],
                        help='workloads: mappings per snapshot (default: '
                             '1 10 50)')
    parser.add_argument('--n', type=int, default=200,
                        help='snapshots per path and workload (default: '
                             '%(default)s)')
    parser.add_argument('--json', default=None,
                        help='also write the figures here')
    args = parser.parse_args(argv)

    sample, project, user = bench_run.sample_request()
    load0 = os.getloadavg()
    out: dict[str, dict[str, object]] = {}
    objects = demo.ObjectServer({'/bench/empty.qcow2':
                                 payloads.payload('qcow2')})
    glance = embedded.from_profile('http-store', identity='token')
    with objects, glance:
        for mappings in args.mappings:
            request = bench_run.scale_request(sample, mappings, None)
            runners = [(name, bench_run.local_path(
                name, glance.endpoint, request, project, user,
                'cpu-%s-m%d-' % (name, mappings),
                location_url=objects.url('/bench/empty.qcow2'),
                glance_db=os.path.join(glance.base_dir, 'glance.sqlite')),
                [])
                for name in args.paths]
            for i in range(args.n):
                for name, path, times in runners:
                    prepared = path.prepare(3 + i)
                    t0 = time.thread_time_ns()
                    path.snapshot(prepared)
                    times.append((time.thread_time_ns() - t0) / 1e6)
            row: dict[str, object] = {}
            for name, _path, times in runners:
                row[name] = {'p10': _pct(times, 10), 'p50': _pct(times, 50),
                             'p90': _pct(times, 90)}
            first, second = (row[n] for n in args.paths)
            row['ratio_p50'] = first['p50'] / second['p50']  # type: ignore
            out['m%d' % mappings] = row
            print('%d mappings: %s; %s/%s %.2fx' % (
                mappings, '; '.join(
                    '%s %.2f ms (p10 %.2f, p90 %.2f)' % (
                        n, row[n]['p50'], row[n]['p10'],  # type: ignore
                        row[n]['p90'])  # type: ignore
                    for n in args.paths),
                args.paths[0], args.paths[1], row['ratio_p50']), flush=True)
    load1 = os.getloadavg()
    print('load average %.1f/%.1f/%.1f at the start, %.1f/%.1f/%.1f at the '
          'end; N=%d per path and workload, interleaved call by call'
          % (load0 + load1 + (args.n,)))
    if args.json:
        with open(args.json, 'w', encoding='utf-8') as f:
            json.dump({'load_start': load0, 'load_end': load1,
                       'n': args.n, 'paths': args.paths, 'rows': out}, f,
                      indent=1)
    return 0


if __name__ == '__main__':
    sys.exit(main())
