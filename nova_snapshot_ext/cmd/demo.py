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


"""``nova-snapshot-ext demo``: the real job against an embedded Glance.

Starts a real glance-api (:mod:`nova_snapshot_ext.embedded.glance`) in a
temp dir, writes an ordinary config file for it
(:func:`nova_snapshot_ext.embedded.demo.write_config`), runs exactly what
``nova-snapshot-ext snapshot --config-file FILE REQUEST.json`` runs,
prints the image as Glance returns it, then stops Glance and removes the
temp dir.  ``--location`` activates through a location served by
:class:`~nova_snapshot_ext.embedded.demo.ObjectServer` instead.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import sys
import typing as ty

from oslo_config import cfg

from nova_snapshot_ext.cmd import checks
from nova_snapshot_ext.cmd import config
from nova_snapshot_ext.cmd import snapshot as snapshot_cmd
from nova_snapshot_ext.embedded import demo as embedded_demo
from nova_snapshot_ext.embedded import glance as embedded
from nova_snapshot_ext.image import payloads
from nova_snapshot_ext.snapshot import metadata
from nova_snapshot_ext.snapshot import request as request_mod


def cmd_demo(conf: cfg.ConfigOpts) -> int:
    """The ``demo`` command: :func:`run` with the command's arguments."""
    args = conf.command
    return run(profile=args.profile, driver=args.driver,
               request_path=args.request or request_mod.SAMPLE_REQUEST,
               fmt=conf.format, location=args.location)


#: Modules the demo needs beyond the base install
#: (``embedded-requirements.txt`` of the clone).
EMBEDDED_MODULES = ('glance', 'gunicorn')


def install_hint(command: str) -> str:
    """What to run when the embedded requirements are missing.

    Names the pip of the interpreter running ``command`` (``demo`` or
    ``serve``), so that the packages land where the command runs, and
    the README's tox route.
    """
    return ('%s runs a real glance-api and needs the embedded requirements '
            '(glance, gunicorn): from the clone run "%s -m pip install -c '
            'constraints.txt -r embedded-requirements.txt", or run the demo '
            'with "python3 -m venv ~/.venvs/tox && ~/.venvs/tox/bin/pip '
            'install tox && ~/.venvs/tox/bin/tox -e demo"'
            % (command, sys.executable))


def check_embedded_requirements(command: str = 'demo') -> None:
    """Refuse the demo when the embedded requirements are not installed.

    :raises CLIError: exit 2, naming what to install.
    """
    missing = [name for name in EMBEDDED_MODULES
               if importlib.util.find_spec(name) is None]
    if missing:
        raise checks.CLIError('not installed: %s; %s'
                              % (', '.join(missing), install_hint(command)))


def _check_driver(name: str) -> None:
    from nova_snapshot_ext import driver as driver_mod
    from nova_snapshot_ext import exception

    names = driver_mod.driver_names()
    if name not in names:
        raise exception.DriverNotFound(name=name,
                                       available=', '.join(names))


