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

"""Reaching Keystone and Glance, one component at a time.

:func:`connect` reaches Keystone (when an identity plugin is configured)
and Glance one step at a time, so an error names the component that
failed (Keystone or Glance), its URL (redacted) and the option to fix;
:func:`check_glance` tells a failed ``GET /versions`` by one table
(:data:`VERSIONS_FAILURES`).  :data:`CONNECTED` records what was reached,
for the messages of later failures (:mod:`.failures`).
"""

from __future__ import annotations

import datetime
import time
import typing as ty

from keystoneauth1 import exceptions as ks_exc
from oslo_config import cfg

from nova_snapshot_ext.cmd import errors
from nova_snapshot_ext import exception
from nova_snapshot_ext.image import glance as glance_mod
from nova_snapshot_ext import opts
from nova_snapshot_ext import redaction


def group_value(conf: cfg.ConfigOpts, name: str) -> ty.Any:
    """An option of ``[snapshot_ext_glance]``, else of its auth_section.

    keystoneauth1 reads the auth plugin and its options from the group
    ``auth_section`` names when it is set.
    """
    groups = [opts.GLANCE_GROUP]
    try:
        if conf[opts.GLANCE_GROUP].auth_section:
            groups.append(conf[opts.GLANCE_GROUP].auth_section)
    except (cfg.NoSuchOptError, KeyError, AttributeError):
        pass
    for group in groups:
        try:
            value = conf[group][name]
        except (cfg.NoSuchOptError, cfg.NoSuchGroupError, KeyError,
                AttributeError):
            continue
        if value is not None:
            return value
    return None


def authenticate(conf: cfg.ConfigOpts, session: ty.Any) -> None:
    """Get a token from Keystone now, naming Keystone when that fails.

    Does nothing for plugins without ``auth_url`` (``admin_token``,
    ``none``) or without a plugin.

    :raises CLIError: exit 3, Keystone unreachable or refusing.
    """
    auth_url = group_value(conf, 'auth_url')
    auth_type = group_value(conf, 'auth_type')
    if session.auth is None:
        return
    if not auth_url:
        _check_static_credentials(session, auth_type)
        return
    shown = redaction.redact_url(auth_url)
    try:
        session.get_auth_headers()
    except (ks_exc.ConnectionError, ks_exc.DiscoveryFailure) as err:
        raise errors.CLIError(
            'Keystone at %s could not be reached (option [%s] auth_url): %s'
            % (shown, opts.GLANCE_GROUP, errors.reason_of(err)),
            errors.EXIT_UNREACHABLE)
    except ks_exc.Unauthorized as err:
        raise errors.CLIError(
            'Keystone at %s refused the credentials of [%s] (auth_type %s: '
            'check username/user_id, password, the project and domain '
            'options, and that the user has a role on that project: '
            'Keystone answers a user without a role on the project like a '
            'wrong password): %s' % (shown, opts.GLANCE_GROUP, auth_type,
                                     errors.reason_of(err)),
            errors.EXIT_UNREACHABLE)
    except ks_exc.NotFound as err:
        raise errors.CLIError(
            '%s is not a Keystone identity endpoint (option [%s] auth_url, '
            'e.g. https://keystone.example.org/v3): %s'
            % (shown, opts.GLANCE_GROUP, errors.reason_of(err)),
            errors.EXIT_UNREACHABLE)
    except Exception as err:  # noqa: B902 - an auth plugin's own check too
        config_error = glance_mod.auth_option_error(conf, err)
        if config_error is not None:
            raise errors.CLIError(config_error.format_message(),
                                  errors.EXIT_INPUT)
        if not isinstance(err, ks_exc.ClientException):
            raise
        raise errors.CLIError(
            'Keystone at %s: authentication with [%s] failed: %s'
            % (shown, opts.GLANCE_GROUP, errors.reason_of(err)),
            errors.EXIT_UNREACHABLE)


#: Plugins whose credential is the ``token`` option itself.
TOKEN_PLUGINS = ('admin_token', 'token', 'v2token', 'v3token')


