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

"""The vocabulary of the attempt engine: states, events, steps, outcomes.

An attempt stands in a :class:`State`.  Each step of an attempt (the
create in :mod:`.attempts`, the activations in :mod:`.upload` and
:mod:`.location`) classifies Glance's answer once into an :class:`Event`
and returns it in an :class:`Outcome`.  What follows a (state, event) pair
-- the next state, what the engine does next (:class:`Step`) and what it
deletes (:class:`Cleanup`) -- is written in one place only, the table
:data:`~.transitions.TRANSITIONS`.  Nothing steers the engine through
exception attributes: an exception carried in an outcome is only the
*reason* shown to the user.
"""

from __future__ import annotations

import dataclasses
import enum
import typing as ty

from nova_snapshot_ext import exception


class State(str, enum.Enum):
    """Where an attempt stands, as far as Glance's records go.

    A ``str`` enum: a result holding it stays JSON-serialisable.
    """

    #: Nothing sent for this attempt yet.
    PLANNED = 'planned'
    #: The create was sent; its answer is not known (yet).
    CREATING = 'creating'
    #: Glance answered 2xx to our create: the image is provably ours.
    CREATED = 'created'
    #: An image of this snapshot that another try made (same id,
    #: fingerprint, mappings and record): adopted, finished if queued.
    FOUND = 'found'
    #: The payload or location was sent; its answer is not known (yet).
    ACTIVATING = 'activating'
    #: Glance accepted the payload (2xx) or the image was seen active: the
    #: snapshot succeeded; no later read turns this into a failure.
    ACTIVE = 'active'
    #: The attempt is over without an active image.
    FAILED = 'failed'


class Step(enum.Enum):
    """What the engine does after an attempt ends."""

    #: Done: the image is active.
    ACTIVE = 'active'
    #: A refusal the next planned attempt (on a fresh image) may not meet.
    NEXT = 'next attempt'
    #: The attempt's id is burned (deleted earlier, Glance never reuses
    #: an id): the same attempt again on its next-generation id.
    NEXT_ID = 'next id'
    #: 413 (payload too large, storage quota, a unified limit): the next
    #: planned upload whose payload is smaller, or the next location
    #: (checked against none of Glance's upload limits).
    SMALLER = 'smaller payload'
    #: Final for this call: a permanent refusal, or a transient fault
    #: (a retry of the same snapshot may succeed).
    STOP = 'stop'


class Cleanup(enum.Enum):
    """What the engine deletes when an attempt ends."""

    #: Nothing: the attempt made nothing, another try of the snapshot is
    #: finishing or removed the image, or the image is active.
    NONE = '--'
    #: The attempt's image if it is this snapshot's and still ``queued``
    #: (status re-read right before the delete; retried with backoff;
    #: named when it stays; an active image is the success after all).
    IF_QUEUED = 'the image, if this snapshot\'s and queued'
    #: The image even if another try of this snapshot made it, in any
    #: status but ``active``: Glance holds stray data for it (415, or a
    #: 500 on an upload into a queued image), nobody can activate it.
    POISONED = 'the image (poisoned), unless active'
    #: Nothing, and the image is named as left in place: a transient
    #: fault (or an interrupt) that another try of this snapshot may not
    #: meet, while it may be finishing this very image (Glance has no
    #: conditional delete: a delete sent after a read that found it queued
    #: can land after that try's upload made it active).  That try, or a
    #: retry, adopts it; ``nova-snapshot-ext audit --fix`` deletes it once
    #: it stayed queued past its threshold.  The image is read once
    #: first: active is the success.
    LEFT = 'nothing: the image is left in place, named (a retry adopts it)'


