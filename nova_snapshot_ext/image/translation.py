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

"""Glance's failures as the plugin's exceptions.

Every glanceclient, keystoneauth1, requests or urllib3 error -- and an
answer whose body cannot be read or decoded -- becomes a
:class:`~nova_snapshot_ext.exception.GlanceError` subclass carrying
``operation``, ``image_id`` and ``status`` (:func:`translate`): no
transport error leaves the client untranslated.

glanceclient has no class for HTTP 415 (Glance's format-inspection
refusal): it raises the bare ``glanceclient.exc.HTTPException`` whose text
starts ``HTTP 415``; :func:`translate` recognises it as
:class:`~nova_snapshot_ext.exception.ImageFormatRejected`.
"""

from __future__ import annotations

import http.client
import json
import re
import typing as ty

from glanceclient import exc as glance_exc
from keystoneauth1 import exceptions as ks_exc
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
    reason = redaction.scrub(exception.reason_of(err), secret_url)
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


#: What a failed answer's body may hold that glanceclient cannot read.
PARSE_ERRORS = (AttributeError, TypeError, KeyError, ValueError)


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
