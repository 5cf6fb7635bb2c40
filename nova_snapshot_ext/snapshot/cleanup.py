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

"""Cleaning up after a failed or interrupted attempt of one snapshot.

The state of one :meth:`~.attempts.AttemptEngine.register` call
(:class:`Run`) and what the engine does with an attempt's image when the
attempt failed or was interrupted: re-read it, delete it if it is this
snapshot's and not active (:func:`cleanup`), leave and name it when
another try may be finishing it, and resolve an interrupt
(:func:`interrupted`).  Nothing here deletes an active image, an image
another snapshot made, or one whose deletion would destroy something
else (:mod:`.deletion`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import typing as ty

from oslo_log import log as logging

from nova_snapshot_ext import exception
from nova_snapshot_ext.snapshot import deletion
from nova_snapshot_ext.snapshot import identity
from nova_snapshot_ext.snapshot.outcome import Cleanup
from nova_snapshot_ext.snapshot.outcome import Context
from nova_snapshot_ext.snapshot.outcome import Event
from nova_snapshot_ext.snapshot.outcome import State
from nova_snapshot_ext.snapshot import result as result_mod
from nova_snapshot_ext.snapshot import transitions
from nova_snapshot_ext.snapshot import upload

if ty.TYPE_CHECKING:
    from nova_snapshot_ext.snapshot import metadata as metadata_mod

LOG = logging.getLogger(__name__)

#: How many times a cleanup delete is tried (each after a status read);
#: the waits between tries double from ``activation_poll_interval``.
CLEANUP_TRIES = 4

#: Statuses in which a cleanup deletes an image of this snapshot.
DELETABLE = ('queued',)


@dataclasses.dataclass
class Run:
    """The state of one :meth:`~.attempts.AttemptEngine.register` call."""

    record: metadata_mod.ImageRecord
    result: result_mod.SnapshotResult
    ctx: Context
    allowed: frozenset[str]
    scanned: bool = False


def fill_active(result: result_mod.SnapshotResult,
                image: ty.Mapping[str, ty.Any]) -> None:
    """The one place the result takes the active image's attributes."""
    result.image_id = image['id']
    result.status = 'active'
    result.disk_format = image.get('disk_format')
    result.container_format = image.get('container_format')
    result.size = image.get('size')
    result.os_hash_algo = image.get('os_hash_algo')
    result.os_hash_value = image.get('os_hash_value')


def cleanup(run: Run, attempt: result_mod.Attempt,
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
    # Over 60 lines on purpose: one loop of re-read, judge, delete,
    # with its retries; what it decides to keep or name is in
    # _kept_back and _name_not_deleted.
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
            image = _await_end(run, image)
            status = image.get('status')
            if status == 'active':
                return image
            if status in upload.GONE:
                return None
        if _kept_back(run, image, poisoned):
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
    _name_not_deleted(run, image_id, status, error, leave)
    return None


def _await_end(run: Run, image: dict[str, ty.Any]
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


def drop_leftover(run: Run, attempt: result_mod.Attempt,
                  image_id: str) -> None:
    """Delete an unfinished image of this snapshot left by a try.

    Another image of the snapshot is active, so this one is a leftover
    (cleaned as any: status re-read first, queued only, never active).
    Best effort: named in ``result.leftover`` when it stays.
    """
    stale = dataclasses.replace(attempt, image_id=image_id,
                                state=State.FOUND, trail=[State.FOUND],
                                cleaned_up=False)
    cleanup(run, stale, tries=2)
    if stale.cleaned_up:
        LOG.info('Deleted image %s, a leftover of an earlier try of '
                 'this snapshot', image_id)


def interrupted(run: Run, attempt: result_mod.Attempt,
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
        _clean_after_interrupt(run, attempt, err, creating)
    except BaseException as again:  # noqa: B902 - a further signal
        _cleanup_cut_short(run, attempt, again)
    if isinstance(err, (exception.SnapshotInterrupted,
                        exception.SnapshotExit)):
        return err
    if isinstance(err, KeyboardInterrupt):
        return exception.SnapshotInterrupted(result, err)
    if isinstance(err, SystemExit):
        return exception.SnapshotExit(result, err)
    return err


def _cleanup_cut_short(run: Run, attempt: result_mod.Attempt,
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


def _clean_after_interrupt(run: Run,
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
            active = cleanup(run, attempt, tries=1 if leave else 2,
                             leave=leave)
        except Exception as cleanup_err:  # noqa: B902 - keep the first
            LOG.error('Cleanup after %s failed: %s',
                      err.__class__.__name__, cleanup_err)
            active = None
            if attempt.image_id:
                result.leftover.append(attempt.image_id)
        if active is not None:
            transitions.move(attempt, Event.CLEANUP_SAW_ACTIVE)
            fill_active(result, active)
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


def _kept_back(run: Run, image: ty.Mapping[str, ty.Any],
               poisoned: bool) -> bool:
    """Whether a failed attempt's image must stay (named in the result).

    Deleting it would destroy another resource (never made by the record,
    which refuses such a property), or someone is finishing it (saving,
    importing...) and it is not poisoned.
    """
    image_id, status = image['id'], image.get('status')
    armed = deletion.refusal_to_delete(image)
    if armed is not None:
        LOG.warning('Image %s of a failed snapshot attempt %s', image_id,
                    armed)
        run.result.not_deletable[image_id] = armed
    elif status not in DELETABLE and not poisoned:
        LOG.warning('Image %s of a failed snapshot attempt is %s; not '
                    'deleted', image_id, status)
    else:
        return False
    run.result.leftover.append(image_id)
    run.result.leftover_status[image_id] = status
    return True


def _name_not_deleted(run: Run, image_id: str, status: str | None,
                      error: exception.SnapshotExtException | None,
                      leave: bool) -> None:
    """Name an image the cleanup did not delete, left or undeletable.

    Left (:attr:`~.outcome.Cleanup.LEFT`): Glance has no conditional
    delete, and another try of this snapshot may be finishing the image.
    The attempt's reason stays its failure: the image is named once, by
    :meth:`~.result.SnapshotResult.leftover_text` (one home for that
    sentence).
    """
    if leave:
        LOG.warning('Image %(id)s of a failed snapshot attempt is left in '
                    'place (status %(status)s) for another try or a retry '
                    'to finish', {'id': image_id,
                                  'status': status or 'unknown'})
        run.result.leave(image_id, status)
        return
    LOG.error('Could not delete image %(id)s after a failed snapshot '
              'attempt: %(err)s; delete it by hand',
              {'id': image_id, 'err': error})
    run.result.leftover.append(image_id)
    run.result.leftover_status[image_id] = status
