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

"""The attempt engine's state table: the only place a transition is written.

``TRANSITIONS[(state, event)]`` is a :class:`Transition`: the state the
attempt moves to, what the engine does next (``None`` while the attempt
goes on) and what it deletes.  :func:`move` is the only writer of
``Attempt.state``; a pair that is not in the table is a bug and raises
:class:`~nova_snapshot_ext.exception.InvalidTransition`.

doc/source/attempts.rst's "State x event" table is generated from this
one (:func:`rst_table`; ``tox -e transitions`` rewrites it, and a unit
test fails when the page and the table differ).

To add an event: a member of :class:`~.outcome.Event` (its description is
the page's "event" column), its rows here, the step that classifies the
answer into it, and ``tox -e transitions``.
"""

from __future__ import annotations

import dataclasses
import typing as ty

from nova_snapshot_ext import exception
from nova_snapshot_ext.snapshot.outcome import Cleanup
from nova_snapshot_ext.snapshot.outcome import Event
from nova_snapshot_ext.snapshot.outcome import State
from nova_snapshot_ext.snapshot.outcome import Step

if ty.TYPE_CHECKING:
    from nova_snapshot_ext.snapshot import result as result_mod


@dataclasses.dataclass(frozen=True)
class Transition:
    """What follows one (state, event) pair.

    :ivar state: the state the attempt moves to.
    :ivar step: what the engine does next; ``None``: the attempt goes on.
    :ivar cleanup: what the engine deletes (only when ``step`` is set).
    """

    state: State
    step: Step | None = None
    cleanup: Cleanup = Cleanup.NONE


def _go(state: State) -> Transition:
    return Transition(state)


def _end(step: Step, cleanup: Cleanup = Cleanup.NONE,
         state: State = State.FAILED) -> Transition:
    return Transition(state, step, cleanup)


_DONE = _end(Step.ACTIVE, state=State.ACTIVE)
_STOP = _end(Step.STOP)
_STOP_CLEAN = _end(Step.STOP, Cleanup.IF_QUEUED)

#: Every allowed move; see the module docstring.
TRANSITIONS: ty.Mapping[tuple[State, Event], Transition] = {
    # --- the create ---
    (State.PLANNED, Event.CREATE_SENT): _go(State.CREATING),
    (State.PLANNED, Event.INTERRUPTED): _STOP,
    # (after a 409 on the create: nothing made, the image read back)
    (State.PLANNED, Event.ADOPTED): _go(State.FOUND),
    (State.PLANNED, Event.ID_BURNED): _end(Step.NEXT_ID),
    (State.PLANNED, Event.FOREIGN): _STOP,
    (State.PLANNED, Event.CHANGED): _STOP,
    (State.PLANNED, Event.CONFLICT_UNREADABLE): _STOP,
    (State.CREATING, Event.CREATED): _go(State.CREATED),
    (State.CREATING, Event.ID_TAKEN): _go(State.PLANNED),
    (State.CREATING, Event.ADOPTED): _go(State.FOUND),
    (State.CREATING, Event.FOREIGN): _STOP,
    (State.CREATING, Event.CHANGED): _STOP,
    (State.CREATING, Event.FORMAT_REFUSED): _end(Step.NEXT),
    (State.CREATING, Event.RECORD_REFUSED): _STOP,
    (State.CREATING, Event.LOCATION_RECORD_REFUSED): _end(Step.NEXT),
    (State.CREATING, Event.IMAGE_QUOTA): _STOP,
    (State.CREATING, Event.NEVER_CREATED): _STOP,
    (State.CREATING, Event.UNREADABLE): _STOP_CLEAN,
    (State.CREATING, Event.INTERRUPTED): _STOP_CLEAN,
    (State.CREATING, Event.ANSWER_MISMATCH): _go(State.CREATING),
    (State.CREATING, Event.DEADLINE): _STOP,
    # --- created by this attempt ---
    (State.CREATED, Event.MEMBER_REFUSED): _STOP_CLEAN,
    (State.CREATED, Event.NOT_QUEUED): _STOP,
    (State.CREATED, Event.ACTIVATION_SENT): _go(State.ACTIVATING),
    (State.CREATED, Event.INTERRUPTED): _STOP_CLEAN,
    # --- made by another try of this snapshot ---
    (State.FOUND, Event.SEEN_ACTIVE): _DONE,
    (State.FOUND, Event.MEMBER_REFUSED): _STOP,
    (State.FOUND, Event.UNFINISHABLE): _STOP,
    (State.FOUND, Event.IN_PROGRESS): _go(State.ACTIVATING),
    (State.FOUND, Event.ACTIVATION_SENT): _go(State.ACTIVATING),
    (State.FOUND, Event.INTERRUPTED): _STOP_CLEAN,
    # --- the activation (upload or location) ---
    (State.ACTIVATING, Event.ACCEPTED): _DONE,
    (State.ACTIVATING, Event.SEEN_ACTIVE): _DONE,
    (State.ACTIVATING, Event.IN_PROGRESS): _go(State.ACTIVATING),
    (State.ACTIVATING, Event.UPLOAD_CONFLICT): _go(State.ACTIVATING),
    (State.ACTIVATING, Event.FORMAT_REJECTED): _end(Step.NEXT,
                                                    Cleanup.POISONED),
    (State.ACTIVATING, Event.STRAY_DATA): _end(Step.NEXT, Cleanup.POISONED),
    (State.ACTIVATING, Event.PAYLOAD_TOO_LARGE): _end(Step.SMALLER,
                                                      Cleanup.IF_QUEUED),
    (State.ACTIVATING, Event.IMAGE_GONE): _end(Step.NEXT_ID),
    (State.ACTIVATING, Event.IMAGE_LOST): _end(Step.NEXT_ID,
                                               Cleanup.IF_QUEUED),
    (State.ACTIVATING, Event.REVERTED): _end(Step.NEXT),
    (State.ACTIVATING, Event.UNEXPECTED_STATUS): _STOP,
    (State.ACTIVATING, Event.UPLOAD_FAILED): _STOP_CLEAN,
    (State.ACTIVATING, Event.UNREADABLE): _STOP_CLEAN,
    (State.ACTIVATING, Event.UPLOAD_TIMEOUT): _STOP,
    (State.ACTIVATING, Event.LOCATION_REFUSED): _end(Step.NEXT,
                                                     Cleanup.IF_QUEUED),
    (State.ACTIVATING, Event.TASK_FAILED): _end(Step.NEXT,
                                                Cleanup.IF_QUEUED),
    (State.ACTIVATING, Event.LOCATION_FAILED): _STOP_CLEAN,
    (State.ACTIVATING, Event.IMAGE_INVISIBLE): _STOP_CLEAN,
    (State.ACTIVATING, Event.MISMATCH): _STOP,
    (State.ACTIVATING, Event.IMPORT_TIMEOUT): _STOP_CLEAN,
    (State.ACTIVATING, Event.INTERRUPTED): _STOP_CLEAN,
    (State.ACTIVATING, Event.ANSWER_MISMATCH): _go(State.ACTIVATING),
    (State.ACTIVATING, Event.DEADLINE): _STOP_CLEAN,
    # --- after the success: a later read in hand contradicts it ---
    (State.ACTIVE, Event.CONTRADICTED): _STOP_CLEAN,
    # --- after the end ---
    (State.FAILED, Event.CLEANUP_SAW_ACTIVE): _DONE,
    # (an interrupt during the cleanup: tried again, briefly)
    (State.FAILED, Event.INTERRUPTED): _STOP_CLEAN,
}


