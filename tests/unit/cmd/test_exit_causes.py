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

"""One exit status per cause (doc/source/cli.rst "Exit status by cause")."""

import io
import json
import os
from unittest import mock

import fixtures
from glanceclient import exc as gexc

from nova_snapshot_ext.cmd import checks
from nova_snapshot_ext.cmd import main
from nova_snapshot_ext import exception
from nova_snapshot_ext.image import glance
from tests import base


def _failed(cause):
    err = exception.ActivationFailed(name='s', reason='r')
    err.__cause__ = cause
    return err


class TestExitByCause(base.TestCase):

    def test_gateway_statuses_are_one_cause(self):
        for err in (gexc.HTTPServiceUnavailable('x'),
                    gexc.HTTPBadGateway('x'),
                    gexc.HTTPException('HTTP 504 Gateway Timeout')):
            ours = glance.translate(err, 'get')
            self.assertIsInstance(ours, exception.GlanceUnavailable)
            self.assertEqual(checks.EXIT_UNREACHABLE,
                             checks.glance_error(ours)[1])
        ours = glance.translate(gexc.HTTPInternalServerError('x'), 'get')
        self.assertNotIsInstance(ours, exception.GlanceUnavailable)
        self.assertEqual(checks.EXIT_FAILED, checks.glance_error(ours)[1])

    def test_a_failed_snapshot_exits_by_its_cause(self):
        cases = (
            (exception.GlanceForbidden(operation='upload', reason='r',
                                       status=401), checks.EXIT_UNREACHABLE),
            (exception.GlanceUnavailable(operation='upload', reason='r'),
             checks.EXIT_UNREACHABLE),
            (exception.GlanceDeadlineExceeded(
                operation='upload', reason='r', deadline=6, which='w'),
             checks.EXIT_UNREACHABLE),
            (exception.GlanceError(operation='upload', reason='r',
                                   status=500), checks.EXIT_FAILED),
            (exception.ImageFormatRejected(operation='upload', reason='r',
                                           status=415, image_id='i',
                                           disk_format='raw'),
             checks.EXIT_FAILED),
            (None, checks.EXIT_FAILED))
        for cause, code in cases:
            message, got = checks.activation_failure(_failed(cause))
            self.assertEqual(code, got, cause)
        message, _ = checks.activation_failure(_failed(cases[0][0]))
        self.assertIn('snapshot_ext_glance', message)

    def test_a_deadline_on_a_reached_glance_is_glance_failing(self):
        # Whichever step met it (read, create, member add, upload,
        # location add): Glance was reached and answered too slowly, or
        # the snapshot ran out of time -- exit 1, never "unreachable".
        for operation in ('get', 'create', 'add member', 'upload',
                          'add location'):
            for kwargs in ({'reached': True, 'sent': True},
                           {'reached': True, 'sent': False}):
                err = exception.GlanceDeadlineExceeded(
                    operation=operation, reason='r', deadline=6, which='w',
                    **kwargs)
                self.assertFalse(exception.unreachable(err))
                self.assertEqual(checks.EXIT_FAILED,
                                 checks.glance_error(err)[1])
                self.assertEqual(checks.EXIT_FAILED,
                                 checks.activation_failure(_failed(err))[1])
                self.assertNotIn('could not be reached',
                                 checks.glance_error(err)[0])
        # No connection was made before the deadline: not reached.
        err = exception.GlanceDeadlineExceeded(
            operation='upload', reason='r', deadline=6, which='w',
            reached=False, sent=True)
        self.assertEqual(checks.EXIT_UNREACHABLE,
                         checks.activation_failure(_failed(err))[1])

    def test_a_deadline_on_versions_says_reached_or_not(self):
        from unittest import mock

        glance_client = mock.Mock(endpoint='http://glance.test:9292')
        glance_client.session.auth = None
        for reached, code, words in (
                (True, checks.EXIT_FAILED, 'was reached but failed'),
                (False, checks.EXIT_UNREACHABLE, 'could not be reached')):
            glance_client.api_versions.side_effect = [
                exception.GlanceDeadlineExceeded(
                    operation='versions', reason='r', deadline=6,
                    which='w', reached=reached, sent=True)] * 2
            cli = self.assertRaises(checks.CLIError, checks.check_glance,
                                    self.conf, glance_client)
            self.assertEqual(code, cli.code)
            self.assertIn(words, cli.message)