def _check_static_credentials(session: ty.Any, auth_type: str) -> None:
    """A plugin without Keystone (``admin_token``...) must yield a token.

    :raises CLIError: exit 2, naming the option to set.
    """
    option = ('token' if auth_type in TOKEN_PLUGINS else
              'the options of auth_type %s' % auth_type)
    try:
        headers = session.get_auth_headers()
    except ks_exc.ClientException as err:
        raise errors.CLIError(
            '[%s] auth_type %s gives no credentials (%s): set [%s] %s'
            % (opts.GLANCE_GROUP, auth_type, errors.reason_of(err),
               opts.GLANCE_GROUP, option))
    if not headers or not any(headers.values()):
        raise errors.CLIError(
            '[%s] auth_type %s gives no credentials: set [%s] %s'
            % (opts.GLANCE_GROUP, auth_type, opts.GLANCE_GROUP, option))


def check_catalogless_endpoint(conf: cfg.ConfigOpts,
                               session: ty.Any) -> None:
    """An auth plugin that reads no catalog needs an endpoint option.

    ``admin_token``, ``none``, ``http_basic``: the plugin names Glance
    itself and reads no Keystone catalog; without its ``endpoint`` (and no
    ``endpoint_override``) there is nothing to look in -- a missing option,
    not an unreachable Keystone.  The one home of this rule (``probe``,
    ``snapshot``, ``audit`` and the upgrade check's "Plugin options").

    :raises CLIError: exit 2, naming the options to set.
    """
    group = conf[opts.GLANCE_GROUP]
    if group.endpoint_override or session.auth is None:
        return
    if hasattr(session.auth, 'endpoint') and not session.auth.endpoint:
        raise errors.CLIError(
            '[%s] auth_type %s reads no Keystone catalog: set [%s] endpoint '
            '(or endpoint_override) to the Glance URL' % (
                opts.GLANCE_GROUP, getattr(group, 'auth_type', None),
                opts.GLANCE_GROUP))


def check_auth_configuration(conf: cfg.ConfigOpts) -> None:
    """The ``[snapshot_ext_glance]`` auth plugin, without the network.

    ``auth_type`` names an installed keystoneauth plugin (which registers
    its options), and a plugin that reads no catalog has an endpoint
    (:func:`check_catalogless_endpoint`).

    :raises ConfigurationError: a bad ``auth_type`` or option.
    :raises CLIError: exit 2, a catalog-less plugin without endpoint.
    """
    check_catalogless_endpoint(conf, glance_mod.load_session(conf))


def find_endpoint(conf: cfg.ConfigOpts, session: ty.Any) -> None:
    """Check that the catalog has the image endpoint the options ask for.

    :raises CLIError: exit 3, no such endpoint; exit 2, an auth plugin
        that reads no catalog (``admin_token``, ``none``, ``http_basic``)
        has no ``endpoint`` and there is no ``endpoint_override``.
    """
    group = conf[opts.GLANCE_GROUP]
    if group.endpoint_override or session.auth is None:
        return
    check_catalogless_endpoint(conf, session)
    kwargs = glance_mod.adapter_kwargs(conf)
    wanted = ', '.join('%s=%s' % (k, kwargs[k]) for k in (
        'service_type', 'interface', 'region_name') if k in kwargs)
    try:
        url = session.get_endpoint(
            service_type=kwargs.get('service_type'),
            interface=kwargs.get('interface'),
            region_name=kwargs.get('region_name'),
            service_name=kwargs.get('service_name'))
    except ks_exc.ClientException as err:
        raise errors.CLIError(
            'no image endpoint found in the Keystone catalog (options [%s] '
            '%s): %s' % (opts.GLANCE_GROUP, wanted, errors.reason_of(err)),
            errors.EXIT_UNREACHABLE)
    if not url:
        raise errors.CLIError(
            'the Keystone catalog has no image endpoint for [%s] %s (set '
            'endpoint_override to a Glance URL to skip the catalog)' % (
                opts.GLANCE_GROUP, wanted), errors.EXIT_UNREACHABLE)


def endpoint_source(conf: cfg.ConfigOpts, glance: ty.Any) -> str:
    """Where the Glance URL came from, for a message: the option to fix.

    ``endpoint_override``; else the ``endpoint`` of an auth plugin that
    names one itself (``admin_token``, ``none``, ``http_basic``: no
    catalog is read); else the Keystone catalog.
    """
    group = conf[opts.GLANCE_GROUP]
    if group.endpoint_override:
        return '[%s] endpoint_override' % opts.GLANCE_GROUP
    auth = getattr(getattr(glance, 'session', None), 'auth', None)
    if isinstance(getattr(auth, 'endpoint', None), str):
        return '[%s] endpoint of auth_type %s' % (
            opts.GLANCE_GROUP, getattr(group, 'auth_type', None))
    return 'the image endpoint of the Keystone catalog'


