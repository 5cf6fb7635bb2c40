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

"""Where Glance's ``location_import`` time goes (``bench.import_trace``).

Starts the embedded Glance (profile ``http-store``) behind this module's
WSGI entry point, which wraps Glance 33 functions (the task executor, each
taskflow task of ``glance.async_.flows.location_import``, the image and
task repositories, the http store) with wall-clock and thread-CPU timers
and appends one JSON line per call to ``$BENCH_TRACE_OUT``.  Then ``--n``
sequential activations of the valid empty qcow2 (sha512 validation data
unless ``--no-validation-data``), each image read every ``--read-every``
seconds so the reads do not compete with the import, and prints, per
function, the mean milliseconds it took between the 202 of ``POST
/v2/images/{id}/locations`` and the end of ``_SetImageToActiveTask``.
Glance-internal names: other Glance releases may not have them (a missing
one is skipped).  Run in the bench env::

    .tox/bench/bin/python -m bench.import_trace --n 30
"""

from __future__ import annotations

import argparse
import collections
import functools
import hashlib
import importlib
import json
import os
import sys
import tempfile
import threading
import time
import typing as ty
import uuid

_OUT_ENV = 'BENCH_TRACE_OUT'
_lock = threading.Lock()
_local = threading.local()
_out: ty.Any = None

#: (module, class or None, function) wrapped inside Glance.
TRACED = (
    ('glance.async_', 'TaskExecutor', 'begin_processing'),
    ('glance.async_.taskflow_executor', 'TaskExecutor', '_run'),
    ('glance.async_.taskflow_executor', 'TaskExecutor', '_get_flow'),
    ('taskflow.engines.action_engine.engine', 'ActionEngine', 'compile'),
    ('taskflow.engines.action_engine.engine', 'ActionEngine', 'prepare'),
    ('glance.async_.flows.api_image_import', '_ImageLock', 'execute'),
    ('glance.async_.flows.location_import', '_UpdateLocationTask',
     'execute'),
    ('glance.async_.flows.location_import', '_CalculateHash', 'execute'),
    ('glance.async_.flows.location_import', '_CalculateHash',
     '_calculate_hash'),
    ('glance.async_.flows.location_import', '_VerifyValidationData',
     'execute'),
    ('glance.async_.flows.location_import', '_SetHashValues', 'execute'),
    ('glance.async_.flows.location_import', '_SetImageToActiveTask',
     'execute'),
    ('glance.async_.flows.api_image_import', '_CompleteTask', 'execute'),
    ('glance.db', 'ImageRepo', 'get'),
    ('glance.db', 'ImageRepo', 'save'),
    ('glance.db', 'TaskRepo', 'get'),
    ('glance.db', 'TaskRepo', 'save'),
    ('glance_store._drivers.http', 'Store', 'get_size'),
    ('glance_store._drivers.http', 'Store', 'get'),
)
_ACTIVE = '_SetImageToActiveTask.execute'


def _emit(record: dict[str, ty.Any]) -> None:
    global _out
    with _lock:
        if _out is None:
            _out = open(os.environ[_OUT_ENV], 'a', buffering=1)
        _out.write(json.dumps(record) + '\n')


def _wrap(owner: ty.Any, name: str, label: str) -> None:
    original = owner.__dict__[name]
    static = isinstance(original, staticmethod)
    func = original.__func__ if static else original

    @functools.wraps(func)
    def timed(*args: ty.Any, **kwargs: ty.Any) -> ty.Any:
        depth = getattr(_local, 'depth', 0)
        _local.depth = depth + 1
        start, cpu = time.time(), time.thread_time()
        try:
            return func(*args, **kwargs)
        finally:
            _local.depth = depth
            _emit({'l': label, 's': start, 'e': time.time(), 'd': depth,
                   'cpu': time.thread_time() - cpu})
    setattr(owner, name, staticmethod(timed) if static else timed)


def _install() -> None:
    for module_name, cls_name, func in TRACED:
        try:
            owner = importlib.import_module(module_name)
            if cls_name:
                owner = getattr(owner, cls_name)
            _wrap(owner, func, '%s.%s' % (cls_name or module_name, func))
        except (ImportError, AttributeError, KeyError):
            continue


_app: ty.Any = None


