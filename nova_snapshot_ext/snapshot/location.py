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

"""Location activation (issue 4): add the checked object as a location.

``POST /v2/images/{id}/locations`` (API 2.17, asynchronous: poll the image
until ``active``, read the ``location_import`` task's failure from
``GET /v2/images/{id}/tasks``) or the legacy JSON-patch (synchronous).
Refusals another attempt may not meet (403 policy or legacy API off, 400,
409 not-queued/locked on the new API, 501 no API 2.17, a failed task) go
on to the next attempt on a fresh image.  A legacy 409 is a state
problem: reported, not retried.  An image deleted by someone else while
Glance reads its location stops the snapshot.  The plugin never removes
or replaces a location.
"""

from __future__ import annotations

import typing as ty

from oslo_log import log as logging

from nova_snapshot_ext import exception
from nova_snapshot_ext.image import locations
from nova_snapshot_ext.snapshot.outcome import Context
from nova_snapshot_ext.snapshot.outcome import Event
from nova_snapshot_ext.snapshot.outcome import Outcome
from nova_snapshot_ext.snapshot import result as result_mod
from nova_snapshot_ext.snapshot import transitions
from nova_snapshot_ext.snapshot import upload

LOG = logging.getLogger(__name__)

#: Failures of a location attempt after which the next attempt (on a
#: fresh image) may succeed.
REFUSALS = (exception.GlanceForbidden, exception.GlanceBadRequest,
            exception.GlanceConflict, exception.GlanceNotImplemented,
            exception.LocationTaskFailed, exception.LocationUnusable)

#: Image statuses on the way to ``active`` after a location was accepted
#: (``queued`` until the ``location_import`` task runs).
PENDING = ('queued', 'importing', 'saving')


#: Polls of a queued image after a location POST whose answer was lost,
#: before concluding that the POST never reached Glance (no task).
UNCERTAIN_POLLS = 3


def _refused(err: exception.SnapshotExtException) -> Outcome:
    if isinstance(err, REFUSALS):
        return Outcome.fail(Event.LOCATION_REFUSED, err)
    return Outcome.fail(Event.LOCATION_FAILED, err)


def _lost(err: exception.SnapshotExtException) -> bool:
    """The answer was lost: the request may have reached Glance."""
    status = getattr(err, 'status', None)
    return isinstance(err, (exception.GlanceUnavailable,
                            exception.GlanceMalformedAnswer)) or (
        status is None or status >= 500)


def activate(ctx: Context, source: locations.LocationSource,
             image: dict[str, ty.Any],
             attempt: result_mod.Attempt) -> Outcome:
    """Add the checked location to a queued image; wait for active.

    Moves the attempt (``created``) to ``activating`` once the location
    is sent.

    :returns: the :class:`~.outcome.Outcome`: ``NOT_QUEUED`` (nothing
        sent), ``SEEN_ACTIVE``, ``MISMATCH``, ``LOCATION_REFUSED``,
        ``LOCATION_FAILED``, ``ACTIVATION_FAULT`` (a lost answer, the
        image not active), ``UNREADABLE``, ``IMAGE_INVISIBLE``, or what
        :func:`wait` sees.
    """
    glance = ctx.glance
    image_id = image['id']
    if image.get('status') != 'queued':
        # Never touch the locations of an image in another state.
        return Outcome.fail(Event.NOT_QUEUED, exception.GlanceConflict(
            operation='add location', image_id=image_id, status=409,
            reason='image is %s, not queued; a location is only added to '
            'a queued image' % image.get('status')))
    obj = source.get(glance.session)
    LOG.info('Adding location %(url)s to image %(id)s (%(api)s API)',
             {'url': obj.redacted, 'id': image_id,
              'api': attempt.location_api})
    transitions.move(attempt, Event.ACTIVATION_SENT)
    if glance.deadline_passed():
        # The snapshot ran out of time: the location is not sent.
        return Outcome.fail(Event.DEADLINE, exception.GlanceDeadlineExceeded(
            operation='add location', image_id=image_id, status=None,
            deadline=glance.snapshot_timeout(), sent=False, reached=True,
            which='[snapshot_ext] snapshot_timeout',
            reason='the snapshot ran out of time before the location was '
            'sent; it was not sent'))
    if attempt.location_api == 'legacy':
        return _add_legacy(ctx, source, image_id, attempt, obj)
    return _add_by_task(ctx, source, image_id, attempt, obj)


