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

"""The Glance client wrapper: one keystoneauth1 session, translated errors.

Every call goes through python-glanceclient v2 over a keystoneauth1
session.  Transport retries are keystoneauth's (``[snapshot_ext_glance]
connect_retries`` / ``status_code_retries``), never a loop here, and only
where a second send cannot do harm (:data:`IDEMPOTENT_METHODS`; a create
with the plugin's own image id may be re-sent after a connection failure,
its 409 is read back by the engine).  Every glanceclient, keystoneauth1,
requests or urllib3 error -- and an answer whose body cannot be read or
decoded -- is translated into a
:class:`~nova_snapshot_ext.exception.GlanceError` subclass carrying
``operation``, ``image_id`` and ``status`` kwargs: no transport error
leaves this module untranslated.

glanceclient has no class for HTTP 415 (Glance's format-inspection
refusal): it raises the bare ``glanceclient.exc.HTTPException`` whose text
starts ``HTTP 415``; :func:`translate` recognises it as
:class:`~nova_snapshot_ext.exception.ImageFormatRejected`.
"""

from __future__ import annotations

from collections import abc
import contextlib
import http.client
import io
import json
import re
import threading
import time
import typing as ty

import glanceclient
from glanceclient import exc as glance_exc
from keystoneauth1 import exceptions as ks_exc
from keystoneauth1 import loading as ks_loading
from keystoneauth1 import service_token
from keystoneauth1 import session as ks_session
from oslo_config import cfg
from oslo_log import log as logging
import requests
import urllib3

from nova_snapshot_ext import exception
from nova_snapshot_ext.image import deadline
from nova_snapshot_ext.image import quotas
from nova_snapshot_ext import opts
from nova_snapshot_ext import redaction

LOG = logging.getLogger(__name__)

_STATUS_RE = re.compile(r'HTTP (\d{3})')

_CLASS_MAP: list[tuple[type, type[exception.GlanceError]]] = [
    (glance_exc.HTTPBadRequest, exception.GlanceBadRequest),
    (glance_exc.HTTPUnauthorized, exception.GlanceForbidden),
    (glance_exc.HTTPForbidden, exception.GlanceForbidden),
    (glance_exc.HTTPNotFound, exception.GlanceNotFound),
    (glance_exc.HTTPConflict, exception.GlanceConflict),
    (glance_exc.HTTPOverLimit, exception.GlanceOverLimit),
    # 502/503/504: Glance, or the way to it, cannot answer now -- one
    # cause, one class (and one exit code, doc/source/cli.rst); 500 is
    # Glance's own failure (GlanceError).
    (glance_exc.HTTPBadGateway, exception.GlanceUnavailable),
    (glance_exc.HTTPServiceUnavailable, exception.GlanceUnavailable),
    (glance_exc.HTTPNotImplemented, exception.GlanceNotImplemented),
    (glance_exc.CommunicationError, exception.GlanceUnavailable),
    (glance_exc.InvalidEndpoint, exception.GlanceUnavailable),
    (ks_exc.ConnectionError, exception.GlanceUnavailable),
    (ks_exc.EndpointNotFound, exception.GlanceUnavailable),
    (ks_exc.DiscoveryFailure, exception.GlanceUnavailable),
    (ks_exc.ServiceUnavailable, exception.GlanceUnavailable),
    (ks_exc.Unauthorized, exception.GlanceForbidden),
    (ks_exc.Forbidden, exception.GlanceForbidden),
    # Below glanceclient and keystoneauth: a body cut mid-answer, a reset
    # while reading, a socket error.
    (ks_exc.ConnectionError, exception.GlanceUnavailable),
    (requests.exceptions.ConnectionError, exception.GlanceUnavailable),
    (requests.exceptions.Timeout, exception.GlanceUnavailable),
    (requests.exceptions.ChunkedEncodingError, exception.GlanceUnavailable),
    (requests.exceptions.ContentDecodingError, exception.GlanceUnavailable),
    (urllib3.exceptions.HTTPError, exception.GlanceUnavailable),
    (http.client.HTTPException, exception.GlanceUnavailable),
    (OSError, exception.GlanceUnavailable),
]

#: Statuses that say Glance cannot answer now (a gateway's or its own).
UNAVAILABLE_STATUSES = frozenset([502, 503, 504])

#: Errors a Glance call may raise that :func:`translate` turns into ours.
TRANSLATED = (glance_exc.BaseException, glance_exc.HTTPException,
              ks_exc.ClientException, requests.exceptions.RequestException,
              urllib3.exceptions.HTTPError, http.client.HTTPException,
              OSError, ValueError, TypeError, KeyError, AttributeError,
              deadline.DeadlineReached)

#: HTTP methods keystoneauth may re-send on a retriable status code or a
#: connection failure: a second send changes nothing.  A POST, PATCH or
#: an upload PUT is sent once (its body may be a consumed stream, and a
#: second location POST is refused); the engine resolves an uncertain
#: answer by reading the image back.  A DELETE is sent once too: every
#: delete the plugin makes follows a read that found the image still
#: ``queued``, and a re-send a second later would skip that read -- and
#: delete an image a concurrent try activated meanwhile.  The engine's
#: cleanup and ``audit --fix`` read again before each try of their own.
IDEMPOTENT_METHODS = frozenset(['GET', 'HEAD', 'OPTIONS'])


#: The Glance policy rule behind each operation of this client, and the
#: role Glance's default policies (2024.2 and later) grant it to; named in
#: a 403's message.  Glance 32 made location reads service-only.
POLICY_RULES: dict[str, tuple[str, str]] = {
    'create': ('add_image', 'member'),
    'upload': ('upload_image', 'member'),
    'delete': ('delete_image', 'member'),
    'get': ('get_image', 'reader'),
    'list': ('get_images', 'reader'),
    'download': ('download_image', 'member'),
    'add member': ('add_member', 'member'),
    'set visibility': ('modify_image', 'member'),
    'list members': ('get_members', 'reader'),
    'add location': ('add_image_location', 'member (or service)'),
    'get locations': ('fetch_image_location', 'service'),
    'list tasks': ('get_image', 'reader'),
    # (GET /v2/info/usage is checked against no policy rule in Glance 33:
    # a 403 there is not a policy's, so it names none)
}


def policy_hint(operation: str) -> str:
    """The Glance policy rule and usual role of an operation, for a 403.

    :param operation: an operation name of :data:`POLICY_RULES`.
    :returns: e.g. ``'Glance policy "upload_image"; usually the member
        role on the image's project'``, or ``''`` for another operation.
    """
    rule = POLICY_RULES.get(operation)
    if rule is None:
        return ''
    where = ('in the service project' if rule[1] == 'service'
             else "on the image's project")
    return 'Glance policy "%s"; usually the %s role %s' % (
        rule[0], rule[1], where)


