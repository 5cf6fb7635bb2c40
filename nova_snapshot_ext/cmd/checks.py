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

"""What the console script checks before it acts, and how it says so.

* :func:`connect` reaches Keystone (when an identity plugin is configured)
  and Glance one step at a time, so an error names the component that
  failed (Keystone or Glance), its URL (redacted) and the option to fix.
* :func:`check_ownership` refuses a standalone snapshot whose image would
  not end where Nova would put it.
* :func:`check_permissions` proves, with a throwaway image it deletes,
  that the configured identity can create, upload and share images.
* :func:`unknown_options` finds typos in the ``[snapshot_ext*]`` sections.

Every refusal is a :class:`CLIError` carrying its exit code (see
:data:`EXIT_CODES`).
"""

from __future__ import annotations

import configparser
import datetime
import difflib
import os
import re
import sys
import time
import typing as ty
import uuid

from keystoneauth1 import exceptions as ks_exc
from keystoneauth1 import loading as ks_loading
from oslo_config import cfg

from nova_snapshot_ext import driver as driver_mod
from nova_snapshot_ext import exception
from nova_snapshot_ext.image import glance as glance_mod
from nova_snapshot_ext.image import payloads
from nova_snapshot_ext import opts
from nova_snapshot_ext import redaction
from nova_snapshot_ext.snapshot import service as service_mod

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_INPUT = 2
EXIT_UNREACHABLE = 3
EXIT_SIGINT = 130
EXIT_SIGTERM = 143

#: Over the project's Glance quota (unified limits), whether the
#: preflight's usage read foresaw it (nothing created) or Glance's 413 said
#: so at the create or upload: neither bad input (the same request passes
#: once the limit is raised or usage freed) nor Glance unreachable.
QUOTA_EXIT = EXIT_FAILED

#: The one exit-status table (``--help``, README, docs).
EXIT_CODES = (
    (EXIT_OK, 'done (audit: nothing left unrepaired)'),
    (EXIT_FAILED, 'the operation failed: the snapshot was not activated '
                  '(also when over the project\'s Glance quota, found '
                  'before the create or by Glance), probe found the '
                  'identity cannot snapshot, or audit found problems it '
                  'did not repair'),
    (EXIT_INPUT, 'bad input or configuration: usage, the request, an '
                 'option, or a preflight refusal of the image record '
                 '(nothing was created)'),
    (EXIT_UNREACHABLE, 'cannot reach or authenticate: Keystone or Glance '
                       'unreachable, credentials refused, no image '
                       'endpoint, or the endpoint is not Glance'),
    (EXIT_SIGINT, 'interrupted (Ctrl-C): nothing is deleted mid-upload; '
                  'an image the snapshot leaves is named, and the same '
                  'request run again adopts it'),
    (EXIT_SIGTERM, 'terminated (SIGTERM), handled exactly like Ctrl-C'),
)


#: The warnings this command printed (``warning: <text>``), each once
#: whether the command printed it or a log record carried it
#: (:class:`nova_snapshot_ext.cmd.main.ConsoleFormatter`).
WARNED: set[str] = set()


def warn(text: str) -> None:
    """Print ``warning: <text>`` on stderr, once per command."""
    if text in WARNED:
        return
    WARNED.add(text)
    print('warning: %s' % text, file=sys.stderr)


class CLIError(Exception):
    """An error the console script reports and exits with.

    :param message: one line for stderr (and the JSON ``error``).
    :param code: the exit status.
    :param details: extra JSON fields (e.g. ``left`` image ids).
    """

    def __init__(self, message: str, code: int = EXIT_INPUT,
                 **details: ty.Any):
        super().__init__(message)
        self.message = message
        self.code = code
        self.details = details


_LOCATION_INFO_RE = re.compile(
    r"(from )?LocationInfo\(location=<Locations\.(\w+): [^>]*>, "
    r"detail=(?:'([^']*)'|None)\)")


def clean_message(text: str) -> str:
    """Replace oslo.config's internal ``LocationInfo(...)`` reprs.

    ``from LocationInfo(location=<Locations.user: ...>, detail='/f.conf')``
    becomes ``in /f.conf``; without a file, the kind of place (``user``,
    ``command_line``...).
    """
    def _place(match: re.Match[str]) -> str:
        where = match.group(3) or match.group(2).replace('_', ' ')
        return ('in %s' % where) if match.group(1) else where
    return _LOCATION_INFO_RE.sub(_place, text)


def _group_value(conf: cfg.ConfigOpts, name: str) -> ty.Any:
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


#: Longest reason quoted from a library's exception (characters).
REASON_LIMIT = 300


