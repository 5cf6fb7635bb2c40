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

"""The transition table, and each step module driven through it.

Every (state, event) pair of ``TRANSITIONS`` has a scenario below that
drives the step module which classifies that answer (the create and the
cleanup in attempts.py, upload.py, location.py) with Glance's answers
scripted, and checks the pair is the move the step made.  A pair without
a scenario, or a scenario without a pair, fails
``test_every_pair_has_a_scenario``.
"""

import os
import types
from unittest import mock

from nova_snapshot_ext import exception
from nova_snapshot_ext.snapshot import attempts
from nova_snapshot_ext.snapshot import cleanup
from nova_snapshot_ext.snapshot import location
from nova_snapshot_ext.snapshot.outcome import Cleanup
from nova_snapshot_ext.snapshot.outcome import Context
from nova_snapshot_ext.snapshot.outcome import Event
from nova_snapshot_ext.snapshot.outcome import Outcome
from nova_snapshot_ext.snapshot.outcome import State
from nova_snapshot_ext.snapshot.outcome import Step
from nova_snapshot_ext.snapshot import result as result_mod
from nova_snapshot_ext.snapshot import transitions
from nova_snapshot_ext.snapshot import upload
from tests.unit.snapshot import test_service

IMAGE_ID = test_service.IMAGE_ID
PAGE = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'doc',
                    'source', 'attempts.rst')


def _err(cls=exception.GlanceUnavailable, status=None, **kwargs):
    kwargs.setdefault('reason', 'scripted')
    return cls(operation='scripted', image_id=IMAGE_ID, status=status,
               **kwargs)


class ScriptedGlance:
    """Glance's answers, in order, per call; the last answer repeats.

    An answer that is an exception is raised; anything else returned.
    Every call is recorded in ``calls``.
    """

    session = None

    def __init__(self, **answers):
        self.answers = {k: list(v) for k, v in answers.items()}
        self.calls = []

    def _answer(self, name, *args):
        self.calls.append((name,) + args)
        # Unscripted: an image nobody can see, any other call succeeds.
        queue = self.answers.get(name, [_not_found() if name == 'get'
                                        else None])
        answer = queue.pop(0) if len(queue) > 1 else queue[0]
        if isinstance(answer, BaseException):
            raise answer
        return answer

    def __getattr__(self, name):
        if name.startswith('__'):
            raise AttributeError(name)
        return lambda *args, **kwargs: self._answer(name, *args)


class TransitionTestBase(test_service.ServiceTestBase):

    def setUp(self):
        super().setUp()
        self.moves = []
        real = transitions.move

        def record(attempt, event):
            self.moves.append((attempt.state, event))
            return real(attempt, event)

        patcher = mock.patch.object(transitions, 'move', side_effect=record)
        patcher.start()
        self.addCleanup(patcher.stop)
        self.record = self.make_service().build_record(self.make_request())

    def image(self, status='queued', **changes):
        image = dict(self.record.create_kwargs('raw', 'bare'),
                     status=status, size=0)
        image.update(changes)
        return image

    def attempt(self, state=State.PLANNED, method='upload',
                location_api=None, trail=()):
        attempt = result_mod.Attempt(method=method, disk_format='raw',
                                     container_format='bare', size=0,
                                     image_id=IMAGE_ID,
                                     location_api=location_api)
        for past in trail:
            attempt.enter(past)
        if state is not State.PLANNED:
            attempt.enter(state)
        return attempt

    def ctx(self, glance):
        return Context(glance=glance, timeout=10, interval=1,
                       sleep=self._sleep, clock=lambda: self.now)

    def engine(self, glance, source=None):
        svc = self.make_service()
        engine = attempts.AttemptEngine(self.conf, svc.capabilities, source,
                                        sleep=self._sleep,
                                        clock=lambda: self.now)
        run = cleanup.Run(
            record=self.record,
            result=result_mod.SnapshotResult(image_id=None, name='n',
                                             status='failed'),
            ctx=self.ctx(glance), allowed=frozenset(['raw']))
        return engine, run

    def source(self, validation=None):
        obj = types.SimpleNamespace(
            url='http://objects.example/empty.raw',
            redacted='http://objects.example/empty.raw',
            validation_data=validation or {'os_hash_algo': 'sha512',
                                           'os_hash_value': 'abc'})
        return types.SimpleNamespace(get=lambda session: obj,
                                     import_estimate=None, api='new',
                                     invalidate=lambda: None)


