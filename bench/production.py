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

"""The production-shape run: ``tox -e bench-production [-- --n 64]``.

Glance as clouds run it: on MariaDB (or PostgreSQL), with several
gunicorn workers, and as two glance-api nodes on one database.  For each
*shape* (``NxW``: N nodes of W workers each) one set of glance-api
processes is started on a fresh clone of the migrated template database;
every path (the plugin, Nova's own path, the HTTP floor) gets the same
pool of client processes (at most ``--processes``, each with its own
keystoneauth1 session, as many nova-api workers would), and the batches
of every (path, concurrency) run interleaved, the order rotating, one
batch at a time.  A batch of concurrency ``c`` is spread over
``min(c, processes)`` client processes, ``c / processes`` threads each;
with two nodes, the client processes alternate between them (a load
balancer's round robin, at connection level).

Per batch: its wall-clock time (from the first command sent to the last
answer), each snapshot's latency, the client processes' CPU, the CPU of
every glance-api process (master and workers, all nodes) and of the
database server (``/proc``, one clock tick resolution), and the requests
Glance logged (gunicorn's access log of every node, read up to a marker
request after the batch).  After each shape the images of every worker
are counted by status: every one must be ``active``.
"""

from __future__ import annotations

import argparse
import collections
import datetime
import json
import math
import os
import sys
import time
import typing as ty

from bench import report
from bench import run as bench_run

#: Paths of the production-shape run: the plugin, Nova's, the floor.
PATHS = ('plugin', 'nova', 'floor')


def parse_shape(text: str) -> tuple[int, int]:
    """``"2x4"`` -> ``(2, 4)``: nodes, gunicorn workers per node.

    :raises argparse.ArgumentTypeError: not ``NxW`` with 1 <= N <= 4 and
        1 <= W <= 16.
    """
    try:
        nodes, workers = (int(x) for x in text.lower().split('x'))
    except ValueError:
        raise argparse.ArgumentTypeError(
            'a shape is NODESxWORKERS, e.g. 1x4 or 2x2, not %r' % text)
    if not (1 <= nodes <= 4 and 1 <= workers <= 16):
        raise argparse.ArgumentTypeError(
            'shape %r: 1 to 4 nodes of 1 to 16 workers' % text)
    return nodes, workers


def shape_name(shape: tuple[int, int]) -> str:
    """``(2, 4)`` -> ``"2x4"``."""
    return '%dx%d' % shape


def spread(count: int, concurrency: int,
           processes: int) -> list[tuple[int, int]]:
    """How a batch is spread over client processes.

    :param count: snapshots in the batch.
    :param concurrency: client threads in all.
    :param processes: client processes available.
    :returns: ``[(snapshots, threads), ...]`` per process used, the
        processes in order; snapshots and threads add up to ``count`` and
        ``concurrency`` (threads capped by a process's snapshots).
    """
    used = max(1, min(concurrency, processes, count))
    out = []
    for i in range(used):
        share = count // used + (1 if i < count % used else 0)
        threads = concurrency // used + (1 if i < concurrency % used else 0)
        out.append((share, max(1, min(threads, share))))
    return out


class Shape:
    """The glance-api nodes of one shape, on one database server.

    :param nodes: glance-api nodes sharing one database and store.
    :param workers: gunicorn workers per node.
    :param database: a started database server
        (:mod:`nova_snapshot_ext.embedded.database`).
    """

    def __init__(self, nodes: int, workers: int, database: ty.Any):
        from nova_snapshot_ext.embedded import glance as embedded

        first = embedded.from_profile('default', identity='token',
                                      access_log=True, database=database,
                                      workers=workers)
        self.glances = [first] + [
            embedded.from_profile('default', identity='token',
                                  access_log=True, workers=workers,
                                  shared_with=first)
            for _ in range(nodes - 1)]
        self.database = database
        self.logs: list[bench_run.AccessLog] = []

    def __enter__(self) -> 'Shape':
        started = []
        try:
            for glance in self.glances:
                glance.start()
                started.append(glance)
        except BaseException:
            for glance in reversed(started):
                glance.stop()
            raise
        self.logs = [bench_run.AccessLog(g.access_log_file, g.endpoint)
                     for g in self.glances]
        self.requests()  # the start-up health checks
        return self

    def __exit__(self, *exc_info: ty.Any) -> None:
        for glance in reversed(self.glances):
            glance.stop()

    @property
    def endpoints(self) -> list[str]:
        return [g.endpoint for g in self.glances]

    def requests(self) -> list[tuple[str, int]]:
        """Requests every node logged since the last call."""
        return [r for log in self.logs for r in log.take()]

    def cpu_s(self) -> dict[str, float | None]:
        """CPU seconds so far of the glance-api processes and the database.

        ``None`` where ``/proc`` cannot tell.
        """
        glance: float | None = 0.0
        for g in self.glances:
            value = bench_run.process_tree_cpu_s(g.pid)
            glance = None if value is None or glance is None else (
                glance + value)
        return {'glance': glance,
                'database': bench_run.process_tree_cpu_s(
                    getattr(self.database, 'pid', None))}


