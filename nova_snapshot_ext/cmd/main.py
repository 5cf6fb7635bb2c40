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

"""The ``nova-snapshot-ext`` console script.

Sub-commands:

``snapshot --config-file FILE REQUEST.json``
    register and activate the snapshot image described by REQUEST.json
    (see :mod:`nova_snapshot_ext.snapshot.request`) in the Glance that
    ``[snapshot_ext_glance]`` reaches.
``probe --config-file FILE``
    what that Glance allows and the activation plan the plugin would use.
``demo [--location]``
    start an embedded real Glance, snapshot the shipped sample request,
    print the image as Glance returns it, stop Glance.  ``--location``
    activates through a location served by a local web server.

Each takes ``--format json`` for scripts.  Exit status: 0 success;
1 the snapshot or probe failed (Glance refused or failed, or this Glance and
this driver have no honest format in common); 2 bad input: usage, the
request (including a preflight refusal of its properties) or the
configuration.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import sys
import typing as ty

from oslo_config import cfg
from oslo_log import log as logging

from nova_snapshot_ext import exception
from nova_snapshot_ext.image import locations
from nova_snapshot_ext import opts
from nova_snapshot_ext.snapshot import request as request_mod
from nova_snapshot_ext.snapshot import service as service_mod

LOG = logging.getLogger(__name__)

SAMPLE_REQUEST = os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), 'data', 'sample-request.json')

#: Nova options read (never required) to infer the driver when the
#: plugin reads nova.conf; registered only on the CLI's own ConfigOpts.
_NOVA_HINT_OPTS = [
    (None, cfg.StrOpt('compute_driver')),
    ('libvirt', cfg.StrOpt('virt_type')),
]


def _register_nova_hints(conf: cfg.ConfigOpts) -> None:
    for group, opt in _NOVA_HINT_OPTS:
        try:
            conf.register_opt(opt, group=group)
        except cfg.DuplicateOptError:
            pass


def _load_conf(config_files: list[str]) -> cfg.ConfigOpts:
    conf = cfg.ConfigOpts()
    opts.register_opts(conf)
    _register_nova_hints(conf)
    logging.register_options(conf)
    # Logs go to stderr so that stdout carries only the output (JSON).
    conf.set_default('use_stderr', True)
    for path in config_files:
        if not os.path.isfile(path):
            raise exception.ConfigurationError(
                '--config-file %s %s' % (path, 'is not a file' if
                                         os.path.exists(path) else
                                         'does not exist'))
    conf(args=[], project='nova-snapshot-ext',
         default_config_files=config_files, default_config_dirs=[])
    logging.setup(conf, 'nova-snapshot-ext')
    return conf


def _print(data: ty.Any, text: str, fmt: str) -> None:
    if fmt == 'json':
        print(json.dumps(data, indent=2, sort_keys=True, default=str))
    else:
        print(text)


def _read_request(path: str) -> request_mod.SnapshotRequest:
    try:
        with open(path, encoding='utf-8') as f:
            data = json.load(f)
    except OSError as err:
        raise exception.InvalidRequest(field='<file>', reason=str(err))
    except ValueError as err:
        raise exception.InvalidRequest(field='<file>',
                                       reason='not valid JSON: %s' % err)
    except RecursionError:
        raise exception.InvalidRequest(field='<file>',
                                       reason='JSON nested too deeply')
    return request_mod.SnapshotRequest.from_dict(data)


def redact_image(image: dict[str, ty.Any]) -> dict[str, ty.Any]:
    """The image as Glance returned it, minus URL secrets.

    ``direct_url`` and ``locations[].url`` can carry a location's user
    info or signed query string (design rule 8).
    """
    shown = dict(image)
    if shown.get('direct_url'):
        shown['direct_url'] = locations.redact_url(shown['direct_url'])
    if isinstance(shown.get('locations'), list):
        shown['locations'] = [
            dict(loc, url=locations.redact_url(loc.get('url')))
            if isinstance(loc, dict) else loc
            for loc in shown['locations']]
    return shown


LEGACY_UNKNOWN = ('the legacy location API cannot be discovered without '
                  'trying: it needs show_multiple_locations = true in '
                  'Glance (deprecated; a 403 at run time means it is off)')


def describe_location(service: service_mod.SnapshotService,
                      glance: ty.Any, caps: ty.Any) -> dict[str, ty.Any]:
    """Whether this Glance can take a location, and why not.

    :returns: ``{'activation_method', 'url' (redacted), 'api_2_17',
        'read_only_stores' (None: not multi-store, cannot tell), 'legacy',
        'usable', 'reasons'}``.
    """
    conf = service.conf.snapshot_ext
    source = service.location_source
    info: dict[str, ty.Any] = {
        'activation_method': conf.activation_method,
        'url': source.redacted if source else None,
        'api_2_17': caps.location_api,
        'read_only_stores': caps.read_only_stores,
        'legacy': LEGACY_UNKNOWN,
        'usable': False,
        'reasons': [],
    }
    if source is None:
        info['reasons'] = ['[snapshot_ext] activation_method is upload']
        return info
    location, reasons = service.assess_location(caps, glance)
    info['usable'] = location is not None
    info['reasons'] = reasons
    if location is not None:
        info['api'] = location.location_api
        info['size'] = location.size
        info['disk_format'] = location.disk_format
    return info


def describe_plan(service: service_mod.SnapshotService,
                  glance: ty.Any) -> dict[str, ty.Any]:
    """Capabilities, driver, location and plan as a JSON-able dict."""
    caps = service.capabilities.get(glance)
    location = describe_location(service, glance, caps)
    plan = service.plan(caps, glance)
    refused = None
    if (location['activation_method'] == 'location-first' and
            not location['usable']):
        refused = ('activation_method is location-first and the location '
                   'cannot be used: %s' % '; '.join(location['reasons']))
    return {
        'glance': {'endpoint': glance.endpoint, **caps.to_dict()},
        'driver': service.driver.capabilities(),
        'location': location,
        'plan': [p.to_dict() | {'describe': p.describe()} for p in plan],
        'refused': refused,
    }


def _location_text(loc: dict[str, ty.Any]) -> list[str]:
    stores = loc['read_only_stores']
    lines = [
        'Location activation ([snapshot_ext] activation_method = %s):'
        % loc['activation_method'],
        '  new API (v2.17 listed): %s' % ('yes' if loc['api_2_17']
                                          else 'no'),
        '  read-only (http) store: %s' % (
            'cannot tell (Glance is not multi-store)' if stores is None
            else ', '.join(stores) or 'none'),
        '  legacy API: %s' % loc['legacy'],
    ]
    if loc['url']:
        lines.append('  object: %s' % loc['url'])
    if loc['usable']:
        lines.append('  usable: yes, %s API, %s, %d B' % (
            loc['api'], loc['disk_format'], loc['size']))
    else:
        lines.append('  usable: no: %s' % '; '.join(loc['reasons']))
    return lines


def _plan_text(info: dict[str, ty.Any]) -> str:
    g = info['glance']
    lines = [
        'Glance %s' % g['endpoint'],
        '  disk_formats:      %s' % ', '.join(g['disk_formats']),
        '  container_formats: %s' % ', '.join(g['container_formats']),
        '  location API (v2.17): %s' % ('yes' if g['location_api']
                                        else 'no'),
        '  stores: %s' % ('single store' if g['stores'] is None else
                          ', '.join(s.get('id', '?') for s in g['stores'])),
        'Driver %s: hypervisor_type=%s, reads %s' % (
            info['driver']['name'], info['driver'].get('hypervisor_type'),
            ', '.join(info['driver']['disk_formats'])),
    ]
    lines += _location_text(info['location'])
    lines += [
        'Activation plan:',
    ]
    if not info['plan']:
        lines.append('  (none: snapshots would be refused by preflight)')
    for i, p in enumerate(info['plan'], 1):
        lines.append('  %d. %s' % (i, p['describe']))
    if info.get('refused'):
        lines.append('Snapshots would be refused by preflight: %s'
                     % info['refused'])
    return '\n'.join(lines)


def cmd_probe(args: argparse.Namespace) -> int:
    conf = _load_conf(args.config_file)
    service = service_mod.SnapshotService(conf)
    info = describe_plan(service, service.glance)
    _print(info, _plan_text(info), args.format)
    return 0 if info['plan'] and not info['refused'] else 1


def run_snapshot(conf: cfg.ConfigOpts, request: request_mod.SnapshotRequest,
                 fmt: str) -> tuple[int, ty.Any]:
    """Snapshot ``request``; print the result; return (exit code, image)."""
    service = service_mod.SnapshotService(conf)
    try:
        result = service.snapshot(request)
    except exception.ActivationFailed as err:
        failed = getattr(err, 'result', None)
        data = {'error': err.format_message(), 'exit_code': 1,
                'result': failed.to_dict() if failed else None}
        _print(data, 'FAILED: %s' % err.format_message(), fmt)
        return 1, None
    image = redact_image(service.glance.get(result.image_id or ''))
    if fmt == 'json':
        _print({'result': result.to_dict(), 'image': image}, '', fmt)
    else:
        print(result.describe())
        print('Image as Glance returns it:')
        print(json.dumps(image, indent=2, sort_keys=True, default=str))
    return 0, image


def cmd_snapshot(args: argparse.Namespace) -> int:
    request = _read_request(args.request)
    conf = _load_conf(args.config_file)
    return run_snapshot(conf, request, args.format)[0]


def _exit_on_sigterm(signum: int, frame: ty.Any) -> None:
    # SystemExit unwinds the demo's context managers: Glance is stopped
    # and its temp dir removed, as on Ctrl-C.
    raise SystemExit(128 + signum)


def cmd_demo(args: argparse.Namespace) -> int:
    from nova_snapshot_ext.embedded import demo

    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    return demo.run(profile=args.profile, driver=args.driver,
                    request_path=args.request or SAMPLE_REQUEST,
                    fmt=args.format, location=args.location)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog='nova-snapshot-ext',
        description='Register honest, active metadata-only Glance images '
                    'for volume-backed server snapshots.')
    sub = parser.add_subparsers(dest='command', required=True)

    def common(p: argparse.ArgumentParser, config: bool = True) -> None:
        if config:
            p.add_argument('--config-file', action='append', default=[],
                           metavar='FILE', help='oslo.config ini file(s) '
                           'with [snapshot_ext] and [snapshot_ext_glance] '
                           '(repeatable; e.g. /etc/nova/nova.conf)')
        p.add_argument('--format', choices=('text', 'json'), default='text',
                       help='output format (default: text)')

    p = sub.add_parser('snapshot', help='snapshot one request')
    common(p)
    p.add_argument('request', metavar='REQUEST.json',
                   help='the snapshot request (JSON)')
    p.set_defaults(func=cmd_snapshot)

    p = sub.add_parser('probe', help='show what Glance allows and the plan')
    common(p)
    p.set_defaults(func=cmd_probe)

    p = sub.add_parser('demo', help='run against an embedded real Glance')
    common(p, config=False)
    p.add_argument('--profile', default='default',
                   help='embedded Glance profile: default, no-raw, '
                   'vhd-only (vhd,vhdx), vmdk-only, iso-only, '
                   'no-enforcement, http-store, legacy-locations; with '
                   '--location, default means http-store')
    p.add_argument('--driver', default='libvirt',
                   help='hypervisor driver: libvirt, vmwareapi, hyperv, '
                   'xenapi, ironic, zvm, fake (default: libvirt)')
    p.add_argument('--request', metavar='REQUEST.json',
                   help='request to snapshot (default: the shipped sample)')
    p.add_argument('--location', action='store_true',
                   help='activate through a location: Glance with the http '
                   'store (profile http-store unless --profile says '
                   'otherwise) reads a valid empty image (qcow2, or the '
                   'first inspectable format the driver reads) from a '
                   'local web server the demo starts; the API is chosen '
                   'automatically (the new one where Glance lists 2.17)')
    p.set_defaults(func=cmd_demo)
    return parser


def _fail(message: str, code: int, fmt: str) -> int:
    """Report an error: stderr, and a JSON object on stdout for scripts."""
    print('error: %s' % message, file=sys.stderr)
    if fmt == 'json':
        print(json.dumps({'error': message, 'exit_code': code}, indent=2))
    return code


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    fmt = getattr(args, 'format', 'text')
    try:
        return int(args.func(args))
    except exception.FormatNotAllowed as err:
        # This Glance and this driver have no honest format in common.
        return _fail(err.format_message(), 1, fmt)
    except (exception.InvalidRequest, exception.InvalidServerState,
            exception.ConfigurationError, exception.DriverNotFound,
            exception.PreflightError, cfg.Error) as err:
        message = (err.format_message() if isinstance(
            err, exception.SnapshotExtException) else str(err))
        return _fail(message, 2, fmt)
    except exception.SnapshotExtException as err:
        return _fail(err.format_message(), 1, fmt)
    except KeyboardInterrupt:
        with contextlib.suppress(Exception):
            print('interrupted', file=sys.stderr)
        return 130


if __name__ == '__main__':
    sys.exit(main())
