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

"""Upload activation: the honest payload of the image's own disk_format.

Glance answers ``204`` to ``PUT /v2/images/{id}/file`` only once the data
is stored and the image is ``active`` (design rule 6): that answer is the
success, no read-back follows.  When the answer is lost or refused, the
image is read back *before* anything is decided: an image another try of
this snapshot finished meanwhile is the success too.
"""

from __future__ import annotations

import typing as ty

from oslo_log import log as logging

from nova_snapshot_ext import exception
from nova_snapshot_ext.image import payloads
from nova_snapshot_ext.image import quotas
from nova_snapshot_ext.snapshot.outcome import Context
from nova_snapshot_ext.snapshot.outcome import Event
from nova_snapshot_ext.snapshot.outcome import Outcome
from nova_snapshot_ext.snapshot import result as result_mod
from nova_snapshot_ext.snapshot import transitions

LOG = logging.getLogger(__name__)

#: Statuses of an image whose delete is in flight or whose data was
#: refused; Glance can still return an image while its delete runs.
GONE = ('deleted', 'pending_delete', 'killed')

#: Statuses on the way to ``active`` once a payload was accepted.
IN_PROGRESS = ('saving', 'importing', 'uploading')


def quota_reason(err: exception.SnapshotExtException) -> str:
    """The reason of a 413, saying "storage quota" when Glance says quota.

    A unified limit's refusal already names its limit
    (:func:`~nova_snapshot_ext.image.quotas.named_in`): left as it is.
    """
    reason = str(err.reason or err.format_message())
    if quotas.named_in(reason):
        return reason
    if 'quota' in reason.lower() and 'storage quota' not in reason.lower():
        reason += ' (storage quota)'
    return reason


def activate(ctx: Context, image: dict[str, ty.Any],
             attempt: result_mod.Attempt) -> Outcome:
    """Upload the payload of ``attempt.disk_format`` into ``image``.

    Moves the attempt (``created`` or ``found``) to ``activating``.

    :returns: the :class:`~.outcome.Outcome`: ``ACCEPTED`` on 204;
        ``FORMAT_REJECTED`` after a 415 (a 415 leaves stray data behind:
        the image can never be activated again, whoever made it);
        ``PAYLOAD_TOO_LARGE`` after a 413; after a 409 (a concurrent try
        uploaded first) what :func:`wait_active` sees; after any other
        failure what :func:`after_lost_answer` finds.
    """
    payload = payloads.payload(attempt.disk_format)
    transitions.move(attempt, Event.ACTIVATION_SENT)
    try:
        ctx.glance.upload(image['id'], payload,
                          disk_format=attempt.disk_format)
    except exception.ImageFormatRejected as err:
        return Outcome.fail(Event.FORMAT_REJECTED, err)
    except exception.GlanceOverLimit as err:
        return Outcome.fail(Event.PAYLOAD_TOO_LARGE,
                            exception.GlanceOverLimit(
                                operation='upload', image_id=image['id'],
                                status=413, reason=quota_reason(err)))
    except exception.GlanceConflict:
        transitions.move(attempt, Event.UPLOAD_CONFLICT)
        return wait_active(ctx, image['id'], attempt)
    except exception.GlanceDeadlineExceeded as err:
        if not err.sent:
            return Outcome.fail(Event.DEADLINE, err)
        return after_lost_answer(ctx, image['id'], attempt, err)
    except exception.GlanceAnswerMismatch as err:
        # Never act on the body: the image is read by its id.
        transitions.move(attempt, Event.ANSWER_MISMATCH)
        return after_lost_answer(ctx, image['id'], attempt, err)
    except exception.SnapshotExtException as err:
        return after_lost_answer(ctx, image['id'], attempt, err)
    # 204: Glance stored the data and checked the length we declared.
    return Outcome.active(dict(image, status='active', size=len(payload)),
                          Event.ACCEPTED)