# --- the scenarios: one per (state, event) pair ------------------------------
# Each takes the test case and drives one step module.

def _create(t, method='upload', **answers):
    engine, run = t.engine(ScriptedGlance(**answers))
    attempt = t.attempt(method=method, location_api='new')
    t.current = engine, run, attempt
    return engine._create(run, attempt)


def _finish(t, image, **answers):
    engine, run = t.engine(ScriptedGlance(**answers))
    attempt = t.attempt(State.FOUND)
    t.current = engine, run, attempt
    return engine._finish(run, attempt, image)


def _upload(t, state=State.CREATED, **answers):
    engine, run = t.engine(ScriptedGlance(**answers))
    attempt = t.attempt(state)
    t.current = engine, run, attempt
    return upload.activate(run.ctx, t.image(), attempt)


def _location(t, api='new', image=None, **answers):
    engine, run = t.engine(ScriptedGlance(**answers))
    attempt = t.attempt(State.CREATED, 'location', api)
    t.current = engine, run, attempt
    return location.activate(run.ctx, t.source(), image or t.image(),
                             attempt)


def _interrupt(state):
    def scenario(t):
        engine, run = t.engine(ScriptedGlance(get=[_not_found()]))
        return cleanup.interrupted(run, t.attempt(state),
                                   KeyboardInterrupt())
    return scenario


def _conflict(t, get):
    return _create(t, create=[_err(exception.GlanceConflict, 409)], get=get,
                   list_images=[[]])


def _lost_create(t, get):
    return _create(t, create=[_err()], get=get, list_images=[[]])


def _not_found():
    return _err(exception.GlanceNotFound, 404)


def _cleanup_saw_active(t):
    engine, run = t.engine(ScriptedGlance(get=[t.image('active')]))
    engine._end(run, t.attempt(State.ACTIVATING),
                Outcome.fail(Event.UPLOAD_FAILED, _err()))


def _member_refused(t, error=None):
    t.record.member = 'other-project'
    engine, run = t.engine(ScriptedGlance(
        add_member=[error or _err(exception.GlanceForbidden, 403)]))
    attempt = t.attempt(State.CREATED)
    t.current = engine, run, attempt
    # The create made the image; then the member is refused.
    with mock.patch.object(engine, '_create',
                           return_value=t.image(owner='me')):
        return engine._attempt(run, attempt,
                               types.SimpleNamespace(method='upload'))


def _found_member_refused(t, error=None):
    t.record.member = 'other-project'
    return _finish(t, t.image('queued'),
                   add_member=[error or _err(exception.GlanceForbidden,
                                             403)])


def _mismatch():
    return _err(exception.GlanceAnswerMismatch, answered='id other')


def _not_sent():
    return _err(exception.GlanceDeadlineExceeded, deadline=60, sent=False,
                which='[snapshot_ext] snapshot_timeout')


def _contradicted(t):
    svc = t.make_service()
    attempt = t.attempt(State.ACTIVE, trail=(State.CREATING,
                                             State.CREATED))
    result = result_mod.SnapshotResult(image_id=IMAGE_ID, name='n',
                                       status='active', attempts=[attempt])
    glance = ScriptedGlance(get=[t.image('queued')])
    err = t.assertRaises(exception.ActivationFailed, svc.recheck, result,
                         t.image('queued'), glance)
    t.assertIs(result, err.result)
    # left in place, named: the intermediary may still forward the upload
    t.assertEqual((State.FAILED, False), (attempt.state, attempt.cleaned_up))
    t.assertNotIn(('delete', IMAGE_ID), glance.calls)
    t.assertEqual([IMAGE_ID], result.left_in_place)


CHANGED_NAME = {'name': 'renamed'}