class TestVersionsAtConnect(base.TestCase):
    """GET /versions at connect: a blip is asked again; words by proof."""

    def check(self, *answers):
        from unittest import mock

        glance_client = mock.Mock(endpoint='http://glance.test:9292')
        glance_client.session.auth = None
        glance_client.api_versions.side_effect = list(answers)
        return checks.check_glance(self.conf, glance_client)

    def test_one_blip_is_asked_again(self):
        for blip in (exception.GlanceError(operation='versions', reason='x',
                                           status=500),
                     exception.GlanceMalformedAnswer(operation='versions',
                                                     reason='garbled')):
            self.assertEqual(['v2.17'], self.check(
                blip, [{'id': 'v2.17'}]))

    def test_persistent_500_is_glance_failing(self):
        err = exception.GlanceError(operation='versions', reason='x',
                                    status=500)
        cli = self.assertRaises(checks.CLIError, self.check, err, err)
        self.assertEqual(checks.EXIT_FAILED, cli.code)
        self.assertNotIn('not a Glance', cli.message)

    def test_not_glance_only_when_the_answer_shows_it(self):
        garbled = exception.GlanceMalformedAnswer(operation='versions',
                                                  reason='garbled')
        cli = self.assertRaises(checks.CLIError, self.check, garbled,
                                garbled)
        self.assertIn('or a failing one', cli.message)
        cli = self.assertRaises(checks.CLIError, self.check,
                                [{'id': 'v1.0'}])
        self.assertIn('is not a Glance image API', cli.message)
        self.assertEqual(checks.EXIT_UNREACHABLE, cli.code)


class TestOverQuotaIsOneCause(base.TestCase):
    """Kind: over the project's Glance quota, before or at the create."""

    def setUp(self):
        super().setUp()
        self.stdout = self.useFixture(fixtures.MonkeyPatch(
            'sys.stdout', io.StringIO())).new_value
        self.useFixture(fixtures.MonkeyPatch('sys.stderr', io.StringIO()))
        self.conf = os.path.join(
            self.useFixture(fixtures.TempDir()).path, 'c.conf')
        open(self.conf, 'w').close()

    def _exit(self, err, *extra):
        def handler(conf):
            raise err
        with mock.patch.dict(main.HANDLERS, snapshot=handler):
            return main.main(['snapshot', 'r.json', '--config-file',
                              self.conf] + list(extra))

    def test_cinder_refused_or_unreachable_is_exit_3(self):
        # As for Glance: Cinder's credentials refused or Cinder down is
        # "cannot reach or authenticate", a Cinder 500 a failure.
        for err, code in (
                (exception.CinderForbidden(operation='read', reason='401',
                                           snapshot_id='s'),
                 checks.EXIT_UNREACHABLE),
                (exception.CinderUnavailable(operation='list', reason='r',
                                             snapshot_id='(all)'),
                 checks.EXIT_UNREACHABLE),
                (exception.CinderError(operation='delete', reason='500',
                                       snapshot_id='s'),
                 checks.EXIT_FAILED)):
            self.assertEqual(code, self._exit(err), type(err).__name__)

    def _paths(self, resource):
        preflight = exception.GlanceQuotaExceeded(
            project='p', resource=resource,
            reason='%s: uses 10 of 10' % resource)
        at_create = exception.ActivationFailed(
            name='s', reason='r', cause=exception.GlanceOverLimit(
                operation='create', status=413,
                reason='Resource %s is over limit' % resource))
        return preflight, at_create

    def test_preflight_and_glance_refusal_exit_alike(self):
        for resource in ('image_count_total', 'image_count_uploading',
                         'image_size_total'):
            preflight, at_create = self._paths(resource)
            codes = {self._exit(preflight), self._exit(at_create)}
            # 1, "the operation failed" (README, cli.rst): a quota that a
            # cleanup or a wait can lift, never 2 ("change the input").
            self.assertEqual({1}, codes, resource)

    def test_json_says_the_same_code(self):
        for err in self._paths('image_count_total'):
            self.stdout.seek(0)
            self.stdout.truncate()
            self.assertEqual(1, self._exit(err, '--format', 'json'))
            self.assertEqual(1, json.loads(self.stdout.getvalue())[
                'exit_code'])

    def test_other_preflight_refusals_stay_bad_input(self):
        # A record Glance refuses whatever the usage: change the input.
        err = exception.PropertyQuotaExceeded(count=200, quota=128)
        self.assertEqual(checks.EXIT_INPUT, self._exit(err))


