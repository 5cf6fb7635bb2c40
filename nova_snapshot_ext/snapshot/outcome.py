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

"""The attempt state and the outcome of one step of an attempt.

The attempt engine (:mod:`.attempts`) moves an attempt through
:class:`State`; each activation step (:mod:`.upload`, :mod:`.location`)
returns an :class:`Outcome` saying what comes next.  Nothing steers the
engine through exception attributes: an exception carried in an outcome
is only the *reason* shown to the user.  The table of states and events
is in doc/source/attempts.rst.
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
    """What the engine does after an attempt."""

    #: Done: the image is active.
    ACTIVE = 'active'
    #: A refusal the next planned attempt (on a fresh image) may not meet.
    NEXT = 'next attempt'
    #: The attempt's id is burned (deleted earlier, Glance never reuses
    #: an id): the same attempt again on its next-generation id.
    NEXT_ID = 'next id'
    #: 413 (payload too large, storage quota): the next planned attempt
    #: whose payload is smaller.
    SMALLER = 'smaller payload'
    #: Final for this call: a permanent refusal, or a transient fault
    #: (a retry of the same snapshot may succeed).
    STOP = 'stop'


@dataclasses.dataclass
class Outcome:
    """The result of one step of an attempt.

    :ivar step: what comes next.
    :ivar image: the active image (``step == ACTIVE``).
    :ivar error: why the attempt failed (shown as its reason).
    :ivar poisoned: Glance holds stray data for the image (415, or a 500
        on the upload into a queued image): nobody can activate it, so it
        is deleted even if another try of this snapshot made it.
    :ivar cleanup: delete the attempt's image if it is this snapshot's
        and not active (status re-read first).  ``False`` when another try
        of the snapshot is finishing it or already removed it.
    """

    step: Step
    image: dict[str, ty.Any] | None = None
    error: exception.SnapshotExtException | None = None
    poisoned: bool = False
    cleanup: bool = True

    @classmethod
    def active(cls, image: dict[str, ty.Any]) -> Outcome:
        return cls(Step.ACTIVE, image=image, cleanup=False)

    @classmethod
    def fail(cls, step: Step, error: exception.SnapshotExtException,
             **kwargs: ty.Any) -> Outcome:
        return cls(step, error=error, **kwargs)


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
