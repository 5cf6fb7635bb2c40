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

"""The ten inputs of issue 9, each with its right value, on a real Glance.

Every test puts the fault proxy (tests/functional/faultproxy.py) between
the plugin and the embedded Glance 33, runs the library the way a host
does (``SnapshotService`` loaded from the same configuration file the
CLI reads: keystoneauth defaults, a 3 s client timeout), and judges the
outcome from Glance's own view (a direct, un-proxied listing).  The same
kinds are unit-tested member by member in
tests/unit/snapshot/test_attempts.py.
"""

import json
import signal
import subprocess
import sys

from oslo_utils import uuidutils

from nova_snapshot_ext.cmd import checks
from nova_snapshot_ext import exception
from nova_snapshot_ext import opts
from nova_snapshot_ext.snapshot import identity
from nova_snapshot_ext.snapshot import request as request_mod
from nova_snapshot_ext.snapshot import service as service_mod
from tests import base
from tests.functional import base as fbase
from tests.functional import test_faults

IMAGE = r'^/v2/images/[^/]+$'
IMAGES = r'^/v2/images$'
FILE = r'^/v2/images/[^/]+/file$'


class ExactlyOnceBase(test_faults.FaultTestBase):

    def service(self, mode='upload', **overrides):
        conf = base.private_conf([self.conf_files[mode]])
        for name, value in overrides.items():
            conf.set_override(name, value, group=opts.CORE_GROUP)
        self.addCleanup(conf.reset)
        return service_mod.SnapshotService(conf)

    def request_dict(self, **changes):
        data = test_faults.fresh_request_dict(self.project_id, self.user_id)
        data.update(changes)
        return data

    def images(self):
        """(id, status) of this test's images, as Glance holds them."""
        self.settle()
        return sorted((i['id'], i['status']) for i in self.glance_view())

    def assertOnlyActive(self, image_id):
        self.assertEqual([(image_id, 'active')], self.images())

    def snapshot(self, svc, data):
        return svc.snapshot(request_mod.SnapshotRequest.from_dict(data))


