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

"""Backups and audits at scale: ``tox -e bench-scale [-- ...]`` (issue 29).

One Glance (the embedded glance-api of this virtualenv, Glance 33 on
Python 3.11+, 2 gunicorn workers, fake-token identity, access log) on a
private MariaDB server, its database cloned from the migrated template.
Images are seeded straight into that database (:mod:`bench.seed`), so
100,000 take seconds, not hours.

*Rotation*: for each number of images visible to the caller (``--visible``,
default 100, 1,000, 10,000: the project's own private images, a tenth of
them plugin snapshots, and public images of another project), the
caller's server is backed up ``--rounds`` times through
:class:`~nova_snapshot_ext.backup.service.BackupService` (rotation large
enough to delete nothing: not timed), and after each backup
:meth:`~nova_snapshot_ext.backup.service.BackupService.rotate` with
rotation 2 is timed alone: its seconds (``time.perf_counter``) and the
requests Glance logged for it (gunicorn's access log, read up to a marker
request).  The volume snapshots of the deleted backup go to a recorder
standing in for Cinder (no Cinder runs here: only the Glance side of a
rotation is measured), so the rotation does everything it does with
Cinder credentials.

*Audit*: with the images of every project topped up to each ``--audit``
total (default 10,000 and 100,000), a child process runs
:func:`nova_snapshot_ext.audit.scan` as ``nova-snapshot-ext audit`` does
(admin, every project, ``--page-size``): seconds, images, pages (the
``GET /v2/images`` requests; Glance's log counts them too), and its memory
read from ``/proc/self/status`` after every page (``VmRSS``) and at the
end (``VmHWM``, the peak).

The machine's load average is recorded next to every figure (the machine
may be shared).  Results: ``bench-results/scale-<label>-<date>.json``;
``python -m bench.scale report A.json [B.json ...] --chart PNG`` prints
the reStructuredText table and draws the chart of one or more runs (e.g.
before and after a change).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import time
import typing as ty
import uuid

from bench import run as bench_run

#: Roles of the auditor (every project) and of the backups' owner.
ADMIN_ROLES = ('admin', 'member', 'reader')
MEMBER_ROLES = bench_run.ROLES

#: Of the caller's visible images: the share owned by the caller (the
#: rest are another project's public images).
OWN_SHARE = 0.7


def status_kib(key: str, pid: str = 'self') -> int | None:
    """``VmRSS``/``VmHWM`` (KiB) of a process, from ``/proc``."""
    try:
        with open('/proc/%s/status' % pid, encoding='ascii') as f:
            for line in f:
                if line.startswith(key + ':'):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def glance_client(endpoint: str, token: str) -> ty.Any:
    """A :class:`~nova_snapshot_ext.image.glance.GlanceClient` of ``token``."""
    from bench import paths
    from nova_snapshot_ext.image import glance as glance_mod

    return glance_mod.GlanceClient(paths.token_session(endpoint, token),
                                   endpoint_override=endpoint)


def audit_child(endpoint: str, token: str, page_size: int) -> dict:
    """Run the audit's scan in this process; its cost (JSON-able)."""
    from nova_snapshot_ext import audit

    auditor = audit.AuditGlance(glance_client(endpoint, token))
    samples: list[tuple[int, int | None]] = []

    def progress(report: audit.Report) -> None:
        samples.append((report.scanned, status_kib('VmRSS')))

    rss0 = status_kib('VmRSS')
    start = time.perf_counter()
    report = audit.scan(auditor, page_size=page_size, progress=progress)
    seconds = time.perf_counter() - start
    return {'seconds': seconds, 'scanned': report.scanned,
            # An audit before it counted pages: the log's count is used.
            'pages': getattr(report, 'pages', None),
            'snapshots': report.snapshots,
            'findings': len(report.findings),
            'rss_start_kib': rss0, 'rss_samples': samples,
            'peak_rss_kib': status_kib('VmHWM')}


class Recorder:
    """Stands in for Cinder: records the volume snapshots to delete."""

    def __init__(self) -> None:
        self.deleted: list[str] = []

    def delete_snapshot(self, snapshot_id: str, owner: str) -> str:
        from nova_snapshot_ext.cinder import client as cinder_mod

        self.deleted.append(snapshot_id)
        return cinder_mod.DELETED

    def get_snapshot(self, snapshot_id: str) -> dict | None:
        """Gone once deleted (as Cinder shows it after its delete)."""
        return None if snapshot_id in self.deleted else {
            'id': snapshot_id, 'status': 'available'}