def _status_of(err: BaseException) -> int | None:
    code = getattr(err, 'code', None)
    if isinstance(code, int):
        return code
    code = getattr(err, 'http_status', None)
    if isinstance(code, int):
        return code
    match = _STATUS_RE.search(str(err))
    return int(match.group(1)) if match else None


def _reason(err: BaseException) -> str:
    text = ' '.join(str(err).split())
    return text[:500] or err.__class__.__name__


def translate(err: BaseException, operation: str,
              image_id: str | None = None,
              disk_format: str | None = None,
              secret_url: str | None = None) -> exception.GlanceError:
    """Turn a glanceclient/keystoneauth error into our exception.

    :param err: the exception raised by glanceclient or keystoneauth1.
    :param operation: what was being done, e.g. ``'upload'``.
    :param image_id: the image concerned, if any.
    :param disk_format: for uploads, the disk_format declared.
    :param secret_url: a location URL the call carried; it is redacted
        (:func:`~nova_snapshot_ext.redaction.redact_url`) wherever
        Glance's text quotes it.
    :returns: a :class:`~nova_snapshot_ext.exception.GlanceError` instance
        (not raised): ``ImageFormatRejected`` for HTTP 415,
        ``GlanceBadRequest`` for 400 and for glanceclient's client-side
        schema refusal (``TypeError``), ``GlanceForbidden`` 401/403,
        ``GlanceNotFound`` 404, ``GlanceConflict`` 409,
        ``GlanceOverLimit`` 413, ``GlanceUnavailable`` for 502, 503, 504
        and transport failures (connection refused or reset, timeout),
        ``GlanceAnswerCut`` (a ``GlanceUnavailable`` on a Glance that was
        reached) for a body cut mid-answer, ``GlanceNotImplemented`` 501
        (also raised by glanceclient itself when Glance lacks the API
        version a call needs), ``GlanceMalformedAnswer`` for an answer
        whose body is not the JSON document expected, ``GlanceError``
        otherwise.
    """
    status = _status_of(err)
    reason = redaction.scrub(_reason(err), secret_url)
    kwargs: dict[str, ty.Any] = dict(operation=operation, reason=reason,
                                     image_id=image_id, status=status)
    if isinstance(err, TypeError) and operation == 'create':
        # glanceclient validates against /v2/schemas/image before sending.
        kwargs['status'] = 400
        return schema_refusal(kwargs)
    if isinstance(err, (TypeError, KeyError, AttributeError,
                        requests.exceptions.JSONDecodeError)) or (
            isinstance(err, ValueError) and not isinstance(
                err, requests.exceptions.RequestException)):
        # json.JSONDecodeError, a document of the wrong shape.
        kwargs['status'] = None
        kwargs['reason'] = 'unreadable answer (%s: %s)' % (
            err.__class__.__name__, reason)
        return exception.GlanceMalformedAnswer(**kwargs)
    if type(err) is glance_exc.HTTPException and status == 415:
        return exception.ImageFormatRejected(disk_format=disk_format,
                                             **kwargs)
    read_timeout = _read_timeout(err)
    if read_timeout is not None:
        # keystoneauth1 calls every timeout a ConnectTimeout (and
        # glanceclient an InvalidEndpoint); a read timeout comes after
        # the connection was made: Glance was reached and went silent.
        kwargs.update(status=None, deadline=read_timeout, sent=True,
                      reached=True,
                      which='[%s] timeout, per read' % opts.GLANCE_GROUP,
                      reason='Glance was reached but sent nothing more for '
                      'that long; the answer is lost')
        return exception.GlanceDeadlineExceeded(**kwargs)
    if answer_cut(err):
        # The status line came: Glance was reached, its answer is lost.
        kwargs.update(status=None, reached=True,
                      reason='Glance was reached but its answer was cut '
                      'short (%s); the answer is lost' % reason)
        return exception.GlanceAnswerCut(**kwargs)
    if status == 403 and policy_hint(operation):
        kwargs['reason'] = '%s (%s)' % (reason, policy_hint(operation))
    if status == 413:
        quota = quotas.named_in(reason)
        if quota:
            kwargs['reason'] = '%s (%s)' % (reason, quotas.describe(
                quota, reason))
    for client_cls, our_cls in _CLASS_MAP:
        if isinstance(err, client_cls):
            return our_cls(**kwargs)
    if status in UNAVAILABLE_STATUSES:
        # e.g. 504, which glanceclient raises as its bare HTTPException.
        return exception.GlanceUnavailable(**kwargs)
    return exception.GlanceError(**kwargs)


def answer_cut(err: BaseException) -> bool:
    """Whether ``err`` is an answer cut mid-body (Glance was reached).

    Looks through the chain of exceptions ``err`` was raised from for
    requests' ``ChunkedEncodingError``/``ContentDecodingError``, urllib3's
    ``InvalidChunkLength`` or an ``IncompleteRead`` (http.client's, or
    urllib3's inside its ``ProtocolError``): a status line and headers
    came, the body did not come whole.  A reset before any answer is not
    one.
    """
    seen: set[int] = set()
    current: BaseException | None = err
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, (requests.exceptions.ChunkedEncodingError,
                                requests.exceptions.ContentDecodingError,
                                http.client.IncompleteRead,
                                urllib3.exceptions.IncompleteRead,
                                urllib3.exceptions.InvalidChunkLength)):
            return True
        if isinstance(current, urllib3.exceptions.ProtocolError) and any(
                isinstance(arg, (http.client.IncompleteRead,
                                 urllib3.exceptions.IncompleteRead))
                for arg in current.args):
            return True
        current = current.__cause__ or current.__context__
    return False


def _read_timeout(err: BaseException) -> str | None:
    """The seconds of a per-read timeout behind ``err``, if it is one.

    Looks through the chain of exceptions ``err`` was raised from
    (glanceclient's ``InvalidEndpoint`` from keystoneauth1's
    ``ConnectTimeout`` from requests' ``ReadTimeout``).

    :returns: the seconds as requests' message gives them (``'?'`` when
        it does not), or ``None`` when no read timed out.
    """
    seen: set[int] = set()
    current: BaseException | None = err
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, requests.exceptions.ReadTimeout):
            found = re.search(r'read timeout=([0-9.]+)', str(current))
            return found.group(1) if found else '?'
        current = current.__cause__ or current.__context__
    return None


def schema_refusal(kwargs: ty.Mapping[str, ty.Any]
                   ) -> exception.GlanceSchemaRefusal:
    """A 400 (or client-side refusal) of a create, classified.

    Glance and glanceclient name the attribute they refuse in the text
    only; this is the one place that reads it: ``format_refused`` when it
    is ``disk_format`` or ``container_format``.
    """
    reason = str(kwargs.get('reason') or '')
    return exception.GlanceSchemaRefusal(
        format_refused=('disk_format' in reason or
                        'container_format' in reason), **kwargs)


