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


"""The ``snapshot`` and ``probe`` commands, and what the demo shares.

``probe`` describes what this Glance allows, the location, the activation
plan and where the driver choice came from; ``snapshot`` runs one request
and prints the result and the image as Glance returns it (redacted).
"""

from __future__ import annotations

import json
import typing as ty

from oslo_config import cfg

from nova_snapshot_ext.cmd import checks
from nova_snapshot_ext import driver as driver_mod
from nova_snapshot_ext import exception
from nova_snapshot_ext.image import quotas
from nova_snapshot_ext import opts
from nova_snapshot_ext import redaction
from nova_snapshot_ext.snapshot import request as request_mod
from nova_snapshot_ext.snapshot import request_schema
from nova_snapshot_ext.snapshot import service as service_mod


def emit(data: ty.Any, text: str, fmt: str) -> None:
    """Print ``data`` as JSON, or ``text``, as ``fmt`` says."""
    if fmt == 'json':
        print(json.dumps(data, indent=2, sort_keys=True, default=str))
    elif text:
        print(text)


def redact_image(image: dict[str, ty.Any]) -> dict[str, ty.Any]:
    """The image as Glance returned it, minus URL secrets.

    ``direct_url`` and ``locations[].url`` can carry a location's user
    info or signed query string (design rule 8).
    """
    shown = dict(image)
    if shown.get('direct_url'):
        shown['direct_url'] = redaction.redact_url(shown['direct_url'])
    if isinstance(shown.get('locations'), list):
        shown['locations'] = [
            dict(loc, url=redaction.redact_url(loc.get('url')))
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
    decision = service.decide_plan(caps, glance)
    plan, refused = decision.attempts, decision.refused
    return {
        'glance': {'endpoint': glance.endpoint, **caps.to_dict()},
        'driver': dict(service.driver.capabilities(),
                       stamps=service.driver.stamps),
        'location': location,
        'plan': [p.to_dict() | {'describe': p.describe()} for p in plan],
        'refused': refused,
    }


def quota_report(glance: ty.Any, service: service_mod.SnapshotService
                 ) -> dict[str, ty.Any] | None:
    """Glance's quota headroom for the identity's project, per route.

    :returns: ``{'headroom': {resource: {'usage', 'limit', 'left'}},
        'create': refusal or None, 'attempts': [{'attempt', 'refused'}]}``,
        or None when Glance enforces no unified limits.
    """
    usage = quotas.read_usage(glance)
    if not usage:
        return None
    caps = service.capabilities.get(glance)
    return {'headroom': quotas.headroom(usage),
            'create': quotas.create_refusal(usage),
            'attempts': [{'attempt': a.describe(),
                          'refused': quotas.attempt_refusal(usage, a)}
                         for a in service.decide_plan(caps, glance).attempts]}


def _roles_text(roles: dict[str, ty.Any]) -> str:
    if roles['roles'] is None:
        return '\nRoles: unknown (no Keystone token)'
    text = '\nRoles of the identity: %s' % (', '.join(roles['roles']) or
                                            'none')
    if roles['service_token_roles'] is not None:
        text += '; service token: %s' % ', '.join(
            roles['service_token_roles'])
    for route in roles['routes']:
        if not route.get('used', True):
            text += '\n  %s: not used (activation_method = upload)' % (
                route['route'])
            continue
        text += '\n  %s: %s (needs %s; Glance policy %s)' % (
            route['route'], 'ok' if route['ok'] else 'MISSING ROLE',
            route['needs'], route['rules'])
    return text


def _quota_text(report: dict[str, ty.Any] | None) -> str:
    if report is None:
        return '\nGlance quotas: none enforced (no unified limits)'
    text = '\nGlance quotas (usage / limit, left):'
    for name, entry in sorted(report['headroom'].items()):
        if entry['left'] is None:  # a negative limit: unlimited
            text += '\n  %s: %d / unlimited (limit %d)' % (
                name, entry['usage'], entry['limit'])
            continue
        text += '\n  %s: %d / %d, %d left' % (
            name, entry['usage'], entry['limit'], entry['left'])
    if report['create']:
        text += '\n  a new image is refused: %s' % report['create']
    for attempt in report['attempts']:
        if attempt['refused']:
            text += '\n  %s is refused: %s' % (
                attempt['attempt'], attempt['refused'])
    return text


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
        'Driver %s: %s, reads %s' % (
            info['driver']['name'],
            'hypervisor_type=%s' % info['driver'].get('hypervisor_type')
            if info['driver'].get('stamps', True) else
            'guessed: stamps no hypervisor_type or vm_mode',
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


def driver_source(conf: cfg.ConfigOpts) -> str:
    """Where the driver choice came from, in words."""
    return driver_mod.choose_driver(conf).reason


def cmd_probe(conf: cfg.ConfigOpts) -> int:
    checks.check_configuration(conf)
    glance = checks.connect(conf)
    service = service_mod.SnapshotService(conf, glance=glance)
    info = describe_plan(service, glance)
    info['driver']['source'] = driver_source(conf)
    info['identity'] = {'project': checks.identity_project(glance)}
    uploads = [p for p in info['plan'] if p.get('method') == 'upload']
    permissions = None
    if not conf.command.no_write_check and uploads:
        permissions = checks.check_permissions(glance,
                                               uploads[0]['disk_format'])
    info['permissions'] = permissions
    text = _plan_text(info)
    info['roles'] = checks.identity_roles(
        glance, conf.snapshot_ext.activation_method)
    info['quotas'] = quota_report(glance, service)
    text += '\nDriver chosen by: %s' % info['driver']['source']
    text += '\n' + checks.permissions_text(permissions)
    text += _roles_text(info['roles']) + _quota_text(info['quotas'])
    emit(info, text, conf.format)
    if not info['plan'] or info['refused']:
        return checks.EXIT_INPUT
    if permissions is not None and not permissions['ok']:
        return checks.EXIT_FAILED
    return checks.EXIT_OK


def run_snapshot(conf: cfg.ConfigOpts, request: request_mod.SnapshotRequest,
                 fmt: str, glance: ty.Any = None,
                 ownership: dict[str, ty.Any] | None = None,
                 extra: dict[str, ty.Any] | None = None
                 ) -> dict[str, ty.Any] | None:
    """Snapshot ``request`` and print the result.

    :returns: the image as Glance returns it (redacted), or ``None`` when
        it could not be read back (a warning says so; still a success).
    :raises ActivationFailed: every attempt failed (exit 1), or the image
        reported active was read ``queued`` twice afterwards
        (:meth:`~.service.SnapshotService.recheck`).
    """
    service = service_mod.SnapshotService(conf, glance=glance)
    result = service.snapshot(request)
    # The snapshot succeeded: reading the image back is for display only,
    # and no failure of that read turns the success into a failure.
    image: dict[str, ty.Any] | None = None
    try:
        seen = service.glance.get(result.image_id or '')
        if seen.get('status') != 'active':
            # The read in hand contradicts the success: read again once
            # (ActivationFailed when the image is still queued).
            seen = service.recheck(result, seen)
        image = redact_image(seen)
    except exception.SnapshotInterrupted:
        raise
    except KeyboardInterrupt as err:
        # Interrupted after the snapshot succeeded: say so, not "cleaned
        # up" (main reports the interrupt with the result it carries).
        raise exception.SnapshotInterrupted(result, err) from err
    except exception.GlanceError as err:
        checks.warn('snapshot image %s is %s; it could not be read back '
                    'for display: %s' % (result.image_id, result.status,
                                         checks.clean_message(
                                             err.format_message())))
    if image is not None:
        _hash_from_image(result, image)
    if image is not None and ownership is not None:
        _report_owner(ownership, image, request)
    if fmt == 'json':
        emit(dict(extra or {}, result=result.to_dict(), image=image,
                  ownership=ownership), '', fmt)
    else:
        print(result.describe())
        if image is not None:
            print('Image as Glance returns it:')
            print(json.dumps(image, indent=2, sort_keys=True, default=str))
    return image


def _hash_from_image(result: ty.Any, image: dict[str, ty.Any]) -> None:
    """Fill the result's hash from the image Glance returned after it.

    An upload's answer (204) has no body: the engine knows the hash only
    when an answer carried it.  The image read back afterwards is Glance's
    own word; it is taken only for the same image.
    """
    if result.os_hash_value or image.get('id') != result.image_id:
        return
    if image.get('os_hash_value'):
        result.os_hash_algo = image.get('os_hash_algo')
        result.os_hash_value = image.get('os_hash_value')


def _report_owner(ownership: dict[str, ty.Any], image: dict[str, ty.Any],
                  request: request_mod.SnapshotRequest) -> None:
    """Record the owner Glance gave the image; warn where Nova differs.

    Before the snapshot the owner is known only when the auth plugin
    names its project (not with ``admin_token``); the image says it.
    """
    owner = image.get('owner')
    ownership['owner'] = owner
    wanted = request.requester.project_id
    if owner and wanted and owner != wanted:
        checks.warn('image %s is owned by project %s (the project of '
                    '[%s]), not by the requester\'s project %s where Nova '
                    'would put it; scope [%s] to project %s' % (
                        image.get('id'), owner, opts.GLANCE_GROUP, wanted,
                        opts.GLANCE_GROUP, wanted))


def cmd_snapshot(conf: cfg.ConfigOpts) -> int:
    request = request_schema.load_file(conf.command.request)
    checks.check_configuration(conf)
    glance = checks.connect(conf)
    ownership = checks.check_ownership(
        glance, request.requester.project_id, request.server.project_id)
    run_snapshot(conf, request, conf.format, glance=glance,
                 ownership=ownership)
    return checks.EXIT_OK