class Backups:
    """One server's backups, made and rotated by the plugin.

    :param endpoint: Glance's URL.
    :param request: the sample request (its project is the caller).
    """

    def __init__(self, endpoint: str, request: dict[str, ty.Any]):
        from oslo_config import cfg

        from nova_snapshot_ext.backup import service as backup_mod
        from nova_snapshot_ext import driver as driver_mod
        from nova_snapshot_ext.embedded import tokenauth
        from nova_snapshot_ext import opts
        from nova_snapshot_ext.snapshot import request as request_mod
        from nova_snapshot_ext.snapshot import service as service_mod

        conf = cfg.ConfigOpts()
        opts.register_opts(conf)
        conf([], default_config_files=[], default_config_dirs=[])
        self.request = dict(request, backup_type='daily')
        project = request['server']['project_id']
        self.token = tokenauth.make_token(request['requester']['user_id'],
                                          project, MEMBER_ROLES)
        self.glance = glance_client(endpoint, self.token)
        self.service = backup_mod.BackupService(service_mod.SnapshotService(
            conf, driver=driver_mod.load_driver(conf, 'libvirt'),
            glance=self.glance))
        self.from_dict = request_mod.SnapshotRequest.from_dict
        self.cinder = Recorder()

    def backup(self) -> ty.Any:
        """A new active backup, nothing rotated (not timed)."""
        data = json.loads(json.dumps(self.request))
        for bdm in data['block_device_mappings']:
            if bdm.get('snapshot_id'):
                bdm['snapshot_id'] = str(uuid.uuid4())
        # Glance's created_at moves in whole seconds: one backup a second
        # keeps the rotation's order the order they were made.
        time.sleep(1.05)
        result = self.service.backup(self.from_dict(data), 1000,
                                     glance=self.glance)
        return result.snapshot

    def rotation(self, snapshot: ty.Any, log: bench_run.AccessLog
                 ) -> dict[str, ty.Any]:
        """Rotation 2 around ``snapshot``, timed and counted."""
        log.take()
        load = os.getloadavg()[0]
        start = time.perf_counter()
        result = self.service.rotate(snapshot, 'daily', 2, self.glance,
                                     self.cinder)
        seconds = time.perf_counter() - start
        requests = log.take()
        kinds: dict[str, int] = {}
        for request, _status in requests:
            kinds[request] = kinds.get(request, 0) + 1
        return {'seconds': seconds, 'requests': len(requests),
                'by_request': kinds, 'deleted': list(result.deleted),
                'snapshots_deleted': list(result.snapshots_deleted),
                'complete': result.complete, 'loadavg': load,
                # How the rotation proved no image names a snapshot (the
                # tag rotation says; absent before it).
                'snapshot_check': getattr(result, 'snapshot_check', None)}


def count_visible(endpoint: str, token: str) -> int:
    """Images ``token`` lists, hidden ones included (1,000 a page)."""
    from bench import paths

    session = paths.token_session(endpoint, token)
    total = 0
    for hidden in ('false', 'true'):
        url = '%s/v2/images?limit=1000&os_hidden=%s' % (endpoint, hidden)
        while url:
            body = session.get(url).json()
            total += len(body.get('images', []))
            url = ('%s%s' % (endpoint, body['next']) if body.get('next')
                   else '')
    return total


def tag_query_ms(endpoint: str, token: str, times: int = 21) -> float:
    """Median milliseconds of ``GET /v2/images?tag=<a tag no image has>``.

    The request a tag-based rotation makes per volume snapshot and
    ``os_hidden`` pass: its cost is Glance's (the database's plan for a
    tag filter among the images the caller can see), whatever the client.
    """
    from bench import paths

    session = paths.token_session(endpoint, token)
    url = '%s/v2/images?tag=bench-scale:%s&os_hidden=false' % (
        endpoint, uuid.uuid4())
    spent = []
    for _ in range(times):
        start = time.perf_counter()
        session.get(url).json()
        spent.append(1000.0 * (time.perf_counter() - start))
    return statistics.median(spent)


