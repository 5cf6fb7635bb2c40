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

"""Benchmark the snapshot paths side by side: ``tox -e bench [-- --n 50]``.

One embedded real glance-api (profile ``default``, fake-token identity,
gunicorn access log on) serves every path.  Each (path, concurrency) pair
runs in its own worker process (:mod:`bench.worker`), set up once.  The
orchestrator then drives the workers one batch at a time, round-robin
with a rotating order, so machine drift hits every path alike:

1. one *first* snapshot per worker (the plugin discovers the Glance
   capabilities here);
2. ``--n`` *steady* snapshots per worker, in batches of ``--batch``.

Only one batch runs at a time, so the access-log lines written during a
batch are that batch's requests: counted at the server, never estimated.
After each batch a marker request (``GET /healthcheck?bench-mark=<uuid>``)
is sent and the log is read until the marker shows, plus a short settle.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import subprocess
import sys
import time
import typing as ty
import urllib.request
import uuid

from bench import paths
from bench import report

#: Request line and status in gunicorn's default access-log format.
_LINE_RE = re.compile(r'"([A-Z]+) (\S+) HTTP/[0-9.]+" (\d{3}) ')
_UUID_RE = re.compile(r'[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-'
                      r'[0-9a-f]{12}', re.IGNORECASE)
_MARK = 'bench-mark='
_SETTLE_S = 0.05
_MARK_TIMEOUT_S = 30.0
ROLES = ('member', 'reader')
_REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def normalise(method: str, target: str) -> str:
    """``"GET /v2/images/<uuid>?x=1"`` -> ``"GET /v2/images/{id}"``."""
    path = target.split('?', 1)[0]
    return '%s %s' % (method, _UUID_RE.sub('{id}', path))


class AccessLog:
    """Counts the requests gunicorn logged since the last call.

    :param log_file: gunicorn's ``--access-logfile``.
    :param endpoint: Glance's URL, for the marker requests.
    """

    def __init__(self, log_file: str, endpoint: str):
        self.log_file = log_file
        self.endpoint = endpoint
        self.offset = 0
        self.total_lines = 0
        self._opener = urllib.request.build_opener(
            urllib.request.ProxyHandler({}))

    def _read(self) -> list[str]:
        with open(self.log_file, 'rb') as f:
            f.seek(self.offset)
            data = f.read()
        end = data.rfind(b'\n') + 1
        self.offset += end
        return data[:end].decode('utf-8', 'replace').splitlines()

    def take(self) -> list[tuple[str, int]]:
        """The requests logged since the previous call.

        :returns: ``[(normalised request, HTTP status), ...]``, marker
            requests excluded.
        :raises RuntimeError: the marker did not show within 30 s.
        """
        mark = uuid.uuid4().hex
        with self._opener.open('%s/healthcheck?%s%s' % (
                self.endpoint, _MARK, mark), timeout=10) as resp:
            resp.read()
        lines: list[str] = []
        deadline = time.monotonic() + _MARK_TIMEOUT_S
        while not any(mark in line for line in lines):
            if time.monotonic() > deadline:
                raise RuntimeError('marker %s not in %s' % (mark,
                                                            self.log_file))
            time.sleep(0.005)
            lines += self._read()
        time.sleep(_SETTLE_S)
        lines += self._read()
        self.total_lines += len(lines)
        requests = []
        for line in lines:
            match = _LINE_RE.search(line)
            if match is None or _MARK in match.group(2):
                continue
            requests.append((normalise(match.group(1), match.group(2)),
                             int(match.group(3))))
        return requests


def process_tree_cpu_s(pid: int | None) -> float | None:
    """User + system CPU seconds of ``pid`` and its live descendants.

    Read from ``/proc/<pid>/stat`` (Linux; ``None`` elsewhere or when
    ``pid`` is gone): the embedded Glance's gunicorn master and worker,
    whose CPU is Glance's own work for the requests it served (and, in
    location mode, its ``location_import`` tasks, which run in the
    worker's threads).  Resolution: one clock tick (10 ms).
    """
    if pid is None:
        return None
    tick = float(os.sysconf('SC_CLK_TCK'))
    stats: dict[int, tuple[int, float]] = {}
    try:
        names = os.listdir('/proc')
    except OSError:
        return None
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open('/proc/%s/stat' % name, 'rb') as f:
                text = f.read().decode('ascii', 'replace')
        except OSError:
            continue
        # pid (comm) state ppid ... utime(14) stime(15): comm may hold
        # spaces, so split after its closing parenthesis.
        fields = text[text.rfind(')') + 2:].split()
        try:
            stats[int(name)] = (int(fields[1]),
                                (int(fields[11]) + int(fields[12])) / tick)
        except (IndexError, ValueError):
            continue
    if pid not in stats:
        return None
    total, todo = 0.0, [pid]
    while todo:
        current = todo.pop()
        total += stats[current][1]
        todo += [child for child, (ppid, _) in stats.items()
                 if ppid == current]
    return total


class WorkerProcess:
    """A :mod:`bench.worker` subprocess running one path.

    :param spec: the worker spec (:mod:`bench.paths`).
    :param log_path: file receiving the worker's stderr.
    """

    def __init__(self, spec: dict[str, ty.Any], log_path: str):
        self.spec = spec
        self.log_path = log_path
        env = dict(os.environ)
        env['PYTHONPATH'] = os.pathsep.join(
            [_REPO_ROOT] + [p for p in env.get('PYTHONPATH', '').split(
                os.pathsep) if p])
        self._log = open(log_path, 'ab')
        self.proc = subprocess.Popen(
            [sys.executable, '-m', 'bench.worker'], cwd=_REPO_ROOT, env=env,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log,
            text=True, bufsize=1)
        self.ready = self._ask(spec)

    def send(self, obj: ty.Mapping[str, ty.Any]) -> None:
        """Send one command; :meth:`receive` reads its answer."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(obj) + '\n')
        self.proc.stdin.flush()

    def receive(self) -> dict[str, ty.Any]:
        """The answer to the last command sent.

        :raises RuntimeError: the worker died (its log is named).
        """
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError('worker %s died; see %s' % (
                self.spec['prefix'], self.log_path))
        return dict(json.loads(line))

    def _ask(self, obj: ty.Mapping[str, ty.Any]) -> dict[str, ty.Any]:
        self.send(obj)
        return self.receive()

    @staticmethod
    def batch_command(count: int, concurrency: int) -> dict[str, ty.Any]:
        """The command running ``count`` snapshots on ``concurrency`` threads.

        Answered by :meth:`bench.worker.Worker.batch`.
        """
        return {'op': 'batch', 'count': count, 'concurrency': concurrency}

    def batch(self, count: int, concurrency: int) -> dict[str, ty.Any]:
        return self._ask(self.batch_command(count, concurrency))

    def quit(self) -> dict[str, ty.Any]:
        final = self._ask({'op': 'quit'})
        self.proc.wait(timeout=60)
        self._log.close()
        return final

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._log.close()


