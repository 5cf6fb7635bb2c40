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

"""SnapshotService: the facade -- request -> record -> plan -> attempts.

The service builds the image record (:mod:`.metadata`), preflights it
(:mod:`.preflight`), plans the activation (:mod:`.plan`) and hands the
plan to the attempt engine (:mod:`.attempts`, with :mod:`.upload` and
:mod:`.location` activation), which returns the result (:mod:`.result`).

Flow for one snapshot (design.md §3)::

    build_record -> preflight / check_record (no side effect: capabilities,
    record checks, location assessment, plan) -> register (attempt engine:
    create or find -> activate by upload or location -> on failure delete
    only this snapshot's non-active image, next attempt or stop)
"""

from __future__ import annotations

import dataclasses
import time
import typing as ty

from oslo_config import cfg
from oslo_log import log as logging

from nova_snapshot_ext import driver as driver_mod
from nova_snapshot_ext import exception
from nova_snapshot_ext.image import capabilities as caps_mod
from nova_snapshot_ext.image import glance as glance_mod
from nova_snapshot_ext.image import locations
from nova_snapshot_ext.image import payloads
from nova_snapshot_ext.image import quotas
from nova_snapshot_ext import opts
from nova_snapshot_ext.snapshot import attempts as attempts_mod
from nova_snapshot_ext.snapshot import deletion
from nova_snapshot_ext.snapshot import identity
from nova_snapshot_ext.snapshot import location
from nova_snapshot_ext.snapshot import metadata as metadata_mod
from nova_snapshot_ext.snapshot.outcome import Cleanup
from nova_snapshot_ext.snapshot.outcome import Event
from nova_snapshot_ext.snapshot.outcome import State
from nova_snapshot_ext.snapshot import plan as plan_mod
from nova_snapshot_ext.snapshot import preflight as preflight_mod
from nova_snapshot_ext.snapshot import request as request_mod
from nova_snapshot_ext.snapshot import result as result_mod
from nova_snapshot_ext.snapshot import transitions

LOG = logging.getLogger(__name__)


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
    for opt in opts.core_opts + opts.location_opts + opts.backup_opts:
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