SCENARIOS = {
    # the create (attempts.py)
    (State.PLANNED, Event.CREATE_SENT): lambda t: _create(t, create=[
        {'id': IMAGE_ID, 'status': 'queued'}]),
    (State.CREATING, Event.CREATED): lambda t: _create(t, create=[
        {'id': IMAGE_ID, 'status': 'queued'}]),
    (State.CREATING, Event.ID_TAKEN): lambda t: _conflict(
        t, [t.image()]),
    (State.PLANNED, Event.ID_BURNED): lambda t: _conflict(
        t, [_not_found()]),
    (State.PLANNED, Event.CONFLICT_UNREADABLE): lambda t: _conflict(
        t, [_err()]),
    (State.CREATING, Event.FORMAT_REFUSED): lambda t: _create(t, create=[
        _err(exception.GlanceSchemaRefusal, 400, format_refused=True)]),
    (State.CREATING, Event.RECORD_REFUSED): lambda t: _create(t, create=[
        _err(exception.GlanceForbidden, 403)]),
    (State.CREATING, Event.LOCATION_RECORD_REFUSED): lambda t: _create(
        t, 'location', create=[_err(exception.GlanceForbidden, 403)]),
    (State.CREATING, Event.IMAGE_QUOTA): lambda t: _create(t, create=[
        _err(exception.GlanceOverLimit, 413)]),
    (State.CREATING, Event.NEVER_CREATED): lambda t: _lost_create(
        t, [_not_found()]),
    (State.CREATING, Event.UNREADABLE): lambda t: _lost_create(t, [_err()]),
    # created by this attempt / adopted (attempts.py)
    (State.CREATED, Event.MEMBER_REFUSED): _member_refused,
    (State.FOUND, Event.SEEN_ACTIVE): lambda t: _finish(t, t.image(
        'active')),
    (State.FOUND, Event.MEMBER_REFUSED): _found_member_refused,
    # (a transient fault: 503, a reset, a lost answer)
    (State.CREATED, Event.MEMBER_FAILED): lambda t: _member_refused(
        t, _err()),
    (State.FOUND, Event.MEMBER_FAILED): lambda t: _found_member_refused(
        t, _err(exception.GlanceUnavailable, 503)),
    (State.FOUND, Event.UNFINISHABLE): lambda t: _finish(t, t.image(
        'deactivated')),
    (State.FOUND, Event.IN_PROGRESS): lambda t: _finish(
        t, t.image('saving'), get=[t.image('active')]),
    (State.FOUND, Event.ACTIVATION_SENT): lambda t: _finish(
        t, t.image('queued')),
    # the upload (upload.py)
    (State.CREATED, Event.ACTIVATION_SENT): lambda t: _upload(t),
    (State.ACTIVATING, Event.ACCEPTED): lambda t: _upload(t),
    (State.ACTIVATING, Event.SEEN_ACTIVE): lambda t: _upload(
        t, upload=[_err()], get=[t.image('active')]),
    (State.ACTIVATING, Event.IN_PROGRESS): lambda t: _upload(
        t, upload=[_err()], get=[t.image('saving'), t.image('active')]),
    (State.ACTIVATING, Event.UPLOAD_CONFLICT): lambda t: _upload(
        t, upload=[_err(exception.GlanceConflict, 409)],
        get=[t.image('active')]),
    (State.ACTIVATING, Event.FORMAT_REJECTED): lambda t: _upload(
        t, upload=[exception.ImageFormatRejected(
            image_id=IMAGE_ID, disk_format='raw', status=415,
            reason='x')]),
    (State.ACTIVATING, Event.STRAY_DATA): lambda t: _upload(
        t, upload=[_err(exception.GlanceError, 500)], get=[t.image()]),
    (State.ACTIVATING, Event.PAYLOAD_TOO_LARGE): lambda t: _upload(
        t, upload=[_err(exception.GlanceOverLimit, 413)]),
    (State.ACTIVATING, Event.IMAGE_GONE): lambda t: _upload(
        t, upload=[_err()], get=[_not_found()]),
    (State.ACTIVATING, Event.IMAGE_LOST): lambda t: _upload(
        t, upload=[_err(exception.GlanceError, 410)], get=[t.image()]),
    (State.ACTIVATING, Event.REVERTED): lambda t: _upload(
        t, upload=[_err(exception.GlanceConflict, 409)], get=[t.image()]),
    (State.ACTIVATING, Event.UNEXPECTED_STATUS): lambda t: _upload(
        t, upload=[_err(exception.GlanceConflict, 409)],
        get=[t.image('deactivated')]),
    (State.ACTIVATING, Event.UPLOAD_FAILED): lambda t: _upload(
        t, upload=[_err(exception.GlanceBadRequest, 400)], get=[t.image()]),
    (State.ACTIVATING, Event.ACTIVATION_FAULT): lambda t: _upload(
        t, upload=[_err()], get=[t.image()]),
    (State.ACTIVATING, Event.UNREADABLE): lambda t: _upload(
        t, upload=[_err()], get=[_err()]),
    (State.ACTIVATING, Event.UPLOAD_TIMEOUT): lambda t: _upload(
        t, upload=[_err(exception.GlanceConflict, 409)],
        get=[t.image('saving')]),
    # the location (location.py)
    (State.CREATED, Event.NOT_QUEUED): lambda t: _location(
        t, image=t.image('saving')),
    (State.ACTIVATING, Event.LOCATION_REFUSED): lambda t: _location(
        t, add_image_location=[_err(exception.GlanceForbidden, 403)]),
    (State.ACTIVATING, Event.TASK_FAILED): lambda t: _location(
        t, get=[t.image('killed')]),
    (State.ACTIVATING, Event.LOCATION_FAILED): lambda t: _location(
        t, 'legacy', add_location=[_err(exception.GlanceConflict, 409)],
        get=[t.image()]),
    (State.ACTIVATING, Event.IMAGE_INVISIBLE): lambda t: _location(
        t, add_image_location=[_not_found()]),
    (State.ACTIVATING, Event.MISMATCH): lambda t: _location(
        t, 'legacy', add_location=[t.image('active', size=7)]),
    (State.ACTIVATING, Event.IMPORT_TIMEOUT): lambda t: _location(
        t, get=[t.image()], image_tasks=[[]]),
    # answers that prove nothing, deadlines (issue 18)
    (State.CREATING, Event.ANSWER_MISMATCH): lambda t: _create(
        t, create=[_mismatch()], get=[t.image()], list_images=[[]]),
    (State.CREATING, Event.DEADLINE): lambda t: _create(
        t, create=[_not_sent()]),
    (State.ACTIVATING, Event.ANSWER_MISMATCH): lambda t: _upload(
        t, upload=[_mismatch()], get=[t.image('active')]),
    (State.ACTIVATING, Event.DEADLINE): lambda t: _upload(
        t, upload=[_not_sent()]),
    (State.ACTIVE, Event.CONTRADICTED): _contradicted,
    # whatever the state (attempts.py)
    (State.PLANNED, Event.INTERRUPTED): _interrupt(State.PLANNED),
    (State.CREATING, Event.INTERRUPTED): _interrupt(State.CREATING),
    (State.CREATED, Event.INTERRUPTED): _interrupt(State.CREATED),
    (State.FOUND, Event.INTERRUPTED): _interrupt(State.FOUND),
    (State.ACTIVATING, Event.INTERRUPTED): _interrupt(State.ACTIVATING),
    (State.FAILED, Event.INTERRUPTED): _interrupt(State.FAILED),
    (State.FAILED, Event.CLEANUP_SAW_ACTIVE): _cleanup_saw_active,
}