def _reached(err: exception.GlanceError) -> bool:
    return not exception.unreachable(err)


def _server_error(err: exception.GlanceError) -> bool:
    return err.status is not None and err.status >= 500


def _always(err: exception.GlanceError) -> bool:
    return True


#: How a failed ``GET /versions`` (asked twice) is told and which exit
#: status it gets: the first row whose class and test match.  Fields of
#: the sentence: ``where``, ``option``, ``status``, ``group``,
#: ``message`` (the error's) and ``reason``.
VERSIONS_FAILURES: tuple[tuple[type[exception.GlanceError],
                               ty.Callable[[exception.GlanceError], bool],
                               str, int], ...] = (
    (exception.GlanceDeadlineExceeded, _reached,
     'Glance at {where} ({option}) was reached but failed to answer GET '
     '/versions in time: {message}', errors.EXIT_FAILED),
    (exception.GlanceDeadlineExceeded, _always,
     'Glance at {where} ({option}) could not be reached: {message}',
     errors.EXIT_UNREACHABLE),
    # Glance answered and its answer was cut mid-body (asked twice):
    # reached, so Glance failed -- exit 1, as any cut answer
    # (glance_error), never "could not be reached".
    (exception.GlanceUnavailable, _reached,
     'Glance at {where} ({option}) failed to answer GET /versions (asked '
     'twice): {reason}', errors.EXIT_FAILED),
    (exception.GlanceUnavailable, _always,
     'Glance at {where} ({option}) could not be reached: {reason}',
     errors.EXIT_UNREACHABLE),
    (exception.GlanceForbidden, _always,
     'Glance at {where} refused the credentials (HTTP {status}): set '
     '[{group}] auth_type and its options: {reason}', errors.EXIT_UNREACHABLE),
    # Twice an answer that is no version list: a cut or garbled body
    # proves nothing about what answers, so the words say both.
    (exception.GlanceMalformedAnswer, _always,
     'the service at {where} ({option}) answered GET /versions twice with '
     'no readable version list ({reason}): it is not a Glance image API, '
     'or a failing one', errors.EXIT_UNREACHABLE),
    (exception.GlanceError, _server_error,
     'Glance at {where} ({option}) failed to answer GET /versions (HTTP '
     '{status}, twice): {reason}', errors.EXIT_FAILED),
    (exception.GlanceError, _always,
     'the service at {where} ({option}) is not a Glance image API: GET '
     '/versions answered HTTP {status}: {reason}', errors.EXIT_UNREACHABLE),
)


def versions_failure(err: exception.GlanceError) -> tuple[str, int]:
    """The sentence template and exit status of a failed ``GET /versions``.

    :returns: the first :data:`VERSIONS_FAILURES` row's ``(template,
        exit status)`` for ``err``; the last row matches every Glance
        error.
    """
    for cls, applies, template, code in VERSIONS_FAILURES:
        if isinstance(err, cls) and applies(err):
            return template, code
    raise AssertionError('VERSIONS_FAILURES ends with a row for every '
                         'GlanceError')


def check_glance(conf: cfg.ConfigOpts,
                 glance: glance_mod.GlanceClient) -> list[str]:
    """Ask the endpoint for ``GET /versions`` and check it is Glance.

    :returns: the API version ids (``['v2.17', ...]``).
    :raises CLIError: exit 3 when Glance cannot be reached, refuses the
        credentials (401), or the endpoint does not answer like Glance;
        exit 1 when Glance was reached and failed (a persistent 500, an
        answer cut mid-body or too slow, each asked twice).
    """
    where = redaction.redact_url(glance.endpoint)
    option = endpoint_source(conf, glance)
    try:
        versions = _versions_asked_twice(glance)
    except exception.GlanceError as err:
        template, code = versions_failure(err)
        raise errors.CLIError(template.format(
            where=where, option=option, status=err.status,
            group=opts.GLANCE_GROUP, message=err.format_message(),
            reason=err.reason), code)
    except Exception as err:  # noqa: B902 - anything not Glance-shaped
        raise errors.CLIError(
            'the service at %s (%s) is not a Glance image API: its answer '
            'to GET /versions cannot be read (%s)'
            % (where, option, type(err).__name__), errors.EXIT_UNREACHABLE)
    ids = [str(v.get('id')) for v in versions if isinstance(v, dict)]
    if not any(i.startswith('v2') for i in ids):
        raise errors.CLIError(
            'the service at %s (%s) is not a Glance image API: GET '
            '/versions lists no v2 version (%s)'
            % (where, option, ', '.join(ids) or 'none'),
            errors.EXIT_UNREACHABLE)
    return ids


