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

"""SnapshotService: build, check, create and activate the snapshot image.

Flow for one snapshot (design.md §3)::

    preflight (no side effect) -> for each planned attempt:
        create image (plugin-chosen id) -> add member (shared images)
        -> upload payload -> read back, verify active + size
        -> on failure: delete that image, next attempt (format refusals)
           or stop (anything else)

A *location* attempt (issue 4) creates the image the same way, then adds
the checked object of ``[snapshot_ext] location_url`` as its location --
``POST /v2/images/{id}/locations`` (API 2.17, asynchronous: poll the image
until ``active``, read the ``location_import`` task's failure from
``GET /v2/images/{id}/tasks``) or the legacy JSON-patch (synchronous) --
and verifies size, format and hash.  Refusals that another attempt may not
meet (403 policy or legacy API off, 400, 409 not-queued/locked on the new
API, 501 no API 2.17, a failed task) go on to the next attempt on a fresh
image; a 501 in ``location_api = auto`` mode adds a legacy attempt next.
A legacy 409 is a state problem: reported, not retried.  An image deleted
by someone else while Glance reads its location stops the snapshot.  The
plugin never removes or replaces a location.

Rules kept (design.md §4): every byte uploaded is what its disk_format
says; each attempt uses a fresh image id (a 415 poisons an image and
Glance never reuses an id); a create that meets 409 for *our* id reads
the image back instead of making a second one; nothing ``queued``
survives a failure.
"""

from __future__ import annotations

import dataclasses
import time
import typing as ty
import uuid

from oslo_config import cfg
from oslo_log import log as logging
from oslo_utils import uuidutils

from nova_snapshot_ext import driver as driver_mod
from nova_snapshot_ext import exception
from nova_snapshot_ext.image import capabilities as caps_mod
from nova_snapshot_ext.image import glance as glance_mod
from nova_snapshot_ext.image import locations
from nova_snapshot_ext.image import payloads
from nova_snapshot_ext import opts
from nova_snapshot_ext.snapshot import metadata as metadata_mod
from nova_snapshot_ext.snapshot import plan as plan_mod
from nova_snapshot_ext.snapshot import preflight as preflight_mod
from nova_snapshot_ext.snapshot import request as request_mod
from nova_snapshot_ext.snapshot import result as result_mod

LOG = logging.getLogger(__name__)

#: Statuses in which an image another try was finishing is being
#: deleted or was refused; Glance can still return an image while its
#: delete is in flight.
_GONE = ('deleted', 'pending_delete', 'killed')
_GONE_OR_REVERTED = _GONE + ('queued',)

#: Failures that mean "this format is refused here", so the next attempt
#: (another format, on a fresh image) may succeed.
FORMAT_REFUSALS = (exception.ImageFormatRejected,)

#: Failures of a location attempt after which the next attempt (on a fresh
#: image) may succeed.  A legacy 409 and an image deleted meanwhile are
#: excluded in :meth:`SnapshotService._next_after`.
LOCATION_REFUSALS = (exception.GlanceForbidden, exception.GlanceBadRequest,
                     exception.GlanceConflict,
                     exception.GlanceNotImplemented,
                     exception.LocationTaskFailed,
                     exception.LocationUnusable)

#: Image statuses on the way to ``active`` after a location was accepted
#: (``queued`` until the ``location_import`` task runs).
_LOCATION_PENDING = ('queued', 'importing', 'saving')


@dataclasses.dataclass
class PreparedSnapshot:
    """The output of :meth:`SnapshotService.preflight`.

    :ivar record: the image record that will be created.
    :ivar plan: the ordered :class:`~.plan.PlannedAttempt` list.
    :ivar capabilities: the Glance capabilities it was checked against.
    :ivar notes: plan steps dropped and why (e.g. an unusable location in
        ``location-fallback`` mode).
    """

    record: metadata_mod.ImageRecord
    plan: list[plan_mod.PlannedAttempt]
    capabilities: caps_mod.GlanceCapabilities
    notes: list[str] = dataclasses.field(default_factory=list)


def check_options(conf: cfg.ConfigOpts) -> None:
    """Read every ``[snapshot_ext]`` option now, before anything exists.

    oslo.config checks a value (type, ``min``, ``choices``) only when it is
    first read; reading them all here turns a bad value into a clear error
    at start-up instead of a failure after an image was created.

    :raises ConfigurationError: naming the option and the reason.
    """
    group = conf[opts.CORE_GROUP]
    for opt in opts.core_opts + opts.location_opts:
        try:
            getattr(group, opt.dest)
        except (cfg.Error, ValueError) as err:
            raise exception.ConfigurationError(
                group=opts.CORE_GROUP, option=opt.dest,
                reason=str(err)) from err
    for fmt in group.disk_formats:
        if fmt not in payloads.SUPPORTED_FORMATS:
            raise exception.ConfigurationError(
                group=opts.CORE_GROUP, option='disk_formats',
                reason='%r is not a disk format the plugin can make an '
                'honest payload of (it can: %s)' % (
                    fmt, ', '.join(payloads.SUPPORTED_FORMATS)))