#: What reading the image back finds, after a 409 on the create (from
#: ``planned``) or a lost answer (from ``creating``).
READ_BACK = {
    Event.ADOPTED: lambda t: t.image(),
    Event.FOREIGN: lambda t: {'id': IMAGE_ID, 'name': 'x',
                              'status': 'queued'},
    Event.CHANGED: lambda t: t.image(**CHANGED_NAME),
}
for _event, _found in READ_BACK.items():
    SCENARIOS[(State.PLANNED, _event)] = (
        lambda t, found=_found: _conflict(t, [found(t)]))
    SCENARIOS[(State.CREATING, _event)] = (
        lambda t, found=_found: _lost_create(t, [found(t)]))


class TestTable(TransitionTestBase):

    def test_every_pair_has_a_scenario(self):
        self.assertEqual(set(transitions.TRANSITIONS), set(SCENARIOS))

    def test_each_step_module_makes_each_move(self):
        for pair, scenario in sorted(SCENARIOS.items(),
                                     key=lambda i: str(i[0])):
            with self.subTest(pair=pair):
                self.moves.clear()
                self.record = self.make_service().build_record(
                    self.make_request())
                self.current = None
                outcome = scenario(self)
                if isinstance(outcome, Outcome):
                    # The step's answer: the engine moves on it.
                    engine, run, attempt = self.current
                    engine._end(run, attempt, outcome)
                self.assertIn(pair, self.moves)

    def test_no_move_outside_the_table(self):
        attempt = result_mod.Attempt(method='upload', disk_format='raw',
                                     container_format='bare', size=0)
        err = self.assertRaises(exception.InvalidTransition,
                                transitions.move, attempt, Event.ACCEPTED)
        self.assertIn("'planned'", str(err))
        self.assertIn("'accepted'", str(err))
        self.assertEqual((State.PLANNED, []), (attempt.state, attempt.trail))

    def test_move_records_the_state_once(self):
        attempt = self.attempt()
        transitions.move(attempt, Event.CREATE_SENT)
        transitions.move(attempt, Event.CREATED)
        self.assertEqual((State.CREATED, 'pending', True),
                         (attempt.state, attempt.outcome, attempt.created))
        transitions.move(attempt, Event.MEMBER_REFUSED)
        self.assertEqual(('failed', True), (attempt.outcome,
                                            attempt.created))
        self.assertEqual('failed', attempt.to_dict()['outcome'])
        self.assertNotIn('trail', attempt.to_dict())

    def test_ends_are_final_and_goings_on_are_not(self):
        for (state, event), move in transitions.TRANSITIONS.items():
            with self.subTest(state=state, event=event):
                if move.step is None:
                    self.assertNotIn(move.state,
                                     (State.ACTIVE, State.FAILED))
                    self.assertIs(Cleanup.NONE, move.cleanup)
                elif move.step is Step.ACTIVE:
                    self.assertIs(State.ACTIVE, move.state)
                else:
                    self.assertIs(State.FAILED, move.state)

    def test_page_is_generated_from_the_table(self):
        with open(PAGE, encoding='utf-8') as page:
            text = page.read()
        self.assertEqual(transitions.render_page(text), text,
                         'doc/source/attempts.rst differs from TRANSITIONS: '
                         'run tox -e transitions')
        for event in {e for _, e in transitions.TRANSITIONS}:
            self.assertIn(event.description, text)