class TestIssue9Inputs(ExactlyOnceBase):

    def test_input_1_get_503_after_upload(self):
        # Right value: exit 0 with the active image; the retry returns it.
        self.proxy.add_rule('GET', IMAGE, 'status', status=503,
                            times='always')
        svc = self.service()
        data = self.request_dict()
        result = self.snapshot(svc, data)
        self.assertEqual('active', result.status)
        self.proxy.clear()
        again = self.snapshot(svc, data)
        self.assertEqual((result.image_id, True), (again.image_id,
                                                   again.reused))
        self.assertOnlyActive(result.image_id)

    def test_input_1_member_upload_answer_lost_after_store(self):
        # The upload reached Glance, the answer was reset: success.
        self.proxy.add_rule('PUT', FILE, 'reset_after')
        result = self.snapshot(self.service(), self.request_dict())
        self.assertEqual('active', result.status)
        self.assertOnlyActive(result.image_id)

    def test_input_2_create_reaches_glance_late(self):
        # Right value: one active image (keystoneauth re-sends the create
        # after the timeout; the late POST meets 409), nothing unnamed.
        self.proxy.add_rule('POST', IMAGES, 'delay',
                            seconds=test_faults.DELAY)
        data = self.request_dict()
        result = self.snapshot(self.service(), data)
        self.assertOnlyActive(result.image_id)

    def test_input_2_member_create_always_late(self):
        # Every create times out (keystoneauth sends it 4 times).  Right
        # value: the engine reads the id back; it finishes the image that
        # landed late, or names the id and the retry adopts it -- one
        # image in all, never an unnamed one.
        self.proxy.add_rule('POST', IMAGES, 'delay',
                            seconds=test_faults.DELAY, times='always')
        svc = self.service()
        data = self.request_dict()
        try:
            result = self.snapshot(svc, data)
        except exception.ActivationFailed as err:
            image_id = err.result.attempts[0].image_id
            self.assertIn(image_id, err.format_message())
            self.proxy.clear()
            result = self.snapshot(svc, data)
            self.assertEqual(image_id, result.image_id)
        self.proxy.clear()
        self.assertOnlyActive(result.image_id)
        again = self.snapshot(svc, data)
        self.assertEqual(result.image_id, again.image_id)

    def test_input_2_member_ctrl_c_while_create_in_flight(self):
        # The CLI interrupted while its create is held in the proxy: any
        # image that lands is this snapshot's and the retry adopts it.
        # The CLI starts with SIGINT at its default (a runner started as
        # a background job passes it on ignored: the CLI finished and
        # exited 0, as it should when Ctrl-C cannot reach it).  The proxy
        # itself sends the SIGINT on the create's arrival and holds the
        # create until the CLI has exited, so no stall of the test
        # process lets the CLI re-send the create and finish first.
        path = self.write_request(self.request_dict())
        procs, held = [], []

        def interrupt_and_hold():
            procs[0].send_signal(signal.SIGINT)
            try:
                procs[0].wait(timeout=120)
            except subprocess.TimeoutExpired:
                held.append('the CLI did not exit within 120 s of SIGINT')
        self.proxy.add_rule('POST', IMAGES, 'hook', hook=interrupt_and_hold)
        procs.append(self._cli_popen(path))
        proc = procs[0]
        out, errout = proc.communicate(timeout=240)
        self.assertEqual([], held)
        self.assertNotIn('Traceback', errout)
        self.assertNotEqual(0, proc.returncode)
        self.assertEqual(checks.EXIT_SIGINT, proc.returncode, errout)
        self.settle()
        # The held create was the only one; what it made is named.
        self.assertEqual(1, self.proxy.count('POST', IMAGES), out)
        for image_id, _ in self.images():
            self.assertIn(image_id, out + errout)
        self.proxy.clear()
        retry, retry_id = self.run_cli('upload', path)
        self.assertEqual(0, retry.returncode, retry.stderr)
        self.assertOnlyActive(retry_id)

    def _interrupted_cli(self, path, method, path_re, signum):
        """Run ``snapshot``, interrupted once the proxy saw a request.

        ``signum`` is sent when ``method path_re`` has reached the proxy.

        :returns: ``(process, stdout, stderr)`` after it exited.
        """
        proc = self._cli_popen(path)
        self._wait_seen(method, path_re)
        proc.send_signal(signum)
        out, errout = proc.communicate(timeout=120)
        return proc, out, errout

    def _cli_popen(self, path):
        return subprocess.Popen(
            [sys.executable, '-m', 'nova_snapshot_ext.cmd.main', 'snapshot',
             '--config-file', self.conf_files['upload'], '--format',
             'json', path], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, preexec_fn=test_faults.sigint_at_default)

    def test_second_signal_during_interrupt_cleanup(self):
        # design.md rules 3 and 10: Ctrl-C while the create's answer is
        # held (Glance made the image), then a second SIGINT or SIGTERM
        # while the cleanup's read-back is held.  Right value: the image
        # is deleted or named (left/unconfirmed), and the message claims
        # no cleanup that did not happen.
        for second in (signal.SIGINT, signal.SIGTERM):
            self.proxy.clear()
            self.proxy.add_rule('POST', IMAGES, 'delay', seconds=4,
                                when='after')
            self.proxy.add_rule('GET', IMAGE, 'delay', seconds=4,
                                times='always')
            self.proxy.add_rule('DELETE', IMAGE, 'delay', seconds=4,
                                times='always')
            before = {i for i, _ in self.images()}
            proc = self._cli_popen(self.write_request(self.request_dict()))
            self._wait_seen('POST', IMAGES)
            proc.send_signal(signal.SIGINT)
            self._wait_seen('GET', IMAGE)
            proc.send_signal(second)
            out, errout = proc.communicate(timeout=120)
            self.assertNotIn('Traceback', errout)
            self.assertEqual(130, proc.returncode, errout)
            report = json.loads(out)
            named = set(report['left']) | set(report['unconfirmed'])
            self.proxy.clear()
            held = {i for i, status in self.images()
                    if status != 'active'} - before
            self.assertEqual(set(), held - named,
                             'unnamed images: %s' % report)
            # No DELETE could be sent: Glance holds the image, named.
            self.assertEqual(1, len(held), report)
            self.assertNotIn('cleaned up', report['error'])
            self.assertIn('second signal cut the cleanup short',
                          report['error'])
            for image_id in held:
                self.assertIn(image_id, errout)
            for image_id in held:
                self.client_for(roles=fbase.MEMBER_ROLES).images.delete(
                    image_id)

    def _wait_seen(self, method, path, timeout=60):
        # On arrival, not once answered: a request held by a ``delay``
        # rule is only recorded after it was forwarded, by which time the
        # client may have re-sent it and finished.
        self.assertTrue(self.proxy.wait_arrival(method, path, 1, timeout),
                        '%s %s never reached the proxy' % (method, path))

    def test_input_3_schema_cut_mid_body(self):
        # Right value: the product's Glance error (no traceback), nothing
        # created; the retry succeeds.
        self.proxy.add_rule('GET', r'^/v2/schemas/image$', 'truncate',
                            times='always')
        svc = self.service()
        data = self.request_dict()
        err = self.assertRaises(exception.GlanceError, self.snapshot, svc,
                                data)
        self.assertIn('schema', err.format_message())
        self.assertEqual([], self.images())
        self.proxy.clear()
        result = self.snapshot(svc, data)
        self.assertOnlyActive(result.image_id)

    def test_input_3_cli_no_traceback(self):
        self.proxy.add_rule('GET', r'^/v2/schemas/image$', 'truncate',
                            times='always')
        proc, _ = self.run_cli('upload', self.write_request(
            self.request_dict()))
        self.assertNotIn('Traceback', proc.stderr)
        self.assertIn(proc.returncode, (1, 3))

    def test_input_4_upload_503_then_delete_503(self):
        # Right value (issue 9 input 4, revised by the cleanup race fix):
        # a 503 on the upload says nothing about the other tries of this
        # snapshot, one of which may be finishing the image; it is left
        # in place and named, no DELETE is sent, and the retry adopts it.
        self.proxy.add_rule('PUT', FILE, 'status', status=503)
        self.proxy.add_rule('DELETE', IMAGE, 'status', status=503)
        svc = self.service()
        data = self.request_dict()
        err = self.assertRaises(exception.ActivationFailed, self.snapshot,
                                svc, data)
        left = err.result.left_in_place
        self.assertEqual(1, len(left), err.format_message())
        self.assertEqual(left, err.result.leftover)
        self.assertEqual([(left[0], 'queued')], self.images())
        self.assertEqual(0, self.proxy.count('DELETE', IMAGE))
        self.assertIn('%s (status queued) left in place' % left[0],
                      err.format_message())
        self.assertEqual(checks.EXIT_UNREACHABLE,
                         checks.activation_failure(err)[1])
        result = self.snapshot(svc, data)
        self.assertEqual((left[0], True), (result.image_id, result.reused))
        self.assertOnlyActive(result.image_id)

    def test_input_4_refused_upload_then_delete_503(self):
        # A refusal every try meets (400 on the upload) is still cleaned
        # up, and the failed delete is tried again.
        self.proxy.add_rule('PUT', FILE, 'status', status=400)
        self.proxy.add_rule('DELETE', IMAGE, 'status', status=503)
        svc = self.service()
        data = self.request_dict()
        err = self.assertRaises(exception.ActivationFailed, self.snapshot,
                                svc, data)
        self.assertEqual(([], []), (err.result.leftover,
                                    err.result.left_in_place))
        self.assertEqual([], self.images())
        self.assertEqual(2, self.proxy.count('DELETE', IMAGE))

    def test_input_5_sigterm_during_upload(self):
        # Right value: no exit -15; the image is cleaned (or active and
        # reported); the retry converges on one image.
        self.proxy.add_rule('PUT', FILE, 'delay', seconds=30,
                            when='before')
        path = self.write_request(self.request_dict())
        proc, out, errout = self._interrupted_cli(path, 'PUT', FILE,
                                                  signal.SIGTERM)
        self.assertNotEqual(-signal.SIGTERM, proc.returncode, errout)
        self.assertNotIn('Traceback', errout)
        self.proxy.clear()
        left = [i for i, status in self.images() if status != 'active']
        for image_id in left:
            self.assertIn(image_id, out + errout)
        retry, retry_id = self.run_cli('upload', path)
        self.assertEqual(0, retry.returncode, retry.stderr)
        self.assertIn((retry_id, 'active'), self.images())
        self.assertEqual(1, len([s for _, s in self.images()
                                 if s == 'active']))

    def test_input_6_image_id_upload_503_once_then_retry(self):
        # Right value: the retry succeeds (it adopts the image left).
        self.proxy.add_rule('PUT', FILE, 'status', status=503)
        svc = self.service()
        data = self.request_dict(image_id=self.new_uuid())
        err = self.assertRaises(exception.ActivationFailed, self.snapshot,
                                svc, data)
        # left in place, named, for the retry to adopt
        self.assertEqual([(data['image_id'], 'queued')], self.images())
        self.assertEqual([data['image_id']], err.result.left_in_place)
        for _ in range(2):
            result = self.snapshot(svc, data)
            self.assertOnlyActive(result.image_id)

    def test_input_7_second_run_read_back_faults(self):
        # Right value: the first run's active image is never deleted.
        svc = self.service()
        data = self.request_dict(image_id=self.new_uuid())
        first = self.snapshot(svc, data)
        for action, kwargs in (('truncate', {}), ('reset_before', {}),
                               ('reset_after', {}),
                               ('status', {'status': 503})):
            self.proxy.add_rule('GET', IMAGE, action, times='always',
                                **kwargs)
            err = self.assertRaises(exception.SnapshotExtException,
                                    self.snapshot, svc, data)
            self.assertIn(first.image_id, err.format_message())
            self.proxy.clear()
            self.assertOnlyActive(first.image_id)
            self.assertEqual(0, self.proxy.count('DELETE', IMAGE))
        again = self.snapshot(svc, data)
        self.assertEqual(first.image_id, again.image_id)

    def test_input_8_existing_queued_image_not_ours(self):
        # Right value: neither activated nor deleted; a clear conflict.
        svc = self.service()
        data = self.request_dict(image_id=self.new_uuid())
        record = svc.build_record(request_mod.SnapshotRequest.from_dict(
            data))
        kwargs = record.create_kwargs('raw', 'bare')
        kwargs.pop(identity.FINGERPRINT_PROPERTY)
        self.client_for(self.project_id).images.create(**kwargs)
        self.proxy.add_rule('PUT', FILE, 'status', status=500)
        err = self.assertRaises(exception.ActivationFailed, self.snapshot,
                                svc, data)
        self.assertEqual(409, err.code)
        self.assertIn(data['image_id'], err.format_message())
        self.assertEqual([(data['image_id'], 'queued')], self.images())
        self.assertEqual(0, self.proxy.count('PUT', FILE))
        self.assertEqual(0, self.proxy.count('DELETE', IMAGE))

    def test_input_9_changed_metadata_is_a_conflict(self):
        # Decision: refuse with a clear conflict; the image stays as made.
        svc = self.service()
        data = self.request_dict(image_id=self.new_uuid(),
                                 metadata={'tier': 'gold'})
        first = self.snapshot(svc, data)
        data['metadata'] = {'tier': 'bronze'}
        err = self.assertRaises(exception.ActivationFailed, self.snapshot,
                                svc, data)
        self.assertEqual(409, err.code)
        self.assertIn('tier', err.format_message())
        self.assertIn(first.image_id, err.format_message())
        image = self.admin_client().images.get(first.image_id)
        self.assertEqual(('active', 'gold'), (image['status'],
                                              image['tier']))

    def test_input_10_versions_503_in_location_mode(self):
        # Right value: not a configuration error; retried (keystoneauth)
        # and the snapshot goes through the location.
        self.proxy.add_rule('GET', r'^/versions$', 'status', status=503)
        svc = self.service('location', location_api='new')
        result = self.snapshot(svc, self.request_dict())
        self.assertEqual('location', result.attempts[-1].method)
        self.assertOnlyActive(result.image_id)

    def test_input_10_member_versions_down_is_not_cached(self):
        self.proxy.add_rule('GET', r'^/versions$', 'status', status=503,
                            times='always')
        svc = self.service('location', location_api='new')
        err = self.assertRaises(exception.GlanceUnavailable, self.snapshot,
                                svc, self.request_dict())
        self.assertNotIsInstance(err, exception.ConfigurationError)
        self.assertEqual([], self.images())
        self.proxy.clear()
        result = self.snapshot(svc, self.request_dict())
        self.assertEqual('location', result.attempts[-1].method)
        self.assertOnlyActive(result.image_id)

    @staticmethod
    def new_uuid():
        return uuidutils.generate_uuid()