def _raised_in_auth_plugin(err: BaseException) -> bool:
    """Whether ``err`` was raised by a keystoneauth1 auth plugin itself."""
    tb = err.__traceback__
    module = ''
    while tb is not None:
        module = str(tb.tb_frame.f_globals.get('__name__', ''))
        tb = tb.tb_next
    return module.startswith((
        'keystoneauth1.identity', 'keystoneauth1.loading',
        'keystoneauth1.token_endpoint'))


def auth_option_error(conf: cfg.ConfigOpts, err: BaseException
                      ) -> exception.ConfigurationError | None:
    """The configuration error behind an auth plugin's own failure, if any.

    keystoneauth1's plugins check some of their options only when they
    first authenticate, and then raise ``OptionError`` or a bare
    ``Exception`` (``password is a required attribute`` from the generic
    ``password`` plugin without ``password``; ``v3applicationcredential``
    without an id or name).  Neither is a network or Keystone answer.

    :param err: what authenticating raised.
    :returns: a :class:`~nova_snapshot_ext.exception.ConfigurationError`
        naming ``[snapshot_ext_glance] auth_type`` and the plugin's message,
        or ``None`` when ``err`` is something else (then handle it as
        before).
    """
    if isinstance(err, ks_exc.ClientException) and not isinstance(
            err, ks_exc.OptionError):
        return None
    if not (isinstance(err, ks_exc.OptionError) or (
            type(err) in (Exception, ValueError, TypeError)
            and _raised_in_auth_plugin(err))):
        return None
    group = conf[opts.GLANCE_GROUP]
    auth_type = getattr(group, 'auth_type', None)
    return exception.ConfigurationError(
        group=opts.GLANCE_GROUP, option='auth_type',
        reason='the %s plugin lacks an option it needs: %s' % (
            auth_type, _reason(err)))


def own_access(conf: cfg.ConfigOpts) -> bool:
    """Whether ``[snapshot_ext_glance]`` names a way to Glance of its own.

    An auth plugin (``auth_type``, or ``auth_section``) or
    ``endpoint_override`` is set.  Without any, :func:`load_session`
    refuses, and so do the standalone commands and nova-api with
    ``[snapshot_ext_nova] glance_connection = snapshot_ext_glance``;
    nova-api with the default ``glance_connection = nova`` reaches Glance
    through Nova's ``[glance]`` and needs neither.
    """
    group = conf[opts.GLANCE_GROUP]
    return bool(group.auth_type or group.auth_section or
                group.endpoint_override)


def _register_auth_section(conf: cfg.ConfigOpts) -> None:
    """Register ``auth_type`` in the group ``auth_section`` names.

    keystoneauth1 reads the auth plugin from that group but registers
    nothing there; outside nova-api (where keystonemiddleware registers
    ``[keystone_authtoken]``) oslo.config would answer "no such option".
    """
    section = conf[opts.GLANCE_GROUP].auth_section
    if not section:
        return
    try:
        ks_loading.register_auth_conf_options(conf, section)
    except cfg.DuplicateOptError:
        pass  # registered by its owner with other attributes: theirs


def load_session(conf: cfg.ConfigOpts) -> ks_session.Session:
    """One keystoneauth1 session from ``[snapshot_ext_glance]``.

    TLS, timeout and the auth plugin (when ``auth_type`` is set) come from
    that group.  Reuse the session for every snapshot: it pools the HTTP
    connections.

    :raises ConfigurationError: unknown ``auth_type``, missing plugin
        options (also those a plugin checks itself, keystoneauth1's
        ``OptionError``), or neither an auth plugin nor
        ``endpoint_override``.
    """
    _register_auth_section(conf)
    try:
        auth = ks_loading.load_auth_from_conf_options(conf,
                                                      opts.GLANCE_GROUP)
    except ks_exc.NoMatchingPlugin as err:
        raise exception.ConfigurationError(
            group=opts.GLANCE_GROUP, option='auth_type',
            reason='%s (keystoneauth1 plugins: password, v3password, token, '
            'admin_token, none, ...)' % err) from err
    except ks_exc.MissingRequiredOptions as err:
        raise exception.ConfigurationError(
            group=opts.GLANCE_GROUP, option=', '.join(
                o.dest for o in err.options), reason=str(err)) from err
    except ks_exc.OptionError as err:
        # e.g. v3applicationcredential with neither an id nor a name.
        raise ty.cast(exception.ConfigurationError,
                      auth_option_error(conf, err)) from err
    if auth is None and not conf[opts.GLANCE_GROUP].endpoint_override:
        raise exception.ConfigurationError(
            group=opts.GLANCE_GROUP, option='auth_type',
            reason='no auth plugin and no endpoint_override: set auth_type '
            '(e.g. password with auth_url, username, password, project_name, '
            'or admin_token with endpoint and token)')
    _check_transport_numbers(conf)
    return ks_loading.load_session_from_conf_options(
        conf, opts.GLANCE_GROUP, auth=auth)


#: keystoneauth1's session and adapter options that are numbers, with the
#: smallest value each can take (keystoneauth registers them unbounded:
#: urllib3 refuses a timeout <= 0 only at the first request, which then
#: looked like an unreachable Glance).
_TRANSPORT_MINIMUM = (('timeout', 0, 'a positive number of seconds'),
                      ('connect_retries', -1, '0 or more'),
                      ('status_code_retries', -1, '0 or more'),
                      ('connect_retry_delay', -1, '0 or more seconds'),
                      ('status_code_retry_delay', -1, '0 or more seconds'))


def _check_transport_numbers(conf: cfg.ConfigOpts) -> None:
    """Refuse a keystoneauth number in ``[snapshot_ext_glance]`` out of range.

    :raises ConfigurationError: naming the option (exit 2).
    """
    group = conf[opts.GLANCE_GROUP]
    for name, above, wanted in _TRANSPORT_MINIMUM:
        value = getattr(group, name, None)
        if value is not None and value <= above:
            raise exception.ConfigurationError(
                group=opts.GLANCE_GROUP, option=name,
                reason='%s is not %s' % (value, wanted))


def load_service_auth(conf: cfg.ConfigOpts) -> ty.Any:
    """The ``[snapshot_ext_service_user]`` auth plugin, if enabled.

    :returns: a keystoneauth1 auth plugin, or ``None`` when
        ``send_service_user_token`` is false.
    :raises ConfigurationError: enabled but no ``auth_type`` set.
    """
    if not conf[opts.SERVICE_USER_GROUP].send_service_user_token:
        return None
    auth = ks_loading.load_auth_from_conf_options(conf,
                                                  opts.SERVICE_USER_GROUP)
    if auth is None:
        raise exception.ConfigurationError(
            group=opts.SERVICE_USER_GROUP, option='auth_type',
            reason='send_service_user_token is true but no auth plugin is '
            'configured for the service user')
    return auth