def _reason(err: BaseException) -> str:
    """One line of ``err``'s text, at most about :data:`REASON_LIMIT`.

    A longer text is cut at the last word boundary before the limit and
    says so (``[...]``): a word cut in half reads as a different word.
    """
    text = ' '.join(str(err).split())
    if len(text) > REASON_LIMIT:
        head = text[:REASON_LIMIT + 1]
        cut = head.rfind(' ')
        text = (head[:cut] if cut > 0 else text[:REASON_LIMIT]) + ' [...]'
    return text or type(err).__name__


_VALUE_ERROR_RE = re.compile(r'^(?:Default )?[Vv]alue for option \S+ (.*)$',
                             re.S)


def check_option_values(conf: cfg.ConfigOpts) -> None:
    """Read every registered option now, naming ``[group] option`` at fault.

    oslo.config checks a value only when it is read, and its message names
    the option and the file but not the section (``Value for option
    timeout in f.conf is not valid``): the same name lives in several
    sections.  Reading all of them here, before any network step, turns a
    bad value into one error naming the section.

    :raises ConfigurationError: exit 2.
    """
    def read(group: str | None, name: str, get: ty.Callable[[], ty.Any]
             ) -> ty.Any:
        try:
            return get()
        except (cfg.Error, ValueError) as err:
            # "Value for option timeout in f.conf is not valid: ..."
            text = clean_message(str(err))
            match = _VALUE_ERROR_RE.match(text)
            raise exception.ConfigurationError(
                group=group or 'DEFAULT', option=name,
                reason=match.group(1) if match else text) from err

    for name in list(conf):
        value = read(None, name, lambda: conf[name])
        if isinstance(value, cfg.ConfigOpts.GroupAttr):
            for option in list(value):
                read(name, option, lambda: value[option])


def check_configuration(conf: cfg.ConfigOpts) -> None:
    """Everything about the configuration that needs no network.

    Run before :func:`connect`, so a typo is named as one (exit 2) and not
    hidden behind a later network error: every option's value
    (:func:`check_option_values`), the ``[snapshot_ext]`` rules of
    :func:`~nova_snapshot_ext.snapshot.service.check_options`, and the
    driver (``[snapshot_ext] driver`` names an installed one; its
    ``[snapshot_ext_<driver>]`` options are valid), and the
    ``[snapshot_ext_glance]`` auth plugin (``auth_type`` names an installed
    keystoneauth plugin, which registers its options).

    :raises ConfigurationError: a bad value, naming ``[group] option``.
    :raises DriverNotFound: ``[snapshot_ext] driver`` names no installed
        driver (the message lists the installed ones).
    :raises DriverLoadError: the driver cannot be loaded.
    """
    service_mod.check_options(conf)
    check_option_values(conf)
    driver_mod.load_driver(conf)
    check_auth_configuration(conf)
    # Again: the driver's and the auth plugin's options, registered just
    # now by loading them.
    check_option_values(conf)