def _add_legacy(ctx: Context, source: locations.LocationSource,
                image_id: str, attempt: result_mod.Attempt,
                obj: locations.LocationObject) -> Outcome:
    """The legacy API: ``PATCH`` the image's locations (synchronous).

    A lost answer is followed by a read: the PATCH may have gone through
    (then the image is active).
    """
    glance = ctx.glance
    try:
        image = glance.add_location(image_id, obj.url, obj.validation_data)
    except exception.GlanceConflict as err:
        return Outcome.fail(Event.LOCATION_FAILED, _conflict(
            err, 'add location (legacy)', glance, image_id))
    except exception.SnapshotExtException as err:
        if isinstance(err, REFUSALS) or not _lost(err):
            return _refused(err)
        try:
            image = glance.get(image_id)
        except exception.SnapshotExtException:
            return Outcome.fail(Event.UNREADABLE, err)
        if image.get('status') != 'active':
            # Lost, not refused: another try may be finishing it.
            return Outcome.fail(Event.ACTIVATION_FAULT, err)
    if image.get('status') == 'active':
        failure = upload.verify(image, attempt, obj.validation_data)
        if failure:
            return Outcome.fail(Event.MISMATCH, failure)
        return Outcome.active(image)
    return wait(ctx, image_id, attempt, obj,
                estimate=source.import_estimate)


def _add_by_task(ctx: Context, source: locations.LocationSource,
                 image_id: str, attempt: result_mod.Attempt,
                 obj: locations.LocationObject) -> Outcome:
    """The new API: ``POST`` the location; a task activates the image.

    A lost answer is followed: the POST may have been accepted (202) and
    its task be running; :func:`wait` gives up when no task shows.
    """
    try:
        ctx.glance.add_image_location(image_id, obj.url, obj.validation_data)
    except exception.GlanceConflict as err:
        return Outcome.fail(Event.LOCATION_REFUSED, _conflict(
            err, 'add location', ctx.glance, image_id))
    except exception.GlanceNotFound:
        return Outcome.fail(Event.IMAGE_INVISIBLE, _not_visible(
            image_id, obj, 'the location was sent: it was deleted '
            'meanwhile'))
    except exception.SnapshotExtException as err:
        if isinstance(err, REFUSALS) or not _lost(err):
            return _refused(err)
        LOG.warning('The answer to the location POST for image %s was '
                    'lost (%s); following the image', image_id, err)
        return wait(ctx, image_id, attempt, obj, lost=err,
                    estimate=source.import_estimate)
    return wait(ctx, image_id, attempt, obj,
                estimate=source.import_estimate)


def _conflict(err: exception.GlanceConflict, operation: str,
              glance: ty.Any, image_id: str) -> exception.GlanceConflict:
    """A 409 on a location add, with the image's status now."""
    return exception.GlanceConflict(
        operation=operation, image_id=image_id, status=409,
        reason='%s (image status now: %s)' % (err.reason,
                                              status_of(glance, image_id)))


def status_of(glance: ty.Any, image_id: str) -> str:
    """The image's status for a message; never raises."""
    try:
        return str(glance.get(image_id).get('status'))
    except exception.GlanceNotFound:
        return 'deleted'
    except exception.GlanceError as err:
        return 'unknown (%s)' % err.reason


