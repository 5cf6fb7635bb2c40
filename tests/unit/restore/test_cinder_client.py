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

"""What restore adds to the Cinder client: paging, reasons, identity.

Paging through backups and Cinder's ``badRequest`` reasons are covered
end to end in :mod:`tests.unit.cinder.test_client_backups`; here the
edges of :func:`next_marker` and :func:`answered_reason`, and
:attr:`CinderClient.project_id` and :meth:`CinderClient.sibling`.
"""

from keystoneauth1 import exceptions as ks_exc
from keystoneauth1 import session as ks_session

from nova_snapshot_ext.cinder import client as cinder_mod
from nova_snapshot_ext import exception
from tests import base
from tests.unit.restore import fakes


class TestNextMarker(base.TestCase):

    def test_short_page_is_the_last(self):
        self.assertIsNone(cinder_mod.next_marker([{'id': 'a'}], 2, None))
        self.assertIsNone(cinder_mod.next_marker([], 2, 'a'))

    def test_full_page_goes_on_from_its_last_id(self):
        self.assertEqual('b', cinder_mod.next_marker(
            [{'id': 'a'}, {'id': 'b'}], 2, None))
        self.assertEqual('7', cinder_mod.next_marker([{'id': 7}], 1, '6'))

    def test_full_page_without_a_last_id_ends(self):
        for last in ({}, {'id': ''}, {'id': None}, 'b', None):
            self.assertIsNone(cinder_mod.next_marker([{'id': 'a'}, last], 2,
                                                     None))

    def test_page_ending_where_it_began_ends(self):
        # A server ignoring the marker would answer the same page forever.
        self.assertIsNone(cinder_mod.next_marker(
            [{'id': 'a'}, {'id': 'b'}], 2, 'b'))


class _Response:

    def __init__(self, body):
        self.body = body

    def json(self):
        if isinstance(self.body, bytes):
            raise ValueError('not JSON')
        return self.body


def http_error(body, cls=ks_exc.BadRequest, status=400):
    return cls(http_status=status, response=_Response(body))


class TestAnsweredReason(base.TestCase):

    def test_openstack_fault_message_with_the_status(self):
        err = http_error({'badRequest': {'code': 400, 'message':
                                         ' Invalid backup:\n  busy. '}})
        self.assertEqual('Invalid backup: busy. (HTTP 400)',
                         cinder_mod.answered_reason(err))
        err = http_error({'overLimit': {'message': 'VolumeLimitExceeded'}},
                         ks_exc.RequestEntityTooLarge, 413)
        self.assertEqual('VolumeLimitExceeded (HTTP 413)',
                         cinder_mod.answered_reason(err))

    def test_long_message_cut(self):
        err = http_error({'badRequest': {'message': 'x' * 900}})
        self.assertEqual('x' * 500 + ' (HTTP 400)',
                         cinder_mod.answered_reason(err))

    def test_no_fault_body_no_reason(self):
        for body in (b'<html/>', [], {}, {'a': {'message': 'x'},
                                          'b': {'message': 'y'}},
                     {'badRequest': 'text'}, {'badRequest': {}},
                     {'badRequest': {'message': '  '}},
                     {'badRequest': {'message': 400}}):
            self.assertIsNone(cinder_mod.answered_reason(http_error(body)),
                              body)

    def test_not_an_answer_no_reason(self):
        self.assertIsNone(cinder_mod.answered_reason(
            ks_exc.ConnectFailure('refused')))
        self.assertIsNone(cinder_mod.answered_reason(
            ks_exc.BadRequest(http_status=400)))
        self.assertIsNone(cinder_mod.answered_reason(ValueError('x')))

    def test_translated_error_keeps_it(self):
        err = cinder_mod.translate(
            http_error({'badRequest': {'message': 'Invalid volume'}}),
            'restore', resource='backup b-1')
        self.assertEqual('Cinder restore of backup b-1 failed: Invalid '
                         'volume (HTTP 400)', err.format_message())


class TestIdentity(base.TestCase):

    def client(self, auth, **options):
        options.setdefault('connect_retries', 0)
        return cinder_mod.CinderClient.for_auth(ks_session.Session(),
                                                auth=auth, **options)

    def test_project_id_from_the_token(self):
        auth = fakes.FakeAuth('http://127.0.0.1:9/v3', 'p-7')
        self.assertEqual('p-7', self.client(auth).project_id)

    def test_unscoped_token_refused(self):
        auth = fakes.FakeAuth('http://127.0.0.1:9/v3', None)
        err = self.assertRaises(exception.ConfigurationError,
                                lambda: self.client(auth).project_id)
        self.assertIn('[snapshot_ext_cinder] auth_type', err.format_message())
        self.assertIn('act in no project', err.format_message())

    def test_credentials_refused(self):
        auth = fakes.FakeAuth(
            'http://127.0.0.1:9/v3', error=ks_exc.Unauthorized('bad'))
        err = self.assertRaises(exception.CinderForbidden,
                                lambda: self.client(auth).project_id)
        self.assertIn('the project of the credentials', err.format_message())

    def test_no_credentials_at_all(self):
        err = self.assertRaises(exception.CinderError,
                                lambda: self.client(None).project_id)
        self.assertNotIsInstance(err, exception.CinderForbidden)
        self.assertIn('the project of the credentials', err.format_message())

    def test_a_bug_is_raised_as_it_came(self):
        auth = fakes.FakeAuth('http://127.0.0.1:9/v3',
                              error=RuntimeError('a bug'))
        self.assertRaises(RuntimeError, lambda: self.client(auth).project_id)

    def test_sibling_reaches_another_service_as_the_client(self):
        auth = fakes.FakeAuth('http://127.0.0.1:9/v3')
        client = self.client(auth, interface='public',
                             region_name='RegionTwo', connect_retries=2,
                             endpoint_override='http://cinder:8776/v3/p1')
        sibling = client.sibling('compute')
        self.assertIs(client.session, sibling.session)
        self.assertIs(auth, sibling.auth)
        self.assertEqual(('compute', 'public', 'RegionTwo', 2),
                         (sibling.service_type, sibling.interface,
                          sibling.region_name, sibling.connect_retries))
        # Cinder's endpoint is not Nova's: the catalog says where.
        self.assertIsNone(sibling.endpoint_override)
        self.assertEqual('http://127.0.0.1:9/v3', sibling.get_endpoint())
        self.assertEqual(('compute', 'public', 'RegionTwo'),
                         tuple(auth.asked[-1].get(key) for key in (
                             'service_type', 'interface', 'region_name')))


class TestAnsweredKwargs(base.TestCase):
    """What an error tells of its answer: may a create have made it?"""

    def test_status_and_sent_of_each_kind(self):
        cases = [
            (ks_exc.HttpError(http_status=413), 413, True, False),
            (ks_exc.HttpError(http_status=503), 503, True, True),
            # Also a reset or a read timeout after the request left.
            (ks_exc.ConnectFailure('Connection aborted'), None, True, True),
            (ks_exc.ConnectTimeout('read timed out'), None, True, True),
            (ks_exc.EndpointNotFound('no volumev3'), None, False, False),
        ]
        for err, status, sent, may in cases:
            translated = cinder_mod.translate(err, 'restore',
                                              resource='backup b-1')
            self.assertEqual((status, sent, may), (
                translated.status, translated.sent,
                translated.may_have_made), err)