def authenticate(conf: cfg.ConfigOpts, session: ty.Any) -> None:
    """Get a token from Keystone now, naming Keystone when that fails.

    Does nothing for plugins without ``auth_url`` (``admin_token``,
    ``none``) or without a plugin.

    :raises CLIError: exit 3, Keystone unreachable or refusing.
    """
    auth_url = _group_value(conf, 'auth_url')
    auth_type = _group_value(conf, 'auth_type')
    if session.auth is None:
        return
    if not auth_url:
        _check_static_credentials(session, auth_type)
        return
    shown = redaction.redact_url(auth_url)
    try:
        session.get_auth_headers()
    except (ks_exc.ConnectionError, ks_exc.DiscoveryFailure) as err:
        raise CLIError(
            'Keystone at %s could not be reached (option [%s] auth_url): %s'
            % (shown, opts.GLANCE_GROUP, _reason(err)), EXIT_UNREACHABLE)
    except ks_exc.Unauthorized as err:
        raise CLIError(
            'Keystone at %s refused the credentials of [%s] (auth_type %s: '
            'check username/user_id, password, the project and domain '
            'options, and that the user has a role on that project: '
            'Keystone answers a user without a role on the project like a '
            'wrong password): %s' % (shown, opts.GLANCE_GROUP, auth_type,
                                     _reason(err)), EXIT_UNREACHABLE)
    except ks_exc.NotFound as err:
        raise CLIError(
            '%s is not a Keystone identity endpoint (option [%s] auth_url, '
            'e.g. https://keystone.example.org/v3): %s'
            % (shown, opts.GLANCE_GROUP, _reason(err)), EXIT_UNREACHABLE)
    except Exception as err:  # noqa: B902 - an auth plugin's own check too
        config_error = glance_mod.auth_option_error(conf, err)
        if config_error is not None:
            raise CLIError(config_error.format_message(), EXIT_INPUT)
        if not isinstance(err, ks_exc.ClientException):
            raise
        raise CLIError('Keystone at %s: authentication with [%s] failed: %s'
                       % (shown, opts.GLANCE_GROUP, _reason(err)),
                       EXIT_UNREACHABLE)


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
        raise CLIError('[%s] auth_type %s gives no credentials (%s): set '
                       '[%s] %s' % (opts.GLANCE_GROUP, auth_type,
                                    _reason(err), opts.GLANCE_GROUP, option))
    if not headers or not any(headers.values()):
        raise CLIError('[%s] auth_type %s gives no credentials: set [%s] %s'
                       % (opts.GLANCE_GROUP, auth_type, opts.GLANCE_GROUP,
                          option))


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
        raise CLIError('[%s] auth_type %s reads no Keystone catalog: set '
                       '[%s] endpoint (or endpoint_override) to the Glance '
                       'URL' % (opts.GLANCE_GROUP,
                                getattr(group, 'auth_type', None),
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


def section_hints(conf: cfg.ConfigOpts) -> list[str]:
    """Unknown ``[snapshot_ext*]`` sections and options, with "did you mean".

    The one home of that hint (:func:`unknown_options` over every group
    this program knows): ``probe``, ``snapshot``, ``audit`` print it as
    warnings; the upgrade check puts it in "Plugin options".
    """
    return unknown_options(conf, known_groups())


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
        raise CLIError('no image endpoint found in the Keystone catalog '
                       '(options [%s] %s): %s' % (opts.GLANCE_GROUP, wanted,
                                                  _reason(err)),
                       EXIT_UNREACHABLE)
    if not url:
        raise CLIError('the Keystone catalog has no image endpoint for '
                       '[%s] %s (set endpoint_override to a Glance URL to '
                       'skip the catalog)' % (opts.GLANCE_GROUP, wanted),
                       EXIT_UNREACHABLE)


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
     '/versions in time: {message}', EXIT_FAILED),
    (exception.GlanceDeadlineExceeded, _always,
     'Glance at {where} ({option}) could not be reached: {message}',
     EXIT_UNREACHABLE),
    # Glance answered and its answer was cut mid-body (asked twice):
    # reached, so Glance failed -- exit 1, as any cut answer
    # (glance_error), never "could not be reached".
    (exception.GlanceUnavailable, _reached,
     'Glance at {where} ({option}) failed to answer GET /versions (asked '
     'twice): {reason}', EXIT_FAILED),
    (exception.GlanceUnavailable, _always,
     'Glance at {where} ({option}) could not be reached: {reason}',
     EXIT_UNREACHABLE),
    (exception.GlanceForbidden, _always,
     'Glance at {where} refused the credentials (HTTP {status}): set '
     '[{group}] auth_type and its options: {reason}', EXIT_UNREACHABLE),
    # Twice an answer that is no version list: a cut or garbled body
    # proves nothing about what answers, so the words say both.
    (exception.GlanceMalformedAnswer, _always,
     'the service at {where} ({option}) answered GET /versions twice with '
     'no readable version list ({reason}): it is not a Glance image API, '
     'or a failing one', EXIT_UNREACHABLE),
    (exception.GlanceError, _server_error,
     'Glance at {where} ({option}) failed to answer GET /versions (HTTP '
     '{status}, twice): {reason}', EXIT_FAILED),
    (exception.GlanceError, _always,
     'the service at {where} ({option}) is not a Glance image API: GET '
     '/versions answered HTTP {status}: {reason}', EXIT_UNREACHABLE),
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
        raise CLIError(template.format(
            where=where, option=option, status=err.status,
            group=opts.GLANCE_GROUP, message=err.format_message(),
            reason=err.kwargs.get('reason')), code)
    except Exception as err:  # noqa: B902 - anything not Glance-shaped
        raise CLIError('the service at %s (%s) is not a Glance image API: '
                       'its answer to GET /versions cannot be read (%s)'
                       % (where, option, type(err).__name__),
                       EXIT_UNREACHABLE)
    ids = [str(v.get('id')) for v in versions if isinstance(v, dict)]
    if not any(i.startswith('v2') for i in ids):
        raise CLIError('the service at %s (%s) is not a Glance image API: '
                       'GET /versions lists no v2 version (%s)'
                       % (where, option, ', '.join(ids) or 'none'),
                       EXIT_UNREACHABLE)
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
    if session.auth is not None and _group_value(conf, 'auth_url'):
        _AUTHENTICATED.update(session=session, at=time.time(),
                              keystone=redaction.redact_url(
                                  _group_value(conf, 'auth_url')))
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


def glance_error(err: exception.GlanceError) -> tuple[str, int]:
    """The message and exit status of a Glance error met mid-command.

    Adds the Glance URL when the message lacks it; a 401 is a missing or
    refused credential (exit 3) and names ``auth_type``.
    """
    message = err.format_message()
    status = err.status
    where = CONNECTED.get('endpoint')
    if where and where not in message:
        message = 'Glance at %s: %s' % (where, message)
    if exception.unreachable(err):
        return message, EXIT_UNREACHABLE
    if isinstance(err, exception.GlanceUnavailable):
        # A deadline on a Glance that was reached: Glance failed (1).
        return message, EXIT_FAILED
    if status == 401:
        return '%s (%s)' % (message, _auth_hint()), EXIT_UNREACHABLE
    return message, EXIT_FAILED


def _auth_hint() -> str:
    """Why Glance answered 401, as far as the CLI knows.

    A token Keystone issued in this run and Glance then refused has
    expired or was revoked (:func:`token_refused_hint`); otherwise the
    credentials were refused, or none were sent.
    """
    return token_refused_hint() or (
        'the credentials of [%s] were refused' % opts.GLANCE_GROUP
        if CONNECTED.get('authenticated') else
        'no credentials were sent: set [%s] auth_type and its '
        'options' % opts.GLANCE_GROUP)


def activation_failure(err: exception.ActivationFailed) -> tuple[str, int]:
    """The message and exit status of a snapshot that was not activated.

    By the cause of its last attempt's failure, as for any Glance error
    (:func:`glance_error`; doc/source/cli.rst "Exit status by cause"):
    Glance unreachable or a 401 on the requests after the create is exit
    3 (the 401 explained: an expired or revoked token when Keystone issued
    one in this run), everything else exit 1.

    :returns: ``(message, exit status)``.
    """
    message = err.format_message()
    cause = err.__cause__
    if not isinstance(cause, exception.GlanceError):
        return message, EXIT_FAILED
    if isinstance(cause, exception.SnapshotImageConflict):
        # The request names an image that is not this record's (its
        # image_id, or volume snapshot ids another record already holds):
        # bad input, met the same way on every retry of this request.
        return message, EXIT_INPUT
    if cause.status == 401:
        return ('%s (Glance refused the request with HTTP 401: %s)'
                % (message, _auth_hint()), EXIT_UNREACHABLE)
    return message, glance_error(cause)[1]


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
        raise CLIError(
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
                server_project), EXIT_INPUT)
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
            status = err.kwargs.get('status')
            refused = isinstance(status, int) and 400 <= status < 500
            steps.append({'step': step, 'ok': False, 'refused': refused,
                          'detail': err.format_message()})
            if isinstance(err, exception.GlanceForbidden):
                missing.append(needs)
            elif refused:
                missing.append('%s: Glance refused with HTTP %s'
                               % (needs, status))
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