def _delta(after: float | None, before: float | None) -> float | None:
    return None if after is None or before is None else after - before


def run_shape(args: argparse.Namespace, shape: tuple[int, int],
              database: ty.Any, setup: ty.Mapping[str, ty.Any],
              logs: str, doc: dict[str, ty.Any]) -> None:
    """Run every (path, concurrency) of one shape into ``doc``."""
    name = shape_name(shape)
    jobs = [(p, c) for c in args.concurrency for p in args.paths]
    with Shape(shape[0], shape[1], database) as glance:
        doc['shapes'][name] = {'nodes': shape[0], 'workers': shape[1],
                               'endpoints': glance.endpoints}
        pools: dict[str, list[bench_run.WorkerProcess]] = {}
        try:
            for p in args.paths:
                pools[p] = []
                for i in range(args.processes):
                    spec = dict(setup, path=p,
                                endpoint=glance.endpoints[
                                    i % len(glance.endpoints)],
                                concurrency=max(
                                    1, max(args.concurrency)
                                    // args.processes + 1),
                                prefix='bench-prod-%s-%s-p%d-' % (name, p,
                                                                  i))
                    proc = bench_run.WorkerProcess(spec, os.path.join(
                        logs, '%s-%s-p%d.log' % (name, p, i)))
                    if not proc.ready.get('ready'):
                        proc.kill()
                        raise RuntimeError('path %s did not start: %s' % (
                            p, proc.ready.get('error')))
                    pools[p].append(proc)
            glance.requests()
            # One snapshot per client process first (the plugin discovers
            # the capabilities there), then the warm-up and steady batches.
            for p, pool in pools.items():
                for proc in pool:
                    proc.batch(1, 1)
            plan = bench_run.schedule(jobs, args.n, args.batch,
                                      args.warmup)
            plan = [step for step in plan if step[3] != 'first']
            glance.requests()
            for i, (p, c, count, phase) in enumerate(plan):
                parts = spread(count, c, args.processes)
                cpu0 = glance.cpu_s()
                wall0 = time.perf_counter()
                for proc, (k, threads) in zip(pools[p], parts):
                    proc.send(proc.batch_command(k, threads))
                answers = [proc.receive() for proc, _ in zip(pools[p],
                                                             parts)]
                wall = time.perf_counter() - wall0
                cpu1 = glance.cpu_s()
                batch = {
                    'shape': name, 'path': p, 'concurrency': c,
                    'count': count, 'phase': phase, 'wall_s': wall,
                    'processes': len(parts),
                    'latencies_s': [x for a in answers
                                    for x in a['latencies_s']],
                    'errors': [e for a in answers for e in a['errors']],
                    'cpu_s': sum(a['cpu_s'] for a in answers),
                    'glance_cpu_s': _delta(cpu1['glance'], cpu0['glance']),
                    'database_cpu_s': _delta(cpu1['database'],
                                             cpu0['database']),
                    'requests': glance.requests()}
                doc['batches'].append(batch)
                print('[%s %3d/%d] %-6s c=%-2d %-6s %3d snapshots %6.2f s '
                      '%d errors' % (name, i + 1, len(plan), p, c, phase,
                                     count, wall,
                                     sum(1 for e in batch['errors'] if e)),
                      file=sys.stderr, flush=True)
        finally:
            for pool in pools.values():
                for proc in pool:
                    proc.kill()
        prefixes = {'%s/%s' % (name, p): 'bench-prod-%s-%s-' % (name, p)
                    for p in args.paths}
        doc['images'].update(bench_run.count_statuses(
            glance.endpoints[0], setup['token'], prefixes))


def summarise(doc: ty.Mapping[str, ty.Any]) -> dict[str, dict[str, ty.Any]]:
    """Figures per ``"shape/path/cN"`` cell from the steady batches.

    :returns: cell -> ``throughput`` (snapshots/s), ``p50_ms``,
        ``p95_ms``, ``req_per_snapshot``, ``cpu_ms`` (client),
        ``glance_cpu_ms``, ``database_cpu_ms`` (per snapshot), ``ops``,
        ``errors``, ``error_samples``, ``images`` (status counts of the
        path's images in that shape, all concurrencies).
    """
    groups: dict[tuple[str, str, int], list[ty.Mapping[str, ty.Any]]] = (
        collections.defaultdict(list))
    for b in doc['batches']:
        if b['phase'] == 'steady':
            groups[(b['shape'], b['path'], b['concurrency'])].append(b)

    def per_op(key: str, batches: ty.Sequence[ty.Mapping[str, ty.Any]],
               ops: int) -> float:
        values = [b[key] for b in batches]
        if not ops or any(v is None for v in values):
            return math.nan
        return 1000.0 * sum(values) / ops

    cells = {}
    for (shape, path, c), batches in groups.items():
        latencies = [x for b in batches for x in b['latencies_s']]
        errors = [e for b in batches for e in b['errors'] if e]
        ops = len(latencies)
        wall = sum(b['wall_s'] for b in batches)
        cells['%s/%s/c%d' % (shape, path, c)] = {
            'shape': shape, 'path': path, 'concurrency': c, 'ops': ops,
            'throughput': ops / wall if wall else math.nan,
            'p50_ms': 1000.0 * report.percentile(latencies, 50),
            'p95_ms': 1000.0 * report.percentile(latencies, 95),
            'req_per_snapshot': sum(len(b['requests']) for b in batches)
            / ops if ops else math.nan,
            'http_errors': sum(1 for b in batches for r in b['requests']
                               if r[1] >= 400),
            'cpu_ms': per_op('cpu_s', batches, ops),
            'glance_cpu_ms': per_op('glance_cpu_s', batches, ops),
            'database_cpu_ms': per_op('database_cpu_s', batches, ops),
            'errors': len(errors), 'error_samples': errors[:3],
            'images': doc['images'].get('%s/%s' % (shape, path), {})}
    return cells


def verdicts(doc: ty.Mapping[str, ty.Any],
             cells: ty.Mapping[str, ty.Mapping[str, ty.Any]]
             ) -> list[dict[str, ty.Any]]:
    """The issue's targets, judged on this run.

    :returns: ``[{'target', 'met', 'value'}, ...]``: plugin throughput
        >= Nova's at every (shape, concurrency); the plugin's throughput
        at the highest concurrency growing with the workers of one node;
        0 errors; every image active; the plugin at the floor in requests.
    """
    out = []
    shapes, concurrencies = list(doc['shapes']), doc['concurrency']
    for shape in shapes:
        for c in concurrencies:
            plugin = cells.get('%s/plugin/c%d' % (shape, c))
            nova = cells.get('%s/nova/c%d' % (shape, c))
            if plugin and nova:
                ratio = plugin['throughput'] / nova['throughput']
                out.append({'target': 'plugin >= nova throughput, %s c=%d'
                            % (shape, c), 'met': ratio >= 1.0,
                            'value': '%.2fx' % ratio})
            floor = cells.get('%s/floor/c%d' % (shape, c))
            if plugin and floor:
                out.append({
                    'target': 'plugin requests = floor, %s c=%d' % (shape,
                                                                    c),
                    'met': plugin['req_per_snapshot']
                    <= floor['req_per_snapshot'] + 1e-9,
                    'value': '%.2f vs %.2f' % (plugin['req_per_snapshot'],
                                               floor['req_per_snapshot'])})
    one_node = sorted((doc['shapes'][s]['workers'], s) for s in shapes
                      if doc['shapes'][s]['nodes'] == 1)
    top = max(concurrencies)
    series = [(w, cells.get('%s/plugin/c%d' % (s, top), {}).get(
        'throughput', math.nan)) for w, s in one_node]
    if len(series) > 1:
        out.append({
            'target': 'plugin throughput grows with workers (c=%d)' % top,
            'met': all(b[1] > a[1] for a, b in zip(series, series[1:])),
            'value': ', '.join('%d: %.1f/s' % s for s in series)})
    errors = sum(cell['errors'] for cell in cells.values())
    out.append({'target': '0 errors', 'met': errors == 0,
                'value': str(errors)})
    statuses: collections.Counter[str] = collections.Counter()
    for counts in doc['images'].values():
        statuses.update(counts)
    out.append({'target': 'every image active', 'met': set(statuses) <= {
        'active'}, 'value': ', '.join('%s %d' % kv for kv in sorted(
            statuses.items()))})
    return out


def markdown(doc: ty.Mapping[str, ty.Any],
             cells: ty.Mapping[str, ty.Mapping[str, ty.Any]]) -> str:
    """The table (a row per shape, concurrency and path), then the targets."""
    m = doc['machine']
    lines = [
        '# Production shape, %s' % doc['date'], '',
        'Glance %s on %s; %d cores (%s), Python %s; source %s; load '
        'average %.1f at the start, %.1f at the end; N=%d steady snapshots '
        'per cell, batches of %d, up to %d client processes per path.' % (
            m['versions'].get('glance'), doc['database'], m['cores'],
            m['cpu_model'], m['python'], m['source'],
            m['loadavg_start'][0], m['loadavg_end'][0], doc['n'],
            doc['batch'], doc['processes']), '',
        '| shape | c | path | snapshots/s | p50 ms | p95 ms | requests | '
        'client CPU ms | Glance CPU ms | DB CPU ms | errors |',
        '|---|---|---|---|---|---|---|---|---|---|---|']
    for shape in doc['shapes']:
        for c in doc['concurrency']:
            for p in doc['paths']:
                cell = cells.get('%s/%s/c%d' % (shape, p, c))
                if cell is None:
                    continue
                lines.append(
                    '| %s | %d | %s | %.1f | %.0f | %.0f | %.2f | %.1f | '
                    '%.1f | %.1f | %d |' % (
                        shape, c, p, cell['throughput'], cell['p50_ms'],
                        cell['p95_ms'], cell['req_per_snapshot'],
                        cell['cpu_ms'], cell['glance_cpu_ms'],
                        cell['database_cpu_ms'], cell['errors']))
    lines += ['', '| target | met | value |', '|---|---|---|']
    lines += ['| %s | %s | %s |' % (
        v['target'], 'yes' if v['met'] else 'NO', v['value'])
        for v in doc['verdicts']]
    return '\n'.join(lines) + '\n'


def chart(doc: ty.Mapping[str, ty.Any],
          cells: ty.Mapping[str, ty.Mapping[str, ty.Any]],
          path: str) -> str | None:
    """Throughput against shape into ``path`` (matplotlib, Agg).

    One panel per concurrency, one line per path.

    :returns: ``path``, or ``None`` without matplotlib.
    """
    try:
        import matplotlib
    except ImportError:
        return None
    matplotlib.use('Agg')
    from matplotlib import pyplot

    shapes = list(doc['shapes'])
    fig, axes = pyplot.subplots(
        1, len(doc['concurrency']), squeeze=False,
        figsize=(max(6.0, 4.2 * len(doc['concurrency'])), 4.2))
    for ax, c in zip(axes[0], doc['concurrency']):
        for p in doc['paths']:
            ax.plot(range(len(shapes)),
                    [cells.get('%s/%s/c%d' % (s, p, c), {}).get(
                        'throughput', math.nan) for s in shapes],
                    marker='o', label=p)
        ax.set_title('concurrency %d' % c)
        ax.set_xticks(range(len(shapes)))
        ax.set_xticklabels(['%s %s' % (
            doc['shapes'][s]['nodes'], 'node' if doc['shapes'][s]['nodes']
            == 1 else 'nodes') + '\nx%d workers' % doc['shapes'][s]['workers']
            for s in shapes], fontsize=8)
        ax.set_ylabel('snapshots / s')
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
    axes[0][0].legend()
    machine = doc['machine']
    fig.suptitle('Snapshots/s, Glance %s on %s, %s UTC\n%d cores, load '
                 'average %.1f to %.1f' % (
                     machine['versions'].get('glance'), doc['database'],
                     doc['date'][:16].replace('T', ' '), machine['cores'],
                     machine['loadavg_start'][0], machine['loadavg_end'][0]),
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    pyplot.close(fig)
    return path


def run(args: argparse.Namespace) -> dict[str, ty.Any]:
    """Every shape, one after the other; returns the results document."""
    from nova_snapshot_ext.embedded import database as embedded_db
    from nova_snapshot_ext.embedded import tokenauth

    stamp = datetime.datetime.now(datetime.timezone.utc)
    run_id = stamp.strftime('%Y%m%d-%H%M%S')
    logs = os.path.join(args.output_dir, 'logs-production-%s' % run_id)
    os.makedirs(logs, exist_ok=True)
    request, project, user = bench_run.sample_request()
    roles = list(bench_run.ROLES)
    setup = {'token': tokenauth.make_token(user, project, roles),
             'project_id': project, 'user_id': user, 'roles': roles,
             'template': bench_run.build_template(request),
             'request': request, 'location_url': '', 'glance_db': ''}
    doc: dict[str, ty.Any] = {
        'date': stamp.isoformat(timespec='seconds'), 'run_id': run_id,
        'machine': bench_run.machine(), 'database': args.database,
        'n': args.n, 'batch': args.batch, 'warmup': args.warmup,
        'processes': args.processes, 'paths': list(args.paths),
        'concurrency': list(args.concurrency), 'shapes': {},
        'batches': [], 'images': {}, 'logs': logs}
    database = embedded_db.shared_server(args.database)
    for shape in args.shapes:
        run_shape(args, shape, database, setup, logs, doc)
    doc['machine']['loadavg_end'] = os.getloadavg()
    return doc


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog='python -m bench.production',
        description='The plugin, Nova\'s own path and the HTTP floor on '
                    'production-shaped Glance: a real database, several '
                    'workers, two nodes, many client processes.')
    parser.add_argument('--shapes', nargs='+', type=parse_shape,
                        default=[(1, 1), (1, 2), (1, 4), (2, 2)],
                        help='NODESxWORKERS per shape (default: 1x1 1x2 '
                             '1x4 2x2)')
    parser.add_argument('--concurrency', type=int, nargs='+',
                        default=[1, 16, 64],
                        help='client threads in all (default: 1 16 64)')
    parser.add_argument('--processes', type=int, default=8,
                        help='client processes per path; a batch uses '
                             'min(concurrency, this) of them (default: '
                             '%(default)s)')
    parser.add_argument('--n', type=int, default=128,
                        help='steady snapshots per (shape, path, '
                             'concurrency) (default: %(default)s)')
    parser.add_argument('--batch', type=int, default=32,
                        help='snapshots per batch; raised to 2 x the '
                             'concurrency where smaller (default: '
                             '%(default)s)')
    parser.add_argument('--warmup', type=int, default=1,
                        help='warm-up batches per cell (default: '
                             '%(default)s)')
    parser.add_argument('--paths', nargs='+', default=list(PATHS),
                        choices=list(PATHS),
                        help='paths (default: all three)')
    parser.add_argument('--database', default='mariadb',
                        choices=['mariadb', 'postgresql'],
                        help="Glance's database (default: %(default)s)")
    parser.add_argument('--output-dir', default='bench-results',
                        help='where the JSON, markdown and PNG go '
                             '(default: %(default)s)')
    args = parser.parse_args(argv)
    if (args.n < 1 or args.batch < 1 or args.warmup < 0
            or args.processes < 1 or min(args.concurrency) < 1):
        parser.error('--n, --batch, --processes and the concurrencies must '
                     'be >= 1, --warmup >= 0')
    return args


def main(argv: list[str] | None = None) -> int:
    """Run, write ``bench-production-<date>.{json,md,png}``, print them.

    :returns: 0, or 1 when a target was not met (the files are written
        either way).
    """
    args = parse_args(argv)
    from nova_snapshot_ext.embedded import database as embedded_db

    try:
        os.makedirs(args.output_dir, exist_ok=True)
        probe = os.path.join(args.output_dir, '.writable')
        with open(probe, 'w', encoding='utf-8'):
            pass
        os.unlink(probe)
    except OSError as err:
        print('--output-dir %s is not writable: %s'
              % (args.output_dir, err), file=sys.stderr)
        return 2
    reason = embedded_db.missing(args.database)
    if reason:
        print('cannot run the production shape: %s' % reason,
              file=sys.stderr)
        return 2
    doc = run(args)
    cells = summarise(doc)
    doc['cells'] = cells
    doc['verdicts'] = verdicts(doc, cells)
    base = os.path.join(args.output_dir, 'bench-production-%s' %
                        doc['run_id'])
    with open(base + '.json', 'w', encoding='utf-8') as f:
        json.dump(doc, f, indent=1, sort_keys=True)
    table = markdown(doc, cells)
    with open(base + '.md', 'w', encoding='utf-8') as f:
        f.write(table)
    written = [base + '.json', base + '.md']
    png = chart(doc, cells, base + '.png')
    if png:
        written.append(png)
    print(table)
    print('wrote %s' % ', '.join(written))
    missed = [v['target'] for v in doc['verdicts'] if not v['met']]
    if missed:
        print('%d target(s) not met (exit 1: a measurement, not a crash; '
              'a small --n is noisy): %s' % (len(missed), '; '.join(missed)),
              file=sys.stderr)
    return 1 if missed else 0


if __name__ == '__main__':
    sys.exit(main())
