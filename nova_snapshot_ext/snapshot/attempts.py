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

import dataclasses
import typing as ty

from oslo_config import cfg
from oslo_log import log as logging

from nova_snapshot_ext import exception
from nova_snapshot_ext.image import capabilities as caps_mod
from nova_snapshot_ext.image import locations
from nova_snapshot_ext.image import payloads
from nova_snapshot_ext.image import quotas
from nova_snapshot_ext.snapshot import cleanup as cleanup_mod
from nova_snapshot_ext.snapshot.cleanup import Run
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

#: How many times the image of an uncertain create is read back while
#: Glance says it does not exist (the create may still be in flight).
UNCERTAIN_READS = 3

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


def _new_attempt(record: metadata_mod.ImageRecord, index: int,
                 planned: plan_mod.PlannedAttempt,
                 generation: int) -> result_mod.Attempt:
    """The attempt at ``plan[index]``, with its deterministic image id."""
    return result_mod.Attempt(
        method=planned.method, disk_format=planned.disk_format,
        container_format=planned.container_format, size=planned.size,
        image_id=identity.attempt_id(record, index, planned, generation),
        location_api=planned.location_api, url=planned.url,
        number=index + 1)


def _ids_used_up(attempt: result_mod.Attempt,
                 planned: plan_mod.PlannedAttempt
                 ) -> exception.GlanceConflict:
    """The failure of a planned attempt whose every image id is taken."""
    return exception.GlanceConflict(
        operation='create', image_id=attempt.image_id, status=409,
        reason='the %d image ids of attempt %s are all used up by earlier '
        'tries of this snapshot' % (identity.GENERATIONS,
                                    planned.describe()))


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
        # Over 60 lines on purpose: the plan's walk (index, id generation,
        # the size bound a 413 set) is one state machine read top to
        # bottom; each step it takes is a method.
        run = self._new_run(record, planned_attempts, notes, glance)
        result = run.result
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
            attempt = _new_attempt(record, index, planned, generation)
            result.attempts.append(attempt)
            try:
                outcome = self._attempt(run, attempt, planned)
                step, outcome = self._end(run, attempt, outcome)
            except BaseException as err:
                raise cleanup_mod.interrupted(run, attempt, err)
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
                error = _ids_used_up(attempt, planned)
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

    def _new_run(self, record: metadata_mod.ImageRecord,
                 planned_attempts: ty.Sequence[plan_mod.PlannedAttempt],
                 notes: ty.Sequence[str],
                 glance: glance_mod.GlanceClient) -> Run:
        """The state of one :meth:`register`.

        Its result (failed until an attempt activates) and the context of
        the activation waits.
        """
        result = result_mod.SnapshotResult(
            image_id=None, name=record.name, status='failed',
            member=None,
            plan=[p.describe() for p in planned_attempts],
            notes=list(dict.fromkeys(list(getattr(record, 'notes', [])) +
                                     list(notes))))
        group = self.conf.snapshot_ext
        return Run(record=record, result=result,
                   ctx=Context(glance=glance,
                               timeout=group.activation_timeout,
                               interval=group.activation_poll_interval,
                               sleep=self._sleep, clock=self._clock),
                   allowed=frozenset(p.disk_format
                                     for p in planned_attempts
                                     if p.method == 'upload'))

    def _succeeded(self, run: Run, attempt: result_mod.Attempt,
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
        cleanup_mod.fill_active(result, image)
        LOG.info('Snapshot image %(id)s (%(name)s) is active '
                 '(%(fmt)s, %(size)s B, %(n)d attempt(s))',
                 {'id': result.image_id, 'name': run.record.name,
                  'fmt': result.disk_format, 'size': result.size,
                  'n': len(result.attempts)})

    def _failure(self, run: Run, last: Outcome | None
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

    def _end(self, run: Run, attempt: result_mod.Attempt,
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
            leave = transition.cleanup is Cleanup.LEFT
            active = cleanup_mod.cleanup(
                run, attempt, transition.cleanup is Cleanup.POISONED,
                tries=1 if leave else cleanup_mod.CLEANUP_TRIES, leave=leave)
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

    def _attempt(self, run: Run, attempt: result_mod.Attempt,
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

    def _create(self, run: Run, attempt: result_mod.Attempt
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
            if not err.sent:
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

    def _resolve_create(self, run: Run, attempt: result_mod.Attempt,
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
                            status=status, detail=err.reason))
                run.result.unconfirmed.append(image_id)
                return Outcome.fail(Event.NEVER_CREATED, err)
            except exception.SnapshotExtException:
                return Outcome.fail(Event.UNREADABLE, err)
            return self._adopt_or_refuse(run, attempt, image, err)
        raise AssertionError('unreachable')  # pragma: no cover

    def _read_back(self, run: Run, attempt: result_mod.Attempt,
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
                % (image_id, err.reason))))
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

    def _adopt_or_refuse(self, run: Run, attempt: result_mod.Attempt,
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
                cleanup_mod.drop_leftover(run, attempt, str(image_id))
                return self._adopt_or_refuse(run, attempt, best, err)
        LOG.info('Image %s already exists for this snapshot (a retried or '
                 'concurrent try); adopting it instead of creating another',
                 image_id)
        transitions.move(attempt, Event.ADOPTED)
        attempt.image_id = image_id
        run.result.reused = True
        return image

    def _scan(self, run: Run) -> dict[str, ty.Any] | None:
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

    def _finish(self, run: Run, attempt: result_mod.Attempt,
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
    def _add_member(run: Run, image: ty.Mapping[str, ty.Any]) -> None:
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

    # --- location bookkeeping ---------------------------------------------

    def _after_location_failure(self, run: Run,
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