def _known_options(conf: cfg.ConfigOpts, group: str,
                   listed: ty.Collection[str]) -> set[str] | None:
    """The option names ``group`` accepts, or ``None`` when unknowable.

    ``None``: the group's ``auth_type`` names no installed keystoneauth
    plugin, so which options it takes is unknown.
    """
    names: set[str] = set(listed)
    try:
        names |= {name for name in conf[group]}
    except (cfg.NoSuchGroupError, cfg.NoSuchOptError, KeyError):
        pass
    if group in (opts.GLANCE_GROUP, opts.SERVICE_USER_GROUP):
        auth_type = None
        try:
            auth_type = conf[group].auth_type
        except (cfg.NoSuchOptError, KeyError, AttributeError):
            pass
        if auth_type:
            try:
                names |= {o.dest for o in
                          ks_loading.get_auth_plugin_conf_options(auth_type)}
            except ks_exc.NoMatchingPlugin:
                # The auth_type error names the fault; the plugin's
                # options cannot be told from unknown ones.
                return None
    return {n.replace('-', '_') for n in names}


def config_files(conf: cfg.ConfigOpts) -> list[str]:
    """The files oslo.config read (``--config-file`` and config dirs)."""
    files = list(conf.config_file or [])
    for directory in conf.config_dir or []:
        if os.path.isdir(directory):
            files += sorted(os.path.join(directory, f)
                            for f in os.listdir(directory)
                            if f.endswith('.conf'))
    return files