def run(args: argparse.Namespace) -> dict[str, ty.Any]:
    from bench import seed
    from nova_snapshot_ext.embedded import database as database_mod
    from nova_snapshot_ext.embedded import glance as embedded
    from nova_snapshot_ext.embedded import tokenauth

    doc: dict[str, ty.Any] = {
        'label': args.label, 'machine': bench_run.machine(),
        'date': datetime.datetime.utcnow().isoformat(timespec='seconds'),
        'database': 'mariadb', 'workers': args.workers,
        'page_size': args.page_size, 'rotation': [], 'audit': []}
    server = database_mod.shared_server('mariadb')
    glance = embedded.from_profile('default', identity='token',
                                   access_log=True, database=server,
                                   workers=args.workers)
    with glance:
        log = bench_run.AccessLog(glance.access_log_file, glance.endpoint)
        log.take()
        seeder = seed.Seeder(server, glance.database_name)
        seeder.check_schema()
        request, project, _user = bench_run.sample_request()
        other = uuid.uuid4().hex
        backups = Backups(glance.endpoint, request)
        admin = tokenauth.make_token('auditor', uuid.uuid4().hex,
                                     ADMIN_ROLES)
        seeded = 0
        for level in args.visible:
            want = max(0, level - seeded - 2)
            own = int(want * OWN_SHARE)
            start = time.perf_counter()
            seeder.add(own, project, plugin_every=10, hidden_every=50,
                       tag_every=7)
            seeder.add(want - own, other, visibility='public',
                       hidden_every=50, tag_every=7, prefix='public')
            seed_s = time.perf_counter() - start
            seeded += want
            rounds = []
            for i in range(args.warmup + args.rounds):
                snapshot = backups.backup()
                cell = backups.rotation(snapshot, log)
                if i >= args.warmup:
                    rounds.append(cell)
            visible = count_visible(glance.endpoint, backups.token)
            log.take()
            doc['rotation'].append({
                'tag_query_ms': tag_query_ms(glance.endpoint,
                                             backups.token),
                'visible': visible, 'level': level, 'seed_s': seed_s,
                'seeded': want, 'rounds': rounds,
                'seconds': statistics.median(r['seconds'] for r in rounds),
                'requests': statistics.median(r['requests']
                                              for r in rounds)})
            print('rotation, %d images visible: %.3f s, %d requests '
                  '(median of %d; seeded %d in %.1f s); one tag query '
                  '%.1f ms' % (
                      visible, doc['rotation'][-1]['seconds'],
                      doc['rotation'][-1]['requests'], len(rounds), want,
                      seed_s, doc['rotation'][-1]['tag_query_ms']),
                  flush=True)
        projects = [uuid.uuid4().hex for _ in range(20)]
        total = count_visible(glance.endpoint, admin)
        for level in args.audit:
            start = time.perf_counter()
            i = 0
            while total < level:
                step = min(10000, level - total)
                seeder.add(step, projects[i % len(projects)],
                           plugin_every=10, hidden_every=50, tag_every=7,
                           prefix='other')
                total += step
                i += 1
            seed_s = time.perf_counter() - start
            log.take()
            load = os.getloadavg()[0]
            proc = subprocess.run(
                [sys.executable, '-m', 'bench.scale', 'audit-child',
                 glance.endpoint, admin, str(args.page_size)] + (
                     [os.path.abspath(args.audit_source)]
                     if args.audit_source else []),
                capture_output=True, text=True, check=True)
            cell = json.loads(proc.stdout)
            requests = log.take()
            if cell['pages'] is None:
                cell['pages'] = sum(1 for r, _ in requests
                                    if r == 'GET /v2/images')
            cell.update({
                'level': level, 'seed_s': seed_s, 'loadavg': load,
                'list_requests': sum(1 for r, _ in requests
                                     if r == 'GET /v2/images'),
                'requests': len(requests)})
            doc['audit'].append(cell)
            print('audit, %d images: %.1f s, %d pages, peak RSS %.1f MiB '
                  '(seeded to %d in %.1f s)' % (
                      cell['scanned'], cell['seconds'], cell['pages'],
                      (cell['peak_rss_kib'] or 0) / 1024.0, level, seed_s),
                  flush=True)
        seeder.close()
    doc['machine']['loadavg_end'] = os.getloadavg()
    return doc


def _flat(values: list[float]) -> str:
    low = values[0]
    return '%+.0f %%' % (100.0 * (values[-1] - low) / low) if low else '-'


def rss_growth(samples: list[list[ty.Any]], since: int) -> str:
    """MiB the RSS grew from ``since`` images read to the last page.

    :param samples: ``[[images read, VmRSS KiB], ...]`` after each page.
    :returns: e.g. ``+0.1``; ``-`` when the run read fewer images.
    """
    known = [(n, kib) for n, kib in samples if kib]
    start = [kib for n, kib in known if n >= since]
    if not start or known[-1][0] <= since:
        return '-'
    return '%+.1f' % ((known[-1][1] - start[0]) / 1024.0)


