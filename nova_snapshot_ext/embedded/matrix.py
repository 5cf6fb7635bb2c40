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

"""The (Glance profile x driver) outcome matrix, run on real Glances.

For every profile of :data:`~nova_snapshot_ext.embedded.glance.PROFILES`
listed in :data:`MATRIX_PROFILES` an embedded glance-api is started, and
the shipped sample request is snapshotted once per driver variant.  A cell
is either the active image's disk_format and size, or the preflight
refusal (nothing created); a format the driver does not read (planned
because a volume-backed boot never reads the payload) is marked
``fallback``.  ``tox -e matrix`` writes the table to
``doc/source/matrix.rst``; the functional test ``test_matrix`` runs the
same cells, judges every payload downloaded back and checks the committed
table is current.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import json
import sys
import typing as ty
import uuid

from oslo_config import cfg

from nova_snapshot_ext import driver as driver_mod
from nova_snapshot_ext.embedded import glance as embedded
from nova_snapshot_ext import exception
from nova_snapshot_ext.image import glance as glance_mod
from nova_snapshot_ext import opts
from nova_snapshot_ext.snapshot import request as request_mod
from nova_snapshot_ext.snapshot import service as service_mod

MATRIX_PROFILES = ('default', 'no-raw', 'vhd-only', 'vmdk-only', 'iso-only',
                   'qcow2-only', 'vdi-only', 'vhdx-only', 'ploop-only',
                   'vmdk-iso', 'no-enforcement')


def driver_variants() -> tuple[tuple[str, str, dict[str, str]], ...]:
    """The matrix's driver rows, from the installed drivers.

    Each driver's :attr:`~nova_snapshot_ext.driver.SnapshotDriver.
    matrix_variants` (one row with the defaults when it declares none),
    drivers in name order.

    :returns: ``((label, driver name, {option of the driver's group:
        value}), ...)``, e.g. ``('libvirt (lxc)', 'libvirt',
        {'virt_type': 'lxc'})``.
    """
    rows: list[tuple[str, str, dict[str, str]]] = []
    for name, cls in driver_mod.driver_classes().items():
        for label, options in cls.matrix_variants or ((name, {}),):
            rows.append((label, name, dict(options)))
    return tuple(rows)


def __getattr__(name: str) -> ty.Any:
    # DRIVER_VARIANTS is derived from the entry points when read.
    if name == 'DRIVER_VARIANTS':
        return driver_variants()
    raise AttributeError(name)


@dataclasses.dataclass
class Cell:
    """One (profile, driver) outcome.

    :ivar outcome: ``'active'`` or ``'refused'``.
    :ivar disk_format: disk_format of the active image.
    :ivar size: its size in bytes.
    :ivar attempts: number of attempts made.
    :ivar image_id: the active image's id.
    :ivar reason: the refusal message.
    :ivar fallback: the active format is not one the driver reads.
    """

    profile: str
    driver: str
    outcome: str
    disk_format: str | None = None
    size: int | None = None
    attempts: int = 0
    image_id: str | None = None
    reason: str | None = None
    fallback: bool = False

    def label(self) -> str:
        if self.outcome == 'active':
            return '%s (%d B)%s' % (self.disk_format, self.size or 0,
                                    ' fallback' if self.fallback else '')
        return 'refused'


def _request(project_id: str) -> request_mod.SnapshotRequest:
    with open(request_mod.SAMPLE_REQUEST, encoding='utf-8') as f:
        data = copy.deepcopy(json.load(f))
    data['name'] = 'matrix-%s' % uuid.uuid4().hex[:8]
    # One snapshot per cell: new volume snapshot ids (the snapshot's
    # idempotency key when no image_id is given).
    for mapping in data['block_device_mappings']:
        if mapping.get('snapshot_id'):
            mapping['snapshot_id'] = str(uuid.uuid4())
    data['server']['project_id'] = project_id
    data['requester']['project_id'] = project_id
    return request_mod.SnapshotRequest.from_dict(data)


def _service(driver_name: str, options: ty.Mapping[str, str]
             ) -> service_mod.SnapshotService:
    conf = cfg.ConfigOpts()
    opts.register_opts(conf)
    conf([], default_config_files=[], default_config_dirs=[])
    cls = driver_mod.driver_classes()[driver_name]
    cls.register_opts(conf)
    for name, value in options.items():
        conf.set_override(name, value, group=cls.group_name())
    return service_mod.SnapshotService(
        conf, driver=driver_mod.load_driver(conf, driver_name))


def run_profile(glance: embedded.EmbeddedGlance, profile: str,
                variants: ty.Iterable[tuple[str, str, dict[str, str]]]
                | None = None) -> tuple[list[Cell],
                                        glance_mod.GlanceClient]:
    """Snapshot the sample request once per driver variant.

    :returns: the cells and the client used (owner of the images).
    """
    project = uuid.uuid4().hex
    session = glance.session(project, uuid.uuid4().hex,
                             roles=('member', 'reader'))
    client = glance_mod.GlanceClient(session,
                                     endpoint_override=glance.endpoint)
    cells = []
    for label, name, options in (driver_variants() if variants is None
                                 else variants):
        svc = _service(name, options)
        request = _request(project)
        try:
            result = svc.snapshot(request, glance=client)
        except exception.FormatNotAllowed as err:
            cells.append(Cell(profile, label, 'refused',
                              reason=err.format_message()))
            continue
        fmt = result.disk_format
        cells.append(Cell(profile, label, 'active',
                          disk_format=fmt, size=result.size,
                          attempts=len(result.attempts),
                          image_id=result.image_id,
                          fallback=(fmt != 'raw' and
                                    fmt not in svc.driver.disk_formats)))
    return cells, client


def run_matrix(profiles: ty.Iterable[str] = MATRIX_PROFILES) -> list[Cell]:
    """Every cell, each profile on its own embedded Glance."""
    cells: list[Cell] = []
    for profile in profiles:
        with embedded.from_profile(profile) as glance:
            cells.extend(run_profile(glance, profile)[0])
    return cells


def render_rst(cells: ty.Sequence[Cell]) -> str:
    """The reST page of the matrix (deterministic for the same cells)."""
    profiles = list(dict.fromkeys(c.profile for c in cells))
    drivers = list(dict.fromkeys(c.driver for c in cells))
    by_key = {(c.profile, c.driver): c for c in cells}
    header = ['driver'] + profiles
    rows = [[d] + [by_key[(p, d)].label() for p in profiles]
            for d in drivers]
    widths = [max(len(r[i]) for r in rows + [header])
              for i in range(len(header))]
    rule = ' '.join('=' * w for w in widths)

    def line(values: ty.Sequence[str]) -> str:
        return ' '.join(v.ljust(w) for v, w in zip(values, widths)).rstrip()

    described = []
    for p in profiles:
        kwargs = embedded.PROFILES[p]
        formats = kwargs.get('disk_formats', embedded.DEFAULT_DISK_FORMATS)
        extra = ('' if kwargs.get('require_image_format_match', True)
                 else ', ``require_image_format_match = false``')
        described.append('``%s``\n    ``disk_formats = %s``%s'
                         % (p, ','.join(formats), extra))
    text = [
        '=========================================',
        'Which honest image each Glance will hold',
        '=========================================',
        '',
        '.. This file is generated by ``tox -e matrix``; do not edit.',
        '',
        'Each cell is the image the plugin leaves active for the shipped',
        'sample request (disk_format and size in bytes), on a real',
        'glance-api 33 configured as the column says, with the driver of',
        'the row; ``refused`` means preflight refused before anything was',
        'created. ``fallback`` marks a format the driver does not read:',
        'the plugin plans it after the driver\'s own formats because a',
        'volume-backed boot never reads the payload (set ``[snapshot_ext]',
        'driver_formats_only = true`` to refuse such a cell instead).',
        'Without ``fallback`` the format is the driver\'s (or ``raw``, zero',
        'bytes, as Nova uploads). The functional test',
        '``tests/functional/test_matrix.py``',
        'runs the same cells in CI, downloads every payload back from',
        'Glance, judges it with oslo.utils\' format inspector and',
        '``qemu-img``, and fails if this table is out of date.',
        '',
        'Profiles (``[image_format]`` settings of the Glance):',
        '',
    ]
    text += described
    text += ['', rule, line(header), rule]
    text += [line(r) for r in rows]
    text += [rule, '']
    return '\n'.join(text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description='Run the (Glance profile x driver) matrix on embedded '
                    'real Glances and write it as reST.')
    parser.add_argument('--output', default='-',
                        help='file to write (default: stdout)')
    args = parser.parse_args(argv)
    cells = run_matrix()
    text = render_rst(cells)
    if args.output == '-':
        sys.stdout.write(text)
    else:
        with open(args.output, 'w', encoding='utf-8') as f:
            f.write(text)
        print('wrote %s (%d cells)' % (args.output, len(cells)))
    return 0


if __name__ == '__main__':
    sys.exit(main())