def with_service_token(conf: cfg.ConfigOpts, user_auth: ty.Any) -> ty.Any:
    """Wrap ``user_auth`` so a service token goes with every request.

    Like Nova's ``[service_user]``: the caller's token stays the request's
    identity (``X-Auth-Token``); the service user's token is added as
    ``X-Service-Token`` (keystoneauth1 ``ServiceTokenAuthWrapper``).  A host
    acting for many users (inside Nova) calls this on each user's auth.

    :param conf: the configuration (``[snapshot_ext_service_user]``).
    :param user_auth: the caller's keystoneauth1 auth plugin.
    :returns: the wrapper, or ``user_auth`` unchanged when the service token
        is disabled.
    :raises ConfigurationError: see :func:`load_service_auth`; or a service
        token is wanted but there is no user auth to wrap.
    """
    service_auth = load_service_auth(conf)
    if service_auth is None:
        return user_auth
    if user_auth is None:
        raise exception.ConfigurationError(
            group=opts.SERVICE_USER_GROUP, option='send_service_user_token',
            reason='a service token accompanies a user token, and no user '
            'auth is configured ([snapshot_ext_glance] auth_type) or given')
    return service_token.ServiceTokenAuthWrapper(user_auth, service_auth)


def adapter_kwargs(conf: cfg.ConfigOpts) -> dict[str, ty.Any]:
    """keystoneauth1 adapter options of ``[snapshot_ext_glance]``.

    :returns: keyword arguments for ``glanceclient.Client`` (which builds a
        keystoneauth1 ``Adapter`` from them): ``service_type``,
        ``interface``, ``region_name``, ``endpoint_override``,
        ``connect_retries``, ``status_code_retries``...
    """
    group = conf[opts.GLANCE_GROUP]
    kwargs: dict[str, ty.Any] = {
        'service_type': group.service_type or 'image',
        'service_name': group.service_name,
        'interface': group.valid_interfaces,
        'region_name': group.region_name,
        'endpoint_override': group.endpoint_override,
        'connect_retries': group.connect_retries,
        'connect_retry_delay': group.connect_retry_delay,
        'status_code_retries': group.status_code_retries,
        'status_code_retry_delay': group.status_code_retry_delay,
    }
    if group.retriable_status_codes:
        kwargs['retriable_status_codes'] = group.retriable_status_codes
    return {k: v for k, v in kwargs.items() if v is not None}


#: Methods that change Glance: never sent once the snapshot's deadline
#: passed (reads and deletes still are, to clean up and to report).
WRITE_METHODS = frozenset(['POST', 'PUT', 'PATCH'])

#: ``/v2/images/{id}[/sub-resource]`` of a request, query string apart.
_IMAGE_URL_RE = re.compile(r'^/v2/images/(?P<id>[^/?]+)(?P<sub>/[^?]*)?')

#: Sub-resource of ``/v2/images/{id}`` -> what a request on it does.
_SUB_OPERATIONS = {'': 'get', '/file': 'upload', '/locations':
                   'add location', '/members': 'members', '/tasks':
                   'list tasks'}


def operation_of(method: str, url: str) -> str:
    """What a request does, in the words of :func:`translate`'s messages."""
    path = url.split('?', 1)[0].rstrip('/')
    if path == '/v2/images':
        return 'create' if method.upper() == 'POST' else 'list'
    match = _IMAGE_URL_RE.match(path)
    if match is None:
        return '%s %s' % (method.upper(), path)
    sub = match.group('sub') or ''
    operation = _SUB_OPERATIONS.get(sub, 'members')
    if sub == '' and method.upper() != 'GET':
        operation = method.lower()
    return operation


def _documents(body: ty.Any) -> list[ty.Mapping[str, ty.Any]]:
    """The documents of an answer that name an image, for checking."""
    if not isinstance(body, abc.Mapping):
        return []
    for key in ('members', 'tasks'):
        if isinstance(body.get(key), list):
            return [d for d in body[key] if isinstance(d, abc.Mapping)]
    return [body]


def check_answer(method: str, url: str, sent: ty.Any, body: ty.Any) -> None:
    """Believe an answer only for the image it was asked about.

    The one check every Glance request's answer passes, by the kind of
    request (not by the call that made it): an image document
    (``POST /v2/images`` with an ``id``, ``GET``/``PATCH /v2/images/{id}``,
    an upload's or a location add's answer if it carries one) must name
    the image asked for in ``id``; a member's or a task's answer in
    ``image_id``.  A create's answer must also carry every string
    property the create sent (the snapshot's fingerprint among them) with
    the same value, where it carries that property.

    :param method: the HTTP method.
    :param url: the request path (relative to the endpoint).
    :param sent: the request's JSON body as sent (a mapping), if any.
    :param body: the decoded answer (glanceclient's), or ``None``.
    :raises GlanceAnswerMismatch: the answer is about another image (or
        an image ``GET`` answered with a JSON document naming no image; an
        answer that is no JSON document is glanceclient's to refuse).
    """
    path = url.split('?', 1)[0].rstrip('/')
    match = _IMAGE_URL_RE.match(path)
    wanted: str | None = None
    key = 'id'
    create = False
    if path == '/v2/images' and method.upper() == 'POST':
        if isinstance(sent, abc.Mapping) and sent.get('id'):
            wanted, create = str(sent['id']), True
    elif match is not None:
        wanted = match.group('id')
        sub = match.group('sub') or ''
        if sub in ('/members', '/tasks') or sub.startswith('/members/'):
            key = 'image_id'
        elif sub not in ('', '/file', '/locations'):
            return
        if sub == '/file' and method.upper() == 'GET':
            return  # the image data (a stream), no document
    if wanted is None:
        return
    required = key == 'id' and (create or (
        match is not None and not match.group('sub')
        and method.upper() in ('GET', 'PATCH')))
    if required and not isinstance(body, abc.Mapping):
        # e.g. 204 to a read: an answer that proves nothing.
        raise exception.GlanceMalformedAnswer(
            operation=operation_of(method, url), image_id=wanted,
            status=None, reason='unreadable answer: no image document '
            '(%s)' % type(body).__name__)
    documents = _documents(body)
    for document in documents:
        answered = document.get(key)
        if answered is None and not required:
            continue
        if str(answered) != wanted:
            raise exception.GlanceAnswerMismatch(
                operation=operation_of(method, url), image_id=wanted,
                answered='%s %s' % (key, answered), status=None,
                reason='answer about %s %s, not %s' % (key, answered,
                                                       wanted))
    if create and documents:
        for name, value in sent.items():
            held = documents[0].get(name)
            if isinstance(value, str) and isinstance(held, str) and (
                    held != value):
                raise exception.GlanceAnswerMismatch(
                    operation='create', image_id=wanted,
                    answered='%s %r, sent %r' % (name, held, value),
                    status=None, reason='the answer holds %s %r, the '
                    'create sent %r' % (name, held, value))