def wait(ctx: Context, image_id: str, attempt: result_mod.Attempt,
         obj: locations.LocationObject,
         lost: exception.SnapshotExtException | None = None,
         estimate: locations.ImportEstimate | None = None) -> Outcome:
    """Poll until active, the task failed, or the timeout.

    The image is read when :class:`~nova_snapshot_ext.image.locations.
    ImportWait` says: first when the import is expected to be done, then
    at growing intervals; its tasks only while it stays ``queued``.

    :param lost: the error of a location POST whose answer was lost: the
        image is followed, and when it stays queued with no
        ``location_import`` task for :data:`UNCERTAIN_POLLS` polls the
        POST did not reach Glance: ``STOP`` with that error.
    :param estimate: the location source's import estimate (a fresh one
        when not given).
    """
    deadline = ctx.clock() + ctx.timeout
    reads = locations.ImportWait(estimate or locations.ImportEstimate(),
                                 ctx.timeout)
    polls = 0
    status = 'queued'
    unread: exception.SnapshotExtException | None = None
    for delay in reads:
        ctx.sleep(delay)
        try:
            image = ctx.glance.get(image_id)
        except exception.GlanceNotFound:
            return Outcome.fail(Event.IMAGE_INVISIBLE, _not_visible(
                image_id, obj, 'its location was accepted: it was deleted '
                'while Glance was adding its location'))
        except exception.SnapshotExtException as err:
            if not _lost(err) or ctx.clock() >= deadline:
                return Outcome.fail(Event.UNREADABLE, err)
            # A read is best effort: Glance took the location and its
            # import runs on; a transient failure of one poll must not end
            # the attempt (and have its image deleted while still queued).
            LOG.warning('Reading image %(id)s failed (%(err)s); Glance is '
                        'adding its location: polling on',
                        {'id': image_id, 'err': err.format_message()})
            unread = err
            continue
        unread = None
        status = str(image.get('status'))
        outcome = _judge_read(ctx, image, attempt, obj, reads, lost)
        if outcome is not None:
            return outcome
        if lost is not None and status == 'queued':
            polls += 1
            if polls >= UNCERTAIN_POLLS and not has_task(
                    ctx.glance, image_id):
                return Outcome.fail(Event.ACTIVATION_FAULT, lost)
        if ctx.clock() >= deadline:
            break
    if unread is not None:
        return Outcome.fail(Event.UNREADABLE, unread)
    return Outcome.fail(Event.IMPORT_TIMEOUT, exception.ActivationTimeout(
        image_id=image_id, timeout=ctx.timeout, status=status))


def _judge_read(ctx: Context, image: dict[str, ty.Any],
                attempt: result_mod.Attempt, obj: locations.LocationObject,
                reads: locations.ImportWait,
                lost: exception.SnapshotExtException | None
                ) -> Outcome | None:
    """What one read of the image says, or None (still pending).

    Active: verified against what was sent (a mismatch is reported,
    never deleted).  Neither active nor pending: the task failed.  When
    the wait expects it (or the POST's answer was lost), a failed
    ``location_import`` task ends the wait with its message.
    """
    image_id, status = image['id'], str(image.get('status'))
    if status == 'active':
        if lost is None:
            reads.active()
        failure = upload.verify(image, attempt, obj.validation_data)
        if failure:
            return Outcome.fail(Event.MISMATCH, failure)
        return Outcome.active(image)
    if status not in PENDING:
        return Outcome.fail(Event.TASK_FAILED, exception.LocationTaskFailed(
            image_id=image_id, url=obj.redacted,
            reason='image is %s after its location was accepted' % status))
    if reads.saw(status) or (lost is not None and status == 'queued'):
        task = task_failure(ctx.glance, image_id)
        if task:
            return Outcome.fail(Event.TASK_FAILED,
                                exception.LocationTaskFailed(
                                    image_id=image_id, url=obj.redacted,
                                    reason=task))
    return None


def has_task(glance: ty.Any, image_id: str) -> bool:
    """Does the image have a ``location_import`` task (any status)?

    ``True`` when the tasks cannot be read (the poll goes on).
    """
    try:
        tasks = glance.image_tasks(image_id)
    except exception.GlanceError:
        return True
    return any(t.get('type') in (None, 'location_import') for t in tasks)


def task_failure(glance: ty.Any, image_id: str) -> str | None:
    """The failure of the image's latest ``location_import`` task.

    Reads ``GET /v2/images/{id}/tasks`` (the owner may; API 2.12+).

    :returns: ``"location_import task <id> failed: <message>"``, or
        ``None`` while no such task has failed (or tasks cannot be read:
        the poll goes on until the timeout).
    """
    try:
        tasks = glance.image_tasks(image_id)
    except exception.GlanceError as err:
        LOG.debug('Cannot read the tasks of image %s: %s', image_id, err)
        return None
    tasks = [t for t in tasks if t.get('type') in (None, 'location_import')]
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
                    'unreachable from Glance, empty, or no longer has the '
                    'hash the plugin sent)')
    return 'location_import task %s failed: %s' % (latest.get('id'), message)


def _not_visible(image_id: str, obj: ty.Any,
                 after: str) -> exception.LocationTaskFailed:
    """The 404 of an image read after a location was sent or accepted."""
    return exception.LocationTaskFailed(
        image_id=image_id, url=obj.redacted, status=404,
        reason='the image is not visible after %s, or this identity has '
        "only the 'service' role (Glance lets it add a location but not "
        "read the image; act as the owner's member and add a service "
        'token, see [snapshot_ext_service_user])' % after)