class TestLateCreateAnswer(ExactlyOnceBase):
    """Glance made the image; its create's answer came after the timeout.

    The fake driver's plan (the matrix's flaky cell, seen once under
    load): the image Glance made must be adopted, or named, never left
    queued beside the reported one.
    """

    DRIVER = 'fake'

    def _judge(self, times):
        self.proxy.add_rule('POST', IMAGES, 'delay',
                            seconds=test_faults.DELAY, when='after',
                            times=times)
        svc = self.service()
        data = self.request_dict()
        try:
            result = self.snapshot(svc, data)
        except exception.ActivationFailed as err:
            self.proxy.clear()
            held = [i for i, status in self.images() if status != 'active']
            named = err.format_message()
            for image_id in held:
                self.assertIn(image_id, named)
            result = self.snapshot(svc, data)
        self.proxy.clear()
        self.assertOnlyActive(result.image_id)

    def test_create_answer_late_once(self):
        self._judge('once')

    def test_create_answer_always_late(self):
        self._judge('always')


class TestLostCreateUnreadableReadBack(ExactlyOnceBase):
    """The create's answer is lost, the re-send meets 409, the read fails.

    Glance made the image (``reset_after``: the answer is lost),
    keystoneauth sends the create again and meets 409, and the read-back
    of the image is faulted.  This run's own create made the image: it is
    named in the error and in the JSON's ``left``, the step named is the
    adopt's read-back, and a cut answer from a reached Glance exits 1.
    """

    def _fault(self, action, **kwargs):
        self.proxy.add_rule('POST', IMAGES, 'reset_after')
        self.proxy.add_rule('GET', IMAGE, action, times='always', **kwargs)

    def test_library_names_the_image(self):
        for action, kwargs in (('truncate', {}),
                               ('status', {'status': 500})):
            with self.subTest(action=action):
                self._fault(action, **kwargs)
                svc = self.service()
                data = self.request_dict()
                err = self.assertRaises(exception.ActivationFailed,
                                        self.snapshot, svc, data)
                self.proxy.clear()
                held = [i for i, status in self.images()
                        if status == 'queued']
                self.assertEqual(1, len(held), self.images())
                message = err.format_message()
                self.assertIn(held[0], err.result.leftover)
                self.assertIn(held[0], err.result.left_in_place)
                self.assertIn('adopt of image %s' % held[0], message)
                self.assertNotIn('nothing was changed', message)
                result = self.snapshot(svc, data)
                self.assertEqual(held[0], result.image_id)
                self.assertOnlyActive(result.image_id)
                self.client_for().images.delete(result.image_id)

    def test_cli_truncated_read_back_exits_1_naming_the_image(self):
        self._fault('truncate')
        proc, _ = self.run_cli('upload', self.write_request(
            self.request_dict()))
        self.proxy.clear()
        held = [i for i, status in self.images() if status == 'queued']
        self.assertEqual(1, len(held), self.images())
        report = json.loads(proc.stdout)
        self.assertEqual((1, checks.EXIT_FAILED),
                         (proc.returncode, report.get('exit_code')))
        self.assertEqual(held, report['left'])
        self.assertEqual(held, report['result']['leftover'])
        self.assertNotIn('could not be reached', report['error'])
        self.assertNotIn('nothing was changed', report['error'])
        self.assertNotIn('Traceback', proc.stderr)