def move(attempt: result_mod.Attempt, event: Event) -> Transition:
    """Move ``attempt`` on ``event``, as the table says.

    :returns: the :class:`Transition` (``attempt.state`` is its state).
    :raises InvalidTransition: the pair is not in :data:`TRANSITIONS`
        (a bug: the attempt's state is left as it was).
    """
    try:
        transition = TRANSITIONS[(attempt.state, event)]
    except KeyError:
        raise exception.InvalidTransition(
            state=attempt.state.value, event=event.value) from None
    attempt.enter(transition.state)
    return transition


# --- the documentation ------------------------------------------------------

#: The markers around the generated table in doc/source/attempts.rst.
BEGIN = '.. BEGIN GENERATED: nova_snapshot_ext.snapshot.transitions'
END = '.. END GENERATED: nova_snapshot_ext.snapshot.transitions'

_STEP_TEXT = {
    None: 'the attempt goes on',
    Step.ACTIVE: '*done*',
    Step.NEXT: '*next attempt*',
    Step.NEXT_ID: '*next id*',
    Step.SMALLER: '*smaller*',
    Step.STOP: '*stop*',
}


def rst_table() -> str:
    """The table as reStructuredText (a ``list-table``), one row a pair.

    Rows follow the order of :class:`~.outcome.State`, then of
    :class:`~.outcome.Event`.
    """
    states = list(State)
    events = list(Event)
    lines = [BEGIN, '', '.. list-table::', '   :header-rows: 1',
             '   :widths: 12 40 14 14 20', '',
             '   * - state', '     - event', '     - next state',
             '     - next', '     - deleted']
    for (state, event), move_ in sorted(
            TRANSITIONS.items(),
            key=lambda item: (states.index(item[0][0]),
                              events.index(item[0][1]))):
        lines += ['   * - ``%s``' % state.value,
                  '     - %s: %s' % (event.value, event.description),
                  '     - ``%s``' % move_.state.value,
                  '     - %s' % _STEP_TEXT[move_.step],
                  '     - %s' % move_.cleanup.value]
    lines += ['', END]
    return '\n'.join(lines) + '\n'


def render_page(text: str) -> str:
    """``text`` (attempts.rst) with the generated table replaced.

    :raises ValueError: the markers are missing.
    """
    start, stop = text.find(BEGIN), text.find(END)
    if start < 0 or stop < start:
        raise ValueError('the page has no %r ... %r block' % (BEGIN, END))
    return text[:start] + rst_table() + text[stop + len(END) + 1:]


def main(argv: ty.Sequence[str] | None = None) -> int:
    """``python -m nova_snapshot_ext.snapshot.transitions PAGE``: rewrite."""
    import sys
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print('usage: python -m nova_snapshot_ext.snapshot.transitions '
              'doc/source/attempts.rst', file=sys.stderr)
        return 2
    with open(args[0], encoding='utf-8') as page:
        text = page.read()
    with open(args[0], 'w', encoding='utf-8') as page:
        page.write(render_page(text))
    return 0


if __name__ == '__main__':  # pragma: no cover
    raise SystemExit(main())