class _Guard:
    """The one path of every request a :class:`GlanceClient` sends.

    Installed as the glanceclient ``SessionClient``'s ``request``: it
    chooses keystoneauth's re-sends (:data:`IDEMPOTENT_METHODS`), puts a
    total deadline on the request (:mod:`~.deadline`), and checks the
    answer against the request (:func:`check_answer`).
    """

    def __init__(self, request: ty.Callable[..., ty.Any],
                 request_timeout: float | None):
        self._request = request
        self.request_timeout = request_timeout
        self._local = threading.local()

    @property
    def snapshot_deadline(self) -> float | None:
        """``time.monotonic()`` when this thread's snapshot must end."""
        return getattr(self._local, 'deadline', None)

    @snapshot_deadline.setter
    def snapshot_deadline(self, value: float | None) -> None:
        self._local.deadline = value

    def _budget(self, method: str, url: str) -> tuple[float | None, str]:
        """Seconds this request may take, and whose deadline that is.

        :raises GlanceDeadlineExceeded: a write after the snapshot's
            deadline (not sent).
        """
        seconds = self.request_timeout
        which = '[%s] request_timeout' % opts.CORE_GROUP
        end = self.snapshot_deadline
        if end is None:
            return seconds, which
        remaining = end - time.monotonic()
        if remaining <= 0:
            if method.upper() in WRITE_METHODS:
                raise exception.GlanceDeadlineExceeded(
                    operation=operation_of(method, url), status=None,
                    deadline=self.snapshot_timeout,
                    which='[%s] snapshot_timeout' % opts.CORE_GROUP,
                    reason='the snapshot ran out of time before this '
                    'request; it was not sent', sent=False, reached=True)
            # Cleaning up and reporting: each read or delete on its own.
            return seconds, which
        if seconds is None or remaining < seconds:
            return remaining, '[%s] snapshot_timeout' % opts.CORE_GROUP
        return seconds, which

    @property
    def snapshot_timeout(self) -> float | None:
        return getattr(self._local, 'timeout', None)

    def __call__(self, url: str, method: str, **kwargs: ty.Any) -> ty.Any:
        if method.upper() not in IDEMPOTENT_METHODS:
            kwargs.setdefault('status_code_retries', 0)
            if not (method.upper() == 'POST' and
                    url.rstrip('/').endswith('/v2/images')):
                kwargs.setdefault('connect_retries', 0)
        seconds, which = self._budget(method, url)
        if seconds is None:
            answer = self._request(url, method, **kwargs)
        else:
            with deadline.Deadline(seconds) as watch:
                try:
                    answer = self._request(url, method, **kwargs)
                except Exception as err:  # noqa: B902 - translated below
                    if not watch.expired:
                        raise
                    raise self._expired(method, url, seconds, which,
                                        err, watch.connected) from err
            if watch.expired:
                raise self._expired(method, url, seconds, which, None,
                                    watch.connected)
        if isinstance(answer, tuple) and len(answer) == 2:
            # glanceclient's (response, decoded body)
            check_answer(method, url, kwargs.get('data'), answer[1])
        return answer

    @staticmethod
    def _expired(method: str, url: str, seconds: float, which: str,
                 err: BaseException | None, connected: bool
                 ) -> exception.GlanceDeadlineExceeded:
        if not connected:
            return exception.GlanceDeadlineExceeded(
                operation=operation_of(method, url), status=None,
                deadline=round(seconds, 1), which=which, sent=True,
                reached=False,
                reason='no connection to Glance was made in that time%s' % (
                    ' (%s)' % err.__class__.__name__ if err else ''))
        return exception.GlanceDeadlineExceeded(
            operation=operation_of(method, url), status=None,
            deadline=round(seconds, 1), which=which, sent=True,
            reached=True,
            reason='Glance was reached but its answer was not complete; '
            'the connection was closed, the answer is lost%s' % (
                ' (%s)' % err.__class__.__name__ if err else ''))


#: What a failed answer's body may hold that glanceclient cannot read.
_PARSE_ERRORS = (AttributeError, TypeError, KeyError, ValueError)

_TAG_RE = re.compile(r'<[^>]*>')


def answer_message(body: bytes | str | None) -> str:
    """The message of a failed answer's body, whatever its shape.

    Glance's error bodies come as webob renders them: HTML, plain text,
    a flat JSON document (``{"message": ..., "code": "403 Forbidden",
    "title": ...}``, for an ``Accept: application/json`` request), or a
    nested one (``{"error": {"message": ..., "code": 403}}``, from
    keystonemiddleware and Glance's own JSON faults).

    :returns: the message (markup removed, whitespace folded, at most 500
        characters), or ``''``.
    """
    if isinstance(body, bytes):
        body = body.decode('utf-8', 'replace')
    text = body or ''
    try:
        document = ty.cast(ty.Any, json.loads(text))
    except ValueError:
        document = None
    if isinstance(document, dict):
        inner = document.get('error')
        for holder in (document, inner if isinstance(inner, dict) else {}):
            for key in ('message', 'title'):
                value = holder.get(key)
                if isinstance(value, str) and value.strip():
                    text = value
                    break
            else:
                continue
            break
    return ' '.join(_TAG_RE.sub(' ', text).split())[:500]


def failed_answer(response: ty.Any) -> glance_exc.HTTPException:
    """glanceclient's exception for a failed answer, built from its status.

    For the answers glanceclient's own ``from_response`` cannot read (it
    raises ``AttributeError`` on a flat JSON error body): the class is the
    one glanceclient uses for the status (its bare ``HTTPException``, with
    the status as its ``code``, for one it has no class for), the details
    the body's message.  :func:`translate` then treats it as any other
    answer of that status.
    """
    status = int(response.status_code)
    err = glance_exc.from_response(response)  # by status only (no body)
    if not isinstance(err.code, int):
        err.code = status
    message = answer_message(getattr(response, 'content', None))
    reason = getattr(response, 'reason', None) or ''
    err.details = ('%d %s: %s' % (status, reason, message) if message
                   else '%d %s' % (status, reason)).strip()
    return ty.cast(glance_exc.HTTPException, err)


#: Statuses glanceclient's ``_handle_response`` passes through as they
#: are (no redirect, no failure).
_PLAIN_SUCCESS = frozenset([200, 201, 202, 204])


