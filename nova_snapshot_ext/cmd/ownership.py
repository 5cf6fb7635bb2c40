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

"""Whose image a standalone snapshot makes, and whether it may.

:func:`check_ownership` refuses a standalone snapshot whose image would
not end where Nova would put it; :func:`check_permissions` proves, with a
throwaway image it deletes, that the configured identity can create,
upload and share images; :func:`location_route` and
:func:`identity_roles` say which route the identity's roles allow.
"""

from __future__ import annotations

import typing as ty
import uuid

from keystoneauth1 import exceptions as ks_exc

from nova_snapshot_ext.cmd import errors
from nova_snapshot_ext import exception
from nova_snapshot_ext.image import glance as glance_mod
from nova_snapshot_ext.image import payloads
from nova_snapshot_ext import opts


def identity_project(glance: glance_mod.GlanceClient) -> str | None:
    """The project of the configured identity, when the plugin knows it.

    ``admin_token`` and ``none`` do not know it: ``None``.
    """
    session = glance.session
    if session.auth is None:
        return None
    try:
        project = session.get_project_id()
    except ks_exc.ClientException:
        return None
    return str(project) if project else None


#: What each activation route needs from Glance's default policies
#: (Glance 32+): (route, policy rules, roles that grant them -- any one;
#: Keystone's implied roles included in a token).  Only what the plugin
#: does: it adds a location and never reads one back, so Glance's
#: ``fetch_image_location`` (``service`` only) is not listed.
ROUTE_ROLES = (
    ('upload', 'add_image, upload_image', ('member', 'admin')),
    ('location', 'add_image, add_image_location',
     ('member', 'service', 'admin')),
    ('share with the server\'s project', 'add_member', ('member', 'admin')),
)


#: The legacy location API (``PATCH`` ``add /locations/-``): Glance's
#: ``set_image_location`` is admin or a member of the owning project; the
#: ``service`` role alone does not pass it.
LEGACY_LOCATION_ROUTE = ('location (legacy API)',
                         'add_image, set_image_location',
                         ('member', 'admin'))


def location_route(location_api: str = 'auto'
                   ) -> tuple[str, str, tuple[str, ...]]:
    """The location activation entry of :data:`ROUTE_ROLES`.

    :param location_api: ``[snapshot_ext] location_api``; ``legacy``
        gives :data:`LEGACY_LOCATION_ROUTE`.
    """
    if location_api == 'legacy':
        return LEGACY_LOCATION_ROUTE
    return next(entry for entry in ROUTE_ROLES if entry[0] == 'location')


def _roles_of(auth: ty.Any) -> list[str] | None:
    ref = getattr(auth, 'auth_ref', None)
    names = getattr(ref, 'role_names', None)
    return sorted(names) if names is not None else None


def identity_roles(glance: glance_mod.GlanceClient,
                   activation_method: str | None = None
                   ) -> dict[str, ty.Any]:
    """The roles of the identity's token and what each route needs.

    Glance checks the roles of the request's own token (a service token's
    roles are listed apart: Glance 33's ``service_api`` rule does not
    read them).

    :param activation_method: ``[snapshot_ext] activation_method``; with
        ``upload`` the location route is not used (``used`` False, ``ok``
        None: not judged).
    :returns: ``{'roles': [...] or None, 'service_token_roles': [...] or
        None, 'routes': [{'route', 'rules', 'needs', 'ok', 'used'}]}``;
        ``roles`` is None (and ``ok`` None) when the plugin has no
        Keystone token.
    """
    auth = glance.auth
    user_auth = getattr(auth, 'user_auth', auth)
    service_auth = getattr(auth, 'service_auth', None)
    roles = _roles_of(user_auth)
    routes = []
    for route, rules, needs in ROUTE_ROLES:
        used = not (route == 'location' and activation_method == 'upload')
        routes.append({'route': route, 'rules': rules,
                       'needs': ' or '.join(needs), 'used': used,
                       'ok': None if roles is None or not used else
                       bool(set(needs) & set(roles))})
    return {'roles': roles,
            'service_token_roles': _roles_of(service_auth),
            'routes': routes}