def _parsed_files(conf: cfg.ConfigOpts
                  ) -> ty.Iterator[tuple[str, configparser.RawConfigParser]]:
    """Each readable file of :func:`config_files`, parsed as written.

    Sections and keys as the operator wrote them, options this program
    has not registered (an auth plugin's, a misspelled one) included.
    """
    for path in config_files(conf):
        parser = configparser.RawConfigParser(
            strict=False, default_section='\x00none')
        try:
            parser.read(path, encoding='utf-8')
        except (configparser.Error, UnicodeDecodeError):
            continue
        yield path, parser


def options_set(conf: cfg.ConfigOpts, group: str) -> list[str]:
    """The option names given a value for ``group``, however spelled.

    Keys of its section in the files (registered or not: an auth
    plugin's options while ``auth_type`` is unset, a misspelled name)
    and ``OS_<GROUP>__<OPTION>`` environment variables, as oslo.config
    reads them.

    :returns: sorted names, lower case, ``-`` read as ``_``.
    """
    names = set()
    for _path, parser in _parsed_files(conf):
        if parser.has_section(group):
            names.update(parser.options(group))
    prefix = 'OS_%s__' % group.upper()
    names.update(key[len(prefix):] for key in os.environ
                 if key.startswith(prefix))
    return sorted({n.lower().replace('-', '_') for n in names})


def known_groups() -> dict[str, set[str]]:
    """Every option group of the plugin, Nova's included -> option names."""
    from nova_snapshot_ext.nova import conf as nova_conf

    return {group.name: {o.dest for o in group_opts}
            for group, group_opts in (opts.list_opts() +
                                      nova_conf.list_opts())}


def unknown_options(conf: cfg.ConfigOpts,
                    groups: ty.Mapping[str, ty.Collection[str]]
                    ) -> list[str]:
    """Warnings for unknown ``[snapshot_ext*]`` sections and options.

    :param groups: every group this program knows -> its option names
        (the auth plugin's options are added from ``auth_type``).
    :returns: one message per unknown section or option, with the file and
        a close known name when there is one.
    """
    known_groups = set(groups)
    found: list[str] = []
    for path, parser in _parsed_files(conf):
        for section in parser.sections():
            norm = section.lower()
            close = difflib.get_close_matches(norm, sorted(known_groups),
                                              n=1, cutoff=0.8)
            if section not in known_groups:
                if norm.startswith(('snapshot_ext', 'snapshot-ext')) or (
                        close and norm not in ('glance', 'service_user')):
                    found.append('%s: unknown section [%s]%s' % (
                        path, section, ' (did you mean [%s]?)' % close[0]
                        if close else ''))
                continue
            if not section.startswith(opts.CORE_GROUP):
                continue
            known = _known_options(conf, section, groups[section])
            if known is None:
                continue
            for key in parser.options(section):
                if key.replace('-', '_') in known:
                    continue
                owners = _auth_plugins_with(conf, section, key)
                if owners:
                    # An auth plugin's option while auth_type is unset:
                    # known, only unused -- say that, not "unknown".
                    found.append(
                        '%s: [%s] %s is ignored: no auth_type is set (it is '
                        'an option of auth_type %s)' % (
                            path, section, key, ', '.join(owners)))
                    continue
                near = difflib.get_close_matches(key, sorted(known),
                                                 n=1, cutoff=0.75)
                found.append('%s: unknown option [%s] %s%s' % (
                    path, section, key, ' (did you mean %s?)' % near[0]
                    if near else ''))
    return found


#: At most this many auth plugins are named for an ignored option.
_OWNERS_SHOWN = 3


def _auth_plugins_with(conf: cfg.ConfigOpts, group: str,
                       key: str) -> list[str]:
    """The installed auth plugins taking option ``key``, when unused.

    Only for an auth group whose ``auth_type`` is unset (else the
    plugin's options are known and any other is unknown).
    """
    if group not in (opts.GLANCE_GROUP, opts.SERVICE_USER_GROUP):
        return []
    try:
        if conf[group].auth_type:
            return []
    except (cfg.NoSuchOptError, cfg.NoSuchGroupError, KeyError,
            AttributeError):
        return []
    name = key.replace('-', '_')
    owners = []
    for plugin in sorted(ks_loading.get_available_plugin_names()):
        try:
            options = ks_loading.get_auth_plugin_conf_options(plugin)
        except Exception:  # noqa: B902 - a plugin that fails to load
            continue
        if any(o.dest == name for o in options):
            owners.append(plugin)
    if len(owners) > _OWNERS_SHOWN:
        owners = owners[:_OWNERS_SHOWN] + ['...']
    return owners
