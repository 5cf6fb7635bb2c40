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

The table is written in :data:`_MOVES`, grouped by what follows (the
transition), each group listing the events per state.  To add an event: a
member of :class:`~.outcome.Event` (its description is the page's "event"
column), its (state, event) pairs in the right groups of :data:`_MOVES`,
the step that classifies the answer into it and returns
``Outcome.fail(Event.X, error)`` (or calls :func:`move` for a move that
goes on), a scenario in tests/unit/snapshot/test_transitions.py for each
new pair, and ``tox -e transitions``.
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


_P, _C, _CD, _FD, _A, _F = (State.PLANNED, State.CREATING, State.CREATED,
                            State.FOUND, State.ACTIVATING, State.FAILED)
_ACT = State.ACTIVE
_E = Event

#: The table, grouped by what follows: ``(transition, {state: events})``.
#: Read a line as "from this state, on these events".
_MOVES: tuple[tuple[Transition, dict[State, tuple[Event, ...]]], ...] = (
    # --- the attempt goes on ---
    (_go(State.CREATING), {_P: (_E.CREATE_SENT,)}),
    # (a 409 on the create: nothing made by us, the image read back)
    (_go(State.PLANNED), {_C: (_E.ID_TAKEN,)}),
    (_go(State.CREATED), {_C: (_E.CREATED,)}),
    (_go(State.FOUND), {_P: (_E.ADOPTED,), _C: (_E.ADOPTED,)}),
    (_go(State.ACTIVATING), {
        _CD: (_E.ACTIVATION_SENT,),
        _FD: (_E.ACTIVATION_SENT, _E.IN_PROGRESS),
        _A: (_E.IN_PROGRESS, _E.UPLOAD_CONFLICT, _E.ANSWER_MISMATCH)}),
    # (an answer about another image: ignored, the image read back by id)
    (_go(State.CREATING), {_C: (_E.ANSWER_MISMATCH,)}),
    # --- done: the image is active ---
    (_end(Step.ACTIVE, state=State.ACTIVE), {
        _FD: (_E.SEEN_ACTIVE,),
        _A: (_E.ACCEPTED, _E.SEEN_ACTIVE),
        _F: (_E.CLEANUP_SAW_ACTIVE,)}),
    # --- the next attempt of the plan, on a fresh image ---
    (_end(Step.NEXT), {
        _C: (_E.FORMAT_REFUSED, _E.LOCATION_RECORD_REFUSED),
        _A: (_E.REVERTED,)}),
    (_end(Step.NEXT, Cleanup.POISONED), {
        _A: (_E.FORMAT_REJECTED, _E.STRAY_DATA)}),
    (_end(Step.NEXT, Cleanup.IF_QUEUED), {
        _A: (_E.LOCATION_REFUSED, _E.TASK_FAILED)}),
    # --- the same attempt on its next-generation id ---
    (_end(Step.NEXT_ID), {_P: (_E.ID_BURNED,), _A: (_E.IMAGE_GONE,)}),
    (_end(Step.NEXT_ID, Cleanup.IF_QUEUED), {_A: (_E.IMAGE_LOST,)}),
    # --- the next attempt with a smaller payload ---
    (_end(Step.SMALLER, Cleanup.IF_QUEUED), {_A: (_E.PAYLOAD_TOO_LARGE,)}),
    # --- stop: nothing to delete ---
    (_end(Step.STOP), {
        # (CONFLICT_UNREADABLE: the image is named as left in place by
        # the read-back itself, whose read just failed)
        _P: (_E.FOREIGN, _E.CHANGED, _E.CONFLICT_UNREADABLE, _E.INTERRUPTED),
        _C: (_E.FOREIGN, _E.CHANGED, _E.RECORD_REFUSED, _E.IMAGE_QUOTA,
             _E.NEVER_CREATED, _E.DEADLINE),
        _CD: (_E.NOT_QUEUED,),
        _FD: (_E.MEMBER_REFUSED, _E.UNFINISHABLE),
        _A: (_E.UNEXPECTED_STATUS, _E.UPLOAD_TIMEOUT, _E.MISMATCH)}),
    # --- stop, leaving the image in place, named, for the try that may be
    # finishing it: a transient fault or an interrupt says nothing about
    # the other tries of this snapshot, and Glance has no conditional
    # delete (design rule 3's exception: Glance could not be reached) ---
    (_end(Step.STOP, Cleanup.LEFT), {
        _C: (_E.UNREADABLE, _E.INTERRUPTED),
        _CD: (_E.MEMBER_FAILED, _E.INTERRUPTED),
        _FD: (_E.MEMBER_FAILED, _E.INTERRUPTED),
        _A: (_E.ACTIVATION_FAULT, _E.UNREADABLE, _E.DEADLINE, _E.INTERRUPTED),
        # (after the success, two reads show the image queued: the
        # intermediary may still forward the upload, another try finish it)
        _ACT: (_E.CONTRADICTED,),
        # (an interrupt during the cleanup: nothing more is deleted)
        _F: (_E.INTERRUPTED,)}),
    # --- stop, deleting the image if this snapshot's and queued: a
    # refusal every try of this snapshot meets on this image ---
    (_end(Step.STOP, Cleanup.IF_QUEUED), {
        _CD: (_E.MEMBER_REFUSED,),
        _A: (_E.UPLOAD_FAILED, _E.LOCATION_FAILED, _E.IMAGE_INVISIBLE,
             _E.IMPORT_TIMEOUT)}),
)


def _table() -> dict[tuple[State, Event], Transition]:
    table: dict[tuple[State, Event], Transition] = {}
    for transition, moves in _MOVES:
        for state, events in moves.items():
            for event in events:
                if (state, event) in table:
                    raise AssertionError('(%s, %s) twice in the table'
                                         % (state, event))
                table[(state, event)] = transition
    return table


#: Every allowed move: ``TRANSITIONS[(state, event)]`` is what follows.
#: Written in :data:`_MOVES`, grouped by what follows.
TRANSITIONS: ty.Mapping[tuple[State, Event], Transition] = _table()


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