def run(profile: str = 'default', driver: str = 'libvirt',
        request_path: str = request_mod.SAMPLE_REQUEST, fmt: str = 'text',
        location: bool = False) -> int:
    """Run the demo; returns the process exit code.

    :param location: activate through a location served by an
        :class:`~nova_snapshot_ext.embedded.demo.ObjectServer` (forces the
        ``http-store`` profile when ``profile`` is ``'default'``).
    :raises InvalidRequest: the request file is malformed.
    :raises ConfigurationError: unknown profile.
    """
    from nova_snapshot_ext import exception

    _check_driver(driver)
    if location and profile == 'default':
        profile = 'http-store'
    if profile not in embedded.PROFILES:
        raise exception.ConfigurationError(
            group='demo', option='--profile',
            reason='unknown profile %r; known: %s' % (
                profile, ', '.join(sorted(embedded.PROFILES))))
    request = request_mod.SnapshotRequest.from_file(request_path)
    check_embedded_requirements()
    roles = request.requester.roles or ['member', 'reader']
    token = '%s:%s:%s' % (request.requester.user_id or 'demo-user',
                          request.requester.project_id, ','.join(roles))
    log = sys.stderr if fmt == 'text' else open(os.devnull, 'w')
    print('Starting an embedded real Glance (profile %s)...' % profile,
          file=log)
    location_format = (embedded_demo.location_format_for(driver)
                       if location else '')
    path = embedded_demo.LOCATION_PATH % location_format
    objects = embedded_demo.ObjectServer(
        {path: payloads.payload(location_format)} if location else {})
    started: list[bool] = []
    try:
        return _run(objects, profile, driver, request, request_path, token,
                    fmt, log, location, location_format, path, started)
    except embedded.EmbeddedGlanceError as err:
        # The log named in the message lived in the temp dir, now removed:
        # quote its tail instead of pointing at it.
        text = re.sub(r'; log \S+:', ':', str(err))
        raise checks.CLIError('the embedded Glance failed: %s' % text,
                              checks.EXIT_UNREACHABLE)
    finally:
        # The results went to stdout (block-buffered when piped): let
        # them out before this last progress line on stderr.
        sys.stdout.flush()
        # Only what happened: a Glance that never came up is not
        # "stopped" (its launcher removed its temp dir either way).
        print('%s stopped; temp dir removed.' % (
            'Glance and the location\'s object server' if location
            else 'Glance') if started else
            'Glance did not start; its temp dir removed.', file=log)
        if log is not sys.stderr:
            log.close()


def _run(objects: embedded_demo.ObjectServer, profile: str, driver: str,
         request: ty.Any, request_path: str, token: str, fmt: str,
         log: ty.Any, location: bool, location_format: str,
         path: str, started: list[bool] | None = None) -> int:
    with objects, embedded.EmbeddedGlance(
            identity='token', **embedded.PROFILES[profile]) as glance:
        if started is not None:
            started.append(True)
        location_url = objects.url(path) if location else None
        if location_url:
            print('Serving the location object %s (%d B of %s)'
                  % (location_url, len(objects.objects[path]),
                     location_format), file=log)
        print('Glance %s is up; snapshotting %s with driver %s'
              % (glance.endpoint, os.path.basename(request_path), driver),
              file=log)
        conf_path = os.path.join(glance.base_dir, 'nova-snapshot-ext.conf')
        embedded_demo.write_config(conf_path, glance.endpoint, token, driver,
                                   location_url,
                                   location_format or
                                   embedded_demo.LOCATION_FORMAT)
        conf = config.load_conf_files([conf_path])
        explained = explain(conf, conf_path, request)
        if fmt == 'text':
            print(explained['text'])
        image = snapshot_cmd.run_snapshot(conf, request, fmt,
                                          extra={'explain':
                                                 explained['data']})
        if image and fmt == 'text':
            mappings = json.loads(image.get('block_device_mapping', '[]'))
            print('\n%d block device mappings: %s' % (len(mappings), ', '.join(
                '%s %s->%s' % (m['device_name'], m['source_type'],
                               m['destination_type']) for m in mappings)))
            if location_url:
                print('Location (direct_url): %s\nGlance computed %s %s'
                      % (image.get('direct_url'), image.get('os_hash_algo'),
                         image.get('os_hash_value')))
    return 0


#: Shown in place of the token in the config the demo prints.
_TOKEN_RE = re.compile(r'^(token\s*=\s*)(.*)$', re.MULTILINE)


#: Why a kind of property is never inherited, for the demo's account.
DROPPED_BECAUSE = {
    'secret': 'a key-manager secret of the source; a copy lets deleting '
              'one image destroy the other\'s key',
    'ownership': 'ownership belongs to the new image',
    'glance-state': 'Glance\'s own state of another image',
    'foreign-data': 'describes bytes the snapshot does not hold',
    'provenance': 'where another image came from or who signed it',
    'borrowed-identity': 'another image\'s identity (backup rotation)',
    'status-marker': 'another service\'s state of another object',
    'server-record': 'Nova system metadata, not image metadata',
    'mapping': 'always rebuilt from this server',
    'operator-list': 'listed in [snapshot_ext] '
                     'non_inheritable_image_properties',
}