class Event(enum.Enum):
    """Glance's answer to one step of an attempt, classified once.

    Each member's ``description`` says which answers it stands for (it is
    the "event" column of doc/source/attempts.rst).
    """

    description: str

    def __new__(cls, value: str, description: str) -> Event:
        member = object.__new__(cls)
        member._value_ = value
        member.description = description
        return member

    # --- the create ---
    CREATE_SENT = ('create sent', 'the create is sent')
    CREATED = ('created', '201 on the create')
    ID_TAKEN = ('id taken', '409 on the create: the id is taken, this '
                'attempt made nothing; the image is read back')
    ADOPTED = ('adopted', "the image with the attempt's id (409, or a "
               'lost answer read back) or one found by name is this '
               "snapshot's, made from the same record: adopted "
               '(``reused``)')
    ID_BURNED = ('id burned', '409, and no image this caller can see '
                 'holds the id (deleted by an earlier try; Glance never '
                 'reuses an id), none found by name')
    FOREIGN = ('foreign image', "409 or a lost answer read back: the image "
               "with the id is not this snapshot's "
               '(``SnapshotImageConflict``)')
    CHANGED = ('changed record', "409 or a lost answer read back: this "
               "snapshot's image, made from a different record "
               '(``SnapshotImageConflict`` naming what differs)')
    CONFLICT_UNREADABLE = ('conflict unreadable', '409, and the image '
                           'cannot be read back: named as left in place, '
                           'not read again '
                           "(this run's own create, sent again after its "
                           'answer was lost, may have made it)')
    FORMAT_REFUSED = ('format refused', 'client-side schema refusal of the '
                      'disk or container format (capabilities re-read)')
    RECORD_REFUSED = ('record refused', '400/403 or another 4xx on the '
                      'create, a client-side schema refusal of a property')
    LOCATION_RECORD_REFUSED = ('location record refused', 'a location '
                               "attempt's create refused with 403/501")
    IMAGE_QUOTA = ('image quota', '413 on the create (the reason says '
                   '"storage quota" when Glance says quota)')
    NEVER_CREATED = ('never created', "the create's answer was lost and "
                     'the image is absent on 3 reads (id named as '
                     'unconfirmed)')
    UNREADABLE = ('unreadable', 'an answer was lost (timeout, reset, 5xx, '
                  'unreadable body) and Glance cannot be read back')
    # --- before the activation ---
    MEMBER_REFUSED = ('member refused', "Glance refused the record's "
                      'member project (a 4xx: every try meets it)')
    MEMBER_FAILED = ('member failed', "adding the record's member project "
                     'failed transiently (5xx, reset, timeout, a lost '
                     'answer): the image is left queued, named, for the '
                     'try of this snapshot that may be finishing it, or '
                     'a retry (a delete could not be told from one that '
                     'removes the image another try just activated)')
    NOT_QUEUED = ('not queued', 'location: the image is not queued; no '
                  'location is added to it')
    UNFINISHABLE = ('unfinishable', "an earlier try's image is queued in a "
                    'format this Glance and driver do not allow now, or '
                    'is killed/deleted')
    IN_PROGRESS = ('in progress', 'the image is saving/importing (another '
                   "try's payload): wait for active")
    ACTIVATION_SENT = ('activation sent', 'the payload or the location is '
                       'sent')
    # --- the activation ---
    ACCEPTED = ('accepted', '204 on the upload')
    SEEN_ACTIVE = ('seen active', 'the image is seen ``active`` (read back '
                   'after a lost answer, or while waiting)')
    UPLOAD_CONFLICT = ('upload conflict', '409 on the upload: another try '
                       'uploaded first; wait for active')
    FORMAT_REJECTED = ('format rejected', '415 on the upload (format '
                       'inspection)')
    STRAY_DATA = ('stray data', '500 on the upload and the image is still '
                  "queued: Glance's store holds data for it")
    PAYLOAD_TOO_LARGE = ('payload too large', '413 on the upload (payload '
                         'too large, storage quota)')
    IMAGE_GONE = ('image gone', "404 on a read, or the image is "
                  "deleted/killed: another try deleted it, its id is "
                  'burned')
    IMAGE_LOST = ('image lost', '404/410 on the upload while the image '
                  'still reads queued (another try is deleting it)')
    REVERTED = ('reverted', 'the image is back to ``queued`` after its '
                "payload was accepted (another try's upload was refused)")
    UNEXPECTED_STATUS = ('unexpected status', 'the image is in a status '
                         'other than active, in progress, queued or gone '
                         'after its payload was accepted')
    UPLOAD_FAILED = ('upload failed', 'the upload was refused otherwise '
                     '(another 4xx, a 5xx other than 500/502/503/504) and '
                     'the image reads queued: every try of this snapshot '
                     'sends the same payload to it and meets the same '
                     'refusal')
    ACTIVATION_FAULT = ('activation fault', 'the upload or the location '
                        'add met a transient fault (502, 503, 504, a reset '
                        'or refused connection, a timeout, the deadline, a '
                        'cut or unreadable answer) and the image reads '
                        'queued (a location: no task after 3 polls): left '
                        'in place, named, for the try of this snapshot '
                        'that may be finishing it, or a retry (a delete '
                        'could not be told from one that removes the image '
                        'another try just activated)')
    UPLOAD_TIMEOUT = ('upload timeout', 'the image is still in progress at '
                      '``activation_timeout``')
    LOCATION_REFUSED = ('location refused', '400/403/409/501 on the '
                        'location add (501 in ``auto``: the legacy API '
                        'next)')
    TASK_FAILED = ('task failed', "the image's ``location_import`` task "
                   'failed, or the image left the pending statuses')
    LOCATION_FAILED = ('location failed', 'legacy 409; another 4xx that '
                       'every try of this snapshot meets')
    IMAGE_INVISIBLE = ('image invisible', '404 on the location add or a '
                       'read after it (deleted meanwhile, or an identity '
                       "with only the 'service' role)")
    MISMATCH = ('mismatch', 'the image is active but not what was sent '
                '(size, disk_format, hash): reported, never deleted')
    IMPORT_TIMEOUT = ('import timeout', 'location: the image is still '
                      'pending at ``activation_timeout``')
    # --- answers that prove nothing, deadlines (issue 18) ---
    ANSWER_MISMATCH = ('answer about another image', 'the answer to the '
                       'create or the upload names another image than the '
                       'one asked about (its id, or a property the create '
                       'sent): ignored, as a lost answer; the image is '
                       'read back by its id')
    DEADLINE = ('deadline', '``[snapshot_ext] snapshot_timeout`` passed '
                'before a create, an upload or a location add was sent: '
                'it is not sent')
    CONTRADICTED = ('contradicted', 'after the success, two reads show the '
                    'image ``queued`` (an intermediary answered the upload '
                    'without forwarding it): it is not active')
    # --- whatever the state ---
    INTERRUPTED = ('interrupted', 'Ctrl-C, SIGTERM, ``SystemExit``, a bug '
                   '(the exception is re-raised, carrying the result)')
    CLEANUP_SAW_ACTIVE = ('cleanup saw active', "the cleanup's re-read "
                          'finds the image active: the snapshot succeeded')