class TestCleanup(TransitionTestBase):
    """The cleanup deletes what the table's row says, and only that."""

    def end(self, state, event, status, trail=()):
        glance = ScriptedGlance(get=[self.image(status)])
        engine, run = self.engine(glance)
        attempt = self.attempt(state, trail=trail)
        step, outcome = engine._end(run, attempt, Outcome(
            event, image=self.image('active'), error=_err()))
        return glance, attempt, step

    def test_each_ending_row_deletes_as_written(self):
        for (state, event), move in transitions.TRANSITIONS.items():
            if move.step in (None, Step.ACTIVE) or (
                    event is Event.INTERRUPTED):
                continue
            for status in ('queued', 'saving'):
                with self.subTest(state=state, event=event, status=status):
                    glance, attempt, step = self.end(state, event, status)
                    deleted = ('delete', IMAGE_ID) in glance.calls
                    expected = move.cleanup is Cleanup.POISONED or (
                        move.cleanup is Cleanup.IF_QUEUED and
                        status == 'queued')
                    self.assertEqual(expected, deleted)
                    self.assertEqual((move.step, expected),
                                     (step, attempt.cleaned_up))

    def test_active_on_the_reread_is_the_success(self):
        for (state, event), move in transitions.TRANSITIONS.items():
            if move.cleanup is Cleanup.NONE or event is Event.INTERRUPTED:
                continue
            with self.subTest(state=state, event=event):
                glance, attempt, step = self.end(state, event, 'active')
                self.assertEqual((Step.ACTIVE, State.ACTIVE, 'active'),
                                 (step, attempt.state, attempt.outcome))
                self.assertNotIn(('delete', IMAGE_ID), glance.calls)

    def test_an_active_image_it_cannot_vouch_for_is_no_success(self):
        # An uncertain create (or an interrupted one) reads back an active
        # image that is not this snapshot's record: it is neither the
        # snapshot's success nor named as left.
        for changes in ({'block_device_mapping': '[]'},
                        {'name': 'another record'}):
            for event in (Event.UNREADABLE, Event.INTERRUPTED):
                with self.subTest(changes=changes, event=event):
                    glance = ScriptedGlance(get=[self.image('active',
                                                            **changes)])
                    engine, run = self.engine(glance)
                    attempt = self.attempt(State.CREATING)
                    step, _ = engine._end(run, attempt,
                                          Outcome(event, error=_err()))
                    self.assertEqual((Step.STOP, State.FAILED, [], None),
                                     (step, attempt.state,
                                      run.result.leftover,
                                      run.result.image_id))

    def test_interrupt_never_deletes(self):
        # An interrupt says nothing about the other tries of this
        # snapshot: the image is read once and left in place, named.
        for state in (State.PLANNED, State.CREATING, State.CREATED,
                      State.FOUND, State.ACTIVATING):
            with self.subTest(state=state):
                glance = ScriptedGlance(get=[self.image('queued')])
                engine, run = self.engine(glance)
                attempt = self.attempt(state)
                raised = cleanup.interrupted(run, attempt,
                                             KeyboardInterrupt())
                self.assertIsInstance(raised, exception.SnapshotInterrupted)
                self.assertIs(run.result, raised.snapshot_result)
                self.assertNotIn(('delete', IMAGE_ID), glance.calls)
                named = [] if state is State.PLANNED else [IMAGE_ID]
                self.assertEqual((named, named, []),
                                 (run.result.leftover,
                                  run.result.left_in_place,
                                  run.result.unconfirmed))
                self.assertEqual(State.FAILED, attempt.state)

    def test_left_rows_read_once_and_name_the_image(self):
        for (state, event), move in transitions.TRANSITIONS.items():
            if move.cleanup is not Cleanup.LEFT or (
                    event is Event.INTERRUPTED):
                continue
            for status in ('queued', 'saving', None):
                with self.subTest(state=state, event=event, status=status):
                    glance = ScriptedGlance(get=[
                        self.image(status) if status else _err()])
                    engine, run = self.engine(glance)
                    attempt = self.attempt(state)
                    step, _ = engine._end(run, attempt,
                                          Outcome(event, error=_err()))
                    self.assertEqual([('get', IMAGE_ID)], glance.calls)
                    self.assertEqual((Step.STOP, [IMAGE_ID], {
                        IMAGE_ID: status}), (step, run.result.left_in_place,
                                             run.result.leftover_status))
                    # Named once, by the result: the attempt's reason
                    # (quoted by the failure message) stays its failure.
                    self.assertNotIn('left in place', attempt.reason)
                    self.assertIn('image(s) %s (%s) left in place' % (
                        IMAGE_ID, 'status %s' % status if status else
                        'status unknown: it could not be read'),
                        run.result.leftover_text())

    def test_system_exit_keeps_its_code(self):
        engine, run = self.engine(ScriptedGlance(get=[_not_found()]))
        raised = cleanup.interrupted(run, self.attempt(State.CREATED),
                                     SystemExit(143))
        self.assertIsInstance(raised, exception.SnapshotExit)
        self.assertEqual(143, raised.code)
        self.assertIs(run.result, raised.snapshot_result)

    def test_a_bug_is_raised_unchanged(self):
        engine, run = self.engine(ScriptedGlance(get=[_not_found()]))
        bug = ZeroDivisionError()
        self.assertIs(bug, cleanup.interrupted(
            run, self.attempt(State.ACTIVATING), bug))


class TestFailure(TransitionTestBase):

    def test_failure_carries_the_result_and_the_code(self):
        result = result_mod.SnapshotResult(image_id=None, name='n',
                                           status='failed')
        cause = _err(exception.GlanceForbidden, 403)
        err = exception.ActivationFailed(name='n', reason='r',
                                         result=result, cause=cause)
        self.assertEqual((result, 403, cause),
                         (err.result, err.code, err.__cause__))
        self.assertEqual(500, exception.ActivationFailed(
            name='n', reason='r', result=result).code)

    def test_typed_status(self):
        self.assertEqual(503, _err(status=503).status)
        self.assertIsNone(_err(status=None).status)
        # ActivationTimeout's status is the image's: no HTTP status.
        self.assertIsNone(exception.ActivationTimeout(
            image_id='i', timeout=1, status='saving').status)
