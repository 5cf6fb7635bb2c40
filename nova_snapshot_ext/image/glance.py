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
session (:mod:`.loading`) and one path (:mod:`.sending`): transport
retries are keystoneauth's (``[snapshot_ext_glance] connect_retries`` /
``status_code_retries``), never a loop here, and only where a second send
cannot do harm (:data:`.sending.IDEMPOTENT_METHODS`; a create with the
plugin's own image id may be re-sent after a connection failure, its 409
is read back by the engine).  Every error is translated
(:mod:`.translation`); every answer is checked to be about the image
asked for (:func:`.sending.check_answer`).

The session, auth, translation and answer-check functions the commands
use are named here too (:func:`load_session`, :func:`translate`,
:func:`check_answer`...): each is defined in its own module only.
"""

from __future__ import annotations

from collections import abc
import contextlib
import io
import time
import typing as ty

import glanceclient
from keystoneauth1 import session as ks_session
from oslo_config import cfg
from oslo_log import log as logging

from nova_snapshot_ext import exception
from nova_snapshot_ext.image import deadline
from nova_snapshot_ext.image import quotas
from nova_snapshot_ext.image import sending
from nova_snapshot_ext.image import translation
from nova_snapshot_ext import loading
from nova_snapshot_ext import opts


LOG = logging.getLogger(__name__)


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
        self._guard = sending.install(
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
        session = session or loading.load_session(conf)
        options = loading.adapter_kwargs(conf)
        options['request_timeout'] = conf[opts.CORE_GROUP].request_timeout
        options.update(kwargs)
        if conf[opts.SERVICE_USER_GROUP].send_service_user_token:
            options['auth'] = loading.with_service_token(
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
        except translation.TRANSLATED as err:
            raise translation.translate(
                err, operation, image_id=image_id, disk_format=disk_format,
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
            raise translation.schema_refusal(err.kwargs) from err

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
            if not translation.answer_cut(err):
                raise
            # Glance answered; the document is unreadable, not Glance
            # unreachable (the usage read is advisory).
            raise exception.GlanceMalformedAnswer(
                operation='usage', status=None,
                reason='the answer was cut mid-body (%s)'
                % err.reason) from err
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


load_session = loading.load_session


auth_option_error = loading.auth_option_error


own_access = loading.own_access


with_service_token = loading.with_service_token


adapter_kwargs = loading.adapter_kwargs


translate = translation.translate


answer_cut = translation.answer_cut


answer_message = translation.answer_message
check_answer = sending.check_answer