def sample_request() -> tuple[dict[str, ty.Any], str, str]:
    """The shipped sample request, owned by a fresh project and user.

    :returns: ``(request dict, project id, user id)``; the requester holds
        :data:`ROLES`.
    """
    from nova_snapshot_ext.snapshot import request as request_mod

    with open(request_mod.SAMPLE_REQUEST, encoding='utf-8') as f:
        request = json.load(f)
    project, user = uuid.uuid4().hex, uuid.uuid4().hex
    for key in ('server', 'requester'):
        request[key]['project_id'] = project
        request[key]['user_id'] = user
    request['requester']['roles'] = list(ROLES)
    return request, project, user


def build_template(request: dict[str, ty.Any]) -> dict[str, ty.Any]:
    """The image record all paths register, from the plugin's builder.

    :returns: ``name``, ``visibility``, ``min_ram`` (MiB), ``min_disk``
        (GiB), ``properties`` (strings).
    """
    from oslo_config import cfg

    from nova_snapshot_ext import driver as driver_mod
    from nova_snapshot_ext import opts
    from nova_snapshot_ext.snapshot import request as request_mod
    from nova_snapshot_ext.snapshot import service as service_mod

    conf = cfg.ConfigOpts()
    opts.register_opts(conf)
    conf([], default_config_files=[], default_config_dirs=[])
    service = service_mod.SnapshotService(
        conf, driver=driver_mod.load_driver(conf, 'libvirt'))
    record = service.build_record(request_mod.SnapshotRequest.from_dict(
        request))
    return {'name': record.name, 'visibility': record.visibility,
            'min_ram': record.min_ram, 'min_disk': record.min_disk,
            'properties': dict(record.properties)}