def _readable_failures(handle: ty.Callable[[ty.Any], ty.Any]
                       ) -> ty.Callable[[ty.Any], ty.Any]:
    """Wrap glanceclient's ``_handle_response``: a failure is its status.

    glanceclient builds its exception for a failed answer from the body;
    a body of a shape it does not expect makes it raise
    ``AttributeError`` (or a JSON error), which would read as an
    unreadable answer -- a transient fault -- although Glance answered,
    with a status.  Such a failure is raised as :func:`failed_answer`.

    A plain success (:data:`_PLAIN_SUCCESS`) is read as glanceclient reads
    it -- ``(response, decoded JSON)``, or ``(response, None)`` for an
    empty 204 -- in one pass over the body; a body that is not the JSON
    it claims raises as it would from glanceclient.
    """
    def handle_response(response: ty.Any) -> ty.Any:
        status = getattr(response, 'status_code', None)
        try:
            if status in _PLAIN_SUCCESS:
                # What glanceclient makes of these, read once: it would
                # decode the whole body to text first, then again for
                # JSON (a 24 KB record at 50 mappings), or try the empty
                # answer of an upload as JSON.
                if (response.headers.get('Content-Type') or '').startswith(
                        'application/json'):
                    return response, response.json()
                if status == 204 and not response.content:
                    return response, None
            return handle(response)
        except glance_exc.HTTPException as err:
            if not isinstance(err.code, int) and isinstance(status, int):
                # glanceclient's bare class (415, 504...): its text holds
                # the status only when the body happens to start with it.
                err.code = status
            raise
        except _PARSE_ERRORS as err:
            if not isinstance(status, int) or status < 400:
                raise
            raise failed_answer(response) from err
    return handle_response


def _send_once_unless_idempotent(http_client: ty.Any,
                                 request_timeout: float | None = None
                                 ) -> _Guard | None:
    """Install :class:`_Guard` on glanceclient's HTTP client.

    glanceclient's ``SessionClient`` is a keystoneauth1 ``Adapter`` whose
    ``connect_retries`` / ``status_code_retries`` apply to every method.
    keystoneauth reads a timeout or a reset *after* the request was sent
    as a connection failure too, so a POST or an upload would go twice.
    Each request outside :data:`IDEMPOTENT_METHODS` is sent with both set
    to 0, except the image create (its body is the JSON record with the
    plugin's own id: a second send meets 409, which the engine reads
    back), which keeps ``connect_retries``.

    :returns: the guard, or ``None`` for a client without ``request``.
    """
    request = getattr(http_client, 'request', None)
    if request is None:
        return None
    handle = getattr(http_client, '_handle_response', None)
    if handle is not None:
        http_client._handle_response = _readable_failures(handle)
    guard = _Guard(request, request_timeout)
    http_client.request = guard
    return guard