def _why_dropped(key: str, operator_keys: ty.Collection[str]) -> str:
    kind = metadata.never_inherited_kind(key, operator_keys)
    if kind is None:
        return 'empty value'
    return '%s (%s)' % (kind, DROPPED_BECAUSE.get(kind, 'never inherited'))


def _why_payload(conf: ty.Any, info: dict[str, ty.Any]) -> str:
    """Why the demo's first planned attempt is the payload it is.

    :param info: :func:`nova_snapshot_ext.cmd.snapshot.describe_plan`'s
        answer.
    """
    first = info['plan'][0] if info['plan'] else None
    if first is None:
        return info.get('refused') or ('no honest activation exists on '
                                       'this Glance')
    if first.get('method') == 'location':
        return ('[snapshot_ext] activation_method is %s: Glance reads the '
                'location object (a valid empty %s image) instead of an '
                'upload' % (conf.snapshot_ext.activation_method,
                            first.get('disk_format')))
    if first.get('disk_format') == 'raw':
        return ('raw is allowed here, and zero bytes are honest only as '
                'raw: the payload is 0 B')
    if first.get('fallback'):
        which = ('this Glance allows no format driver %s reads, so the '
                 'smallest honest one it allows: a fallback, see '
                 '[snapshot_ext] driver_formats_only'
                 % info['driver']['name'])
    else:
        which = ('the first format this Glance allows that driver %s reads'
                 % info['driver']['name'])
    return ('raw is %s, so the payload is a valid empty %s image (%s)'
            % ('not allowed here' if 'raw' not in info['glance'][
                'disk_formats'] else 'not wanted by the configuration',
               first.get('disk_format'), which))


def explain(conf: ty.Any, conf_path: str,
            request: ty.Any) -> dict[str, ty.Any]:
    """What the demo is about to do and why, as text and data.

    The config file used (token hidden), the formats this Glance allows,
    the driver's formats, the activation plan (why this payload), and the
    inherited properties the snapshot drops, each with the reason.
    """
    from nova_snapshot_ext.snapshot import service as service_mod

    with open(conf_path, encoding='utf-8') as f:
        config_text = _TOKEN_RE.sub(r'\1***', f.read())
    service = service_mod.SnapshotService(conf)
    info = snapshot_cmd.describe_plan(service, service.glance)
    record = service.build_record(request)
    _base, inherited = metadata.inherited_metadata(request.server)
    operator_keys = conf.snapshot_ext.non_inheritable_image_properties
    dropped = {key: _why_dropped(key, operator_keys)
               for key in sorted(inherited)
               if key not in record.properties}
    g = info['glance']
    reads = info['driver']['disk_formats']
    plan = [p['describe'] for p in info['plan']]
    why = _why_payload(conf, info)
    lines = ['Config used (%s):' % conf_path]
    lines += ['  ' + line for line in config_text.strip().splitlines()]
    lines += [
        'This Glance allows disk_format %s; driver %s reads %s.' % (
            ', '.join(g['disk_formats']), info['driver']['name'],
            ', '.join(reads)),
        'Why this payload: %s.' % why,
        'Inherited properties dropped:' if dropped else
        'Inherited properties dropped: none']
    lines += ['  %s: %s' % (k, v) for k, v in dropped.items()]
    if set(dropped) & metadata.NEVER_INHERITED_KINDS['foreign-data']:
        # Glance computes these itself from the payload it stores.
        lines.append('  (the image below has its size, checksum and hash '
                     "again: Glance's own, of the payload this run "
                     'uploaded)')
    return {'text': '\n'.join(lines), 'data': {
        'config': config_text, 'disk_formats': g['disk_formats'],
        'driver_reads': reads, 'why_payload': why, 'plan': plan,
        'dropped_properties': dropped}}