def local_path(name: str, endpoint: str, request: dict[str, ty.Any],
               project: str, user: str, prefix: str,
               template: dict[str, ty.Any] | None = None,
               **extra: ty.Any) -> ty.Any:
    """Set up path ``name`` in this process, warmed up, as a worker does.

    For the tools that time paths call by call in one process
    (:mod:`bench.cpu`, :mod:`bench.ablate`, :mod:`bench.profile`).

    :param endpoint: Glance's URL (embedded, fake-token identity).
    :param request: the request every path registers (a dict).
    :param project: the project of the request's server and requester.
    :param user: its user.
    :param prefix: image name prefix of this path.
    :param template: the record (default: :func:`build_template`).
    :param extra: more worker spec keys (``location_url``, ``glance_db``).
    :returns: the :class:`bench.paths.BenchPath`, set up, after its first
        snapshot (discovery) and two warm-up snapshots.
    """
    from bench import paths
    from nova_snapshot_ext.embedded import tokenauth

    spec = {'path': name, 'endpoint': endpoint,
            'token': tokenauth.make_token(user, project, ROLES),
            'project_id': project, 'user_id': user, 'roles': list(ROLES),
            'template': template or build_template(request),
            'request': request, 'concurrency': 1, 'location_url': '',
            'glance_db': '', 'prefix': prefix}
    spec.update(extra)
    path = paths.PATHS[name](spec)
    path.setup()
    for seq in range(3):
        path.snapshot(path.prepare(seq))
    return path


def _device_name(index: int) -> str:
    """``/dev/vdb``, ..., ``/dev/vdz``, ``/dev/vdaa``... (index >= 1)."""
    letters = ''
    while True:
        letters = chr(ord('a') + index % 26) + letters
        index = index // 26 - 1
        if index < 0:
            return '/dev/vd' + letters


#: System metadata a shrunk request keeps (no image properties from them).
_KEPT_SYSMETA = ('image_min_ram', 'image_min_disk', 'image_disk_format',
                 'image_container_format')


def scale_request(request: dict[str, ty.Any], mappings: int | None = None,
                  properties: int | None = None) -> dict[str, ty.Any]:
    """The sample request grown (or shrunk) to a workload.

    :param request: the shipped sample request (not modified).
    :param mappings: number of block device mappings: the sample's root
        volume mapping plus ``mappings - 1`` data-volume mappings (each
        with its own volume, snapshot and device name); ``None`` keeps the
        sample's three.
    :param properties: number of image properties the record carries: the
        sample's user metadata is replaced by ``bench_property_NNN`` keys
        so that the record has exactly this many (below the sample's own,
        the server's inherited ``image_*`` system metadata goes too, down
        to what the mappings and the plugin's own keys give); ``None``
        keeps the sample's.
    :returns: a new request dict.
    :raises ValueError: ``mappings < 1``, or fewer ``properties`` than the
        record needs anyway.
    """
    out = json.loads(json.dumps(request))
    if mappings is not None:
        if mappings < 1:
            raise ValueError('at least one (root) mapping')
        root = next(b for b in out['block_device_mappings']
                    if b.get('boot_index') == 0)
        bdms = [root]
        for i in range(1, mappings):
            bdms.append({
                'id': 100 + i, 'source_type': 'volume',
                'destination_type': 'volume', 'boot_index': None,
                'device_name': _device_name(i), 'disk_bus': 'virtio',
                'device_type': 'disk',
                'volume_id': str(uuid.UUID(int=(1 << 64) + i)),
                'snapshot_id': str(uuid.UUID(int=(2 << 64) + i)),
                'volume_size': 10 + i, 'delete_on_termination': False})
        out['block_device_mappings'] = bdms
    if properties is not None:
        out['metadata'] = {}
        base = len(build_template(out)['properties'])
        if properties < base:
            # Fewer inherited properties: keep only the image's formats
            # and minimums in the server's system metadata.
            sysmeta = out['server']['system_metadata']
            for key in list(sysmeta):
                if key.startswith('image_') and key not in _KEPT_SYSMETA:
                    del sysmeta[key]
            base = len(build_template(out)['properties'])
        if properties < base:
            raise ValueError('the record has %d properties without user '
                             'metadata; cannot shrink it to %d'
                             % (base, properties))
        out['metadata'] = {'bench_property_%03d' % i: 'value-%03d' % i
                           for i in range(properties - base)}
    return out