class SnapshotService:
    """Register volume-backed snapshot images in Glance, honestly.

    :param conf: the host's ``ConfigOpts``; options are registered on it.
    :param driver: a :class:`~nova_snapshot_ext.driver.SnapshotDriver`;
        default: the one ``[snapshot_ext] driver`` names (or inferred).
    :param glance: default :class:`~.image.glance.GlanceClient`; built
        from ``[snapshot_ext_glance]`` on first use if not given.  A host
        acting for many users passes a client per call instead.
    :param sleep: the sleep function used while polling.
    :param clock: the monotonic clock bounding the wait (seconds).
    """

    def __init__(self, conf: cfg.ConfigOpts,
                 driver: driver_mod.SnapshotDriver | None = None,
                 glance: glance_mod.GlanceClient | None = None,
                 sleep: ty.Callable[[float], None] = time.sleep,
                 clock: ty.Callable[[], float] = time.monotonic):
        opts.register_opts(conf)
        self.conf = conf
        check_options(conf)
        self.driver = driver or driver_mod.load_driver(conf)
        pinned = conf.snapshot_ext.disk_formats
        if pinned and not plan_mod.candidate_formats(self.driver, pinned):
            raise exception.ConfigurationError(
                group=opts.CORE_GROUP, option='disk_formats',
                reason='none of %s is raw or a format driver %r reads (%s)'
                % (', '.join(pinned), self.driver.name,
                   ', '.join(self.driver.disk_formats)))
        self._glance = glance
        self._sleep = sleep
        self._clock = clock
        self.capabilities = caps_mod.CapabilityCache(
            conf.snapshot_ext.capabilities_cache_ttl)
        self._location_source: locations.LocationSource | None = None
        if conf.snapshot_ext.activation_method != 'upload':
            # Refuse a bad location_url now (a host fails to start).
            self._location_source = locations.LocationSource(
                conf.snapshot_ext)

    @property
    def location_source(self) -> locations.LocationSource | None:
        """The checked ``location_url`` object source.

        ``None`` when ``[snapshot_ext] activation_method = upload``.
        """
        return self._location_source

    @property
    def glance(self) -> glance_mod.GlanceClient:
        """The default Glance client (built from config on first use)."""
        if self._glance is None:
            self._glance = glance_mod.GlanceClient.from_conf(self.conf)
        return self._glance

    # --- preflight --------------------------------------------------------

    def build_record(self, snapshot: request_mod.SnapshotRequest,
                     image_id: str | None = None
                     ) -> metadata_mod.ImageRecord:
        """The image record for ``snapshot`` (no Glance call)."""
        return metadata_mod.build_image_record(
            snapshot,
            non_inheritable=self.conf.snapshot_ext.
            non_inheritable_image_properties,
            driver_properties=self.driver.image_properties(),
            image_id=image_id or snapshot.image_id or
            uuidutils.generate_uuid())

    def plan(self, capabilities: caps_mod.GlanceCapabilities,
             glance: glance_mod.GlanceClient | None = None
             ) -> list[plan_mod.PlannedAttempt]:
        """The activation plan for this Glance and this driver.

        :param glance: needed to check the location object; without it
            (or when the location is unusable) the plan has no location
            attempt.
        """
        location = None
        if glance is not None:
            location, _ = self.assess_location(capabilities, glance)
        return plan_mod.build_plan(capabilities, self.driver,
                                   self.conf.snapshot_ext.disk_formats,
                                   location,
                                   self.conf.snapshot_ext.activation_method)

    def assess_location(self, capabilities: caps_mod.GlanceCapabilities,
                        glance: glance_mod.GlanceClient
                        ) -> tuple[plan_mod.PlannedAttempt | None,
                                   list[str]]:
        """Can this Glance take the configured location, and how?

        Checks, without creating anything: a read-only (http) store is
        listed (when Glance is multi-store), API v2.17 for the new API,
        the location's disk_format is allowed and readable by the driver,
        then downloads the object once (cached) to check it is non-empty
        and honest (:mod:`nova_snapshot_ext.image.locations`).

        :returns: ``(attempt, [])`` when usable, ``(None, reasons)`` when
            not, ``(None, [])`` when ``activation_method = upload``.
        """
        source = self._location_source
        if source is None:
            return None, []
        api = locations.choose_api(capabilities, source.api)
        reasons = locations.glance_refusals(capabilities, source.disk_format,
                                            api)
        fmt = source.disk_format
        if fmt != 'raw' and fmt not in self.driver.disk_formats:
            reasons.append("driver '%s' does not read %s"
                           % (self.driver.name, fmt))
        if reasons:
            return None, reasons
        try:
            obj = source.get(glance.session)
        except exception.LocationUnusable as err:
            return None, [err.kwargs['reason']]
        return plan_mod.location_attempt(obj.disk_format, obj.size, api,
                                         obj.redacted), []

    def preflight(self, snapshot: request_mod.SnapshotRequest,
                  glance: glance_mod.GlanceClient | None = None
                  ) -> PreparedSnapshot:
        """Run every check that can fail without side effects.

        A host calls this before it snapshots any volume (the mappings may
        then carry placeholder snapshot ids; only their shape matters).

        :raises InvalidRequest: malformed request.
        :raises PreflightError: a subclass naming the property or option
            at fault; :class:`FormatNotAllowed` when no honest activation
            exists on this Glance.
        :raises GlanceError: capabilities could not be read.
        """
        snapshot.validate()
        record = self.build_record(snapshot)
        for key in snapshot.metadata:
            if key in metadata_mod.MAPPING_KEYS:
                LOG.info('User metadata %s is replaced by the mappings of '
                         'server %s', key, snapshot.server.uuid)
        return self.check_record(record, glance)

    def check_record(self, record: metadata_mod.ImageRecord,
                     glance: glance_mod.GlanceClient | None = None
                     ) -> PreparedSnapshot:
        """Preflight an image record built elsewhere (e.g. by Nova).

        :param record: the record; its properties must already be strings.
        :returns: :class:`PreparedSnapshot`.
        :raises PreflightError: as :meth:`preflight`.
        :raises GlanceError: capabilities could not be read.
        """
        glance = glance or self.glance
        caps = self.capabilities.get(glance)
        preflight_mod.check_image_record(
            record, caps, self.conf.snapshot_ext.image_property_quota)
        method = self.conf.snapshot_ext.activation_method
        location, why_not = self.assess_location(caps, glance)
        pinned = self.conf.snapshot_ext.disk_formats
        notes = []
        if why_not:
            assert self._location_source is not None
            url = self._location_source.redacted
            if method == 'location-first':
                raise exception.LocationUnusable(url=url,
                                                 reason='; '.join(why_not))
            notes.append('location %s not used: %s' % (url,
                                                       '; '.join(why_not)))
            LOG.warning('Snapshot %(name)s: location %(url)s cannot be used '
                        '(%(why)s); planning uploads only',
                        {'name': record.name, 'url': url,
                         'why': '; '.join(why_not)})
        attempts = plan_mod.build_plan(caps, self.driver, pinned, location,
                                       method)
        if not attempts and why_not:
            raise exception.LocationUnusable(
                url=self._location_source.redacted,  # type: ignore
                reason='%s; and no upload is possible either: %s' % (
                    '; '.join(why_not), plan_mod.explain_empty_plan(
                        caps, self.driver, pinned)))
        if not attempts:
            raise exception.FormatNotAllowed(
                reason=plan_mod.explain_empty_plan(caps, self.driver, pinned),
                allowed=', '.join(caps.disk_formats) or '(none)',
                containers=', '.join(caps.container_formats) or '(none)',
                driver=self.driver.name,
                readable=', '.join(self.driver.disk_formats))
        return PreparedSnapshot(record, attempts, caps, notes)

    # --- snapshot ---------------------------------------------------------

    def snapshot(self, snapshot: request_mod.SnapshotRequest,
                 glance: glance_mod.GlanceClient | None = None
                 ) -> result_mod.SnapshotResult:
        """Create and activate the snapshot image.

        :param snapshot: the validated request.
        :param glance: the client to act with (default: :attr:`glance`).
        :returns: :class:`~.result.SnapshotResult` with ``status ==
            'active'``.
        :raises PreflightError: refused before anything was created.
        :raises ActivationFailed: every attempt failed; its ``result``
            attribute lists the attempts, the images deleted and any left
            behind; ``code`` is the HTTP status of the last failure.
        """
        glance = glance or self.glance
        return self.register(self.preflight(snapshot, glance), glance)

    def register(self, prepared: PreparedSnapshot,
                 glance: glance_mod.GlanceClient | None = None
                 ) -> result_mod.SnapshotResult:
        """Create and activate a preflighted image record, plan in order.

        :param prepared: from :meth:`preflight` or :meth:`check_record`.
        :param glance: the client to act with (default: :attr:`glance`).
        :returns: :class:`~.result.SnapshotResult`, ``status == 'active'``.
        :raises ActivationFailed: as :meth:`snapshot`.
        """
        glance = glance or self.glance
        record = prepared.record
        result = result_mod.SnapshotResult(
            image_id=None, name=record.name, status='failed',
            member=record.member,
            plan=[p.describe() for p in prepared.plan],
            notes=list(prepared.notes))
        last_error: exception.SnapshotExtException | None = None
        plan = list(prepared.plan)
        # Set once the first attempt's id turns out burned: later attempts
        # only look for an image an earlier try of this snapshot left.
        probe_only = False
        index = -1
        while index + 1 < len(plan):
            index += 1
            planned = plan[index]
            attempt = result_mod.Attempt(
                method=planned.method, disk_format=planned.disk_format,
                container_format=planned.container_format,
                size=planned.size,
                image_id=self._attempt_id(record, index, planned),
                location_api=planned.location_api, url=planned.url)
            result.attempts.append(attempt)
            try:
                image = self._run_attempt(
                    glance, record, attempt, result, probe_only,
                    {p.disk_format for p in plan if p.method == 'upload'})
            except exception.SnapshotExtException as err:
                last_error = err
                attempt.outcome = 'failed'
                attempt.reason = err.format_message()
                attempt.status = err.kwargs.get('status') or getattr(
                    err, 'code', None)
                if err.kwargs.get('burned'):
                    # The id was used by an earlier try of this snapshot
                    # and deleted: a later attempt's id may hold the image
                    # that try left active, but nothing new is created.
                    probe_only = True
                    continue
                if attempt.created or err.kwargs.get('poisoned') or (
                        err.kwargs.get('create_unknown')):
                    # Never delete an image this attempt did not make,
                    # unless Glance poisoned it (nobody can activate it).
                    self._cleanup(glance, attempt, result)
                if not probe_only and err.kwargs.get('other_try_moved_on'):
                    # The image of a concurrent try of this snapshot was
                    # refused or removed under us: that try moves on to
                    # the next attempt, and so do we (its id holds the
                    # image that try makes next).
                    continue
                if err.kwargs.get('schema_refusal'):
                    # The operator changed Glance's formats since discovery.
                    self.capabilities.invalidate(glance)
                if planned.method == 'location':
                    self._after_location_failure(glance, plan, index, err,
                                                 result)
                if not probe_only and self._next_after(planned, err):
                    LOG.warning('Snapshot %(name)s: %(attempt)s; trying the '
                                'next attempt', {
                                    'name': record.name,
                                    'attempt': attempt.describe()})
                    continue
                break
            except BaseException:
                # Not ours to translate (a bug, Ctrl-C...): still leave
                # nothing behind that this attempt created or may have.
                attempt.outcome = 'failed'
                if attempt.created or attempt.create_sent:
                    self._cleanup(glance, attempt, result)
                raise
            attempt.outcome = 'active'
            result.image_id = image['id']
            result.status = image['status']
            result.disk_format = image.get('disk_format')
            result.container_format = image.get('container_format')
            result.size = image.get('size')
            result.os_hash_algo = image.get('os_hash_algo')
            result.os_hash_value = image.get('os_hash_value')
            result.plan = [p.describe() for p in plan]
            LOG.info('Snapshot image %(id)s (%(name)s) is active '
                     '(%(fmt)s, %(size)s B, %(n)d attempt(s))',
                     {'id': result.image_id, 'name': record.name,
                      'fmt': result.disk_format, 'size': result.size,
                      'n': index + 1})
            return result
        result.plan = [p.describe() for p in plan]
        reason = '; '.join('%s %s: %s' % (a.method, a.disk_format, a.reason)
                           for a in result.attempts)
        if probe_only:
            reason += ('; no image of an earlier try of this snapshot is '
                       'left: retry with a new image_id')
        if result.cleaned_up:
            reason += '; deleted image(s) %s' % ', '.join(result.cleaned_up)
        if result.leftover:
            reason += '; COULD NOT DELETE %s' % ', '.join(result.leftover)
        failure = exception.ActivationFailed(name=record.name, reason=reason)
        failure.result = result  # type: ignore[attr-defined]
        failure.code = getattr(last_error, 'code', 500)
        LOG.error('Snapshot image %(name)s could not be activated: '
                  '%(reason)s', {'name': record.name, 'reason': reason})
        raise failure from last_error

    @staticmethod
    def _next_after(planned: plan_mod.PlannedAttempt,
                    err: exception.SnapshotExtException) -> bool:
        """May the next planned attempt succeed after ``err``?"""
        if isinstance(err, FORMAT_REFUSALS) or err.kwargs.get(
                'schema_refusal'):
            return True
        if planned.method != 'location':
            return False
        if err.kwargs.get('stop'):
            # Image deleted meanwhile, or a legacy 409 (a state problem).
            return False
        if isinstance(err, exception.GlanceConflict) and err.kwargs.get(
                'operation') == 'create':
            return False
        return isinstance(err, LOCATION_REFUSALS)

    def _after_location_failure(self, glance: glance_mod.GlanceClient,
                                plan: list[plan_mod.PlannedAttempt],
                                index: int,
                                err: exception.SnapshotExtException,
                                result: result_mod.SnapshotResult) -> None:
        """Bookkeeping after a failed location attempt.

        A failed task or a verification failure may mean the object
        changed: check it again next time.  A 501 means the cached
        capabilities were wrong about API 2.17; in ``location_api = auto``
        mode the legacy API is tried next.
        """
        planned = plan[index]
        source = self._location_source
        if source is not None and not isinstance(
                err, (exception.GlanceForbidden,
                      exception.GlanceNotImplemented)):
            source.invalidate()
        if isinstance(err, exception.GlanceNotImplemented):
            self.capabilities.invalidate(glance)
            if (source is not None and source.api == 'auto' and
                    planned.location_api == 'new' and
                    not any(p.method == 'location' and
                            p.location_api == 'legacy' for p in plan)):
                legacy = dataclasses.replace(planned, location_api='legacy')
                plan.insert(index + 1, legacy)
                LOG.info('Glance does not offer API 2.17; trying the legacy '
                         'location API next')

    @staticmethod
    def _attempt_id(record: metadata_mod.ImageRecord, index: int,
                    planned: plan_mod.PlannedAttempt) -> str:
        """The image id of attempt ``index``.

        The first attempt uses the record's id (the caller's, when it chose
        one).  Later attempts need fresh ids (Glance never reuses one, and
        a refused image is poisoned), derived from the record's id with
        uuid5 so that a retried snapshot finds the image an earlier try
        left active instead of making a second one.
        """
        if index == 0 and record.image_id:
            return record.image_id
        if not uuidutils.is_uuid_like(record.image_id):
            return uuidutils.generate_uuid()
        return str(uuid.uuid5(uuid.UUID(record.image_id), '%d:%s:%s' % (
            index, planned.method, planned.disk_format)))

    def _create(self, glance: glance_mod.GlanceClient,
                record: metadata_mod.ImageRecord,
                attempt: result_mod.Attempt,
                result: result_mod.SnapshotResult) -> dict[str, ty.Any]:
        kwargs = record.create_kwargs(attempt.disk_format,
                                      attempt.container_format,
                                      image_id=attempt.image_id)
        attempt.create_sent = True
        try:
            image = glance.create(**kwargs)
        except exception.GlanceConflict as err:
            existing = self._read_back(glance, record, attempt, err)
            result.reused = True
            return existing
        except exception.SnapshotExtException as err:
            status = err.kwargs.get('status')
            if isinstance(status, int) and 400 <= status < 500:
                raise
            # The POST may have gone through (a lost answer, a 5xx after
            # the insert), ours or a concurrent try's of this snapshot: if
            # the image exists it is this snapshot's, so finish it rather
            # than delete it; if not, nothing was made.
            try:
                existing = self._read_back(glance, record, attempt, None)
            except exception.GlanceConflict:
                raise err from None
            except exception.SnapshotExtException:
                # Glance cannot even be read: try to delete by id (the
                # result lists the id if that fails too).
                err.kwargs['create_unknown'] = True
                raise err from None
            LOG.info('Create of image %s failed (%s) but the image exists: '
                     'finishing it', attempt.image_id, status)
            result.reused = True
            return existing
        attempt.created = True
        return image

    def _read_back(self, glance: glance_mod.GlanceClient,
                   record: metadata_mod.ImageRecord,
                   attempt: result_mod.Attempt,
                   conflict: exception.GlanceConflict | None
                   ) -> dict[str, ty.Any]:
        """After a 409 on create: is the image with our id this snapshot?

        A create whose answer was lost and that keystoneauth (or the host)
        retried, or a concurrent try of the same snapshot, finds the image:
        same id, same name, same mappings.

        :returns: the image, to be adopted.
        :raises GlanceConflict: ``burned=True`` when the id is taken by
            nothing this caller can see (deleted earlier, or another
            project's); without it when the image is a different one.
        """
        image_id = attempt.image_id
        assert image_id is not None
        try:
            image = glance.get(image_id)
            if image.get('status') in _GONE:
                raise exception.GlanceNotFound(
                    operation='get', image_id=image_id, status=404,
                    reason='image is %s' % image.get('status'))
        except exception.GlanceNotFound as err:
            raise exception.GlanceConflict(
                operation='create', image_id=image_id, status=409,
                burned=True, reason='image id %s is taken by no image this '
                'caller can see (deleted earlier, or another project\'s); '
                'Glance never reuses an id' % image_id
            ) from (conflict or err)
        same = (image.get('name') == record.name and
                image.get('block_device_mapping') ==
                record.properties.get('block_device_mapping'))
        if not same:
            raise exception.GlanceConflict(
                operation='create', image_id=image_id, status=409,
                reason='image id %s belongs to another image (%r); choose '
                'another image_id' % (image_id, image.get('name')))
        LOG.info('Image %s already exists for this snapshot (a retried or '
                 'concurrent try); adopting it instead of creating another',
                 image_id)
        return image

    def _run_attempt(self, glance: glance_mod.GlanceClient,
                     record: metadata_mod.ImageRecord,
                     attempt: result_mod.Attempt,
                     result: result_mod.SnapshotResult,
                     probe_only: bool = False,
                     allowed: ty.Collection[str] = ()) -> dict[str, ty.Any]:
        if probe_only:
            image = self._probe(glance, record, attempt,
                                first=len(result.attempts) == 2)
            result.reused = True
        else:
            image = self._create(glance, record, attempt, result)
        attempt.image_id = image['id']
        if not attempt.created:
            try:
                return self._adopt(glance, record, attempt, image, allowed)
            except exception.SnapshotExtException as err:
                # Gone, refused or reverted to queued: the try that made
                # it has met a refusal and moves on to its next attempt.
                err.kwargs['other_try_moved_on'] = (
                    isinstance(err, exception.ImageFormatRejected) or
                    err.kwargs.get('status') in (404, 410, 500) or
                    bool(err.kwargs.get('reverted')))
                raise
        if record.member:
            self._add_member(glance, image['id'], record.member)
        if attempt.method == 'location':
            return self._activate_by_location(glance, image, attempt)
        try:
            return self._upload(glance, image, attempt)
        except exception.SnapshotExtException as err:
            # Our image deleted or reverted under us: a concurrent try of
            # this snapshot had it refused and moved on.
            if err.kwargs.get('status') in (404, 410) or err.kwargs.get(
                    'reverted'):
                err.kwargs['other_try_moved_on'] = True
            raise

    def _probe(self, glance: glance_mod.GlanceClient,
               record: metadata_mod.ImageRecord,
               attempt: result_mod.Attempt,
               first: bool) -> dict[str, ty.Any]:
        """Look for the image an earlier or concurrent try made here.

        A concurrent try whose first image was refused is about to create
        the next attempt's image: the first probe waits for it a little
        (four poll intervals) before concluding there is none.
        """
        polls = 4 if first else 0
        while True:
            try:
                return self._read_back(glance, record, attempt, None)
            except exception.GlanceConflict as err:
                if not err.kwargs.get('burned') or polls <= 0:
                    raise
            polls -= 1
            self._sleep(self.conf.snapshot_ext.activation_poll_interval)

    @staticmethod
    def _add_member(glance: glance_mod.GlanceClient, image_id: str,
                    member: str) -> None:
        try:
            glance.add_member(image_id, member)
        except exception.GlanceConflict:
            LOG.debug('Project %s is already a member of image %s',
                      member, image_id)

    def _upload(self, glance: glance_mod.GlanceClient,
                image: dict[str, ty.Any],
                attempt: result_mod.Attempt) -> dict[str, ty.Any]:
        """Upload the honest payload of the image's own disk_format."""
        payload = payloads.payload(attempt.disk_format)
        try:
            glance.upload(image['id'], payload,
                          disk_format=attempt.disk_format)
        except exception.ImageFormatRejected as err:
            # A 415 leaves stray data behind: the image can never be
            # activated again, whoever made it.
            err.kwargs['poisoned'] = True
            raise
        except exception.GlanceConflict:
            # A concurrent try of this snapshot uploaded first.
            return self._wait_active(glance, image['id'], attempt)
        except exception.SnapshotExtException as err:
            # Two uploads into one image race: Glance answers the loser 410
            # ("deleted during the upload") or 500 although the winner left
            # the image active.  Never fail (and delete) a finished image.
            try:
                current = glance.get(image['id'])
            except exception.GlanceNotFound:
                # Deleted under us: another try of this snapshot met a
                # refusal on this image and moved on; so do we.
                err.kwargs['other_try_moved_on'] = True
                raise err from None
            except exception.SnapshotExtException:
                raise err from None
            status = current.get('status')
            if status in _GONE:
                err.kwargs['other_try_moved_on'] = True
                raise
            if status == 'queued' and err.kwargs.get('status') == 500:
                # Glance's store already holds data for this image (a
                # concurrent try's refused upload left it): the image can
                # never be activated; delete it and go on, as after a 415.
                err.kwargs['poisoned'] = True
                err.kwargs['other_try_moved_on'] = True
                raise
            if status == 'active':
                attempt.size = current.get('size') or 0
                return current
            if status in ('saving', 'importing', 'uploading'):
                # Another try's upload is under way: wait for it.
                return self._wait_active(glance, image['id'], attempt,
                                         check=False)
            raise
        # Glance answers 204 only after the data is stored and the image is
        # active (design rule 6; glance/api/v2/image_data.py), and it
        # checked the length we declared: no read-back request needed.
        image = dict(image, status='active', size=len(payload))
        self._verify(image, attempt)
        return image

    def _adopt(self, glance: glance_mod.GlanceClient,
               record: metadata_mod.ImageRecord,
               attempt: result_mod.Attempt,
               image: dict[str, ty.Any],
               allowed: ty.Collection[str] = ()) -> dict[str, ty.Any]:
        """Finish an image another try of this snapshot made.

        Such an image is never deleted unless Glance poisoned it.  It
        keeps the format it was created with: its payload is that
        format's, so nothing is ever uploaded under another label.
        """
        status = image.get('status')
        attempt.disk_format = image.get('disk_format') or attempt.disk_format
        attempt.container_format = (image.get('container_format') or
                                    attempt.container_format)
        if status == 'active':
            attempt.size = image.get('size') or 0
            return image
        if status == 'queued':
            if record.member:
                self._add_member(glance, image['id'], record.member)
            if (attempt.disk_format not in allowed or
                    attempt.container_format != plan_mod.CONTAINER_FORMAT):
                raise exception.GlanceConflict(
                    operation='adopt', image_id=image['id'], status=409,
                    reason='image %s of an earlier try is queued as %s/%s, '
                    'which this Glance and driver do not allow the plugin '
                    'to activate honestly now; delete it, or retry with a '
                    'new image_id' % (image['id'], attempt.disk_format,
                                      attempt.container_format))
            attempt.method = 'upload'
            attempt.size = payloads.payload_size(attempt.disk_format)
            return self._upload(glance, image, attempt)
        if status in ('saving', 'importing', 'uploading'):
            return self._wait_active(glance, image['id'], attempt,
                                     check=False)
        raise exception.GlanceConflict(
            operation='adopt', image_id=image['id'], status=409,
            reason='image %s of an earlier try of this snapshot is %s'
            % (image['id'], status))

    def _wait_active(self, glance: glance_mod.GlanceClient, image_id: str,
                     attempt: result_mod.Attempt,
                     check: bool = True) -> dict[str, ty.Any]:
        timeout = self.conf.snapshot_ext.activation_timeout
        interval = self.conf.snapshot_ext.activation_poll_interval
        deadline = self._clock() + timeout
        while True:
            image = glance.get(image_id)
            status = image.get('status')
            if status == 'active':
                if check:
                    self._verify(image, attempt)
                else:
                    attempt.size = image.get('size') or 0
                return image
            if status not in ('saving', 'importing', 'uploading'):
                raise exception.GlanceError(
                    operation='activation', image_id=image_id,
                    reverted=status in _GONE_OR_REVERTED,
                    reason='image is %s after its payload was accepted'
                    % status)
            if self._clock() >= deadline:
                raise exception.ActivationTimeout(
                    image_id=image_id, timeout=timeout, status=status)
            self._sleep(interval)

    # --- location activation (issue 4) -----------------------------------

    def _activate_by_location(self, glance: glance_mod.GlanceClient,
                              image: dict[str, ty.Any],
                              attempt: result_mod.Attempt
                              ) -> dict[str, ty.Any]:
        """Add the checked location to a queued image; wait for active.

        :returns: the active image.
        :raises LocationTaskFailed: Glance's task failed (reason from the
            image's tasks); ``stop=True`` when the image vanished.
        :raises GlanceError: translated refusals (403, 400, 409, 501...).
        :raises ActivationTimeout: not active within
            ``[snapshot_ext] activation_timeout``.
        """
        source = self._location_source
        assert source is not None
        image_id = image['id']
        if image.get('status') != 'queued':
            # Our own, just created (or read back after a retried create):
            # never touch the locations of an image in another state.
            raise exception.GlanceConflict(
                operation='add location', image_id=image_id, status=409,
                stop=True, reason='image is %s, not queued; a location is '
                'only added to a queued image' % image.get('status'))
        obj = source.get(glance.session)
        LOG.info('Adding location %(url)s to image %(id)s (%(api)s API)',
                 {'url': obj.redacted, 'id': image_id,
                  'api': attempt.location_api})
        if attempt.location_api == 'legacy':
            try:
                image = glance.add_location(image_id, obj.url,
                                            obj.validation_data)
            except exception.GlanceConflict as err:
                raise exception.GlanceConflict(
                    operation='add location (legacy)', image_id=image_id,
                    status=409, stop=True, reason='%s (image status now: '
                    '%s)' % (err.kwargs.get('reason'),
                             self._status_of(glance, image_id))) from err
            if image.get('status') == 'active':
                self._verify(image, attempt, obj.validation_data)
                return image
        else:
            try:
                glance.add_image_location(image_id, obj.url,
                                          obj.validation_data)
            except exception.GlanceConflict as err:
                raise exception.GlanceConflict(
                    operation='add location', image_id=image_id, status=409,
                    reason='%s (image status now: %s)' % (
                        err.kwargs.get('reason'),
                        self._status_of(glance, image_id))) from err
            except exception.GlanceNotFound as err:
                raise exception.LocationTaskFailed(
                    image_id=image_id, url=obj.redacted, status=404,
                    stop=True, reason='the image is not visible after the '
                    'location was sent: it was deleted meanwhile, or this '
                    "identity has only the 'service' role (Glance lets it "
                    'add a location but not read the image; act as the '
                    "owner's member and add a service token, see "
                    '[snapshot_ext_service_user])') from err
        return self._wait_location(glance, image_id, attempt, obj)

    @staticmethod
    def _status_of(glance: glance_mod.GlanceClient, image_id: str) -> str:
        try:
            return str(glance.get(image_id).get('status'))
        except exception.GlanceNotFound:
            return 'deleted'
        except exception.GlanceError as err:
            return 'unknown (%s)' % err.kwargs.get('reason')

    def _wait_location(self, glance: glance_mod.GlanceClient, image_id: str,
                       attempt: result_mod.Attempt,
                       obj: locations.LocationObject) -> dict[str, ty.Any]:
        timeout = self.conf.snapshot_ext.activation_timeout
        assert self._location_source is not None
        # When to read the image and its tasks: locations.ImportWait.
        wait = locations.ImportWait(self._location_source.import_estimate,
                                    timeout)
        deadline = self._clock() + timeout
        status = 'queued'
        for delay in wait:
            self._sleep(delay)
            try:
                image = glance.get(image_id)
            except exception.GlanceNotFound as err:
                raise exception.LocationTaskFailed(
                    image_id=image_id, url=obj.redacted, status=404,
                    stop=True, reason='the image is not visible after its '
                    'location was accepted: it was deleted while Glance '
                    'was adding its location, or this identity has only '
                    "the 'service' role (Glance lets it add a location but "
                    "not read the image; act as the owner's member and add "
                    'a service token, see [snapshot_ext_service_user])'
                ) from err
            status = str(image.get('status'))
            if status == 'active':
                wait.active()
                self._verify(image, attempt, obj.validation_data)
                return image
            if status not in _LOCATION_PENDING:
                raise exception.LocationTaskFailed(
                    image_id=image_id, url=obj.redacted,
                    reason='image is %s after its location was accepted'
                    % status)
            if wait.saw(status):
                failure = self.location_task_failure(glance, image_id)
                if failure:
                    raise exception.LocationTaskFailed(
                        image_id=image_id, url=obj.redacted, reason=failure)
            if self._clock() >= deadline:
                break
        raise exception.ActivationTimeout(
            image_id=image_id, timeout=timeout, status=status)

    @staticmethod
    def location_task_failure(glance: glance_mod.GlanceClient,
                              image_id: str) -> str | None:
        """The failure of the image's latest ``location_import`` task.

        Reads ``GET /v2/images/{id}/tasks`` (the owner may; API 2.12+).

        :returns: ``"location_import task <id> failed: <message>"``, or
            ``None`` while no such task has failed (or tasks cannot be
            read: the poll goes on until the timeout).
        """
        try:
            tasks = glance.image_tasks(image_id)
        except exception.GlanceError as err:
            LOG.debug('Cannot read the tasks of image %s: %s', image_id, err)
            return None
        tasks = [t for t in tasks if t.get('type') in (None,
                                                       'location_import')]
        if not tasks:
            return None
        latest = max(tasks, key=lambda t: str(t.get('created_at') or ''))
        if latest.get('status') != 'failure':
            return None
        message = ' '.join(str(latest.get('message') or
                               'no message').split())[:500]
        if 'internal error' in message.lower():
            # Glance 33 records no detail; say what it usually is.
            message += (' (Glance gives no detail: usually the object is '
                        'unreachable from Glance, empty, or no longer has '
                        'the hash the plugin sent)')
        return 'location_import task %s failed: %s' % (latest.get('id'),
                                                       message)

    @staticmethod
    def _verify(image: dict[str, ty.Any],
                attempt: result_mod.Attempt,
                validation: ty.Mapping[str, str] | None = None) -> None:
        if image.get('size') != attempt.size or (
                image.get('disk_format') != attempt.disk_format):
            raise exception.GlanceError(
                operation='verify', image_id=image.get('id'),
                reason='image is active with disk_format %s and size %s, '
                'expected %s and %d' % (
                    image.get('disk_format'), image.get('size'),
                    attempt.disk_format, attempt.size))
        if validation and image.get('os_hash_value') and (
                image.get('os_hash_value') != validation['os_hash_value']):
            raise exception.GlanceError(
                operation='verify', image_id=image.get('id'),
                reason='image is active with %s %s, expected %s' % (
                    image.get('os_hash_algo'), image.get('os_hash_value'),
                    validation['os_hash_value']))

    def _cleanup(self, glance: glance_mod.GlanceClient,
                 attempt: result_mod.Attempt,
                 result: result_mod.SnapshotResult) -> None:
        """Delete the attempt's image if it exists; record the outcome."""
        image_id = attempt.image_id
        if not image_id:
            return
        try:
            glance.delete(image_id)
        except exception.GlanceNotFound:
            # Never created (the create failed), or already gone.
            return
        except exception.SnapshotExtException as err:
            if self._gone(glance, image_id):
                return
            LOG.error('Could not delete image %(id)s after a failed '
                      'snapshot attempt: %(err)s; delete it by hand',
                      {'id': image_id, 'err': err})
            result.leftover.append(image_id)
            return
        attempt.cleaned_up = True
        LOG.info('Deleted image %s of a failed snapshot attempt', image_id)

    @staticmethod
    def _gone(glance: glance_mod.GlanceClient, image_id: str) -> bool:
        """After a refused delete: is the image gone anyway?"""
        try:
            image = glance.get(image_id)
        except exception.GlanceNotFound:
            return True
        except exception.SnapshotExtException:
            return False
        return image.get('status') in _GONE
