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

"""Turn the raw benchmark document into figures, a table and a chart.

Units: times in milliseconds (``*_ms``) or seconds (``*_s``), memory in
MiB (``*_mib``), throughput in snapshots per second, requests per
snapshot as a plain ratio.
"""

from __future__ import annotations

import collections
import math
import typing as ty

#: (key, label, format) of the per-concurrency table rows.
ROWS = (
    ('req_per_snapshot', 'HTTP requests / snapshot, steady (at Glance)',
     '%.2f'),
    ('warmup_req_per_snapshot', 'HTTP requests / snapshot, warm-up',
     '%.2f'),
    ('first_requests', 'HTTP requests, first snapshot', '%d'),
    ('cpu_ms', 'client CPU ms / snapshot', '%.1f'),
    ('glance_cpu_ms', 'Glance CPU ms / snapshot (server)', '%.1f'),
    ('p50_ms', 'wall-clock p50 ms', '%.1f'),
    ('p95_ms', 'wall-clock p95 ms', '%.1f'),
    ('throughput', 'throughput, snapshots/s', '%.1f'),
    ('peak_rss_mib', 'client peak RSS MiB after N', '%.1f'),
    ('setup_rss_mib', 'client RSS MiB after setup (imports)', '%.1f'),
)


def percentile(values: ty.Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0-100), linear interpolation."""
    if not values:
        return math.nan
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100.0
    low = math.floor(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def _mib(kib: float) -> float:
    return kib / 1024.0


def _error_types(errors: ty.Iterable[str | None]) -> dict[str, int]:
    kinds: collections.Counter[str] = collections.Counter()
    for error in errors:
        if error:
            kinds[error.split(':', 1)[0]] += 1
    return dict(kinds)


def summarise(doc: ty.Mapping[str, ty.Any]) -> dict[str, ty.Any]:
    """Figures per (path, concurrency) cell and the targets.

    :returns: ``{'cells': {'plugin/c1': {...}}, 'targets': [...]}``.
    """
    cells: dict[str, dict[str, ty.Any]] = {}
    for key, worker in doc['workers'].items():
        batches = [b for b in doc['batches']
                   if '%s/c%d' % (b.get('name', b['path']),
                                  b['concurrency']) == key]
        first = [b for b in batches if b['phase'] == 'first']
        warmup = [b for b in batches if b['phase'] == 'warmup']
        steady = [b for b in batches if b['phase'] == 'steady']
        latencies = [x for b in steady for x in b['latencies_s']]
        errors = [e for b in steady for e in b['errors']]
        first_errors = [e for b in first for e in b['errors']]
        ops = len(latencies)
        requests = [r for b in steady for r in b['requests']]
        by_request: collections.Counter[str] = collections.Counter(
            r[0] for r in requests)
        statuses: collections.Counter[str] = collections.Counter(
            '%s %d' % (r[0], r[1]) for r in requests if r[1] >= 400)
        wall = sum(b['wall_s'] for b in steady)
        final = worker.get('final', {})
        warm_ops = sum(b['count'] for b in warmup)
        cells[key] = {
            'path': worker['path'], 'name': worker.get('name', key),
            'scale': worker.get('scale'),
            'concurrency': worker['concurrency'],
            'warmup_req_per_snapshot': sum(
                len(b['requests']) for b in warmup) / warm_ops
            if warm_ops else math.nan,
            'warmup_errors': sum(1 for b in warmup for e in b['errors']
                                 if e),
            'ops': ops,
            'errors': sum(1 for e in errors if e),
            'error_types': _error_types(errors),
            'error_samples': [e for e in errors if e][:3],
            'first_errors': sum(1 for e in first_errors if e),
            'first_requests': sum(len(b['requests']) for b in first),
            'first_breakdown': dict(collections.Counter(
                r[0] for b in first for r in b['requests'])),
            'first_ms': 1000.0 * sum(x for b in first
                                     for x in b['latencies_s']),
            'setup_requests': len(worker.get('setup_requests', [])),
            'requests': len(requests),
            'req_per_snapshot': len(requests) / ops if ops else math.nan,
            'breakdown': {k: v / ops for k, v in sorted(by_request.items())}
            if ops else {},
            'http_errors': dict(statuses),
            'batch_req_per_snapshot': [
                len(b['requests']) / b['count'] for b in steady],
            'cpu_ms': 1000.0 * sum(b['cpu_s'] for b in steady) / ops
            if ops else math.nan,
            'glance_cpu_ms': _glance_cpu_ms(steady),
            'p50_ms': 1000.0 * percentile(latencies, 50),
            'p95_ms': 1000.0 * percentile(latencies, 95),
            'mean_ms': 1000.0 * sum(latencies) / ops if ops else math.nan,
            'max_ms': 1000.0 * max(latencies) if latencies else math.nan,
            'throughput': ops / wall if wall else math.nan,
            'wall_s': wall,
            'setup_s': worker['ready'].get('setup_s'),
            'setup_rss_mib': _mib(worker['ready'].get('rss_kib', 0)),
            'peak_rss_mib': _mib(final.get('maxrss_kib', 0)),
            'images': doc.get('images', {}).get(key, {}),
        }
    return {'cells': cells, 'targets': targets(doc, cells)}


def _glance_cpu_ms(batches: ty.Sequence[ty.Mapping[str, ty.Any]]) -> float:
    """Glance's CPU per snapshot over ``batches`` (NaN when not measured).

    The batch's CPU is read after its marker request is logged, so work
    Glance finishes later (a hash computed after ``active`` in location
    mode without validation data) may fall into the next batch.
    """
    known = [b for b in batches if b.get('glance_cpu_s') is not None]
    ops = sum(b['count'] for b in known)
    if not ops or len(known) < len(batches):
        return math.nan
    return 1000.0 * sum(b['glance_cpu_s'] for b in known) / ops


def _ratio(a: float, b: float) -> float:
    return a / b if b else math.nan


#: The path in location mode, compared with the reference (upload mode).
LOCATION = 'plugin-location'
#: Location mode's floor (create, add location, one read when Glance's
#: database shows the image active), location mode is judged against it.
LOCATION_FLOOR = 'location-floor'


def targets(doc: ty.Mapping[str, ty.Any],
            cells: ty.Mapping[str, ty.Mapping[str, ty.Any]]
            ) -> list[dict[str, ty.Any]]:
    """The issues' targets, judged per concurrency (reported only).

    Issue 22: location mode's p50 <= 1.2x the location floor's; upload
    mode's snapshots per second >= Nova's.  Issue 13: location mode <= 4
    requests per snapshot and p50 <= 2x upload mode's; upload mode's
    client CPU <= 1.3x the floor's, its requests the floor's and its p50
    <= 1.05x the floor's.  Earlier
    issues: client CPU <= 0.5x Nova's, p50 <= 0.8x Nova's, no errors.
    """
    ref = doc['reference']
    out = []

    def add(c: int, target: str, met: bool, value: str) -> None:
        out.append({'concurrency': c, 'target': target, 'met': met,
                    'value': value})

    for c in doc['concurrency']:
        mine = cells.get('%s/c%d' % (ref, c))
        nova = cells.get('%s/c%d' % ('nova', c))
        floor = cells.get('%s/c%d' % ('floor', c))
        loc = cells.get('%s/c%d' % (LOCATION, c))
        loc_floor = cells.get('%s/c%d' % (LOCATION_FLOOR, c))
        if mine is None:
            continue
        if loc is not None and loc_floor is not None:
            ratio = _ratio(loc['p50_ms'], loc_floor['p50_ms'])
            add(c, "location: p50 <= 1.2x location floor's", ratio <= 1.2,
                '%.2fx (%.0f vs %.0f ms)' % (ratio, loc['p50_ms'],
                                             loc_floor['p50_ms']))
        if loc is not None:
            add(c, 'location: requests / snapshot <= 4',
                loc['req_per_snapshot'] <= 4.0,
                '%.2f' % loc['req_per_snapshot'])
            ratio = _ratio(loc['p50_ms'], mine['p50_ms'])
            add(c, "location: p50 <= 2x upload's", ratio <= 2.0,
                '%.2fx (%.0f vs %.0f ms)' % (ratio, loc['p50_ms'],
                                             mine['p50_ms']))
        if floor is not None:
            add(c, 'upload: requests / snapshot = floor',
                abs(mine['req_per_snapshot'] -
                    floor['req_per_snapshot']) < 0.005,
                '%.2f vs %.2f' % (mine['req_per_snapshot'],
                                  floor['req_per_snapshot']))
            cpu = _ratio(mine['cpu_ms'], floor['cpu_ms'])
            add(c, "upload: client CPU <= 1.3x floor's", cpu <= 1.3,
                '%.2fx (%.1f vs %.1f ms)' % (cpu, mine['cpu_ms'],
                                             floor['cpu_ms']))
            p50 = _ratio(mine['p50_ms'], floor['p50_ms'])
            add(c, "upload: p50 <= 1.05x floor's", p50 <= 1.05,
                '%.2fx' % p50)
        if nova is not None:
            cpu = _ratio(mine['cpu_ms'], nova['cpu_ms'])
            p50 = _ratio(mine['p50_ms'], nova['p50_ms'])
            add(c, "upload: client CPU <= 0.5x Nova's", cpu <= 0.5,
                '%.2fx' % cpu)
            add(c, "upload: p50 <= 0.8x Nova's", p50 <= 0.8, '%.2fx' % p50)
            rate = _ratio(mine['throughput'], nova['throughput'])
            add(c, "upload: snapshots/s >= Nova's", rate >= 1.0,
                '%.2fx (%.1f vs %.1f)' % (rate, mine['throughput'],
                                          nova['throughput']))
        errors = sum(cell['errors'] + cell['first_errors'] +
                     cell.get('warmup_errors', 0) for cell in cells.values()
                     if cell['concurrency'] == c)
        ops = sum(cell['ops'] for cell in cells.values()
                  if cell['concurrency'] == c)
        add(c, 'no errors (every path)', errors == 0,
            '%d/%d' % (errors, ops))
    for scale, info in sorted(doc.get('scales', {}).items()):
        for c in doc.get('scale_concurrency', ()):
            mine = cells.get('%s@%s/c%d' % (ref, scale, c))
            floor = cells.get('floor@%s/c%d' % (scale, c))
            if mine is None or floor is None:
                continue
            cpu = _ratio(mine['cpu_ms'], floor['cpu_ms'])
            add(c, "upload, %d mappings, %d properties: client CPU <= "
                "1.3x floor's" % (info['mappings'], info['properties']),
                cpu <= 1.3, '%.2fx (%.1f vs %.1f ms)' % (
                    cpu, mine['cpu_ms'], floor['cpu_ms']))
    return out


def scaling(doc: ty.Mapping[str, ty.Any],
            summary: ty.Mapping[str, ty.Any]) -> list[str]:
    """Markdown lines of the scaling table (empty without workloads)."""
    scales = doc.get('scales') or {}
    cells = summary['cells']
    ref = doc['reference']
    lines: list[str] = []
    for c in doc.get('scale_concurrency', ()):
        header = ['workload (concurrency %d)' % c, 'mappings',
                  'properties'] + [
            '%s: req / CPU ms / p50 ms' % p for p in doc['scale_paths']] + [
            '%s/floor CPU' % ref, '%s/nova CPU' % ref]
        lines += ['| ' + ' | '.join(header) + ' |',
                  '|---' + '|---:' * (len(header) - 1) + '|']
        rows = [(None, None)] + [(k, v) for k, v in scales.items()]
        for scale, info in rows:
            info = info or doc.get('sample') or {}
            row = [scale or 'sample request',
                   '%s' % info.get('mappings', 'n/a'),
                   '%s' % info.get('properties', 'n/a')]
            for p in doc['scale_paths']:
                cell = cells.get('%s/c%d' % (
                    '%s@%s' % (p, scale) if scale else p, c))
                if not cell:
                    row.append('n/a')
                    continue
                text = '%s / %s / %s' % (
                    _fmt('%.2f', cell['req_per_snapshot']),
                    _fmt('%.1f', cell['cpu_ms']),
                    _fmt('%.1f', cell['p50_ms']))
                if cell['errors'] or cell['first_errors']:
                    text += ' **%d errors**' % (cell['errors'] +
                                                cell['first_errors'])
                row.append(text)
            for b in ('floor', 'nova'):
                mine = cells.get('%s/c%d' % (
                    '%s@%s' % (ref, scale) if scale else ref, c), {})
                theirs = cells.get('%s/c%d' % (
                    '%s@%s' % (b, scale) if scale else b, c), {})
                row.append(_fmt('%.2f', _ratio(mine['cpu_ms'],
                                               theirs['cpu_ms']))
                           if mine and theirs else 'n/a')
            lines.append('| ' + ' | '.join(row) + ' |')
        lines.append('')
    return lines


def _load(values: ty.Sequence[float] | None) -> str:
    return '/'.join('%.1f' % x for x in values) if values else 'n/a'


def _fmt(fmt: str, value: ty.Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return 'n/a'
    return fmt % value


def markdown(doc: ty.Mapping[str, ty.Any],
             summary: ty.Mapping[str, ty.Any]) -> str:
    """The markdown report: one table per concurrency, requests, targets."""
    cells = summary['cells']
    ref = doc['reference']
    names = [p for p in doc['paths'] if p not in doc['unavailable']]
    bases = [b for b in doc['baselines'] if b in names and b != ref]
    m = doc['machine']
    v = m['versions']
    lines = [
        '# Snapshot cost: %s vs %s' % (ref, ', '.join(bases)),
        '',
        '%s; N = %d steady snapshots per path and concurrency (batches of '
        '%d, interleaved), after 1 first snapshot and %d warm-up batch(es) '
        'per worker; Glance profile `%s`.' % (
            doc['date'], doc['n'], doc['batch'], doc.get('warmup', 0),
            doc['profile']),
        '',
        'Machine: %d cores, %s, Python %s, glance %s, nova %s, '
        'python-glanceclient %s, keystoneauth1 %s; nova-snapshot-ext %s. '
        'Client and Glance share the cores; load average %s at the start, '
        '%s at the end.' % (
            m['cores'], m['cpu_model'], m['python'], v.get('glance'),
            v.get('nova'), v.get('python-glanceclient'),
            v.get('keystoneauth1'), m.get('source'),
            _load(m.get('loadavg_start')), _load(m.get('loadavg_end'))),
        '',
    ]
    for name in doc['unavailable']:
        lines += ['**Path `%s` unavailable:** %s' % (
            name, doc['unavailable'][name]), '']
    for c in doc['concurrency']:
        header = ['concurrency %d' % c] + names + [
            '%s/%s' % (ref, b) for b in bases]
        lines += ['| ' + ' | '.join(header) + ' |',
                  '|---' + '|---:' * (len(header) - 1) + '|']
        for key, label, fmt in ROWS:
            row = [label]
            for name in names:
                row.append(_fmt(fmt, cells.get('%s/c%d' % (name, c),
                                               {}).get(key)))
            for b in bases:
                mine = cells.get('%s/c%d' % (ref, c), {}).get(key)
                theirs = cells.get('%s/c%d' % (b, c), {}).get(key)
                row.append(_fmt('%.2f', _ratio(mine, theirs))
                           if mine is not None and theirs is not None
                           else 'n/a')
            lines.append('| ' + ' | '.join(row) + ' |')
        row = ['errors (steady + first)']
        for name in names:
            cell = cells.get('%s/c%d' % (name, c), {})
            text = '%d/%d + %d' % (cell.get('errors', 0), cell.get('ops', 0),
                                   cell.get('first_errors', 0))
            if cell.get('errors') or cell.get('first_errors'):
                text = '**%s** %s' % (text, cell.get('error_types'))
            row.append(text)
        lines.append('| ' + ' | '.join(row + [''] * len(bases)) + ' |')
        lines.append('')
    if doc.get('scales'):
        lines += ['Cost as the work grows: HTTP requests / snapshot, client '
                  'CPU ms / snapshot and wall-clock p50 ms (steady):', '']
        lines += scaling(doc, summary)
    keys = ['%s/c%d' % (n, c) for c in doc['concurrency'] for n in names]
    kinds = sorted({k for key in keys
                    for k in cells.get(key, {}).get('breakdown', {})} |
                   {k for key in keys
                    for k in cells.get(key, {}).get('first_breakdown', {})})
    lines += ['Requests per snapshot at Glance, by request (steady; first '
              'snapshot in brackets):', '',
              '| request | ' + ' | '.join(keys) + ' |',
              '|---' + '|---:' * len(keys) + '|']
    for kind in kinds:
        row = [kind]
        for key in keys:
            cell = cells.get(key, {})
            row.append('%.2f (%d)' % (cell.get('breakdown', {}).get(kind, 0),
                                      cell.get('first_breakdown', {}).get(
                                          kind, 0)))
        lines.append('| ' + ' | '.join(row) + ' |')
    lines += ['', 'Targets (reported, not asserted):', '',
              '| concurrency | target | %s | met |' % ref,
              '|---:|---|---:|---|']
    for t in summary['targets']:
        lines.append('| %d | %s | %s | %s |' % (
            t['concurrency'], t['target'], t['value'],
            'yes' if t['met'] else '**no**'))
    lines.append('')
    return '\n'.join(lines)


def chart(doc: ty.Mapping[str, ty.Any], summary: ty.Mapping[str, ty.Any],
          path: str) -> str | None:
    """Grouped bars per metric (matplotlib, Agg backend) into ``path``.

    :returns: ``path``, or ``None`` when matplotlib is not installed.
    """
    try:
        import matplotlib
    except ImportError:
        return None
    matplotlib.use('Agg')
    from matplotlib import pyplot

    cells = summary['cells']
    names = [p for p in doc['paths'] if p not in doc['unavailable']]
    concurrencies = doc['concurrency']
    metrics = [('req_per_snapshot', 'HTTP requests / snapshot'),
               ('cpu_ms', 'client CPU ms / snapshot'),
               ('p50_ms', 'wall-clock p50 ms'),
               ('p95_ms', 'wall-clock p95 ms'),
               ('throughput', 'snapshots / s'),
               ('peak_rss_mib', 'client peak RSS MiB')]
    fig, axes = pyplot.subplots(2, 3, figsize=(13, 7))
    width = 0.8 / max(len(names), 1)
    for ax, (key, title) in zip(axes.flat, metrics):
        for i, name in enumerate(names):
            values = [cells.get('%s/c%d' % (name, c), {}).get(key, math.nan)
                      for c in concurrencies]
            xs = [j + (i - (len(names) - 1) / 2.0) * width
                  for j in range(len(concurrencies))]
            ax.bar(xs, values, width, label=name)
        ax.set_title(title)
        ax.set_xticks(range(len(concurrencies)))
        ax.set_xticklabels(['c=%d' % c for c in concurrencies])
    axes.flat[0].legend()
    fig.suptitle('One volume-backed snapshot, %s (N=%d, %d cores)' % (
        doc['date'], doc['n'], doc['machine']['cores']))
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    pyplot.close(fig)
    return path