def application(environ: dict[str, ty.Any],
                start_response: ty.Callable[..., ty.Any]) -> ty.Any:
    """Glance's WSGI application, traced (served by gunicorn)."""
    global _app
    if _app is None:
        with _lock:
            if _app is None:
                from nova_snapshot_ext.embedded import glance_wsgi
                app = glance_wsgi.get_application()
                _install()
                _app = app
    start = time.time()
    try:
        return _app(environ, start_response)
    finally:
        _emit({'l': 'wsgi %s %s' % (environ['REQUEST_METHOD'],
                                    environ.get('PATH_INFO', '')),
               's': start, 'e': time.time(), 'd': 0})


def breakdown(events: list[dict[str, ty.Any]],
              marks: list[tuple[float, float]]) -> dict[str, ty.Any]:
    """Mean ms per traced function between each 202 and ``active``.

    :param marks: ``(time the POST was sent, time its 202 came)`` per
        activation.
    """
    posts = [r for r in events if r['l'].startswith('wsgi POST')
             and r['l'].endswith('/locations')]
    actives = [r for r in events if r['l'] == _ACTIVE]
    spans, wall = [], collections.Counter()  # type: ignore[var-annotated]
    cpu, calls = collections.Counter(), collections.Counter()
    for sent, _ in marks:
        post = min((p for p in posts if p['s'] >= sent - 0.05),
                   key=lambda p: p['s'])
        done = min((a for a in actives if a['s'] > post['e']),
                   key=lambda a: a['s'])
        spans.append(done['e'] - post['e'])
        for r in events:
            if (post['e'] <= r['s'] and r['e'] <= done['e'] + 1e-6
                    and not r['l'].startswith('wsgi')):
                wall[r['l']] += r['e'] - r['s']
                cpu[r['l']] += r.get('cpu', 0.0)
                calls[r['l']] += 1
    n = len(marks)
    spans.sort()
    return {
        'n': n,
        '202_to_active_ms': {'p10': 1000 * spans[n // 10],
                             'p50': 1000 * spans[n // 2],
                             'p90': 1000 * spans[(9 * n) // 10]},
        'functions': {k: {'wall_ms': 1000 * wall[k] / n,
                          'cpu_ms': 1000 * cpu[k] / n,
                          'calls': calls[k] / n}
                      for k in sorted(wall, key=lambda k: -wall[k])}}


def main(argv: list[str] | None = None) -> int:
    from bench import paths
    from nova_snapshot_ext.embedded import demo
    from nova_snapshot_ext.embedded import glance as embedded
    from nova_snapshot_ext.embedded import tokenauth
    from nova_snapshot_ext.image import payloads

    parser = argparse.ArgumentParser(prog='python -m bench.import_trace')
    parser.add_argument('--n', type=int, default=30)
    parser.add_argument('--read-every', type=float, default=0.3)
    parser.add_argument('--no-validation-data', action='store_true')
    args = parser.parse_args(argv)
    fd, out = tempfile.mkstemp(prefix='import-trace-', suffix='.jsonl')
    os.close(fd)
    os.environ[_OUT_ENV] = out
    embedded._WSGI_APP = 'bench.import_trace:application'
    data = payloads.payload('qcow2')
    body: dict[str, ty.Any] = {}
    if not args.no_validation_data:
        body['validation_data'] = {
            'os_hash_algo': 'sha512',
            'os_hash_value': hashlib.sha512(data).hexdigest()}
    token = tokenauth.make_token(uuid.uuid4().hex, uuid.uuid4().hex,
                                 ('member', 'reader'))
    marks = []
    with demo.ObjectServer({'/t/empty.qcow2': data}) as objects, \
            embedded.from_profile('http-store', identity='token') as glance:
        session = paths.token_session(glance.endpoint, token)
        body['url'] = objects.url('/t/empty.qcow2')
        for i in range(args.n + 3):  # 3 warm-up activations
            image = session.post(glance.endpoint + '/v2/images', json={
                'name': 'trace-%d' % i, 'disk_format': 'qcow2',
                'container_format': 'bare'}).json()['id']
            sent = time.time()
            session.post(glance.endpoint + '/v2/images/%s/locations'
                         % image, json=body)
            if i >= 3:
                marks.append((sent, time.time()))
            deadline = time.time() + 60
            while time.time() < deadline:
                time.sleep(args.read_every)
                if session.get(glance.endpoint + '/v2/images/%s' % image
                               ).json()['status'] == 'active':
                    break
            else:
                print('image %s not active after 60 s' % image,
                      file=sys.stderr)
                return 1
    with open(out) as f:
        events = [json.loads(line) for line in f]
    os.remove(out)
    print(json.dumps(breakdown(events, marks), indent=1))
    return 0


if __name__ == '__main__':
    sys.exit(main())