@dataclasses.dataclass(frozen=True)
class Outcome:
    """Glance's answer to one step of an attempt, as an event.

    What follows is the table's (:data:`~.transitions.TRANSITIONS`), not
    the step's.

    :ivar event: the classified answer.
    :ivar image: the image as last read (the active one for ``ACCEPTED``,
        ``SEEN_ACTIVE``).
    :ivar error: why the attempt failed (shown as its reason).
    """

    event: Event
    image: dict[str, ty.Any] | None = None
    error: exception.SnapshotExtException | None = None

    @classmethod
    def active(cls, image: dict[str, ty.Any],
               event: Event = Event.SEEN_ACTIVE) -> Outcome:
        return cls(event, image=image)

    @classmethod
    def fail(cls, event: Event,
             error: exception.SnapshotExtException) -> Outcome:
        return cls(event, error=error)


@dataclasses.dataclass
class Context:
    """What an activation step needs: who to ask, how long to wait.

    :ivar glance: the :class:`~nova_snapshot_ext.image.glance.GlanceClient`
        acting for this snapshot.
    :ivar timeout: ``[snapshot_ext] activation_timeout`` (seconds).
    :ivar interval: ``[snapshot_ext] activation_poll_interval`` (seconds).
    :ivar sleep: the sleep function.
    :ivar clock: the monotonic clock (seconds).
    """

    glance: ty.Any
    timeout: float
    interval: float
    sleep: ty.Callable[[float], None]
    clock: ty.Callable[[], float]
