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

from oslo_config import cfg
from oslo_log import log as logging
from oslo_utils import uuidutils

from nova_snapshot_ext import driver as driver_mod
from nova_snapshot_ext import exception
from nova_snapshot_ext.image import capabilities as caps_mod
from nova_snapshot_ext.image import glance as glance_mod
from nova_snapshot_ext.image import payloads
from nova_snapshot_ext import opts
from nova_snapshot_ext.snapshot import metadata as metadata_mod
from nova_snapshot_ext.snapshot import plan as plan_mod
from nova_snapshot_ext.snapshot import preflight as preflight_mod
from nova_snapshot_ext.snapshot import request as request_mod
from nova_snapshot_ext.snapshot import result as result_mod

LOG = logging.getLogger(__name__)

#: Failures that mean "this format is refused here", so the next attempt
#: (another format, on a fresh image) may succeed.
FORMAT_REFUSALS = (exception.ImageFormatRejected,)


@dataclasses.dataclass
class PreparedSnapshot:
    """The output of :meth:`SnapshotService.preflight`.

    :ivar record: the image record that will be created.
    :ivar plan: the ordered :class:`~.plan.PlannedAttempt` list.
    :ivar capabilities: the Glance capabilities it was checked against.
    """

    record: metadata_mod.ImageRecord
    plan: list[plan_mod.PlannedAttempt]
    capabilities: caps_mod.GlanceCapabilities


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
        self.driver = driver or driver_mod.load_driver(conf)
        self._glance = glance
        self._sleep = sleep
        self._clock = clock
        self.capabilities = caps_mod.CapabilityCache(
            conf.snapshot_ext.capabilities_cache_ttl)

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

    def plan(self, capabilities: caps_mod.GlanceCapabilities
             ) -> list[plan_mod.PlannedAttempt]:
        """The activation plan for this Glance and this driver."""
        return plan_mod.build_plan(capabilities, self.driver,
                                   self.conf.snapshot_ext.disk_formats)

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
        attempts = self.plan(caps)
        if not attempts:
            pinned = self.conf.snapshot_ext.disk_formats
            raise exception.FormatNotAllowed(
                reason=plan_mod.explain_empty_plan(caps, self.driver, pinned),
                allowed=', '.join(caps.disk_formats) or '(none)',
                containers=', '.join(caps.container_formats) or '(none)',
                driver=self.driver.name,
                readable=', '.join(self.driver.disk_formats))
        return PreparedSnapshot(record, attempts, caps)

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
            plan=[p.describe() for p in prepared.plan])
        last_error: exception.SnapshotExtException | None = None
        for index, planned in enumerate(prepared.plan):
            attempt = result_mod.Attempt(
                method=planned.method, disk_format=planned.disk_format,
                container_format=planned.container_format,
                size=planned.size,
                image_id=record.image_id if index == 0
                else uuidutils.generate_uuid())
            result.attempts.append(attempt)
            try:
                image = self._run_attempt(glance, record, attempt, result)
            except exception.SnapshotExtException as err:
                last_error = err
                attempt.outcome = 'failed'
                attempt.reason = err.format_message()
                attempt.status = err.kwargs.get('status') or getattr(
                    err, 'code', None)
                if not (isinstance(err, exception.GlanceConflict) and
                        err.kwargs.get('operation') == 'create'):
                    # A 409 on create means the id belongs to an image that
                    # is not this snapshot: never delete someone else's.
                    self._cleanup(glance, attempt, result)
                if err.kwargs.get('schema_refusal'):
                    # The operator changed Glance's formats since discovery.
                    self.capabilities.invalidate(glance)
                if isinstance(err, FORMAT_REFUSALS) or err.kwargs.get(
                        'schema_refusal'):
                    LOG.warning('Snapshot %(name)s: %(attempt)s; trying the '
                                'next format', {'name': record.name,
                                                'attempt': attempt.describe()})
                    continue
                break
            attempt.outcome = 'active'
            result.image_id = image['id']
            result.status = image['status']
            result.disk_format = image.get('disk_format')
            result.container_format = image.get('container_format')
            result.size = image.get('size')
            LOG.info('Snapshot image %(id)s (%(name)s) is active '
                     '(%(fmt)s, %(size)s B, %(n)d attempt(s))',
                     {'id': result.image_id, 'name': record.name,
                      'fmt': result.disk_format, 'size': result.size,
                      'n': index + 1})
            return result
        reason = '; '.join('%s %s: %s' % (a.method, a.disk_format, a.reason)
                           for a in result.attempts)
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

    def _create(self, glance: glance_mod.GlanceClient,
                record: metadata_mod.ImageRecord,
                attempt: result_mod.Attempt,
                result: result_mod.SnapshotResult) -> dict[str, ty.Any]:
        kwargs = record.create_kwargs(attempt.disk_format,
                                      attempt.container_format,
                                      image_id=attempt.image_id)
        try:
            return glance.create(**kwargs)
        except exception.GlanceConflict:
            existing = self._read_back(glance, record, attempt)
            if existing is None:
                raise
            result.reused = True
            return existing

    def _read_back(self, glance: glance_mod.GlanceClient,
                   record: metadata_mod.ImageRecord,
                   attempt: result_mod.Attempt) -> dict[str, ty.Any] | None:
        """After a 409 on create: is the image with our id this snapshot?

        A create whose response was lost and that keystoneauth (or the
        host) retried finds its own image: same id, same name, same
        mappings.  Anything else is a real conflict.
        """
        image_id = attempt.image_id
        assert image_id is not None
        try:
            image = glance.get(image_id)
        except exception.GlanceNotFound:
            # Deleted (ids are never reusable): not ours to resume.
            return None
        same = (image.get('name') == record.name and
                image.get('block_device_mapping') ==
                record.properties.get('block_device_mapping'))
        if not same:
            return None
        LOG.info('Image %s already exists for this snapshot (a retried '
                 'create); reading it back instead of creating another',
                 image_id)
        return image

    def _run_attempt(self, glance: glance_mod.GlanceClient,
                     record: metadata_mod.ImageRecord,
                     attempt: result_mod.Attempt,
                     result: result_mod.SnapshotResult) -> dict[str, ty.Any]:
        image = self._create(glance, record, attempt, result)
        attempt.image_id = image['id']
        if image.get('status') == 'active':
            self._verify(image, attempt)
            return image
        if record.member:
            try:
                glance.add_member(image['id'], record.member)
            except exception.GlanceConflict:
                LOG.debug('Project %s is already a member of image %s',
                          record.member, image['id'])
        if image.get('status') == 'queued':
            glance.upload(image['id'], payloads.payload(attempt.disk_format),
                          disk_format=attempt.disk_format)
        return self._wait_active(glance, image['id'], attempt)

    def _wait_active(self, glance: glance_mod.GlanceClient, image_id: str,
                     attempt: result_mod.Attempt) -> dict[str, ty.Any]:
        timeout = self.conf.snapshot_ext.activation_timeout
        interval = self.conf.snapshot_ext.activation_poll_interval
        deadline = self._clock() + timeout
        while True:
            image = glance.get(image_id)
            status = image.get('status')
            if status == 'active':
                self._verify(image, attempt)
                return image
            if status not in ('saving', 'importing', 'uploading'):
                raise exception.GlanceError(
                    operation='activation', image_id=image_id,
                    reason='image is %s after its payload was accepted'
                    % status)
            if self._clock() >= deadline:
                raise exception.ActivationTimeout(
                    image_id=image_id, timeout=timeout, status=status)
            self._sleep(interval)

    @staticmethod
    def _verify(image: dict[str, ty.Any],
                attempt: result_mod.Attempt) -> None:
        if image.get('size') != attempt.size or (
                image.get('disk_format') != attempt.disk_format):
            raise exception.GlanceError(
                operation='verify', image_id=image.get('id'),
                reason='image is active with disk_format %s and size %s, '
                'expected %s and %d' % (
                    image.get('disk_format'), image.get('size'),
                    attempt.disk_format, attempt.size))

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
            LOG.error('Could not delete image %(id)s after a failed '
                      'snapshot attempt: %(err)s; delete it by hand',
                      {'id': image_id, 'err': err})
            result.leftover.append(image_id)
            return
        attempt.cleaned_up = True
        LOG.info('Deleted image %s of a failed snapshot attempt', image_id)