def schedule(jobs: ty.Sequence[tuple[str, int]], n: int, batch: int,
             warmup: int = 0) -> list[tuple[str, int, int, str]]:
    """The interleaved batch order.

    :param jobs: ``[(name, concurrency), ...]``, one per worker.
    :param n: steady snapshots per job.
    :param batch: snapshots per steady batch (at least 2 x concurrency).
    :param warmup: warm-up batches per job (same size, not counted as
        steady).
    :returns: ``[(name, concurrency, count, phase), ...]`` where phase is
        ``'first'`` (one snapshot per worker, first), ``'warmup'`` or
        ``'steady'``; warm-up and steady batches go round-robin over the
        jobs, the order rotating every round.
    """
    order = [(p, c, 1, 'first') for p, c in jobs]
    for _ in range(warmup):
        order += [(p, c, max(batch, 2 * c), 'warmup') for p, c in jobs]
    left = {job: n for job in jobs}
    rnd = 0
    while any(left.values()):
        shift = rnd % len(jobs)
        for p, c in list(jobs[shift:]) + list(jobs[:shift]):
            count = min(max(batch, 2 * c), left[(p, c)])
            if count:
                order.append((p, c, count, 'steady'))
                left[(p, c)] -= count
        rnd += 1
    return order


#: Workloads of the scaling table: name -> (mappings, properties); None
#: keeps the sample request's (3 mappings, 11 properties).
SCALES: dict[str, tuple[int | None, int | None]] = {
    'm1': (1, None), 'm10': (10, None), 'm50': (50, None),
    'p10': (None, 10), 'p100': (None, 100),
}


def job_name(path: str, scale: str | None) -> str:
    """``plugin`` for the sample request, ``plugin@m50`` for a workload."""
    return path if not scale else '%s@%s' % (path, scale)