class GlanceClient:
    """The plugin's view of one Glance, for one identity.

    :param session: a keystoneauth1 session (shared across snapshots).
    :param auth: optional auth plugin overriding the session's (inside
        Nova: the user's token, optionally wrapped with a service token).
    :param global_request_id: sent as ``X-OpenStack-Request-ID``.
    :param request_timeout: seconds each request may take in total
        (``[snapshot_ext] request_timeout``); ``None``: the per-read
        ``timeout`` only.
    :param adapter_options: see :func:`adapter_kwargs`.
    """

    def __init__(self, session: ks_session.Session,
                 auth: ty.Any = None,
                 global_request_id: str | None = None,
                 request_timeout: float | None = None,
                 **adapter_options: ty.Any):
        kwargs = dict(adapter_options)
        if auth is not None:
            kwargs['auth'] = auth
        if global_request_id:
            kwargs['global_request_id'] = global_request_id
        self._client = glanceclient.Client('2', session=session, **kwargs)
        self.session = session
        if request_timeout is not None:
            deadline.watch_session(session)
        self._guard = _send_once_unless_idempotent(
            self._client.http_client, request_timeout)

    @classmethod
    def from_conf(cls, conf: cfg.ConfigOpts,
                  session: ks_session.Session | None = None,
                  **kwargs: ty.Any) -> GlanceClient:
        """Build a client from ``[snapshot_ext_glance]``.

        With ``[snapshot_ext_service_user] send_service_user_token`` the
        auth (``kwargs['auth']`` or the session's) is wrapped by
        :func:`with_service_token`.

        :raises ConfigurationError: see :func:`with_service_token`.
        """
        session = session or load_session(conf)
        options = adapter_kwargs(conf)
        options['request_timeout'] = conf[opts.CORE_GROUP].request_timeout
        options.update(kwargs)
        if conf[opts.SERVICE_USER_GROUP].send_service_user_token:
            options['auth'] = with_service_token(
                conf, options.get('auth') or session.auth)
        return cls(session, **options)

    @contextlib.contextmanager
    def snapshot_deadline(self, seconds: float) -> ty.Iterator[None]:
        """Bound this thread's requests inside ``with`` by ``seconds``.

        From entering the block, writes (``POST``, ``PUT``, ``PATCH``) are
        cut when the time is up and refused after it
        (:class:`~nova_snapshot_ext.exception.GlanceDeadlineExceeded`,
        ``sent=False``); reads and deletes are cut when the time is up,
        and after it each has ``request_timeout`` (to clean up and
        report).  Nested blocks keep the earliest end.
        """
        guard = self._guard
        if guard is None:
            yield
            return
        local = guard._local
        saved = (getattr(local, 'deadline', None),
                 getattr(local, 'timeout', None))
        end = time.monotonic() + seconds
        if saved[0] is None or end < saved[0]:
            local.deadline, local.timeout = end, seconds
        try:
            yield
        finally:
            local.deadline, local.timeout = saved

    def snapshot_timeout(self) -> float | None:
        """This thread's ``snapshot_timeout`` (seconds), if one is set."""
        return self._guard.snapshot_timeout if self._guard else None

    def deadline_passed(self) -> bool:
        """Whether this thread's snapshot deadline has passed."""
        end = self._guard.snapshot_deadline if self._guard else None
        return end is not None and time.monotonic() >= end

    @property
    def auth(self) -> ty.Any:
        """The auth plugin requests are sent with, or None.

        A service-token wrapper around the session's plugin when
        ``[snapshot_ext_service_user]`` is configured.
        """
        return (getattr(self._client.http_client, 'auth', None) or
                self.session.auth)

    @property
    def endpoint(self) -> str:
        """The Glance endpoint this client talks to (for messages)."""
        try:
            return str(self._client.http_client.get_endpoint())
        except Exception:  # noqa: B902 - best effort, for display only
            return '<unknown>'

    def _call(self, operation: str, func: ty.Callable[..., ty.Any],
              *args: ty.Any, image_id: str | None = None,
              disk_format: str | None = None,
              secret_url: str | None = None, **kwargs: ty.Any) -> ty.Any:
        try:
            return func(*args, **kwargs)
        except TRANSLATED as err:
            raise translate(err, operation, image_id=image_id,
                            disk_format=disk_format,
                            secret_url=secret_url) from err

    # --- images -----------------------------------------------------------

    def create(self, **kwargs: ty.Any) -> dict[str, ty.Any]:
        """``POST /v2/images`` through glanceclient's HTTP client.

        Validated once, by Glance: it checks the body against its image
        schema and answers 400 naming the attribute, creating nothing.
        The preflight has already checked the record against the same
        ``/v2/schemas/image`` (the cached capabilities).  glanceclient's
        ``images.create`` would check it a third time in its warlock model,
        after each attribute it sets (about 20 whole-image validations) and
        on the answer: two thirds of the plugin's client CPU per snapshot.

        :returns: the image as Glance returned it (a plain dict).
        :raises GlanceConflict: the ``id`` exists already (or existed).
        :raises GlanceSchemaRefusal: (a ``GlanceBadRequest``) Glance
            refused the record against its schema (400); the capabilities
            may be stale.
        :raises GlanceForbidden: policy, reserved or read-only attribute.
        :raises GlanceMalformedAnswer: the answer is not an image document.
        """
        def post() -> dict[str, ty.Any]:
            body = self._client.http_client.post('/v2/images',
                                                 data=kwargs)[1]
            if not isinstance(body, dict):
                raise ValueError('the answer is not an image document')
            image = dict(body)
            image.pop('self', None)
            return image

        # Passed through a closure: _call's own keywords (image_id,
        # disk_format) must not swallow the image attributes.
        try:
            return ty.cast(dict, self._call(
                'create', post, image_id=kwargs.get('id'),
                disk_format=kwargs.get('disk_format')))
        except exception.GlanceBadRequest as err:
            if isinstance(err, exception.GlanceSchemaRefusal):
                raise
            raise schema_refusal(err.kwargs) from err

    def get(self, image_id: str) -> dict[str, ty.Any]:
        """``GET /v2/images/{id}``; :raises GlanceNotFound: if absent."""
        return ty.cast(dict, self._call(
            'get', lambda: dict(self._client.images.get(image_id)),
            image_id=image_id))

    def delete(self, image_id: str) -> None:
        """``DELETE /v2/images/{id}``; :raises GlanceNotFound: if absent."""
        self._call('delete', self._client.images.delete, image_id,
                   image_id=image_id)

    def upload(self, image_id: str, data: bytes,
               disk_format: str | None = None) -> None:
        """``PUT /v2/images/{id}/file`` with ``data``.

        Zero bytes go as an empty string (``Content-Length: 0``, what Nova
        sends); other payloads as a file object with
        ``x-openstack-image-size`` so Glance checks the length.  Sent
        through glanceclient's HTTP client, as :meth:`create` is: the
        request ``images.upload`` makes, without the request-id proxy it
        wraps around an answer nobody here reads.

        :param data: the payload, ``len(data)`` bytes.
        :param disk_format: for error messages only.
        :raises ImageFormatRejected: HTTP 415, Glance's inspector refused
            the bytes; the image is poisoned (delete it).
        """
        headers = {'Content-Type': 'application/octet-stream'}
        body: ty.Any = ''
        if data:
            headers['x-openstack-image-size'] = '%d' % len(data)
            body = io.BytesIO(data)
        self._call('upload', self._client.http_client.put,
                   '/v2/images/%s/file' % image_id, headers=headers,
                   data=body, image_id=image_id, disk_format=disk_format)

    def download(self, image_id: str) -> bytes:
        """The image data (``b''`` for none), checksum verified."""
        def read() -> bytes:
            body = self._client.images.data(image_id)
            return b'' if body is None else b''.join(body)

        return ty.cast(bytes, self._call('download', read,
                                         image_id=image_id))

    def add_member(self, image_id: str, member_id: str) -> dict[str, ty.Any]:
        """``POST /v2/images/{id}/members`` (image must be ``shared``)."""
        return ty.cast(dict, self._call(
            'add member', lambda: dict(self._client.image_members.create(
                image_id, member_id)), image_id=image_id))

    def set_visibility(self, image_id: str, visibility: str) -> None:
        """``PATCH /v2/images/{id}`` replacing ``visibility``."""
        self._call('set visibility', lambda: self._client.images.update(
            image_id, visibility=visibility), image_id=image_id)

    def list_members(self, image_id: str) -> list[dict[str, ty.Any]]:
        return ty.cast(list, self._call(
            'list members', lambda: [dict(m) for m in self._client.
                                     image_members.list(image_id)],
            image_id=image_id))

    def list_images(self, **filters: ty.Any) -> list[dict[str, ty.Any]]:
        """``GET /v2/images`` with filters, all pages."""
        return ty.cast(list, self._call(
            'list', lambda: [dict(i) for i in self._client.images.list(
                filters=filters)]))

    # --- locations --------------------------------------------------------

    def add_image_location(self, image_id: str, url: str,
                           validation_data: ty.Mapping[str, str] | None
                           = None) -> None:
        """``POST /v2/images/{id}/locations`` (API 2.17), nothing else.

        Asynchronous on Glance's side: the answer is 202 and the image is
        usually still ``queued``; a ``location_import`` task does the work
        (poll the image, read :meth:`image_tasks` on failure).

        The caller knows this Glance has API 2.17 from the cached
        capabilities (:attr:`~nova_snapshot_ext.image.capabilities.
        GlanceCapabilities.location_api`); glanceclient's
        ``images.add_image_location`` would ask ``GET /versions`` on every
        call and read the image back, which the caller's poll does anyway.

        :param url: the location (a secret: never logged, redacted in
            errors).
        :param validation_data: ``{'os_hash_algo', 'os_hash_value'}`` or
            ``None``.
        :raises GlanceNotImplemented: Glance has no such route (404 for an
            image it shows: the capabilities were stale).
        :raises GlanceConflict: image not ``queued``, or another operation
            holds its import lock.
        :raises GlanceForbidden: policy (e.g. a reader), or a non-http URL
            from a caller without the ``service`` role, or no http store.
        :raises GlanceBadRequest: URL refused by ``import_filtering_opts``,
            malformed validation data.
        :raises GlanceNotFound: the image is not visible.
        """
        try:
            self._call('add location', self._client.http_client.post,
                       '/v2/images/%s/locations' % image_id,
                       data={'url': url,
                             'validation_data': dict(validation_data or {})},
                       image_id=image_id, secret_url=url)
        except exception.GlanceNotFound as err:
            # Also what a Glance without API 2.17 answers (no such route).
            self.get(image_id)  # GlanceNotFound: the image is not visible
            raise exception.GlanceNotImplemented(
                operation='add location', image_id=image_id, status=501,
                reason='this Glance has no POST /v2/images/{id}/locations '
                '(API 2.17): it answered 404 for an image it shows'
            ) from err

    def add_location(self, image_id: str, url: str,
                     validation_data: ty.Mapping[str, str] | None = None
                     ) -> dict[str, ty.Any]:
        """Legacy JSON-patch ``add /locations/-``, then a GET.

        Synchronous: a queued image is ``active`` when this returns.  No
        hash is computed; ``validation_data`` is stored as given (its
        ``os_hash_algo`` must be Glance's ``hashing_algorithm``).

        :returns: the image as the follow-up GET returned it.
        :raises GlanceForbidden: ``show_multiple_locations`` is off (the
            default), or policy.
        :raises GlanceConflict: image not ``queued``/``active``, or
            validation data that conflicts.
        :raises GlanceBadRequest: invalid location (e.g. size 0), duplicate.
        """
        return ty.cast(dict, self._call(
            'add location (legacy)', lambda: dict(
                self._client.images.add_location(
                    image_id, url, {}, validation_data=dict(
                        validation_data or {}) or None)),
            image_id=image_id, secret_url=url))

    def image_tasks(self, image_id: str) -> list[dict[str, ty.Any]]:
        """``GET /v2/images/{id}/tasks`` (API 2.12+, owner or admin).

        Only asked after a location was accepted (so API 2.17 is there).

        :returns: task dicts, e.g. ``{'id', 'type': 'location_import',
            'status': 'failure', 'message': '...', 'created_at',
            'updated_at', 'result'}``, as Glance lists them.
        :raises GlanceNotFound: image not visible, or API < 2.12.
        """
        # glanceclient's get_associated_image_tasks asks GET /versions
        # first, every call; the location API (2.17) implies 2.12.
        def read() -> list[dict[str, ty.Any]]:
            body = self._client.http_client.get(
                '/v2/images/%s/tasks' % image_id)[1]
            return [dict(t) for t in dict(body or {}).get('tasks', [])]

        return ty.cast(list, self._call('list tasks', read,
                                        image_id=image_id))

    # --- discovery --------------------------------------------------------

    def image_schema(self) -> dict[str, ty.Any]:
        """``GET /v2/schemas/image`` as a dict.

        :raises GlanceMalformedAnswer: the answer is no image schema (no
            ``properties`` object naming ``disk_format``).
        """
        def read() -> dict[str, ty.Any]:
            schema = dict(self._client.schemas.get('image').raw())
            if 'disk_format' not in dict(schema['properties']):
                raise KeyError('properties.disk_format')
            return schema

        return ty.cast(dict, self._call('schema', read))

    def api_versions(self) -> list[dict[str, ty.Any]]:
        """``GET /versions``: ``[{'id': 'v2.17', 'status': 'CURRENT'}...]``."""
        return ty.cast(list, self._call(
            'versions', lambda: [dict(v) for v in
                                 self._client.versions.list()]))

    def stores_detail(self) -> list[dict[str, ty.Any]] | None:
        """``GET /v2/info/stores/detail`` (each store's ``type``...).

        :returns: the entries, or ``None`` when Glance does not say: not
            multi-store (404) or the policy ``stores_info_detail`` (admin
            by default) refuses this identity (403).
        """
        try:
            return ty.cast(list, self._call(
                'stores detail', lambda: [dict(s) for s in dict(
                    self._client.images.get_stores_info_detail()).get(
                        'stores', [])]))
        except (exception.GlanceNotFound, exception.GlanceForbidden):
            return None

    def stores(self) -> list[dict[str, ty.Any]] | None:
        """``GET /v2/info/stores``; ``None`` without multi-store (404)."""
        def read() -> list[dict[str, ty.Any]]:
            body = dict(self._client.images.get_stores_info())
            if not isinstance(body.get('stores'), list):
                # Not a stores document (another answer's body): it
                # proves nothing, least of all "no stores".
                raise KeyError('stores')
            return [dict(s) for s in body['stores']]

        try:
            return ty.cast(list, self._call('stores', read))
        except exception.GlanceNotFound:
            return None

    def usage(self) -> dict[str, dict[str, int]] | None:
        """``GET /v2/info/usage``: the project's quota usage and limits.

        :returns: ``{resource: {'usage': int, 'limit': int}}`` (counts;
            ``image_size_total``/``image_stage_total`` in MiB); ``{}`` when
            Glance enforces no unified limits (``[DEFAULT]
            use_keystone_limits`` off); ``None`` when Glance (404) or
            glanceclient has no such call.  Entries of another shape
            are left out, with a warning
            (:func:`~nova_snapshot_ext.image.quotas.parse_usage`); a
            negative ``limit`` is Keystone's "unlimited".
        :raises GlanceMalformedAnswer: the document is not ``{"usage":
            {resource: {...}}}``, none of its entries is usable, or the
            answer was cut mid-body (:func:`answer_cut`).
        :raises GlanceError: any other failure (translated).
        """
        info = getattr(self._client, 'info', None)
        if info is None:  # a glanceclient without the usage call
            return None
        try:
            document = self._call('usage', info.get_usage)
        except exception.GlanceNotFound:
            return None
        except exception.GlanceUnavailable as err:
            if not answer_cut(err):
                raise
            # Glance answered; the document is unreadable, not Glance
            # unreachable (the usage read is advisory).
            raise exception.GlanceMalformedAnswer(
                operation='usage', status=None,
                reason='the answer was cut mid-body (%s)'
                % err.kwargs.get('reason')) from err
        if not isinstance(document, abc.Mapping):
            raise exception.GlanceMalformedAnswer(
                operation='usage', status=None,
                reason='the "usage" of GET /v2/info/usage is %s, not an '
                'object of limits' % ('null' if document is None else
                                      'a JSON %s' %
                                      type(document).__name__))
        usage, skipped = quotas.parse_usage(document)
        for why in skipped:
            LOG.warning('Glance quota usage (GET /v2/info/usage): %s; that '
                        'limit is not checked before the snapshot', why)
        if skipped and not usage:
            raise exception.GlanceMalformedAnswer(
                operation='usage', status=None,
                reason='no entry of GET /v2/info/usage is usable (%s)'
                % '; '.join(skipped))
        return usage

    def project_id(self) -> str | None:
        """The project id of the identity's token, when known already.

        Read from the auth plugin's cached token (keystoneauth1's
        ``auth_ref``; through a service-token wrapper, its user's); never
        a request.  ``None`` when no token was fetched yet or the plugin
        keeps none (e.g. a bare token endpoint).
        """
        auth = self.auth
        for plugin in (auth, getattr(auth, 'user_auth', None)):
            ref = getattr(plugin, 'auth_ref', None)
            project = getattr(ref, 'project_id', None)
            if isinstance(project, str) and project:
                return project
        return None

    def get_locations(self, image_id: str) -> list[dict[str, ty.Any]]:
        """``GET /v2/images/{id}/locations`` (API 2.17, a service call).

        :returns: the locations, ``[{'url': ..., 'metadata': {...}}]``.
        :raises GlanceForbidden: without the service role (Glance policy
            ``fetch_image_location``).
        :raises GlanceNotImplemented: Glance lacks API 2.17.
        """
        return ty.cast(list, self._call(
            'get locations', lambda: [dict(loc) for loc in
                                      self._client.http_client.get(
                                          '/v2/images/%s/locations'
                                          % image_id)[1]],
            image_id=image_id))