def rst(docs: list[dict[str, ty.Any]],
        audits: list[dict[str, ty.Any]] | None = None) -> str:
    """The reStructuredText tables of one or more runs.

    :param docs: the runs whose rotations are shown.
    :param audits: the runs whose audits are shown (default: ``docs``).
    """
    audits = docs if audits is None else audits
    out = ['.. list-table:: Rotation 2, one server: Glance requests and '
           'seconds (median of the measured rounds)',
           '   :header-rows: 1', '',
           '   * - run', '     - images visible', '     - requests',
           '     - of them GET /v2/images', '     - seconds',
           '     - one tag query (ms)', '     - load average']
    for doc in docs:
        for cell in doc['rotation']:
            lists = statistics.median(
                r['by_request'].get('GET /v2/images', 0)
                for r in cell['rounds'])
            out += ['   * - %s' % doc['label'],
                    '     - %s' % '{:,}'.format(cell['visible']),
                    '     - %d' % cell['requests'],
                    '     - %d' % lists,
                    '     - %.3f' % cell['seconds'],
                    '     - %s' % ('%.1f' % cell['tag_query_ms']
                                   if 'tag_query_ms' in cell else '-'),
                    '     - %.1f' % statistics.median(
                        r['loadavg'] for r in cell['rounds'])]
    out += ['', 'From the fewest to the most images visible: %s.' % '; '.join(
        '%s %s seconds, %s requests' % (
            doc['label'], _flat([c['seconds'] for c in doc['rotation']]),
            _flat([c['requests'] for c in doc['rotation']]))
        for doc in docs if doc['rotation']), '']
    if not audits:
        return '\n'.join(out) + '\n'
    out += ['.. list-table:: Audit of every image (admin), page size %d'
            % audits[0]['page_size'], '   :header-rows: 1', '',
            '   * - run', '     - images', '     - pages (requests)',
            '     - seconds', '     - images/s', '     - peak RSS (MiB)',
            '     - RSS after the first page (MiB)',
            '     - RSS growth from 10,000 images read to the end (MiB)',
            '     - load average']
    for doc in audits:
        for cell in doc['audit']:
            first = cell['rss_samples'][0][1] if cell['rss_samples'] else 0
            out += ['   * - %s' % doc['label'],
                    '     - %s' % '{:,}'.format(cell['scanned']),
                    '     - %s' % '{:,}'.format(cell['pages']),
                    '     - %.1f' % cell['seconds'],
                    '     - %s' % '{:,}'.format(
                        int(cell['scanned'] / cell['seconds'])),
                    '     - %.1f' % ((cell['peak_rss_kib'] or 0) / 1024.0),
                    '     - %.1f' % ((first or 0) / 1024.0),
                    '     - %s' % rss_growth(cell['rss_samples'], 10000),
                    '     - %.1f' % cell['loadavg']]
    return '\n'.join(out) + '\n'