def check_ownership(glance: glance_mod.GlanceClient,
                    requester_project: str | None,
                    server_project: str | None) -> dict[str, ty.Any]:
    """Refuse a snapshot whose image would not end where Nova puts it.

    Glance makes the image's owner the project of the token that creates
    it. Nova creates it with the requester's token: owned by the
    requester's project, shared with the server's project when they
    differ. The standalone command creates it with the configured identity,
    so that identity must be in the requester's project.

    :returns: ``{'identity_project', 'owner', 'member'}`` (the first two
        are ``None`` when the auth plugin cannot tell).
    :raises CLIError: exit 2, the identity is in another project.
    """
    project = identity_project(glance)
    member = (server_project if server_project and
              server_project != requester_project else None)
    if project and requester_project and project != requester_project:
        raise errors.CLIError(
            'the image would be owned by project %s (the identity of [%s]), '
            'not by the requester\'s project %s as Nova would own it%s. '
            'Scope [%s] to project %s (project_id/project_name), or set '
            'requester.project_id to %s in the request to own the image '
            'there and share it with the server\'s project %s as Nova does '
            'for an admin\'s snapshot' % (
                project, opts.GLANCE_GROUP, requester_project,
                ', so project %s could not see it' % server_project
                if server_project and server_project != project else '',
                opts.GLANCE_GROUP, requester_project, project,
                server_project), errors.EXIT_INPUT)
    # Unknown identity project (e.g. admin_token): claim no owner; the
    # command reports the owner Glance gives the image afterwards.
    return {'identity_project': project, 'owner': project,
            'member': member}


def check_permissions(glance: glance_mod.GlanceClient,
                      disk_format: str) -> dict[str, ty.Any]:
    """Create, upload to, share and delete one throwaway image.

    The image is ``shared`` (as a snapshot for another project is),
    named ``nova-snapshot-ext-probe-<hex>``; the payload is the plugin's
    own valid empty image of ``disk_format``; the member added is a random
    project id. It is deleted whatever happens.

    :returns: ``{'ok': bool, 'steps': [{'step', 'ok', 'refused',
        'detail'}], 'missing': [...], 'failed': [...], 'left': image id or
        None, 'created': bool}`` (``created`` False: the create did not
        make the image).  ``missing`` lists what Glance refused (a 4xx:
        the identity may not do it); ``failed`` the steps Glance failed
        otherwise (5xx, an unreadable answer): whether the identity may
        take them is not known.
    """
    image_id = str(uuid.uuid4())
    steps: list[dict[str, ty.Any]] = []
    missing: list[str] = []
    failed: list[str] = []
    created = False

    def run(step: str, needs: str, func: ty.Callable[[], ty.Any]) -> bool:
        try:
            func()
        except exception.GlanceUnavailable:
            raise
        except exception.GlanceError as err:
            refused = err.status is not None and 400 <= err.status < 500
            steps.append({'step': step, 'ok': False, 'refused': refused,
                          'detail': err.format_message()})
            if isinstance(err, exception.GlanceForbidden):
                missing.append(needs)
            elif refused:
                missing.append('%s: Glance refused with HTTP %s'
                               % (needs, err.status))
            else:
                failed.append('%s: Glance failed (%s); whether the '
                              'identity may do it is not known'
                              % (step, err.format_message()))
            return False
        steps.append({'step': step, 'ok': True, 'refused': False,
                      'detail': ''})
        return True

    try:
        created = run('create', 'create images (Glance policy add_image; '
                      'usually the member role)', lambda: glance.create(
                          id=image_id, name='nova-snapshot-ext-probe-%s'
                          % image_id[:8], disk_format=disk_format,
                          container_format='bare', visibility='shared'))
        if created:
            run('upload', 'upload image data (policy upload_image)',
                lambda: glance.upload(image_id, payloads.payload(disk_format),
                                      disk_format=disk_format))
            run('share', 'add image members (policy add_member)',
                lambda: glance.add_member(image_id, uuid.uuid4().hex))
    finally:
        left = None
        if created:
            try:
                glance.delete(image_id)
                steps.append({'step': 'delete', 'ok': True, 'detail': ''})
            except exception.GlanceError as err:
                left = image_id
                steps.append({'step': 'delete', 'ok': False,
                              'detail': err.format_message()})
                missing.append('delete its own images (policy '
                               'delete_image); image %s is left' % image_id)
    return {'ok': not missing and not failed, 'image_id': image_id,
            'steps': steps, 'missing': missing, 'failed': failed,
            'left': left, 'created': created}


def permissions_text(permissions: dict[str, ty.Any] | None) -> str:
    """probe's permissions lines (see :func:`check_permissions`).

    The throwaway image is "not created" when Glance refused the create,
    "deleted" once deleted, "COULD NOT DELETE" when it is left.
    """
    if permissions is None:
        return 'Permissions: not checked'
    text = 'Permissions (throwaway image %s, %s): %s' % (
        permissions['image_id'],
        'not created' if not permissions.get('created', True) else
        'deleted' if not permissions['left'] else 'COULD NOT DELETE',
        ', '.join('%s %s' % (s['step'], 'ok' if s['ok'] else 'REFUSED'
                             if s.get('refused', True) else 'FAILED')
                  for s in permissions['steps']))
    for need in permissions['missing']:
        text += '\n  missing: the identity cannot %s' % need
    for step in permissions.get('failed', ()):
        text += '\n  failed: %s' % step
    return text