def after_lost_answer(ctx: Context, image_id: str,
                      attempt: result_mod.Attempt,
                      err: exception.SnapshotExtException) -> Outcome:
    """The upload failed or its answer was lost: what does Glance hold?

    Two uploads into one image race, and Glance answers the loser 410 or
    500 although the winner left the image active; a proxy may reset the
    connection after Glance stored the data.  Never fail (let alone
    delete) a finished image.
    """
    status_code = getattr(err, 'status', None)
    try:
        current = ctx.glance.get(image_id)
    except exception.GlanceNotFound:
        # Deleted under us by another try of this snapshot: the id is
        # burned, so the same attempt goes on under its next-generation id
        # -- where every try that lost this image goes, whatever made the
        # deleter give up (a refusal there is met again, and moves on).
        return Outcome.fail(Event.IMAGE_GONE, err)
    except exception.SnapshotExtException as read_err:
        # Unknown: the image may be active.  The cleanup reads it again
        # before it decides, and names it if it still cannot.
        LOG.warning('Cannot read image %s after its upload failed: %s',
                    image_id, read_err)
        return Outcome.fail(Event.UNREADABLE, err)
    status = current.get('status')
    if status == 'active':
        attempt.size = current.get('size') or 0
        return Outcome.active(current)
    if status in GONE:
        return Outcome.fail(Event.IMAGE_GONE, err)
    if status in IN_PROGRESS:
        # Another try's upload (or ours, answer lost) is under way.
        transitions.move(attempt, Event.IN_PROGRESS)
        return wait_active(ctx, image_id, attempt, check=False)
    if status == 'queued' and status_code == 500:
        # Glance's store already holds data for this image (a concurrent
        # try's refused upload left it): it can never be activated.
        return Outcome.fail(Event.STRAY_DATA, err)
    if status_code in (404, 410):
        # Glance lost the image under the upload: another try of this
        # snapshot is deleting it; its id is burned.
        return Outcome.fail(Event.IMAGE_LOST, err)
    if is_transient(err):
        # Says nothing about the other tries of this snapshot: one may be
        # uploading into this very image now, and a delete sent after
        # this read could land after its upload made the image active.
        return Outcome.fail(Event.ACTIVATION_FAULT, err)
    return Outcome.fail(Event.UPLOAD_FAILED, err)


def is_transient(err: exception.SnapshotExtException) -> bool:
    """Is ``err`` a fault another try of this snapshot may not meet?

    A gateway's or an overloaded Glance's 502/503/504, a transport
    failure (connection refused or reset, a timeout, the request's or
    the snapshot's deadline), a cut or unreadable answer, an answer about
    another image: :class:`~nova_snapshot_ext.exception.GlanceUnavailable`
    (deadlines included) and
    :class:`~nova_snapshot_ext.exception.GlanceMalformedAnswer`, or an
    error with no HTTP status.  Any other answer with a status is
    Glance's verdict on this request, which every try of this snapshot
    (same image, same payload, same credentials) meets.
    """
    if isinstance(err, (exception.GlanceUnavailable,
                        exception.GlanceMalformedAnswer)):
        return True
    status = getattr(err, 'status', None)
    return status is None or status in (502, 503, 504)


def wait_active(ctx: Context, image_id: str, attempt: result_mod.Attempt,
                check: bool = True) -> Outcome:
    """Poll the image until it is active (or refused, or the timeout).

    The attempt is ``activating``.

    :param check: verify size and disk_format against the attempt; off
        for an image another try is finishing (its own format).
    """
    deadline = ctx.clock() + ctx.timeout
    while True:
        try:
            image = ctx.glance.get(image_id)
        except exception.GlanceNotFound as err:
            return Outcome.fail(Event.IMAGE_GONE, err)
        except exception.SnapshotExtException as err:
            # The cleanup reads it again: active is the success, in
            # progress is named, queued is deleted.
            return Outcome.fail(Event.UNREADABLE, err)
        status = image.get('status')
        if status == 'active':
            if check:
                failure = verify(image, attempt)
                if failure:
                    LOG.warning('%s; the image is active and kept',
                                failure.format_message())
            attempt.size = image.get('size') or 0
            return Outcome.active(image)
        if status not in IN_PROGRESS:
            refused = exception.GlanceError(
                operation='activation', image_id=image_id,
                reason='image is %s after its payload was accepted' % status)
            # Gone or reverted to queued: the try that sent the payload
            # met a refusal and moves on to its next attempt.
            if status in GONE:
                return Outcome.fail(Event.IMAGE_GONE, refused)
            if status == 'queued':
                return Outcome.fail(Event.REVERTED, refused)
            return Outcome.fail(Event.UNEXPECTED_STATUS, refused)
        if ctx.clock() >= deadline:
            return Outcome.fail(Event.UPLOAD_TIMEOUT,
                                exception.ActivationTimeout(
                                    image_id=image_id, timeout=ctx.timeout,
                                    status=status))
        ctx.sleep(ctx.interval)


def verify(image: ty.Mapping[str, ty.Any], attempt: result_mod.Attempt,
           validation: ty.Mapping[str, str] | None = None
           ) -> exception.GlanceError | None:
    """Does the active image hold what the attempt sent?

    :returns: the mismatch as an error, or ``None``.
    """
    if image.get('size') != attempt.size or (
            image.get('disk_format') != attempt.disk_format):
        return exception.GlanceError(
            operation='verify', image_id=image.get('id'),
            reason='image is active with disk_format %s and size %s, '
            'expected %s and %d' % (
                image.get('disk_format'), image.get('size'),
                attempt.disk_format, attempt.size))
    if validation and image.get('os_hash_value') and (
            image.get('os_hash_value') != validation['os_hash_value']):
        return exception.GlanceError(
            operation='verify', image_id=image.get('id'),
            reason='image is active with %s %s, expected %s' % (
                image.get('os_hash_algo'), image.get('os_hash_value'),
                validation['os_hash_value']))
    return None