def _versions_asked_twice(glance: glance_mod.GlanceClient
                          ) -> list[dict[str, ty.Any]]:
    """``GET /versions``, asked once more after a blip.

    keystoneauth re-sends a GET after a connection failure or a
    502/503/504; a 500 or an unreadable body is asked again here once.
    """
    try:
        return glance.api_versions()
    except exception.GlanceError as err:
        if not (isinstance(err, (exception.GlanceUnavailable,
                                 exception.GlanceMalformedAnswer)) or (
                err.status is not None and err.status >= 500)):
            raise
    return glance.api_versions()


def connect(conf: cfg.ConfigOpts) -> glance_mod.GlanceClient:
    """A Glance client, each component checked in turn.

    :raises ConfigurationError: the ``[snapshot_ext_glance]`` options.
    :raises CLIError: exit 3 (see :func:`authenticate`,
        :func:`find_endpoint`, :func:`check_glance`).
    """
    session = glance_mod.load_session(conf)
    authenticate(conf, session)
    find_endpoint(conf, session)
    glance = glance_mod.GlanceClient.from_conf(conf, session=session)
    check_glance(conf, glance)
    CONNECTED['endpoint'] = redaction.redact_url(glance.endpoint)
    CONNECTED['authenticated'] = 'yes' if session.auth else ''
    _AUTHENTICATED.clear()
    if session.auth is not None and group_value(conf, 'auth_url'):
        _AUTHENTICATED.update(session=session, at=time.time(),
                              keystone=redaction.redact_url(
                                  group_value(conf, 'auth_url')))
    return glance


#: The Glance the command talks to (redacted URL), for later errors.
CONNECTED: dict[str, str] = {}


#: Keystone issued a token for this command: ``session``, ``at`` (epoch
#: seconds), ``keystone`` (redacted auth_url).  Empty: no Keystone.
_AUTHENTICATED: dict[str, ty.Any] = {}


def _token_times(session: ty.Any) -> tuple[ty.Any, ty.Any]:
    """The issue and expiry times of the session's latest user token.

    :returns: ``(issued, expires)`` as aware datetimes, each ``None``
        when the plugin does not know it.
    """
    auth = getattr(session, 'auth', None)
    auth = getattr(auth, 'user_auth', auth)  # a service-token wrapper
    ref = getattr(auth, 'auth_ref', None)
    return (getattr(ref, 'issued', None), getattr(ref, 'expires', None))


def token_refused_hint() -> str | None:
    """Why Glance answered 401 to a token Keystone issued in this run.

    Keystone accepted the credentials earlier in this run, so they are
    not what Glance refused: the token expired (keystoneauth renews a
    token only when less than 120 s are left before a request, so a
    request slower than the token's whole lifetime arrives expired) or
    was revoked, or the clocks of Keystone and Glance disagree.

    :returns: the explanation, or ``None`` when no token was issued in
        this run (then the credentials themselves are in question).
    """
    if not _AUTHENTICATED:
        return None
    issued, expires = _token_times(_AUTHENTICATED['session'])
    now = datetime.datetime.now(datetime.timezone.utc)
    facts = ['Keystone at %s authenticated [%s] %.0f s ago, so the '
             'credentials are not at fault' % (
                 _AUTHENTICATED['keystone'], opts.GLANCE_GROUP,
                 time.time() - _AUTHENTICATED['at'])]
    lifetime = None
    if issued is not None and expires is not None:
        lifetime = (expires - issued).total_seconds()
        facts.append('its latest token was valid for %.0f s, until %s%s' % (
            lifetime, expires.strftime('%H:%M:%S UTC'),
            ' (passed)' if expires <= now else ''))
    cause = ('the token expired' if expires is not None and expires <= now
             else 'the token expired or was revoked')
    check = ('check Keystone\'s [token] expiration%s against how long a '
             'request to Glance takes here (keystoneauth renews a token '
             'only when less than 120 s are left, so a request slower than '
             'the whole lifetime arrives with an expired token), the clocks '
             'of Keystone and Glance (skew), and whether the token was '
             'revoked' % (' (%.0f s)' % lifetime if lifetime else ''))
    return '%s: %s; %s' % (cause, '; '.join(facts), check)
