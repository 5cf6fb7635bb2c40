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

"""The attempt engine: run an activation plan, exactly once.

One snapshot = one preflighted record and an ordered plan.  Each planned
attempt gets an image id derived from the snapshot
(:func:`~.identity.attempt_id`), creates the image (or finds the one
another try of this snapshot made), then activates it by upload
(:mod:`.upload`) or location (:mod:`.location`).  Each step classifies
Glance's answer into an :class:`~.outcome.Event` and returns it in an
:class:`~.outcome.Outcome`; :meth:`AttemptEngine.register` looks the
(state, event) pair up in :data:`~.transitions.TRANSITIONS` (the only
place a transition is written; doc/source/attempts.rst's table is
generated from it) and does what the table says: go on, delete, report.
The rules it enforces:

* once Glance accepted the payload (2xx) or the image is seen ``active``,
  the snapshot succeeded; later reads are best effort;
* only an image of this snapshot (created by this attempt, or recognised
  by fingerprint and mappings) that is not ``active`` is deleted, its
  status re-read right before the delete; a failed delete is retried with
  backoff, and an image that still cannot be deleted is named;
* an image another try finished is adopted, never deleted; a foreign
  image, or this snapshot's image made from a different record, is never
  touched (:class:`~nova_snapshot_ext.exception.SnapshotImageConflict`);
* an uncertain create (answer lost, timeout, interrupt) is resolved
  before returning: read back by id; finished if this snapshot's, else
  its id is named in the result and the error;
* an id that is burned (deleted by an earlier try: Glance never reuses
  an id) moves the attempt to its next-generation id, so that a retry
  after a transient fault can always succeed;
* a refusal of the record itself stops at once with one message.
"""

from __future__ import annotations

import contextlib
import dataclasses
import typing as ty

from oslo_config import cfg
from oslo_log import log as logging

from nova_snapshot_ext import exception
from nova_snapshot_ext.image import capabilities as caps_mod
from nova_snapshot_ext.image import locations
from nova_snapshot_ext.image import payloads
from nova_snapshot_ext.image import quotas
from nova_snapshot_ext.snapshot import deletion
from nova_snapshot_ext.snapshot import identity
from nova_snapshot_ext.snapshot import location
from nova_snapshot_ext.snapshot.outcome import Cleanup
from nova_snapshot_ext.snapshot.outcome import Context
from nova_snapshot_ext.snapshot.outcome import Event
from nova_snapshot_ext.snapshot.outcome import Outcome
from nova_snapshot_ext.snapshot.outcome import State
from nova_snapshot_ext.snapshot.outcome import Step
from nova_snapshot_ext.snapshot import plan as plan_mod
from nova_snapshot_ext.snapshot import result as result_mod
from nova_snapshot_ext.snapshot import transitions
from nova_snapshot_ext.snapshot import upload

if ty.TYPE_CHECKING:
    from nova_snapshot_ext.image import glance as glance_mod
    from nova_snapshot_ext.snapshot import metadata as metadata_mod

LOG = logging.getLogger(__name__)

#: How many times a cleanup delete is tried (each after a status read);
#: the waits between tries double from ``activation_poll_interval``.
CLEANUP_TRIES = 4

#: How many times the image of an uncertain create is read back while
#: Glance says it does not exist (the create may still be in flight).
UNCERTAIN_READS = 3

#: Statuses in which a cleanup deletes an image of this snapshot.
DELETABLE = ('queued',)

#: 5xx answers that come from a gateway or an overloaded Glance (a
#: retry may pass); any other 5xx is Glance's own failure on the request.
GATEWAY_STATUSES = frozenset([502, 503, 504])


def _record_failure_status(err: exception.SnapshotExtException
                           ) -> int | None:
    """Glance's own 5xx to the create (not a gateway's), else ``None``.

    Once the read-back shows no image, such a create failed on the
    record, rolled back, and fails the same way again.
    """
    if not isinstance(err, exception.GlanceError) or err.status is None:
        return None
    if 500 <= err.status < 600 and err.status not in GATEWAY_STATUSES:
        return err.status
    return None


def _position(plan: ty.Sequence[plan_mod.PlannedAttempt], index: int,
              attempt: result_mod.Attempt) -> int:
    """The plan position of what ``attempt`` (run as ``plan[index]``) sent.

    ``index`` itself, unless the attempt adopted an image of another
    format and uploaded to it (:meth:`AttemptEngine._finish` keeps the
    image's own format): then the first later position planning that
    upload, or ``index`` when the plan has none.
    """
    planned = plan[index]
    sent = (attempt.method, attempt.disk_format, attempt.container_format)
    if attempt.method != 'upload' or sent == (
            planned.method, planned.disk_format, planned.container_format):
        return index
    for later in range(index + 1, len(plan)):
        other = plan[later]
        if sent == (other.method, other.disk_format, other.container_format):
            return later
    return index