def _delete_contradicted(glance: ty.Any,
                         result: result_mod.SnapshotResult,
                         attempt: result_mod.Attempt | None,
                         image_id: str) -> str:
    """The table's cleanup of a contradicted success.

    This snapshot's image, if still queued, its status re-read right
    before the delete; an image whose deletion would destroy something
    else, or that cannot be deleted, is named in ``result``.

    :returns: what became of it, as a clause (``'; deleted image ...'``).
    """
    try:
        current = glance.get(image_id)
        armed = deletion.refusal_to_delete(current)
        if armed is not None:
            result.leftover.append(image_id)
            result.leftover_status[image_id] = str(current.get('status'))
            result.not_deletable[image_id] = armed
            return '; image %s %s' % (image_id, armed)
        if current.get('status') == 'queued':
            glance.delete(image_id)
            if attempt is not None:
                attempt.cleaned_up = True
            return '; deleted image %s' % image_id
    except exception.GlanceNotFound:
        pass
    except exception.GlanceError as err:
        result.leftover.append(image_id)
        result.leftover_status[image_id] = 'queued'
        return ('; COULD NOT DELETE %s (status queued when last read): %s'
                % (image_id, err.reason))
    return ''


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
        self._engine = attempts_mod.AttemptEngine(
            conf, self.capabilities, self._location_source, sleep, clock)
        # (capabilities, plan inputs, decision) of the last plain plan.
        self._decided: tuple[caps_mod.GlanceCapabilities, tuple[ty.Any, ...],
                             plan_mod.PlanDecision] | None = None

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
        """The image record for ``snapshot`` (no Glance call).

        The record carries the snapshot's fingerprint
        (:data:`~.identity.FINGERPRINT_PROPERTY`).  Its id is ``image_id``,
        else the request's, else derived from the snapshot itself
        (:func:`~.identity.derived_image_id`), so every retry of the same
        snapshot converges on one image.
        """
        record = metadata_mod.build_image_record(
            snapshot,
            non_inheritable=self.conf.snapshot_ext.
            non_inheritable_image_properties,
            driver_properties=self.driver.image_properties(),
            image_id=image_id or snapshot.image_id or '')
        identity.identify(record)
        return record

    def decide_plan(self, capabilities: caps_mod.GlanceCapabilities,
                    glance: glance_mod.GlanceClient
                    ) -> plan_mod.PlanDecision:
        """The activation plan for this Glance and driver, and the verdict.

        The location is assessed (:meth:`assess_location`); the policy is
        :func:`~.plan.decide`'s.

        :returns: :class:`~.plan.PlanDecision`.
        """
        group = self.conf.snapshot_ext
        source = self._location_source
        if (source is not None and capabilities.unread
                and group.activation_method == 'location-first'):
            # Glance could not say whether it takes the location (a blip
            # on /versions or /v2/info/stores): its error, with its
            # cause's exit code, not "location unusable".
            raise next(iter(capabilities.unread.values()))
        location, why_not = self.assess_location(capabilities, glance)
        # The decision depends on these alone; the same inputs (every
        # snapshot while the capabilities are cached) get the same plan.
        # driver_formats_only as the policy reads it: from the driver's
        # configuration, which a host may load apart from this service's.
        inputs = (tuple(group.disk_formats), group.activation_method,
                  plan_mod.formats_only(self.driver),
                  self.driver.disk_formats, location, tuple(why_not))
        kept = self._decided
        if kept is not None and kept[0] is capabilities and (
                kept[1] == inputs):
            return plan_mod.PlanDecision(list(kept[2].attempts),
                                         list(kept[2].notes))
        decision = plan_mod.decide(
            capabilities, self.driver, group.disk_formats,
            group.activation_method, location, why_not,
            source.redacted if source else None)
        # Only a plain plan is kept: a refusal's error is raised (a fresh
        # one each time), a fallback plan's warning is logged each time.
        # Kept as copies: the lists returned are the caller's to edit.
        self._decided = ((capabilities, inputs, plan_mod.PlanDecision(
            list(decision.attempts), list(decision.notes)))
            if decision.error is None and decision.attempts
            and not decision.attempts[0].fallback else None)
        return decision

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
        if capabilities.unread:
            # A blip on /versions or /v2/info/stores: unknown, not "no".
            return None, ['Glance %s could not be read: %s' % (
                ' and '.join(capabilities.unread), '; '.join(
                    str(e.reason)
                    for e in capabilities.unread.values()))]
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
            return None, [err.reason]
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
        # build_record has just identified and stamped it.
        return self._check_identified(record, glance)

    def check_record(self, record: metadata_mod.ImageRecord,
                     glance: glance_mod.GlanceClient | None = None
                     ) -> PreparedSnapshot:
        """Preflight an image record built elsewhere (e.g. by Nova).

        :param record: the record; its properties must already be strings.
        :returns: :class:`PreparedSnapshot`.
        :raises PreflightError: as :meth:`preflight`.
        :raises GlanceError: capabilities could not be read.
        """
        # The fingerprint counts against the property quota like any other.
        identity.identify(record)
        return self._check_identified(record, glance)

    def _check_identified(self, record: metadata_mod.ImageRecord,
                          glance: glance_mod.GlanceClient | None
                          ) -> PreparedSnapshot:
        """:meth:`check_record` of a record already identified."""
        glance = glance or self.glance
        caps = self.capabilities.get(glance)
        preflight_mod.check_image_record(
            record, caps, self.conf.snapshot_ext.image_property_quota,
            self.conf.snapshot_ext.image_tag_quota).apply(record)
        decision = self.decide_plan(caps, glance)
        for note in decision.notes:
            LOG.warning('Snapshot %(name)s: %(note)s; planning uploads only',
                        {'name': record.name, 'note': note})
        if decision.error is not None:
            raise decision.error
        usage = None
        if caps.unified_limits is not False:
            # The usage is the project's and changes with every image:
            # read for every snapshot -- unless this Glance showed it
            # enforces no unified limits (kept while its capabilities
            # are; a 413 naming a limit drops them).
            usage, enforces_none = quotas.read_limits(glance)
            if enforces_none:
                self.capabilities.learned(glance, unified_limits=False)
        notes = list(decision.notes) + quotas.check_plan(
            usage, decision.attempts,
            project=glance.project_id() if usage else None, glance=glance)
        return PreparedSnapshot(record, decision.attempts, caps, notes)

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
        with glance.snapshot_deadline(
                self.conf.snapshot_ext.snapshot_timeout):
            return self.register(self.preflight(snapshot, glance), glance)

    def register(self, prepared: PreparedSnapshot,
                 glance: glance_mod.GlanceClient | None = None
                 ) -> result_mod.SnapshotResult:
        """Create and activate a preflighted image record, plan in order.

        The rules (exactly once, what is deleted, what is reported) are
        enforced by :class:`~.attempts.AttemptEngine`; see
        doc/source/attempts.rst.

        :param prepared: from :meth:`preflight` or :meth:`check_record`.
        :param glance: the client to act with (default: :attr:`glance`).
        :returns: :class:`~.result.SnapshotResult`, ``status == 'active'``.
        :raises ActivationFailed: as :meth:`snapshot`.
        :raises SnapshotInterrupted: (a ``KeyboardInterrupt``; a
            ``SnapshotExit``, a ``SystemExit``, likewise) an interrupt,
            after the attempt in flight was resolved and cleaned up;
            ``err.snapshot_result`` names the images.
        """
        glance = glance or self.glance
        # The record was stamped before its preflight (check_record), which
        # may have left the fingerprint out at the property quota: never
        # stamp it again here.
        with glance.snapshot_deadline(
                self.conf.snapshot_ext.snapshot_timeout):
            return self._engine.register(prepared.record, prepared.plan,
                                         prepared.notes, glance)

    def recheck(self, result: result_mod.SnapshotResult,
                seen: ty.Mapping[str, ty.Any],
                glance: glance_mod.GlanceClient | None = None
                ) -> dict[str, ty.Any]:
        """A read after the success contradicts it: believe Glance's reads.

        An intermediary may answer 204 to an upload it never forwarded;
        the next read of the image then shows it ``queued``.  The image is
        read once more: ``active`` (or on its way, ``saving``/
        ``importing``) is returned as read; ``queued`` again means it is
        not active -- this snapshot's image (its id is the result's) is
        left in place and named, as the table's ``contradicted`` row says
        (another try, or the intermediary, may still finish it), and the
        snapshot fails.

        :param result: the success being contradicted.
        :param seen: the image as the later read returned it.
        :returns: the image as read again.
        :raises ActivationFailed: still ``queued``; ``result`` says what
            was deleted or left.
        """
        glance = glance or self.glance
        image_id = str(result.image_id)
        if seen.get('status') == 'active':
            return dict(seen)
        self._sleep(self.conf.snapshot_ext.activation_poll_interval)
        image = glance.get(image_id)
        if image.get('status') != 'queued':
            return image
        reason = ('Glance accepted the payload of image %s, yet two later '
                  'reads show it queued: it is not active (an intermediary '
                  'answered without forwarding?)' % image_id)
        LOG.error('Snapshot %(name)s: %(reason)s',
                  {'name': result.name, 'reason': reason})
        result.status = 'failed'
        attempt = next((a for a in reversed(result.attempts)
                        if a.image_id == image_id), None)
        cleanup = transitions.TRANSITIONS[
            (State.ACTIVE, Event.CONTRADICTED)].cleanup
        if attempt is not None:
            cleanup = transitions.move(attempt, Event.CONTRADICTED).cleanup
            attempt.reason = reason
        if cleanup is Cleanup.LEFT:
            # The intermediary may still forward the upload, another try
            # may be finishing the image: it is named, not deleted.
            # The attempt's reason stays its failure; the message names
            # the image once, by leftover_text.
            result.leave(image_id, 'queued')
            reason += '; ' + result.leftover_text()
            cleanup = Cleanup.NONE
        if cleanup is not Cleanup.NONE:
            reason += _delete_contradicted(glance, result, attempt, image_id)
        result.image_id = None
        raise exception.ActivationFailed(
            name=result.name, reason=reason, result=result,
            cause=exception.GlanceError(operation='upload',
                                        image_id=image_id, reason=reason))

    @staticmethod
    def location_task_failure(glance: glance_mod.GlanceClient,
                              image_id: str) -> str | None:
        """See :func:`~.location.task_failure`."""
        return location.task_failure(glance, image_id)