def machine() -> dict[str, ty.Any]:
    """Cores, CPU model, Python, glance/nova versions of this machine."""
    from importlib import metadata

    model = platform.processor() or 'unknown'
    try:
        with open('/proc/cpuinfo', encoding='utf-8') as f:
            for line in f:
                if line.startswith('model name'):
                    model = line.split(':', 1)[1].strip()
                    break
    except OSError:
        pass
    versions = {}
    for dist in ('glance', 'nova', 'python-glanceclient', 'keystoneauth1',
                 'gunicorn', 'nova-snapshot-ext'):
        try:
            versions[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            versions[dist] = None
    return {'cores': os.cpu_count(), 'cpu_model': model,
            'python': platform.python_version(),
            'platform': platform.platform(), 'versions': versions,
            'loadavg_start': os.getloadavg(), 'source': source()}


def source() -> str:
    """The git commit measured, ``+ local changes`` when the tree is dirty."""
    try:
        head = subprocess.run(['git', 'rev-parse', '--short', 'HEAD'],
                              cwd=_REPO_ROOT, capture_output=True,
                              text=True, check=True).stdout.strip()
        dirty = subprocess.run(['git', 'status', '--porcelain',
                                '--untracked-files=no'], cwd=_REPO_ROOT,
                               capture_output=True, text=True,
                               check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return 'unknown'
    return head + (' + local changes' if dirty else '')


def count_statuses(endpoint: str, token: str,
                   prefixes: ty.Mapping[str, str]
                   ) -> dict[str, dict[str, int]]:
    """Image statuses per worker after the run (one listing of Glance).

    :param prefixes: worker key -> image name prefix of that worker.
    :returns: worker key -> ``{status: count}`` of its images.
    """
    session = paths.token_session(endpoint, token)
    ordered = sorted(prefixes.items(), key=lambda kv: -len(kv[1]))
    out: dict[str, dict[str, int]] = {key: {} for key in prefixes}
    url = '%s/v2/images?limit=1000' % endpoint
    while url:
        body = session.get(url).json()
        for image in body.get('images', []):
            name = str(image.get('name', ''))
            for key, prefix in ordered:
                if name.startswith(prefix):
                    status = str(image.get('status'))
                    out[key][status] = out[key].get(status, 0) + 1
                    break
        url = '%s%s' % (endpoint, body['next']) if body.get('next') else ''
    return out


def run(args: argparse.Namespace) -> dict[str, ty.Any]:
    """Run the whole benchmark; returns the results document."""
    from nova_snapshot_ext.embedded import demo
    from nova_snapshot_ext.embedded import glance as embedded
    from nova_snapshot_ext.embedded import tokenauth
    from nova_snapshot_ext.image import payloads

    stamp = datetime.datetime.now(datetime.timezone.utc)
    run_id = stamp.strftime('%Y%m%d-%H%M%S')
    os.makedirs(args.output_dir, exist_ok=True)
    logs = os.path.join(args.output_dir, 'logs-%s' % run_id)
    os.makedirs(logs, exist_ok=True)
    request, project, user = sample_request()
    template = build_template(request)
    token = tokenauth.make_token(user, project, ROLES)
    names = list(args.paths)
    # (name, base path, concurrency, scale): the sample request on every
    # path and concurrency, then the workloads on --scale-paths.
    jobs: list[tuple[str, str, int, str | None]] = [
        (p, p, c, None) for c in args.concurrency for p in names]
    scales: dict[str, dict[str, ty.Any]] = {}
    for scale in args.scales:
        mappings, props = SCALES[scale]
        scaled = scale_request(request, mappings, props)
        record = build_template(scaled)
        scales[scale] = {
            'mappings': len(scaled['block_device_mappings']),
            'properties': len(record['properties']),
            'block_device_mapping_bytes': len(
                record['properties']['block_device_mapping']),
            'request': scaled, 'template': record}
        jobs += [(job_name(p, scale), p, c, scale)
                 for c in args.scale_concurrency for p in args.scale_paths]
    doc: dict[str, ty.Any] = {
        'date': stamp.isoformat(timespec='seconds'), 'run_id': run_id,
        'machine': machine(), 'n': args.n, 'batch': args.batch,
        'warmup': args.warmup,
        'concurrency': list(args.concurrency), 'profile': args.profile,
        'paths': {p: paths.describe(p) for p in names},
        'scales': {k: {x: v[x] for x in ('mappings', 'properties',
                                         'block_device_mapping_bytes')}
                   for k, v in scales.items()},
        'sample': {'mappings': len(request['block_device_mappings']),
                   'properties': len(template['properties'])},
        'scale_paths': list(args.scale_paths),
        'scale_concurrency': list(args.scale_concurrency),
        'reference': paths.REFERENCE, 'baselines': list(paths.BASELINES),
        'workers': {}, 'batches': [], 'unavailable': {}}
    glance = embedded.from_profile(args.profile, identity='token',
                                   access_log=True)
    workers: dict[tuple[str, int], WorkerProcess] = {}
    objects = demo.ObjectServer({'/bench/empty.qcow2':
                                 payloads.payload('qcow2')})
    with objects, glance:
        location_url = objects.url('/bench/empty.qcow2')
        doc['glance'] = {'endpoint': glance.endpoint,
                         'workers': '1 gunicorn worker, gthread, 8 threads'}
        access = AccessLog(glance.access_log_file, glance.endpoint)
        access.take()  # the startup health checks
        try:
            for name, p, c, scale in jobs:
                if p in doc['unavailable']:
                    continue
                prefix = 'bench-%s-c%d-' % (name.replace('@', '-'), c)
                spec = {'path': p, 'endpoint': glance.endpoint,
                        'token': token, 'project_id': project,
                        'user_id': user, 'roles': list(ROLES),
                        'template': scales[scale]['template'] if scale
                        else template,
                        'request': scales[scale]['request'] if scale
                        else request,
                        'concurrency': c, 'location_url': location_url,
                        'glance_db': os.path.join(glance.base_dir,
                                                  'glance.sqlite'),
                        'prefix': prefix}
                key = '%s/c%d' % (name, c)
                proc = WorkerProcess(spec, os.path.join(
                    logs, '%s-c%d.log' % (name, c)))
                if not proc.ready.get('ready'):
                    doc['unavailable'][p] = proc.ready.get('error')
                    print('path %s unavailable: %s' % (
                        p, proc.ready.get('error')), file=sys.stderr)
                    proc.kill()
                    continue
                workers[(name, c)] = proc
                doc['workers'][key] = {
                    'path': p, 'name': name, 'scale': scale,
                    'concurrency': c, 'ready': proc.ready,
                    'prefix': prefix, 'setup_requests': access.take()}
            plan = schedule(list(workers), args.n, args.batch, args.warmup)
            for i, (name, c, count, phase) in enumerate(plan):
                glance_cpu0 = process_tree_cpu_s(glance.pid)
                measured = workers[(name, c)].batch(
                    count, 1 if phase == 'first' else c)
                measured.update(path=doc['workers']['%s/c%d' % (
                    name, c)]['path'], name=name, concurrency=c,
                    count=count, phase=phase, requests=access.take())
                glance_cpu1 = process_tree_cpu_s(glance.pid)
                measured['glance_cpu_s'] = (
                    None if glance_cpu0 is None or glance_cpu1 is None
                    else glance_cpu1 - glance_cpu0)
                doc['batches'].append(measured)
                failed = sum(1 for e in measured['errors'] if e)
                print('[%3d/%d] %-22s c=%-2d %-6s %3d snapshots %6.2f s '
                      '%d errors' % (i + 1, len(plan), name, c, phase, count,
                                     measured['wall_s'], failed),
                      file=sys.stderr, flush=True)
            for (name, c), proc in workers.items():
                doc['workers']['%s/c%d' % (name, c)]['final'] = proc.quit()
        finally:
            for proc in workers.values():
                proc.kill()
        doc['unattributed_requests'] = access.take()
        doc['images'] = count_statuses(glance.endpoint, token, {
            key: worker['prefix'] for key, worker in doc['workers'].items()})
    doc['logs'] = logs
    doc['machine']['loadavg_end'] = os.getloadavg()
    return doc


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog='python -m bench.run',
        description='What one volume-backed snapshot costs: the plugin, '
                    "Nova's own path and the bare HTTP floor, side by side "
                    'on one embedded real Glance.')
    parser.add_argument('--n', type=int, default=200,
                        help='steady-state snapshots per path and '
                             'concurrency (default: %(default)s)')
    parser.add_argument('--concurrency', type=int, nargs='+',
                        default=[1, 16],
                        help='client threads (default: 1 16)')
    parser.add_argument('--batch', type=int, default=40,
                        help='snapshots per interleaved batch; at least '
                             '2 x concurrency (default: %(default)s)')
    parser.add_argument('--paths', nargs='+', default=list(paths.PATHS),
                        choices=list(paths.PATHS),
                        help='paths to run (default: all)')
    parser.add_argument('--warmup', type=int, default=1,
                        help='warm-up batches per worker after the first '
                             'snapshot, not counted as steady (location '
                             'mode learns when to read the image; '
                             'default: %(default)s)')
    parser.add_argument('--scales', nargs='*', default=list(SCALES),
                        choices=list(SCALES),
                        help='workloads of the scaling table: mN = N '
                             'block device mappings, pN = N image '
                             'properties (default: all; none: no '
                             'scaling table)')
    parser.add_argument('--scale-paths', nargs='+',
                        default=['plugin', 'floor', 'nova'],
                        choices=list(paths.PATHS),
                        help='paths run on each workload (default: '
                             '%(default)s)')
    parser.add_argument('--scale-concurrency', type=int, nargs='+',
                        default=[1],
                        help='concurrencies of the workloads (default: 1)')
    parser.add_argument('--profile', default='http-store',
                        help='embedded Glance profile (default: '
                             '%(default)s: Glance defaults plus the http '
                             'store the plugin-location path needs)')
    parser.add_argument('--output-dir', default='bench-results',
                        help='where the JSON, markdown and PNG go '
                             '(default: %(default)s)')
    parser.add_argument('--no-chart', action='store_true',
                        help='skip the PNG chart')
    args = parser.parse_args(argv)
    if args.n < 1 or args.batch < 1 or min(args.concurrency) < 1 or (
            min(args.scale_concurrency) < 1) or args.warmup < 0:
        parser.error('--n, --batch and the concurrencies must be >= 1, '
                     '--warmup >= 0')
    return args


def main(argv: list[str] | None = None) -> int:
    """Run, write ``bench-<date>.{json,md,png}``, print the table.

    :returns: 0, or 1 when a path had errors or was unavailable (the
        table is written and printed either way).
    """
    args = parse_args(argv)
    doc = run(args)
    summary = report.summarise(doc)
    doc['summary'] = summary
    base = os.path.join(args.output_dir, 'bench-%s' % doc['run_id'])
    with open(base + '.json', 'w', encoding='utf-8') as f:
        json.dump(doc, f, indent=1, sort_keys=True)
    table = report.markdown(doc, summary)
    with open(base + '.md', 'w', encoding='utf-8') as f:
        f.write(table)
    written = [base + '.json', base + '.md']
    if not args.no_chart:
        chart = report.chart(doc, summary, base + '.png')
        if chart:
            written.append(chart)
    print(table)
    print('wrote %s' % ', '.join(written))
    bad = doc['unavailable'] or any(
        s['errors'] for s in summary['cells'].values())
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
