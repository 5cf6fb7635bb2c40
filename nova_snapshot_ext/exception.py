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

"""Exceptions raised by nova-snapshot-ext.

Every exception derives from :class:`SnapshotExtException`.  Each class
carries a ``msg_fmt`` with named placeholders; the keyword arguments given
to the constructor are kept in ``self.kwargs`` so a caller can act on them
(for example read ``exc.kwargs['property']``).

The ``code`` attribute is the HTTP status a host API should answer with
when it turns the exception into a response (Nova maps ``Invalid`` to 400,
``Forbidden``/quota to 403, state conflicts to 409).
"""

from __future__ import annotations

import typing as ty

from oslo_log import log as logging

from nova_snapshot_ext.i18n import _

LOG = logging.getLogger(__name__)

#: Tests set this to True so a broken ``msg_fmt`` fails loudly.
FATAL_FORMAT_ERRORS = False


def reason_of(err: BaseException) -> str:
    """The text of any error, on one line, for a message.

    :returns: at most 500 characters; the class name when the error has
        no text.
    """
    text = ' '.join(str(err).split())
    return text[:500] or err.__class__.__name__


def http_status(value: ty.Any) -> int | None:
    """An HTTP status given as a keyword: the ``int``, else ``None``."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return None


class SnapshotExtException(Exception):
    """Base exception; formats ``msg_fmt`` with the constructor kwargs.

    :ivar reason: the ``reason`` keyword (the cause in words), or None.
    """

    msg_fmt = _("An unknown exception occurred.")
    code = 500

    def __init__(self, message: str | None = None, **kwargs: ty.Any):
        self.kwargs = kwargs
        self.reason: ty.Any = kwargs.get('reason')
        if not message:
            try:
                message = self.msg_fmt % kwargs
            except (KeyError, TypeError, ValueError):
                if FATAL_FORMAT_ERRORS:
                    raise
                LOG.exception('Exception in string format operation for '
                              '%s', self.__class__.__name__)
                message = self.msg_fmt
        self.message = message
        super().__init__(message)

    def format_message(self) -> str:
        return self.message


# --- configuration and loading -------------------------------------------

class ConfigurationError(SnapshotExtException):
    msg_fmt = _("Invalid configuration: option [%(group)s] %(option)s: "
                "%(reason)s")


class NotInitialized(SnapshotExtException):
    """The library facade was used before ``initialize``."""

    msg_fmt = _("nova_snapshot_ext.initialize(conf) must be called before "
                "preflight() or snapshot_image()")


class DriverNotFound(SnapshotExtException):
    msg_fmt = _("No snapshot driver named '%(name)s' is installed in the "
                "'nova_snapshot_ext.drivers' namespace (option "
                "[snapshot_ext] driver). Installed: %(available)s")


class DriverLoadError(SnapshotExtException):
    msg_fmt = _("Snapshot driver '%(name)s' failed to load: %(reason)s")


# --- snapshot request validation ------------------------------------------

class InvalidRequest(SnapshotExtException):
    """The snapshot request is malformed; ``field`` names the culprit."""

    code = 400
    msg_fmt = _("Invalid snapshot request: field '%(field)s': %(reason)s")


class UnsafeRecord(InvalidRequest):
    """The request would make an image that is unsafe to boot or delete.

    A mapping Nova never writes into a snapshot image (one that would
    hand a new server the source's in-use volume), or a property that
    makes Glance destroy another resource when the image is deleted.
    Inside nova-api it is refused before Nova snapshots a volume, not
    left to Nova: Nova itself would write the image.
    """


class InvalidServerState(SnapshotExtException):
    code = 409
    msg_fmt = _("Server %(instance_uuid)s is in vm_state '%(vm_state)s'; a "
                "volume-backed snapshot needs one of: %(allowed)s")


# --- preflight refusals (nothing has been created) -----------------------

class PreflightError(SnapshotExtException):
    """Base of every refusal raised before anything exists in Glance."""

    code = 400
    msg_fmt = _("Preflight check failed: %(reason)s")


class ReservedProperty(PreflightError):
    code = 403
    msg_fmt = _("Image property '%(property)s' is reserved by Glance "
                "(%(reason)s)")


class ReadOnlyProperty(PreflightError):
    code = 403
    msg_fmt = _("Image property '%(property)s' is read-only in Glance and "
                "cannot be set on create")


class PropertyNameTooLong(PreflightError):
    msg_fmt = _("Image property name '%(property)s...' is %(length)d "
                "characters long; Glance allows at most 255")


class PropertyValueNotString(PreflightError):
    msg_fmt = _("Image property '%(property)s' has a %(type)s value; Glance "
                "custom properties must be strings")


class PropertyValueTooLong(PreflightError):
    msg_fmt = _("Image attribute '%(property)s' is %(length)d characters "
                "long; Glance allows at most %(limit)d")


class PropertyQuotaExceeded(PreflightError):
    code = 403
    msg_fmt = _("The image would carry %(count)d properties; option "
                "[snapshot_ext] image_property_quota allows %(quota)d "
                "(Glance's image_property_quota, default 128)")


class TagQuotaExceeded(PreflightError):
    code = 403
    msg_fmt = _("The image would carry %(count)d tags (one per volume "
                "snapshot); option [snapshot_ext] image_tag_quota allows "
                "%(quota)d (Glance's image_tag_quota, default 128)")


class UnsupportedCharacter(PreflightError):
    msg_fmt = _("Image %(what)s '%(property)s' contains %(char)s, a "
                "character outside the Basic Multilingual Plane (4 bytes "
                "in UTF-8); Glance refuses such text (400)")


class UnstorableCharacter(PreflightError):
    """Text a production database under Glance cannot store.

    ``database`` names it (``PostgreSQL`` for NUL, ``any`` for a lone
    surrogate); SQLite may accept it, the cloud's database answers 500.
    """

    msg_fmt = _("Image %(what)s '%(property)s' contains %(char)s, which "
                "Glance cannot store on %(database)s database (Glance "
                "would answer 500 after the volume snapshots were taken)")


class PropertyKeysCollide(PreflightError):
    """Two property names are one key in Glance's MySQL/MariaDB table."""

    msg_fmt = _("Image properties '%(first)s' and '%(second)s' are the same "
                "name in Glance's MySQL/MariaDB table (collation "
                "utf8mb3_general_ci ignores case, accents and trailing "
                "spaces): Glance would answer 500; keep one of them")


class PropertyValueTooLarge(PreflightError):
    """A property value longer than Glance's MySQL/MariaDB ``TEXT``."""

    msg_fmt = _("Image property '%(property)s' is %(size)d bytes long in "
                "UTF-8; Glance on MySQL/MariaDB stores at most %(limit)d "
                "bytes (TEXT) and would answer 500")


class RequiredPropertyMissing(PreflightError):
    msg_fmt = _("This Glance requires image property '%(property)s' "
                "(image schema 'required' list) and the snapshot does not "
                "carry it")


class GlanceQuotaExceeded(PreflightError):
    """The snapshot cannot fit the project's Glance quotas (unified limits).

    Raised before anything is created; ``resource`` names the limit
    (``image_count_total``, ``image_count_uploading``, ``image_size_total``).
    """

    code = 403
    msg_fmt = _("Glance's quota %(resource)s of project %(project)s "
                "refuses this snapshot (%(reason)s); nothing was created. "
                "The limit is a Keystone unified limit of the image "
                "service: raise it for the project (openstack limit set / "
                "limit create --service glance --resource-limit N "
                "%(resource)s) or free some of it first")


class SharingNotAllowed(PreflightError):
    code = 403
    msg_fmt = _("Metadata 'instance_owner' = '%(project)s' would share the "
                "snapshot image with that project; Nova only shares an "
                "admin's snapshot of another project's server (with the "
                "server's project), and Glance refuses members on a private "
                "image")


class FormatNotAllowed(PreflightError):
    msg_fmt = _("No honest activation is possible: %(reason)s. Glance allows "
                "disk_format %(allowed)s and container_format "
                "%(containers)s; driver '%(driver)s' reads %(readable)s")


# --- OpenStack services ---------------------------------------------------

class ServiceError(SnapshotExtException):
    """A request to an OpenStack service failed; what is known of its answer.

    :ivar status: the HTTP status of the service's answer (an ``int``),
        or ``None`` when no usable answer was read (a transport failure,
        an unreadable body).
    :ivar sent: False only when the request is known not to have left
        this process (no endpoint could be chosen, or its credentials
        failed first); a connection refused is not told apart from one
        reset after the request left, so it counts as sent.
    """

    def __init__(self, message: str | None = None, **kwargs: ty.Any):
        super().__init__(message, **kwargs)
        self.sent = bool(kwargs.get('sent', True))
        self.status = http_status(kwargs.get('status'))

    @property
    def may_have_made(self) -> bool:
        """Whether what a create asked for may exist despite the failure.

        True when the request left and got no usable answer, or a 5xx
        (the service may have failed after making it); a 4xx is a
        refusal.
        """
        return self.sent and (self.status is None or self.status >= 500)


# --- Glance interaction ---------------------------------------------------

class GlanceError(ServiceError):
    """A Glance call failed.

    ``status`` is also ``None`` for a client-side refusal without status;
    ``sent`` defaults to True: it may have reached Glance, so what it
    asked for may exist.
    """

    msg_fmt = _("Glance %(operation)s failed: %(reason)s")


class GlanceUnavailable(GlanceError):
    code = 503
    msg_fmt = _("Glance could not be reached for %(operation)s: %(reason)s")


class GlanceForbidden(GlanceError):
    code = 403


class GlanceNotFound(GlanceError):
    code = 404


class GlanceConflict(GlanceError):
    code = 409


class GlanceBadRequest(GlanceError):
    code = 400


class GlanceSchemaRefusal(GlanceBadRequest):
    """Glance (or glanceclient) refused the record against its schema.

    The operator changed Glance's formats or properties since the
    capabilities were read.

    :ivar format_refused: the refusal names ``disk_format`` or
        ``container_format`` (another planned format may pass), as
        classified by :func:`nova_snapshot_ext.image.glance.translate`
        (the ``format_refused`` keyword).
    """

    def __init__(self, message: str | None = None, **kwargs: ty.Any):
        super().__init__(message, **kwargs)
        self.format_refused: bool = bool(kwargs.get('format_refused'))


class GlanceMalformedAnswer(GlanceError):
    """Glance's answer could not be read as the document expected.

    A body cut mid-answer by a proxy, not JSON, or JSON of another shape.
    Nothing is known about the outcome of the request.
    """

    msg_fmt = _("Glance %(operation)s failed: %(reason)s")


class GlanceAnswerMismatch(GlanceMalformedAnswer):
    """Glance's answer is about another image than the one asked about.

    The ``id`` (or, in a create's answer, a property the create sent, such
    as the snapshot's fingerprint) of the document differs from the
    request's: an intermediary mixed up answers.  Nothing is known about
    the outcome of the request, exactly as for a lost answer; the body is
    never acted on.  ``image_id`` is the id asked about, ``answered`` the
    one the body named.
    """

    msg_fmt = _("Glance %(operation)s of image %(image_id)s failed: the "
                "answer is about another image (%(answered)s); it was "
                "ignored")


class GlanceDeadlineExceeded(GlanceUnavailable):
    """No complete answer within the request's or the snapshot's deadline.

    A per-read timeout never trips on an answer that trickles in; the
    total deadline does.  ``deadline`` is in seconds; ``which`` says whose
    it is (``[snapshot_ext] request_timeout`` or ``snapshot_timeout``);
    ``sent`` is false when the request was not sent at all because the
    snapshot's deadline had passed.  ``reached`` is true when a
    connection to Glance was open when the deadline passed (Glance was
    reached and answered too slowly), or when the snapshot ran out of
    time after its earlier requests reached Glance: then Glance failed
    (:func:`unreachable` is false).  Without it (no connection was made,
    or nobody knows), Glance was not reached, as for any
    :class:`GlanceUnavailable`.
    """

    code = 504
    msg_fmt = _("Glance %(operation)s got no complete answer within "
                "%(deadline)s seconds (%(which)s): %(reason)s")

    def __init__(self, message: str | None = None, **kwargs: ty.Any):
        super().__init__(message, **kwargs)
        self.reached = kwargs.get('reached') is True


class GlanceAnswerCut(GlanceUnavailable):
    """Glance was reached and began its answer, which was cut short.

    The status line and headers came, the body did not come whole (the
    connection closed mid-body, a chunk or the encoding broke).  A
    transient fault like any lost answer -- nothing is known about the
    outcome of the request -- but Glance was reached, so Glance failed
    (:func:`unreachable` is false: the CLI's exit 1).
    """

    msg_fmt = _("Glance %(operation)s failed: %(reason)s")


def unreachable(err: BaseException) -> bool:
    """Whether ``err`` says Glance was not reached (the CLI's exit 3).

    Every :class:`GlanceUnavailable` (connection refused or reset, DNS,
    TLS, 502/503/504) except a :class:`GlanceAnswerCut` (an answer cut
    mid-body) and a :class:`GlanceDeadlineExceeded` on a
    Glance that was reached (a trickled or stalled answer) or on a
    snapshot that ran out of time: Glance answered too slowly, so it
    failed, whichever request (read, create, member add, upload, location
    add) met the deadline.
    """
    if isinstance(err, GlanceDeadlineExceeded):
        return not err.reached
    if isinstance(err, GlanceAnswerCut):
        return False
    return isinstance(err, GlanceUnavailable)


class GlanceOverLimit(GlanceError):
    """413: payload too large, or a quota (storage, image count) reached."""

    code = 413


class SnapshotImageConflict(GlanceConflict):
    """The image with this snapshot's id is not (or no longer) its image.

    Another image holds the id, or a retry of the snapshot brings a record
    (name, properties) that differs from the image an earlier try made.
    Nothing was changed or deleted; ``image_id`` names the image.
    """

    msg_fmt = _("Image %(image_id)s cannot be used for this snapshot: "
                "%(reason)s")


class GlanceFailedOnRecord(GlanceError):
    """Glance answered 5xx to a create and no image exists afterwards.

    Glance itself (not a gateway) failed while storing this record and
    rolled it back.  Nothing was made; ``image_id`` names the id the
    create asked for.  Which cause it was, only Glance's log says: the
    record (a property its database refuses, which the preflight could
    not foresee: every retry fails the same way) or Glance's own state
    (a database busy or gone: a later retry may succeed).
    """

    msg_fmt = _("Glance failed on this record (HTTP %(status)s on the "
                "create of image %(image_id)s; Glance's answer: "
                "%(detail)s) and made no image; Glance's log names the "
                "cause: a property its database refuses fails the same "
                "way on every retry until the record changes, a database "
                "that was busy or down may not")


class ImageFormatRejected(GlanceError):
    """Glance refused the uploaded bytes (HTTP 415, format inspection)."""

    code = 415
    msg_fmt = _("Glance refused the %(disk_format)s payload of image "
                "%(image_id)s: %(reason)s")


class ActivationFailed(SnapshotExtException):
    """No attempt of the activation plan activated an image.

    :ivar result: the :class:`~nova_snapshot_ext.snapshot.result.
        SnapshotResult` (``status == 'failed'``): its ``attempts``, each
        with the reason it failed, ``cleaned_up`` (image ids deleted on the
        way), ``leftover`` (any that could not be deleted) and
        ``unconfirmed`` (creates with no answer).
    :ivar code: the HTTP status a host answers with: the ``code`` of the
        last attempt's error (``cause``), 500 without one.

    :param result: the result (keyword; ``None`` only outside the engine).
    :param cause: the last attempt's error, or ``None`` (keyword); it is
        also the exception's ``__cause__``.
    """

    msg_fmt = _("Could not activate snapshot image '%(name)s': "
                "%(reason)s")

    def __init__(self, message: str | None = None, *,
                 result: ty.Any = None,
                 cause: SnapshotExtException | None = None,
                 **kwargs: ty.Any):
        super().__init__(message, **kwargs)
        self.result = result
        self.code = cause.code if cause is not None else 500
        self.__cause__ = cause


class InvalidTransition(SnapshotExtException):
    """A move the engine's table does not allow (a bug).

    See :data:`nova_snapshot_ext.snapshot.transitions.TRANSITIONS`.
    """

    msg_fmt = _("No transition from attempt state '%(state)s' on event "
                "'%(event)s'")


class SnapshotInterrupted(KeyboardInterrupt):
    """Ctrl-C (or the CLI's SIGTERM) interrupted a snapshot.

    Raised by the engine from the interrupt, after the attempt in flight
    was resolved and cleaned up.

    :ivar snapshot_result: the
        :class:`~nova_snapshot_ext.snapshot.result.SnapshotResult`: the
        active image, or the ids deleted, left and unconfirmed.
    :ivar interrupt: the original ``KeyboardInterrupt`` (also the
        ``__cause__``).
    """

    def __init__(self, snapshot_result: ty.Any,
                 interrupt: KeyboardInterrupt):
        super().__init__(*interrupt.args)
        self.snapshot_result = snapshot_result
        self.interrupt = interrupt
        self.__cause__ = interrupt


class SnapshotExit(SystemExit):
    """``SystemExit`` during a snapshot: as :class:`SnapshotInterrupted`.

    Its ``code`` is the original's.
    """

    def __init__(self, snapshot_result: ty.Any, interrupt: SystemExit):
        super().__init__(*interrupt.args)
        self.snapshot_result = snapshot_result
        self.interrupt = interrupt
        self.__cause__ = interrupt


class ActivationTimeout(GlanceError):
    code = 504
    msg_fmt = _("Image %(image_id)s did not become active within "
                "%(timeout)s seconds (last status '%(status)s')")


# --- activation through a location (issue 4) ------------------------------

class GlanceNotImplemented(GlanceError):
    """Glance (or glanceclient) lacks the call, e.g. API < 2.17 (501)."""

    code = 501


class LocationUnusable(PreflightError):
    """The configured location cannot activate an image on this Glance.

    Raised before anything is created: the object is empty, unreachable,
    not what ``[snapshot_ext] location_disk_format`` says, or this Glance
    has no read-only (http) store.  ``url`` is always redacted.
    """

    msg_fmt = _("The location %(url)s (option [snapshot_ext] location_url) "
                "cannot be used: %(reason)s")


class LocationTaskFailed(GlanceError):
    """Glance's ``location_import`` task for an image failed."""

    msg_fmt = _("Glance could not activate image %(image_id)s from "
                "location %(url)s: %(reason)s")


# --- Cinder (backup rotation) --------------------------------------------

class CinderError(ServiceError):
    """A Cinder request failed.

    :param operation: what was asked (``read``, ``delete``, ``backup``).
    :param resource: what it was asked of, in Cinder's words
        (``backup <id>``, ``volume <id>``); default ``volume snapshot
        <snapshot_id>``.
    """

    msg_fmt = _("Cinder %(operation)s of %(resource)s failed: %(reason)s")

    def __init__(self, message: str | None = None, **kwargs: ty.Any):
        kwargs.setdefault('resource', 'volume snapshot %s'
                          % kwargs.get('snapshot_id'))
        super().__init__(message, **kwargs)


class CinderUnavailable(CinderError):
    code = 503
    msg_fmt = _("Cinder could not be reached for %(operation)s of "
                "%(resource)s: %(reason)s")


class CinderForbidden(CinderError):
    code = 403
    msg_fmt = _("Cinder refused %(operation)s of %(resource)s to these "
                "credentials (options [snapshot_ext_cinder], or the "
                "caller's token): %(reason)s")


# --- Nova's compute API (restore) ------------------------------------------

class ComputeError(ServiceError):
    """A request to Nova's compute API (``restore``) failed."""

    msg_fmt = _("Nova %(operation)s of %(resource)s failed: %(reason)s")


class ComputeUnavailable(ComputeError):
    code = 503
    msg_fmt = _("Nova could not be reached for %(operation)s of "
                "%(resource)s: %(reason)s")


class ComputeForbidden(ComputeError):
    code = 403
    msg_fmt = _("Nova refused %(operation)s of %(resource)s to these "
                "credentials (options [snapshot_ext_cinder]): %(reason)s")


# --- restore ----------------------------------------------------------------

class RestoreRefused(SnapshotExtException):
    """A restore refused before any volume or server was made."""

    code = 400
    msg_fmt = _("Restore refused, nothing was made: %(reason)s")


class RestoreFailed(SnapshotExtException):
    """A restore failed midway; ``made`` names what it made and its fate.

    :ivar made: ``[{'kind': 'volume'|'server', 'id': ..., 'fate':
        'deleted'|'left: <why>'}]``.
    """

    msg_fmt = _("Restore failed while %(step)s: %(reason)s%(made_text)s")

    def __init__(self, message: str | None = None, **kwargs: ty.Any):
        made = list(kwargs.get('made') or ())
        kwargs['made'] = made
        kwargs['made_text'] = ''.join(
            '; %s %s %s' % (m['kind'], m['id'], m['fate']) for m in made)
        super().__init__(message, **kwargs)
        self.made = made
