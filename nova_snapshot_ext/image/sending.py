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

"""The one path of every request the Glance client sends.

Installed on glanceclient's HTTP client (:func:`install`): it chooses
keystoneauth's re-sends (only :data:`IDEMPOTENT_METHODS` are sent again,
and the image create after a connection failure), puts a total deadline
on each request (:mod:`.deadline`), makes a failed answer's body readable,
and checks every answer against its request (:func:`check_answer`: an
answer about another image is refused).
"""

from __future__ import annotations

from collections import abc
import re
import threading
import time
import typing as ty

from glanceclient import exc as glance_exc

from nova_snapshot_ext import exception
from nova_snapshot_ext.image import deadline
from nova_snapshot_ext.image import translation
from nova_snapshot_ext import opts


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


class Guard:
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
        except translation.PARSE_ERRORS as err:
            if not isinstance(status, int) or status < 400:
                raise
            raise translation.failed_answer(response) from err
    return handle_response


def install(http_client: ty.Any, request_timeout: float | None = None
            ) -> Guard | None:
    """Install :class:`Guard` on glanceclient's HTTP client.

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
    guard = Guard(request, request_timeout)
    http_client.request = guard
    return guard