def _member_event(err: exception.SnapshotExtException) -> Event:
    """A failed member add, classified: refused (4xx) or transient.

    A refusal is met by every try of this snapshot, so none can finish
    the image; after a transient fault (5xx, transport, a lost answer)
    another try may be finishing it right now.
    """
    status = getattr(err, 'status', None)
    if isinstance(status, int) and 400 <= status < 500:
        return Event.MEMBER_REFUSED
    return Event.MEMBER_FAILED


@dataclasses.dataclass
class _Run:
    """The state of one :meth:`AttemptEngine.register` call."""

    record: metadata_mod.ImageRecord
    result: result_mod.SnapshotResult
    ctx: Context
    allowed: frozenset[str]
    scanned: bool = False


class AttemptEngine:
    """Runs activation plans (see the module docstring for the rules).

    :param conf: the configuration (``[snapshot_ext]`` read here).
    :param capabilities: the service's capability cache (invalidated on
        refusals that show Glance was reconfigured).
    :param location_source: the checked location source, or ``None``.
    :param sleep: the sleep function.
    :param clock: the monotonic clock (seconds).
    """

    def __init__(self, conf: cfg.ConfigOpts,
                 capabilities: caps_mod.CapabilityCache,
                 location_source: locations.LocationSource | None,
                 sleep: ty.Callable[[float], None],
                 clock: ty.Callable[[], float]):
        self.conf = conf
        self.capabilities = capabilities
        self.location_source = location_source
        self._sleep = sleep
        self._clock = clock

    # --- the plan ---------------------------------------------------------

    def register(self, record: metadata_mod.ImageRecord,
                 planned_attempts: ty.Sequence[plan_mod.PlannedAttempt],
                 notes: ty.Sequence[str],
                 glance: glance_mod.GlanceClient
                 ) -> result_mod.SnapshotResult:
        """Create and activate ``record`` following the plan, in order.

        :returns: the result, ``status == 'active'``.
        :raises ActivationFailed: no attempt activated an image; its
            ``result`` lists the attempts, the images deleted, any left
            behind and any whose create could not be confirmed.
        :raises SnapshotInterrupted: (a ``KeyboardInterrupt``) Ctrl-C or
            SIGTERM, after the current attempt was resolved and cleaned
            up; ``snapshot_result`` is the result.
        :raises SnapshotExit: (a ``SystemExit``) likewise.
        :raises Exception: a bug, after the current attempt was resolved
            and cleaned up (the result is logged).
        """
        result = result_mod.SnapshotResult(
            image_id=None, name=record.name, status='failed',
            member=None,
            plan=[p.describe() for p in planned_attempts],
            notes=list(dict.fromkeys(list(getattr(record, 'notes', [])) +
                                     list(notes))))
        group = self.conf.snapshot_ext
        run = _Run(record=record, result=result,
                   ctx=Context(glance=glance,
                               timeout=group.activation_timeout,
                               interval=group.activation_poll_interval,
                               sleep=self._sleep, clock=self._clock),
                   allowed=frozenset(p.disk_format for p in planned_attempts
                                     if p.method == 'upload'))
        plan = list(planned_attempts)
        last: Outcome | None = None
        index, generation = 0, 0
        below: int | None = None
        while index < len(plan):
            planned = plan[index]
            # A 413 refused an upload's size (image_size_cap, a storage
            # quota, image_size_total): larger uploads would be refused
            # too; a location is checked against none of them.
            if (below is not None and planned.method == 'upload' and
                    planned.size >= below):
                index += 1
                continue
            attempt = result_mod.Attempt(
                method=planned.method, disk_format=planned.disk_format,
                container_format=planned.container_format,
                size=planned.size,
                image_id=identity.attempt_id(record, index, planned,
                                             generation),
                location_api=planned.location_api, url=planned.url,
                number=index + 1)
            result.attempts.append(attempt)
            try:
                outcome = self._attempt(run, attempt, planned)
                step, outcome = self._end(run, attempt, outcome)
            except BaseException as err:
                raise self._interrupted(run, attempt, err)
            if step is not Step.NEXT_ID:
                # An earlier try's image of a later planned format (its
                # fallback) was adopted: this was that planned attempt;
                # the plan goes on after it, never sends it again.
                index = _position(plan, index, attempt)
                planned = plan[index]
                attempt.number = index + 1
            if step is Step.ACTIVE:
                assert outcome.image is not None
                result.plan = [p.describe() for p in plan]
                self._succeeded(run, attempt, outcome.image, planned)
                return result
            last = outcome
            if planned.method == 'location' and outcome.error is not None:
                self._after_location_failure(run, plan, index,
                                             outcome.error)
            if step is Step.NEXT_ID:
                # Nothing was made: the slot is not an attempt to report.
                result.attempts.pop()
                generation += 1
                if generation < identity.GENERATIONS:
                    continue
                error = exception.GlanceConflict(
                    operation='create', image_id=attempt.image_id,
                    status=409, reason='the %d image ids of attempt %s '
                    'are all used up by earlier tries of this snapshot'
                    % (identity.GENERATIONS, planned.describe()))
                last = Outcome.fail(outcome.event, error)
                attempt.reason = error.format_message()
                result.attempts.append(attempt)
                break
            if step in (Step.NEXT, Step.SMALLER):
                if step is Step.SMALLER:
                    below = planned.size
                index, generation = index + 1, 0
                if index < len(plan):
                    LOG.warning('Snapshot %(name)s: %(attempt)s; trying '
                                'the next attempt',
                                {'name': record.name,
                                 'attempt': attempt.describe()})
                continue
            break
        result.plan = [p.describe() for p in plan]
        raise self._failure(run, last)

    @staticmethod
    def _fill(result: result_mod.SnapshotResult,
              image: ty.Mapping[str, ty.Any]) -> None:
        """The one place the result takes the active image's attributes."""
        result.image_id = image['id']
        result.status = 'active'
        result.disk_format = image.get('disk_format')
        result.container_format = image.get('container_format')
        result.size = image.get('size')
        result.os_hash_algo = image.get('os_hash_algo')
        result.os_hash_value = image.get('os_hash_value')

    def _succeeded(self, run: _Run, attempt: result_mod.Attempt,
                   image: dict[str, ty.Any],
                   planned: plan_mod.PlannedAttempt) -> None:
        result = run.result
        if getattr(planned, 'fallback', False) and (
                image.get('disk_format') == planned.disk_format):
            # A format the driver does not read (the record plan's
            # fallback): say so where the operator looks.
            note = planned.fallback_note()
            LOG.warning('Snapshot %(name)s: %(note)s',
                        {'name': run.record.name, 'note': note})
            if note not in result.notes:
                result.notes.append(note)
        attempt.image_id = image['id']
        self._fill(result, image)
        LOG.info('Snapshot image %(id)s (%(name)s) is active '
                 '(%(fmt)s, %(size)s B, %(n)d attempt(s))',
                 {'id': result.image_id, 'name': run.record.name,
                  'fmt': result.disk_format, 'size': result.size,
                  'n': len(result.attempts)})

    def _failure(self, run: _Run, last: Outcome | None
                 ) -> exception.ActivationFailed:
        result = run.result
        reason = '; '.join('%s: %s' % (a.label(), a.reason)
                           for a in result.attempts) or 'no attempt left'
        if result.cleaned_up:
            reason += '; deleted image(s) %s' % ', '.join(result.cleaned_up)
        if result.leftover:
            reason += '; %s' % result.leftover_text()
        if result.unconfirmed:
            reason += ('; the create of image(s) %s was not confirmed: if '
                       'Glance shows it later, a retry of this snapshot '
                       'adopts it' % ', '.join(result.unconfirmed))
        LOG.error('Snapshot image %(name)s could not be activated: '
                  '%(reason)s', {'name': run.record.name, 'reason': reason})
        return exception.ActivationFailed(
            name=run.record.name, reason=reason, result=result,
            cause=last.error if last else None)

    def _end(self, run: _Run, attempt: result_mod.Attempt,
             outcome: Outcome) -> tuple[Step, Outcome]:
        """Move the attempt on the outcome's event; delete what the table says.

        :returns: the table's next step and the outcome; ``ACTIVE`` and an
            outcome holding the image when the re-read before the cleanup
            finds the image active after all.
        """
        transition = transitions.move(attempt, outcome.event)
        assert transition.step is not None, outcome.event
        if transition.step is Step.ACTIVE:
            return transition.step, outcome
        err = outcome.error
        assert err is not None
        attempt.reason = err.format_message()
        attempt.status = getattr(err, 'status', None) or getattr(
            err, 'code', None)
        if isinstance(err, exception.GlanceSchemaRefusal) or (
                isinstance(err, exception.GlanceOverLimit) and
                quotas.named_in(attempt.reason)):
            # The operator changed Glance's formats since discovery, or
            # turned its unified limits on since a preflight saw none.
            self.capabilities.invalidate(run.ctx.glance)
        if transition.cleanup is not Cleanup.NONE:
            active = self._cleanup(
                run, attempt, transition.cleanup is Cleanup.POISONED,
                tries=1 if transition.cleanup is Cleanup.LEFT else
                CLEANUP_TRIES, leave=transition.cleanup is Cleanup.LEFT)
            if active is not None:
                LOG.info('Image %s is active after all (%s): the snapshot '
                         'succeeded', active['id'], attempt.reason)
                attempt.reason = None
                attempt.status = None
                transitions.move(attempt, Event.CLEANUP_SAW_ACTIVE)
                return Step.ACTIVE, Outcome.active(
                    active, Event.CLEANUP_SAW_ACTIVE)
        return transition.step, outcome

    # --- one attempt ------------------------------------------------------

    def _attempt(self, run: _Run, attempt: result_mod.Attempt,
                 planned: plan_mod.PlannedAttempt) -> Outcome:
        attempt.begin('create')
        found = self._create(run, attempt)
        if isinstance(found, Outcome):
            return found
        image = found
        if attempt.state is State.FOUND:
            attempt.begin('adopt')
            return self._finish(run, attempt, image)
        if run.record.member:
            attempt.begin('member add')
            try:
                self._add_member(run, image)
            except exception.SnapshotExtException as err:
                return Outcome.fail(_member_event(err), err)
        if planned.method == 'location':
            assert self.location_source is not None
            attempt.begin('location add')
            return location.activate(run.ctx, self.location_source, image,
                                     attempt)
        attempt.begin('upload')
        return upload.activate(run.ctx, image, attempt)

    def _create(self, run: _Run, attempt: result_mod.Attempt
                ) -> dict[str, ty.Any] | Outcome:
        """Create the attempt's image, or find this snapshot's.

        :returns: the image (``attempt.state`` CREATED or FOUND), or the
            outcome of a create that made nothing to activate.
        """
        glance = run.ctx.glance
        kwargs = run.record.create_kwargs(attempt.disk_format,
                                          attempt.container_format,
                                          image_id=attempt.image_id)
        transitions.move(attempt, Event.CREATE_SENT)
        try:
            image = glance.create(**kwargs)
        except exception.GlanceSchemaRefusal as err:
            # Refused against the schema: nothing was made.
            return Outcome.fail(Event.FORMAT_REFUSED if err.format_refused
                                else Event.RECORD_REFUSED, err)
        except exception.GlanceConflict as err:
            transitions.move(attempt, Event.ID_TAKEN)
            return self._read_back(run, attempt, err)
        except exception.GlanceOverLimit as err:
            return Outcome.fail(Event.IMAGE_QUOTA, exception.GlanceOverLimit(
                operation='create', image_id=attempt.image_id, status=413,
                reason=upload.quota_reason(err)))
        except exception.GlanceDeadlineExceeded as err:
            if not err.kwargs.get('sent', True):
                return Outcome.fail(Event.DEADLINE, err)
            return self._resolve_create(run, attempt, err)
        except exception.GlanceAnswerMismatch as err:
            # Never act on the body: what was created is read by its id.
            transitions.move(attempt, Event.ANSWER_MISMATCH)
            return self._resolve_create(run, attempt, err)
        except exception.SnapshotExtException as err:
            status = getattr(err, 'status', None)
            if status is not None and 400 <= status < 500:
                # A refusal of the record: nothing was made, and no other
                # attempt (same record) would fare better -- except after
                # a location attempt, whose refusals (policy, 400) the
                # next attempt may not meet.
                if attempt.method == 'location' and isinstance(
                        err, location.REFUSALS):
                    return Outcome.fail(Event.LOCATION_RECORD_REFUSED, err)
                return Outcome.fail(Event.RECORD_REFUSED, err)
            return self._resolve_create(run, attempt, err)
        transitions.move(attempt, Event.CREATED)
        return image

    def _resolve_create(self, run: _Run, attempt: result_mod.Attempt,
                        err: exception.SnapshotExtException
                        ) -> dict[str, ty.Any] | Outcome:
        """The create's answer was lost (5xx, reset, timeout): read back.

        The POST may have gone through (ours, or a concurrent try's of
        this snapshot): if the image exists and is this snapshot's it is
        finished rather than deleted; if Glance says it does not exist
        (several reads) nothing was made; if Glance cannot be read the
        cleanup decides, and names the id if it cannot.
        """
        image_id = attempt.image_id
        assert image_id is not None
        glance = run.ctx.glance
        for read in range(UNCERTAIN_READS):
            try:
                image = glance.get(image_id)
            except exception.GlanceNotFound:
                if read + 1 < UNCERTAIN_READS:
                    run.ctx.sleep(run.ctx.interval)
                    continue
                status = _record_failure_status(err)
                if status is not None:
                    # Glance answered, and nothing is there: it failed on
                    # this record (no id left unconfirmed, no retry
                    # invited).
                    return Outcome.fail(
                        Event.NEVER_CREATED, exception.GlanceFailedOnRecord(
                            operation='create', image_id=image_id,
                            status=status, detail=err.kwargs.get('reason')))
                run.result.unconfirmed.append(image_id)
                return Outcome.fail(Event.NEVER_CREATED, err)
            except exception.SnapshotExtException:
                return Outcome.fail(Event.UNREADABLE, err)
            return self._adopt_or_refuse(run, attempt, image, err)
        raise AssertionError('unreachable')  # pragma: no cover

    def _read_back(self, run: _Run, attempt: result_mod.Attempt,
                   conflict: exception.GlanceConflict
                   ) -> dict[str, ty.Any] | Outcome:
        """After a 409 on create: is the image with our id this snapshot's?

        A create whose answer was lost and that keystoneauth (or the host)
        re-sent, or a concurrent try of the same snapshot, finds the image.
        Nothing here ever deletes: this call did not create it.
        """
        image_id = attempt.image_id
        assert image_id is not None
        try:
            image: dict[str, ty.Any] | None = run.ctx.glance.get(image_id)
        except exception.GlanceNotFound:
            image = None
        except exception.SnapshotExtException as err:
            # Never delete what cannot be read: it may be an earlier try's
            # active image.  Nor call it someone else's: keystoneauth
            # re-sends a create whose answer was lost
            # (``connect_retries``), so the 409 may answer this run's own
            # second send, and the image be the one its first send made.
            # It is left in place and named (status unknown), as after
            # any lost answer (Cleanup.LEFT), without a second read: the
            # read that failed was that read.  Same error class (and
            # code); the read's own facts (a deadline's seconds, whether
            # Glance was reached) stay: they decide the words and the
            # exit code.  The step that failed is the adopt's read-back.
            attempt.begin('adopt')
            run.result.leave(image_id, None)
            cls = type(err) if isinstance(err, exception.GlanceError) else (
                exception.GlanceError)
            return Outcome.fail(Event.CONFLICT_UNREADABLE, cls(**dict(
                err.kwargs, operation='adopt read-back', image_id=image_id,
                reason='Glance answered 409 to the create (the id %s is '
                'taken) and the image could not be read back: %s; it may '
                'be the image this run\'s own create made (a create whose '
                'answer is lost is sent again), another try\'s of this '
                'snapshot, or not this snapshot\'s; nothing was deleted'
                % (image_id, err.kwargs.get('reason')))))
        if image is not None and image.get('status') not in upload.GONE:
            return self._adopt_or_refuse(run, attempt, image, conflict)
        found = self._scan(run)
        if found is not None:
            return self._adopt_or_refuse(run, attempt, found, conflict)
        LOG.info('Image id %s is burned (used by an earlier try and '
                 'deleted, or another project\'s): trying the next '
                 'id of this attempt', image_id)
        return Outcome.fail(Event.ID_BURNED, exception.GlanceConflict(
            operation='create', image_id=image_id, status=409,
            reason='image id %s is taken by no image this caller can '
            'see (deleted earlier, or another project\'s); Glance never '
            'reuses an id' % image_id))

    def _adopt_or_refuse(self, run: _Run, attempt: result_mod.Attempt,
                         image: dict[str, ty.Any],
                         err: exception.SnapshotExtException
                         ) -> dict[str, ty.Any] | Outcome:
        image_id = image.get('id') or attempt.image_id
        match, diffs = identity.recognise(image, run.record)
        if match is identity.Match.FOREIGN:
            return Outcome.fail(Event.FOREIGN, exception.SnapshotImageConflict(
                image_id=image_id, status=409,
                reason='image id %s belongs to another image (%r); '
                'nothing was changed or deleted; choose another image_id'
                % (image_id, image.get('name'))))
        if match is identity.Match.CHANGED:
            return Outcome.fail(Event.CHANGED, exception.SnapshotImageConflict(
                image_id=image_id, status=409,
                reason='image %s (status %s) already holds the volume '
                'snapshots of this request (block_device_mappings '
                'snapshot_id %s) but was made from a different record '
                '(%s %s): an earlier try of this snapshot with other '
                'metadata, or a request that reuses the snapshot ids of '
                'another snapshot; the plugin never rewrites a snapshot '
                'image: give each volume mapping the snapshot_id of its '
                'own new Cinder snapshot, retry with the earlier record, '
                'or delete image %s'
                % (image_id, image.get('status'),
                   ', '.join(identity.snapshot_ids(run.record)) or 'none',
                   ', '.join(diffs), 'differs' if len(diffs) == 1
                   else 'differ', image_id)))
        if image.get('status') != 'active':
            # Not finished: an earlier try may have finished this snapshot
            # on another id meanwhile (this one's cleanup failed).  Prefer
            # that image; the unfinished one is this snapshot's leftover.
            best = self._scan(run)
            if best is not None and best.get('status') == 'active' and (
                    best.get('id') != image_id):
                self._drop_leftover(run, attempt, str(image_id))
                return self._adopt_or_refuse(run, attempt, best, err)
        LOG.info('Image %s already exists for this snapshot (a retried or '
                 'concurrent try); adopting it instead of creating another',
                 image_id)
        transitions.move(attempt, Event.ADOPTED)
        attempt.image_id = image_id
        run.result.reused = True
        return image

    def _scan(self, run: _Run) -> dict[str, ty.Any] | None:
        """Once per call: the best image of this snapshot Glance holds.

        An earlier try may have finished on another attempt's id (after a
        refusal) or another generation's: list the images of this name
        and recognise this snapshot's by fingerprint and mappings.  Best
        effort: ``None`` when nothing is found, listing fails, or the scan
        already ran.

        :returns: an active image first, else one in progress, else a
            queued one.
        """
        if run.scanned:
            return None
        run.scanned = True
        try:
            images = run.ctx.glance.list_images(name=run.record.name)
        except exception.SnapshotExtException as err:
            LOG.warning('Cannot list images named %s: %s', run.record.name,
                        err)
            return None
        order = {'active': 0, 'saving': 1, 'importing': 1, 'uploading': 1,
                 'queued': 2}
        candidates = [i for i in images
                      if i.get('status') in order and
                      identity.recognise(i, run.record)[0] is not
                      identity.Match.FOREIGN]
        if not candidates:
            return None
        return min(candidates, key=lambda i: order[i['status']])

    def _finish(self, run: _Run, attempt: result_mod.Attempt,
                image: dict[str, ty.Any]) -> Outcome:
        """Finish an image another try of this snapshot made.

        It keeps the format it was created with: its payload is that
        format's, so nothing is ever uploaded under another label.
        """
        status = image.get('status')
        attempt.disk_format = image.get('disk_format') or attempt.disk_format
        attempt.container_format = (image.get('container_format') or
                                    attempt.container_format)
        if status == 'active':
            attempt.size = image.get('size') or 0
            member = run.record.member
            if (member and image.get('visibility') == 'shared' and
                    image.get('owner') != member):
                # The try that made it added the member before activating.
                run.result.member = member
            return Outcome.active(image)
        if status == 'queued':
            if run.record.member:
                attempt.begin('member add')
                try:
                    self._add_member(run, image)
                except exception.SnapshotExtException as err:
                    return Outcome.fail(_member_event(err), err)
                attempt.begin('adopt')
            if (attempt.disk_format not in run.allowed or
                    attempt.container_format != plan_mod.CONTAINER_FORMAT):
                refused = exception.GlanceConflict(
                    operation='adopt', image_id=image['id'], status=409,
                    reason='image %s of an earlier try is queued as %s/%s, '
                    'which this Glance and driver do not allow the plugin '
                    'to activate honestly now; delete it, or retry with a '
                    'new image_id' % (image['id'], attempt.disk_format,
                                      attempt.container_format))
                return Outcome.fail(Event.UNFINISHABLE, refused)
            attempt.method = 'upload'
            attempt.size = payloads.payload_size(attempt.disk_format)
            attempt.begin('upload')
            return upload.activate(run.ctx, image, attempt)
        if status in upload.IN_PROGRESS:
            transitions.move(attempt, Event.IN_PROGRESS)
            return upload.wait_active(run.ctx, image['id'], attempt,
                                      check=False)
        return Outcome.fail(Event.UNFINISHABLE, exception.GlanceConflict(
            operation='adopt', image_id=image['id'], status=409,
            reason='image %s of an earlier try of this snapshot is %s'
            % (image['id'], status)))

    @staticmethod
    def _add_member(run: _Run, image: ty.Mapping[str, ty.Any]) -> None:
        """Share ``image`` with the record's member project.

        The image's owner (as Glance reports it) needs no membership: an
        identity of the server's project (e.g. ``admin_token``, whose
        project is known only once Glance answers the create) creates the
        image owned by that project.  Nova shares an image only with a
        project other than its owner's, so such an image is made
        ``private`` (as Nova keeps a snapshot of its own project's server),
        never left ``shared`` with no member.  The result names the member
        only once Glance holds it.
        """
        member = run.record.member
        if not member:
            return
        if image.get('owner') == member:
            if image.get('visibility') == 'shared':
                run.ctx.glance.set_visibility(image['id'], 'private')
                note = ('image %s is owned by the server\'s project %s '
                        '(the project of the identity that created it), so '
                        'it is private, as Nova keeps a snapshot owned by '
                        'the server\'s project' % (image['id'], member))
                LOG.info('Snapshot %(name)s: %(note)s',
                         {'name': run.record.name, 'note': note})
                if note not in run.result.notes:
                    run.result.notes.append(note)
            return
        try:
            run.ctx.glance.add_member(image['id'], member)
        except exception.GlanceConflict:
            # Glance's 409 on a member add: that project already is one
            # (a retry's earlier try added it, or someone else did).
            note = ('project %s was already a member of image %s (Glance '
                    'answered 409 to adding it)' % (member, image['id']))
            LOG.info('Snapshot %(name)s: %(note)s',
                     {'name': run.record.name, 'note': note})
            if note not in run.result.notes:
                run.result.notes.append(note)
        run.result.member = member

    # --- cleanup ----------------------------------------------------------

    def _cleanup(self, run: _Run, attempt: result_mod.Attempt,
                 poisoned: bool = False,
                 tries: int = CLEANUP_TRIES,
                 leave: bool = False) -> dict[str, ty.Any] | None:
        """Delete the attempt's image if it is this snapshot's, not active.

        The status is re-read right before every delete.  A failed read or
        delete is tried again after a doubling wait; an image still there
        after ``tries`` is named in ``result.leftover``.  With ``leave``
        (:attr:`~.outcome.Cleanup.LEFT`) nothing is deleted: the image is
        read once (active is the success; gone or foreign: nothing to
        name) and otherwise named as left in place in ``result.leftover``
        / ``result.left_in_place`` (which
        :meth:`~.result.SnapshotResult.leftover_text` tells, once).

        :returns: the image when the re-read finds it ``active`` (the
            snapshot succeeded after all), else ``None``.
        """
        image_id = attempt.image_id
        if not image_id:
            return None
        glance = run.ctx.glance
        delay = run.ctx.interval
        error: exception.SnapshotExtException | None = None
        status: str | None = None
        for number in range(tries):
            if number:
                run.ctx.sleep(delay)
                delay *= 2
            try:
                image = glance.get(image_id)
            except exception.GlanceNotFound:
                return None
            except exception.SnapshotExtException as err:
                error = err
                status = None
                continue
            status = image.get('status')
            if status in upload.GONE:
                return None
            match = identity.recognise(image, run.record)[0]
            if status == 'active' and (
                    attempt.created or State.FOUND in attempt.trail or
                    match is identity.Match.OURS):
                return image
            if not attempt.created and (
                    match is identity.Match.FOREIGN or status == 'active'):
                # Not this attempt's to name: another image holds the id,
                # or an active image it neither made nor adopted.
                return None
            if leave:
                break
            if status in upload.IN_PROGRESS and not poisoned:
                # A payload is being stored (ours, whose answer was lost,
                # or another try's): its end decides, not this cleanup.
                image = self._await_end(run, image)
                status = image.get('status')
                if status == 'active':
                    return image
                if status in upload.GONE:
                    return None
            armed = deletion.refusal_to_delete(image)
            if armed is not None:
                # Never made by the record (it refuses the property), but
                # deleting would destroy another resource: named, left.
                LOG.warning('Image %s of a failed snapshot attempt %s',
                            image_id, armed)
                run.result.leftover.append(image_id)
                run.result.leftover_status[image_id] = status
                run.result.not_deletable[image_id] = armed
                return None
            if status not in DELETABLE and not poisoned:
                # Someone is finishing it (saving, importing...).
                LOG.warning('Image %s of a failed snapshot attempt is %s; '
                            'not deleted', image_id, status)
                run.result.leftover.append(image_id)
                run.result.leftover_status[image_id] = status
                return None
            try:
                glance.delete(image_id)
            except exception.GlanceNotFound:
                return None
            except exception.SnapshotExtException as err:
                error = err
                continue
            attempt.cleaned_up = True
            LOG.info('Deleted image %s of a failed snapshot attempt',
                     image_id)
            return None
        if leave:
            # Glance has no conditional delete: another try of this
            # snapshot may be finishing the image (see Cleanup.LEFT).
            # The attempt's reason stays its failure: the image is named
            # once, by result.leftover_text (one home for that sentence).
            LOG.warning('Image %(id)s of a failed snapshot attempt is left '
                        'in place (status %(status)s) for another try or a '
                        'retry to finish', {'id': image_id,
                                            'status': status or 'unknown'})
            run.result.leave(image_id, status)
            return None
        LOG.error('Could not delete image %(id)s after a failed snapshot '
                  'attempt: %(err)s; delete it by hand',
                  {'id': image_id, 'err': error})
        run.result.leftover.append(image_id)
        run.result.leftover_status[image_id] = status
        return None

    @staticmethod
    def _await_end(run: _Run, image: dict[str, ty.Any]
                   ) -> dict[str, ty.Any]:
        """Read an image in progress until it leaves that status.

        Bounded by ``[snapshot_ext] activation_timeout``; a failed read
        ends the wait (the image as last read is returned).

        :returns: the image as last read.
        """
        deadline = run.ctx.clock() + run.ctx.timeout
        while (image.get('status') in upload.IN_PROGRESS and
               run.ctx.clock() < deadline and
               not run.ctx.glance.deadline_passed()):
            run.ctx.sleep(run.ctx.interval)
            try:
                image = run.ctx.glance.get(image['id'])
            except exception.GlanceNotFound:
                return dict(image, status='deleted')
            except exception.SnapshotExtException:
                break
        return image

    def _drop_leftover(self, run: _Run, attempt: result_mod.Attempt,
                       image_id: str) -> None:
        """Delete an unfinished image of this snapshot left by a try.

        Another image of the snapshot is active, so this one is a leftover
        (cleaned as any: status re-read first, queued only, never active).
        Best effort: named in ``result.leftover`` when it stays.
        """
        stale = dataclasses.replace(attempt, image_id=image_id,
                                    state=State.FOUND, trail=[State.FOUND],
                                    cleaned_up=False)
        self._cleanup(run, stale, tries=2)
        if stale.cleaned_up:
            LOG.info('Deleted image %s, a leftover of an earlier try of '
                     'this snapshot', image_id)

    def _interrupted(self, run: _Run, attempt: result_mod.Attempt,
                     err: BaseException) -> BaseException:
        """An interrupt or a bug mid-attempt: resolve, clean, report.

        The attempt's image (created, being created, or adopted) is read
        back once: active -> reported as the snapshot's image; otherwise
        it is left in place and named (:attr:`~.outcome.Cleanup.LEFT`: an
        interrupt says nothing about the other tries of this snapshot,
        one of which may be finishing the image).

        :returns: the exception to raise: a ``KeyboardInterrupt`` as
            :class:`~nova_snapshot_ext.exception.SnapshotInterrupted`, a
            ``SystemExit`` as :class:`~nova_snapshot_ext.exception.
            SnapshotExit` (both carrying the result as
            ``snapshot_result``), anything else (a bug) unchanged.
        """
        result = run.result
        creating = attempt.state is State.CREATING
        try:
            self._clean_after_interrupt(run, attempt, err, creating)
        except BaseException as again:  # noqa: B902 - a further signal
            self._cleanup_cut_short(run, attempt, again)
        if isinstance(err, (exception.SnapshotInterrupted,
                            exception.SnapshotExit)):
            return err
        if isinstance(err, KeyboardInterrupt):
            return exception.SnapshotInterrupted(result, err)
        if isinstance(err, SystemExit):
            return exception.SnapshotExit(result, err)
        return err

    @staticmethod
    def _cleanup_cut_short(run: _Run, attempt: result_mod.Attempt,
                           again: BaseException) -> None:
        """A second signal (or exit) stopped the interrupt's cleanup.

        The operator asked twice: the run stops now rather than finish
        requests that may each wait up to ``request_timeout``.  The
        attempt's image, unless seen deleted or active, is named in
        ``result.leftover`` (status not confirmed) and
        ``result.cleanup_cut_short`` is set, so the report never says it
        was cleaned up.
        """
        result = run.result
        image_id = attempt.image_id
        if (image_id and not attempt.cleaned_up and
                result.status != 'active' and
                image_id not in result.leftover):
            # Named first: logging is the part a third signal may cut.
            result.leftover_status[image_id] = result_mod.CUT_SHORT
            result.leftover.append(image_id)
            result.cleanup_cut_short = True
            with contextlib.suppress(ValueError):
                result.unconfirmed.remove(image_id)
        LOG.error('Snapshot %(name)s: the cleanup after an interrupt was '
                  'cut short (%(err)s)', {'name': run.record.name,
                                          'err': again.__class__.__name__})

    def _clean_after_interrupt(self, run: _Run,
                               attempt: result_mod.Attempt,
                               err: BaseException, creating: bool) -> None:
        """Resolve and clean the attempt's image after ``err``."""
        result = run.result
        if attempt.state is State.ACTIVE:
            # The snapshot succeeded: nothing to move or delete.
            transition = None
        else:
            transition = transitions.move(attempt, Event.INTERRUPTED)
        attempt.reason = 'interrupted (%s)' % err.__class__.__name__
        if transition is not None and (
                transition.cleanup is not Cleanup.NONE):
            leave = transition.cleanup is Cleanup.LEFT
            try:
                active = self._cleanup(run, attempt, tries=1 if leave else 2,
                                       leave=leave)
            except Exception as cleanup_err:  # noqa: B902 - keep the first
                LOG.error('Cleanup after %s failed: %s',
                          err.__class__.__name__, cleanup_err)
                active = None
                if attempt.image_id:
                    result.leftover.append(attempt.image_id)
            if active is not None:
                transitions.move(attempt, Event.CLEANUP_SAW_ACTIVE)
                self._fill(result, active)
        if (creating and attempt.image_id and result.status != 'active' and
                not attempt.cleaned_up and
                attempt.image_id not in result.leftover):
            # The create may still be in flight (held by a proxy, queued
            # in Glance): name the id it would get.
            result.unconfirmed.append(attempt.image_id)
        if result.status == 'active':
            LOG.warning('Snapshot %(name)s interrupted (%(err)s) after its '
                        'image %(id)s became active',
                        {'name': run.record.name,
                         'err': err.__class__.__name__,
                         'id': result.image_id})
        else:
            LOG.error('Snapshot %(name)s interrupted (%(err)s): %(state)s',
                      {'name': run.record.name,
                       'err': err.__class__.__name__,
                       'state': result.describe()})

    # --- location bookkeeping ---------------------------------------------

    def _after_location_failure(self, run: _Run,
                                plan: list[plan_mod.PlannedAttempt],
                                index: int,
                                err: exception.SnapshotExtException) -> None:
        """Bookkeeping after a failed location attempt.

        A failed task or verification may mean the object changed: check
        it again next time.  A 501 means the cached capabilities
        were wrong about API 2.17; in ``location_api = auto`` mode the
        legacy API is tried next.
        """
        planned = plan[index]
        source = self.location_source
        if source is not None and not isinstance(
                err, (exception.GlanceForbidden,
                      exception.GlanceNotImplemented)):
            source.invalidate()
        if isinstance(err, exception.GlanceNotImplemented):
            self.capabilities.invalidate(run.ctx.glance)
            if (source is not None and source.api == 'auto' and
                    planned.location_api == 'new' and
                    not any(p.method == 'location' and
                            p.location_api == 'legacy' for p in plan)):
                legacy = dataclasses.replace(planned, location_api='legacy')
                plan.insert(index + 1, legacy)
                LOG.info('Glance does not offer API 2.17; trying the legacy '
                         'location API next')