class TestWebobJsonErrorBodies(ExactlyOnceBase):
    """Glance's flat JSON error body (Accept: application/json) is read.

    The proxy answers as Glance answers a request whose ``Accept`` is
    ``application/json`` (webob: ``{"message", "code", "title"}``).
    """

    @staticmethod
    def flat(status, title, message):
        return json.dumps({'message': message,
                           'code': '%d %s' % (status, title),
                           'title': title}).encode()

    def test_415_on_the_upload_tries_the_next_format(self):
        self.proxy.add_rule('PUT', FILE, 'answer', status=415, body=self.flat(
            415, 'Unsupported Media Type', 'Image disk_format raw does not '
            'match the data'))
        svc = self.service()
        result = self.snapshot(svc, self.request_dict())
        self.assertNotEqual('raw', result.disk_format)
        self.assertEqual(2, len(result.attempts))
        self.assertTrue(result.attempts[0].cleaned_up)
        self.assertOnlyActive(result.image_id)

    def test_403_on_the_create_is_a_refusal(self):
        self.proxy.add_rule('POST', IMAGES, 'answer', status=403,
                            times='always', body=self.flat(
                                403, 'Forbidden', 'You are not authorized '
                                'to complete add_image action.'))
        svc = self.service()
        err = self.assertRaises(exception.SnapshotExtException,
                                self.snapshot, svc, self.request_dict())
        message = err.format_message()
        self.assertIn('add_image', message)
        self.assertNotIn('not confirmed', message)
        self.assertNotIn('unreadable', message)
        self.assertEqual([], err.result.unconfirmed)
        self.assertEqual([], self.images())