class TestVersionsCutAtConnect(base.TestCase):
    """Kind: GET /versions answered, its body cut mid-answer (twice).

    The real :class:`~nova_snapshot_ext.image.glance.GlanceClient` over
    glanceclient (faked at its boundary), whose ``versions.list`` raises
    what the layers under it raise for a body that did not come whole.
    """

    def cuts(self):
        import http.client

        from keystoneauth1 import exceptions as ks_exc
        import requests
        import urllib3

        return (
            requests.exceptions.ChunkedEncodingError('cut mid-body'),
            http.client.IncompleteRead(b'{"versions": [{"i'),
            base.chained(ks_exc.UnknownConnectionError('x', None),
                         requests.exceptions.ChunkedEncodingError(
                             urllib3.exceptions.ProtocolError(
                                 'Connection broken', http.client.
                                 IncompleteRead(b'{"ver', 40)))),
        )

    def setUp(self):
        super().setUp()
        from tests.unit import fake_glanceclient

        self.fake = self.useFixture(
            fake_glanceclient.FakeGlanceFixture()).glance
        self.client = glance.GlanceClient(session=mock.Mock(),
                                          endpoint_override=(
                                              'http://glance.test:9292'))

    def test_a_cut_versions_answer_is_glance_failing(self):
        for cut in self.cuts():
            with self.subTest(cut=repr(cut)):
                self.fake.failures['versions'] = [cut, cut]
                cli = self.assertRaises(checks.CLIError,
                                        checks.check_glance, self.conf,
                                        self.client)
                self.assertEqual(checks.EXIT_FAILED, cli.code)
                self.assertNotIn('could not be reached', cli.message)
                self.assertIn('GET /versions', cli.message)
                self.assertIn('Glance was reached but its answer was cut '
                              'short', cli.message)
                self.assertEqual([], self.fake.failures['versions'])

    def test_one_cut_is_asked_again(self):
        self.fake.failures['versions'] = [self.cuts()[0]]
        self.assertIn('v2.17', checks.check_glance(self.conf, self.client))

    def test_a_reset_before_any_answer_is_still_unreachable(self):
        import requests

        reset = requests.exceptions.ConnectionError('reset by peer')
        self.fake.failures['versions'] = [reset, reset]
        cli = self.assertRaises(checks.CLIError, checks.check_glance,
                                self.conf, self.client)
        self.assertEqual(checks.EXIT_UNREACHABLE, cli.code)
        self.assertIn('could not be reached', cli.message)


class TestVersionsFailureTable(base.TestCase):
    """One table decides how a failed GET /versions is told and exits."""

    def told(self, err):
        template, code = checks.versions_failure(err)
        return template.format(
            where='http://g', option='endpoint', status=err.status,
            group='snapshot_ext_glance', message=err.format_message(),
            reason=err.kwargs.get('reason')), code

    def test_each_kind_of_failure(self):
        cases = [
            (exception.GlanceUnavailable(operation='versions',
                                         reason='refused'),
             'could not be reached: refused', checks.EXIT_UNREACHABLE),
            (exception.GlanceAnswerCut(operation='versions', reason='cut'),
             'failed to answer GET /versions (asked twice): cut',
             checks.EXIT_FAILED),
            (exception.GlanceDeadlineExceeded(
                operation='versions', deadline=5, which='read timeout',
                reason='slow',
                reached=True),
             'was reached but failed to answer GET /versions in time',
             checks.EXIT_FAILED),
            (exception.GlanceForbidden(operation='versions', status=401,
                                       reason='no token'),
             'refused the credentials (HTTP 401): set [snapshot_ext_glance]'
             ' auth_type', checks.EXIT_UNREACHABLE),
            (exception.GlanceMalformedAnswer(operation='versions',
                                             reason='not JSON'),
             'no readable version list (not JSON)', checks.EXIT_UNREACHABLE),
            (exception.GlanceError(operation='versions', status=502,
                                   reason='bad gateway'),
             '(HTTP 502, twice): bad gateway', checks.EXIT_FAILED),
            # A class with no row of its own: the last, not a crash.
            (exception.GlanceConflict(operation='versions', status=409,
                                      reason='odd'),
             'is not a Glance image API: GET /versions answered HTTP 409',
             checks.EXIT_UNREACHABLE),
        ]
        for err, words, code in cases:
            text, exit_code = self.told(err)
            self.assertIn(words, text, type(err).__name__)
            self.assertEqual(code, exit_code, type(err).__name__)