def chart(docs: list[dict[str, ty.Any]], path: str,
          audits: list[dict[str, ty.Any]] | None = None) -> str | None:
    """Rotation cost and audit memory into ``path`` (matplotlib, Agg).

    :param docs: the runs whose rotations are drawn.
    :param audits: the runs whose largest audit is drawn (default:
        ``docs``).
    """
    audits = docs if audits is None else audits
    try:
        import matplotlib
    except ImportError:
        return None
    matplotlib.use('Agg')
    from matplotlib import pyplot

    fig, axes = pyplot.subplots(1, 3, figsize=(13.5, 4.2))
    for doc in docs:
        cells = doc['rotation']
        if cells:
            x = [c['visible'] for c in cells]
            axes[0].plot(x, [c['seconds'] for c in cells], marker='o',
                         label=doc['label'])
            axes[1].plot(x, [c['requests'] for c in cells], marker='o',
                         label=doc['label'])
    for doc in audits:
        for cell in doc['audit'][-1:]:
            # The largest audit of each run (the smaller one's curve is
            # its beginning).
            samples = [(n, kib / 1024.0) for n, kib in cell['rss_samples']
                       if kib]
            axes[2].plot([n for n, _ in samples], [m for _, m in samples],
                         label='%s, %s images' % (doc['label'], '{:,}'.format(
                             cell['scanned'])))
    for ax, title, unit in (
            (axes[0], 'Rotation: seconds', 'seconds'),
            (axes[1], 'Rotation: Glance requests', 'requests')):
        ax.set_xscale('log')
        ax.set_xlabel('images visible to the caller')
        ax.set_ylabel(unit)
        ax.set_title(title)
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend()
    axes[2].set_title('Audit: RSS while reading')
    axes[2].set_xlabel('images read')
    axes[2].set_ylabel('RSS (MiB)')
    axes[2].set_ylim(bottom=0)
    axes[2].grid(alpha=0.3)
    axes[2].legend(fontsize=8)
    runs = docs + [d for d in audits if d not in docs]
    machine = runs[0]['machine']
    fig.suptitle('Glance %s on MariaDB, %d workers, %s to %s UTC; %d cores '
                 '(shared), load average %.1f to %.1f' % (
                     machine['versions'].get('glance'), runs[0]['workers'],
                     min(d['date'] for d in runs)[:16].replace('T', ' '),
                     max(d['date'] for d in runs)[11:16], machine['cores'],
                     min(d['machine']['loadavg_start'][0] for d in runs),
                     max(d['machine']['loadavg_end'][0] for d in runs)),
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    pyplot.close(fig)
    return path


def _levels(text: str) -> list[int]:
    if text == 'none':
        return []
    try:
        levels = [int(x.replace('_', '')) for x in text.split(',') if x]
    except ValueError:
        raise argparse.ArgumentTypeError('a comma-separated list of image '
                                         'counts, not %r' % text)
    if not levels or levels != sorted(levels) or levels[0] < 3:
        raise argparse.ArgumentTypeError('counts rise and start at 3 or '
                                         'more, not %r' % text)
    return levels


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog='python -m bench.scale',
                                     description=__doc__.split('\n')[0])
    parser.add_argument('--label', default='main',
                        help='name of this run in the table and chart')
    parser.add_argument('--visible', type=_levels,
                        default=[100, 1000, 10000],
                        help='images visible to the caller, rising '
                        '(none: no rotation)')
    parser.add_argument('--audit', type=_levels, default=[10000, 100000],
                        help='images in Glance for the audit, rising (at '
                        'least the most visible; none: no audit)')
    parser.add_argument('--rounds', type=int, default=3,
                        help='measured rotations per level')
    parser.add_argument('--warmup', type=int, default=2,
                        help='rotations before the measured ones (the '
                        'first levels fill the rotation)')
    parser.add_argument('--workers', type=int, default=2,
                        help='gunicorn workers of the glance-api')
    parser.add_argument('--page-size', type=int, default=200,
                        help="the audit's --page-size")
    parser.add_argument('--audit-source', metavar='DIR',
                        help="run the audit with another tree's "
                        'nova_snapshot_ext (e.g. a checkout of main), '
                        "to measure that audit's memory")
    parser.add_argument('--output-dir', default='bench-results')
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ['audit-child']:
        endpoint, token, page_size = argv[1:4]
        if argv[4:]:
            # Another tree's nova_snapshot_ext: not imported yet (the
            # bench modules import it lazily), so that tree's is found.
            if 'nova_snapshot_ext' in sys.modules:
                raise SystemExit('nova_snapshot_ext was imported before '
                                 '%s could come first' % argv[4])
            sys.path.insert(0, argv[4])
        print(json.dumps(audit_child(endpoint, token, int(page_size))))
        return 0
    if argv[:1] == ['report']:
        parser = argparse.ArgumentParser(prog='python -m bench.scale report')
        parser.add_argument('results', nargs='+',
                            help='runs whose rotations are shown')
        parser.add_argument('--audits', nargs='+', metavar='RESULT',
                            help='runs whose audits are shown (default: '
                            'the same)')
        parser.add_argument('--chart', help='PNG to draw')
        parser.add_argument('--as', dest='names', action='append',
                            default=[], metavar='RESULT=NAME',
                            help="show RESULT's runs as NAME instead of its "
                            '--label')
        opts = parser.parse_args(argv[1:])
        names = dict(item.split('=', 1) for item in opts.names)

        def load(name: str) -> dict[str, ty.Any]:
            with open(name, encoding='utf-8') as f:
                doc = json.load(f)
            doc['label'] = names.get(name, doc['label'])
            return doc

        docs = [load(name) for name in opts.results]
        audits = [load(name) for name in opts.audits or opts.results]
        print(rst(docs, audits))
        if opts.chart:
            print('chart: %s' % chart(docs, opts.chart, audits))
        return 0
    args = parse_args(argv)
    doc = run(args)
    os.makedirs(args.output_dir, exist_ok=True)
    base = os.path.join(args.output_dir, 'scale-%s-%s' % (
        args.label, doc['date'].replace(':', '')))
    with open(base + '.json', 'w', encoding='utf-8') as f:
        json.dump(doc, f, indent=1)
    print(rst([doc]))
    print('results: %s.json; chart: %s' % (base, chart([doc], base + '.png')))
    return 0


if __name__ == '__main__':
    sys.exit(main())
