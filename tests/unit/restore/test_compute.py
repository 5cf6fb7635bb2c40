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

"""Nova's compute API for restore, against a local HTTP server."""

from keystoneauth1 import exceptions as ks_exc
from keystoneauth1 import session as ks_session

from nova_snapshot_ext.cinder import client as cinder_mod
from nova_snapshot_ext import exception
from nova_snapshot_ext.restore import compute
from tests.unit.cinder import test_client_backups
from tests.unit.restore import fakes

MICROVERSION_HEADER = 'compute %s' % compute.MICROVERSION


class ComputeServerTestCase(test_client_backups.CinderServerTestCase):
    """A :class:`compute.Compute` on the Cinder client's local server.

    Reached as ``restore`` reaches Nova: an adapter on the ``compute``
    service from :meth:`CinderClient.sibling`, whose endpoint the
    identity's catalog (:class:`fakes.FakeAuth`) names.
    """

    def setUp(self):
        super().setUp()
        self.auth = fakes.FakeAuth(self.client._adapter.endpoint_override)
        self.cinder = cinder_mod.CinderClient.for_auth(
            ks_session.Session(), auth=self.auth, connect_retries=0)
        self.compute = compute.Compute(self.cinder.sibling('compute'))


class TestFlavors(ComputeServerTestCase):

    def test_by_id(self):
        self.answer('GET', 'flavors/f-1', 200,
                    {'flavor': {'id': 'f-1', 'name': 'm1.small'}})
        self.assertEqual('f-1', self.compute.flavor_id('f-1'))
        [sent] = self.sent
        self.assertEqual(('GET', 'flavors/f-1', MICROVERSION_HEADER),
                         (sent.method, sent.path, sent.microversion))
        # The catalog was asked for Nova, with the Cinder client's
        # interface.
        self.assertEqual('compute', self.auth.asked[-1]['service_type'])
        self.assertEqual('internal', self.auth.asked[-1]['interface'])

    def test_by_name_when_no_such_id(self):
        self.answer('GET', 'flavors', 200, {'flavors': [
            'junk', {'id': 'f-1', 'name': 'm1.tiny'},
            {'id': 'f-2', 'name': 'm1.small'}]})
        self.assertEqual('f-2', self.compute.flavor_id('m1.small'))
        self.assertEqual([('GET', 'flavors/m1.small'), ('GET', 'flavors')],
                         [(s.method, s.path) for s in self.sent])
        self.assertEqual({MICROVERSION_HEADER},
                         {s.microversion for s in self.sent})

    def test_name_quoted_in_the_path(self):
        self.answer('GET', 'flavors/big%20one%2Fx', 200,
                    {'flavor': {'id': 'f-9'}})
        self.assertEqual('f-9', self.compute.flavor_id('big one/x'))

    def test_unknown_flavor_refused(self):
        self.answer('GET', 'flavors', 200, {'flavors': [
            {'id': 'f-1', 'name': 'm1.tiny'}]})
        err = self.assertRaises(exception.RestoreRefused,
                                self.compute.flavor_id, 'm1.huge')
        self.assertIn("Nova shows no flavor 'm1.huge' to this project "
                      "(--flavor)", err.format_message())

    def test_no_flavor_list_refused(self):
        self.answer('GET', 'flavors', 200, {'flavors': None})
        self.assertRaises(exception.RestoreRefused, self.compute.flavor_id,
                          'm1.huge')

    def test_read_errors_name_the_flavor(self):
        self.answer('GET', 'flavors/m1.small', 500, {'computeFault': {}})
        err = self.assertRaises(exception.ComputeError,
                                self.compute.flavor_id, 'm1.small')
        self.assertIn('Nova read of flavor m1.small failed',
                      err.format_message())
        # A fault of Nova's own: neither unreachable nor refused.
        self.assertNotIsInstance(err, (exception.ComputeUnavailable,
                                       exception.ComputeForbidden))
        self.answer('GET', 'flavors/m1.small', 200, b'<html/>', 'text/html')
        err = self.assertRaises(exception.ComputeError,
                                self.compute.flavor_id, 'm1.small')
        self.assertIn('not a JSON document', err.format_message())

    def test_list_errors_name_the_flavors(self):
        self.answer('GET', 'flavors', 500, {'computeFault': {}})
        err = self.assertRaises(exception.ComputeError,
                                self.compute.flavor_id, 'm1.small')
        self.assertIn('Nova list of flavors failed', err.format_message())

    def test_credentials_refused_named(self):
        for status in (401, 403):
            self.answer('GET', 'flavors', status, {'forbidden': {
                'code': status, 'message': 'Policy does not allow it.'}})
            err = self.assertRaises(exception.ComputeForbidden,
                                    self.compute.flavor_id, 'm1.small')
            self.assertEqual(
                'Nova refused list of flavors to these credentials '
                '(options [snapshot_ext_cinder]): Policy does not allow '
                'it. (HTTP %d)' % status, err.format_message())

    def test_unavailable_named(self):
        self.answer('GET', 'flavors/m1.small', 503, {'computeFault': {
            'code': 503, 'message': 'Service Unavailable'}})
        err = self.assertRaises(exception.ComputeUnavailable,
                                self.compute.flavor_id, 'm1.small')
        self.assertEqual('Nova could not be reached for read of flavor '
                         'm1.small: Service Unavailable (HTTP 503)',
                         err.format_message())


class TestMalformedFlavorAnswers(ComputeServerTestCase):
    """Answers of the wrong shape: no such flavor, never a crash."""

    def assertNoFlavor(self, name='m1'):
        err = self.assertRaises(exception.RestoreRefused,
                                self.compute.flavor_id, name)
        self.assertIn('Nova shows no flavor %r to this project' % name,
                      err.format_message())
        return err

    def test_flavor_without_id_then_list_without_it(self):
        self.answer('GET', 'flavors/m1', 200, {'flavor': {'name': 'm1'}})
        self.answer('GET', 'flavors', 200, {'flavors': []})
        self.assertNoFlavor()
        # The id-less flavor was not taken: the list was asked.
        self.assertEqual(['flavors/m1', 'flavors'],
                         [s.path for s in self.sent])

    def test_flavor_without_id_then_found_in_the_list(self):
        self.answer('GET', 'flavors/m1', 200, {'flavor': {'name': 'm1'}})
        self.answer('GET', 'flavors', 200, {'flavors': [
            {'id': 'f-7', 'name': 'm1'}]})
        self.assertEqual('f-7', self.compute.flavor_id('m1'))

    def test_flavor_of_another_shape(self):
        for flavor in ('f-1', ['f-1'], 5, None, {'id': None},
                       {'id': ''}, {}):
            self.answer('GET', 'flavors/m1', 200, {'flavor': flavor})
            self.answer('GET', 'flavors', 200, {'flavors': []})
            self.assertNoFlavor()

    def test_flavor_list_of_another_shape(self):
        for flavors in (5, 'm1', {'id': 'f-1', 'name': 'm1'}, None, True):
            self.answer('GET', 'flavors', 200, {'flavors': flavors})
            self.assertNoFlavor()
        self.answer('GET', 'flavors', 200, {})
        self.assertNoFlavor()

    def test_list_entries_of_another_shape_skipped(self):
        self.answer('GET', 'flavors', 200, {'flavors': [
            ['f-1', 'm1'], 'm1', 5, None, {'name': 'm1'},
            {'id': None, 'name': 'm1'}, {'id': '', 'name': 'm1'},
            {'id': 'f-2', 'name': ['m1']}, {'id': 'f-3'}]})
        self.assertNoFlavor()
        self.answer('GET', 'flavors', 200, {'flavors': [
            ['f-1', 'm1'], {'name': 'm1'}, {'id': 'f-4', 'name': 'm1'}]})
        self.assertEqual('f-4', self.compute.flavor_id('m1'))

    def test_numeric_id_answered_as_text(self):
        self.answer('GET', 'flavors/1', 200, {'flavor': {'id': 1}})
        self.assertEqual('1', self.compute.flavor_id('1'))

    def test_answer_that_is_no_json_object_is_a_compute_error(self):
        # A JSON array is not Nova's document: an error of Nova's answer
        # (exit 1), not a TypeError or AttributeError.
        self.answer('GET', 'flavors', 200, [{'id': 'f-1', 'name': 'm1'}])
        err = self.assertRaises(exception.ComputeError,
                                self.compute.flavor_id, 'm1')
        self.assertIn('Nova list of flavors failed: the answer is not a '
                      'JSON document', err.format_message())
        self.answer('GET', 'flavors/m1', 200, [{'id': 'f-1'}])
        err = self.assertRaises(exception.ComputeError,
                                self.compute.flavor_id, 'm1')
        self.assertIn('Nova read of flavor m1 failed', err.format_message())


class TestFlavorNamesNotPaths(ComputeServerTestCase):
    """A flavor name is never read as a path of the compute API."""

    def test_dot_dot_only_listed(self):
        self.answer('GET', 'flavors', 200, {'flavors': [
            {'id': 'f-dots', 'name': '..'}, {'id': 'f-dot', 'name': '.'}]})
        self.assertEqual('f-dots', self.compute.flavor_id('..'))
        self.assertEqual('f-dot', self.compute.flavor_id('.'))
        self.assertEqual([('GET', 'flavors'), ('GET', 'flavors')],
                         [(s.method, s.path) for s in self.sent])

    def test_dot_dot_unknown_refused(self):
        self.answer('GET', 'flavors', 200, {'flavors': []})
        # What a GET of flavors/.. would reach (the API's root).
        self.answer('GET', '', 200, {'flavor': {'id': 'not-a-flavor'}})
        err = self.assertRaises(exception.RestoreRefused,
                                self.compute.flavor_id, '..')
        self.assertIn("no flavor '..'", err.format_message())
        self.assertEqual(['flavors'], [s.path for s in self.sent])

    def test_slashes_and_dots_quoted_into_one_segment(self):
        self.answer('GET', 'flavors/..%2Fservers', 200,
                    {'flavor': {'id': 'f-odd'}})
        self.assertEqual('f-odd', self.compute.flavor_id('../servers'))
        self.assertEqual(['flavors/..%2Fservers'],
                         [s.path for s in self.sent])


class TestCreateServer(ComputeServerTestCase):

    disks = [{'volume_id': 'vol-1', 'device_name': '/dev/vda',
              'boot_index': 0, 'backup_id': 'b-1'},
             {'volume_id': 'vol-2', 'device_name': '/dev/vdb',
              'boot_index': -1, 'backup_id': 'b-2'}]

    def create(self, networks='auto', disks=None):
        self.answer('POST', 'servers', 202, {'server': {'id': 'srv-1'}})
        return self.compute.create_server('web', 'f-2', disks or self.disks,
                                          networks)

    def test_boots_from_the_volumes_in_their_places(self):
        self.assertEqual('srv-1', self.create())
        [sent] = self.sent
        self.assertEqual(('POST', 'servers', MICROVERSION_HEADER),
                         (sent.method, sent.path, sent.microversion))
        self.assertEqual({'server': {
            'name': 'web', 'flavorRef': 'f-2', 'networks': 'auto',
            'block_device_mapping_v2': [
                {'uuid': 'vol-1', 'source_type': 'volume',
                 'destination_type': 'volume',
                 'delete_on_termination': False,
                 'device_name': '/dev/vda', 'boot_index': 0},
                # Not a boot disk: no boot_index at all.
                {'uuid': 'vol-2', 'source_type': 'volume',
                 'destination_type': 'volume',
                 'delete_on_termination': False,
                 'device_name': '/dev/vdb'}]}}, sent.body)

    def test_disk_without_device_name_has_none(self):
        self.create(disks=[{'volume_id': 'vol-1', 'device_name': '',
                            'boot_index': 0}])
        [mapping] = self.sent[0].body['server']['block_device_mapping_v2']
        self.assertNotIn('device_name', mapping)
        self.assertEqual(0, mapping['boot_index'])

    def test_networks(self):
        for networks, sent in (('auto', 'auto'), ('none', 'none'),
                               (['n-1', 'n-2'],
                                [{'uuid': 'n-1'}, {'uuid': 'n-2'}])):
            self.create(networks)
            self.assertEqual(sent,
                             self.sent[-1].body['server']['networks'])

    def test_answer_without_server_id_refused(self):
        for body in ({'server': {}}, {'server': 'srv-1'}, {'servers': []},
                     None):
            self.answer('POST', 'servers', 202, body)
            err = self.assertRaises(exception.ComputeError,
                                    self.compute.create_server, 'web', 'f',
                                    self.disks, 'auto')
            self.assertIn('Nova create of server web failed',
                          err.format_message())
            self.assertIn('names no server', err.format_message())

    def test_refusal_names_the_server(self):
        self.answer('POST', 'servers', 400, {'badRequest': {
            'code': 400, 'message': 'Block Device Mapping is Invalid.'}})
        err = self.assertRaises(exception.ComputeError,
                                self.compute.create_server, 'web', 'f',
                                self.disks, 'auto')
        self.assertIn('Nova create of server web failed',
                      err.format_message())
        # Nova's own reason (keystoneauth alone would say "Unrecognized
        # schema in response body"), with the HTTP status.
        self.assertIn('Block Device Mapping is Invalid. (HTTP 400)',
                      err.format_message())


class TestServers(ComputeServerTestCase):

    def test_get_server(self):
        self.answer('GET', 'servers/srv-1', 200, {'server': {
            'id': 'srv-1', 'status': 'BUILD'}})
        self.assertEqual({'id': 'srv-1', 'status': 'BUILD'},
                         self.compute.get_server('srv-1'))
        self.assertEqual(MICROVERSION_HEADER, self.sent[0].microversion)

    def test_server_gone_is_none(self):
        self.assertIsNone(self.compute.get_server('srv-404'))
        self.answer('GET', 'servers/srv-1', 200, {'servers': []})
        self.assertIsNone(self.compute.get_server('srv-1'))

    def test_get_server_error_names_the_server(self):
        self.answer('GET', 'servers/srv-1', 500, {'computeFault': {}})
        err = self.assertRaises(exception.ComputeError,
                                self.compute.get_server, 'srv-1')
        self.assertIn('Nova read of server srv-1 failed',
                      err.format_message())

    def test_delete_server(self):
        self.answer('DELETE', 'servers/srv-1', 204, None)
        self.assertIsNone(self.compute.delete_server('srv-1'))
        # Gone already is fine.
        self.assertIsNone(self.compute.delete_server('srv-404'))
        self.assertEqual([('DELETE', 'servers/srv-1'),
                          ('DELETE', 'servers/srv-404')],
                         [(s.method, s.path) for s in self.sent])

    def test_delete_refused_names_the_server(self):
        self.answer('DELETE', 'servers/srv-1', 409, {'conflictingRequest': {
            'code': 409, 'message': 'locked'}})
        err = self.assertRaises(exception.ComputeError,
                                self.compute.delete_server, 'srv-1')
        self.assertIn('Nova delete of server srv-1 failed',
                      err.format_message())


class TestServersNamed(ComputeServerTestCase):
    """What an unanswered create may have made, looked up by its name."""

    def test_exact_name_escaped_and_compared(self):
        self.answer('GET', 'servers/detail', 200, {'servers': [
            {'id': 's-1', 'name': 'web.1'}, {'id': 's-2', 'name': 'webX1'},
            'junk']})
        self.assertEqual([{'id': 's-1', 'name': 'web.1'}],
                         self.compute.servers_named('web.1'))
        [sent] = self.sent
        self.assertEqual({'name': ['^web\\.1$'], 'limit': ['200']},
                         sent.query)
        self.assertEqual(MICROVERSION_HEADER, sent.microversion)

    def test_every_page_is_read(self):
        def page(sent):
            marker = sent.query.get('marker', [None])[0]
            start = int(marker[2:]) if marker else 0
            return 200, {'servers': [
                {'id': 's-%d' % i, 'name': 'web'}
                for i in range(start + 1, min(start + 2, 3) + 1)]}
        self.answer('GET', 'servers/detail', page)
        found = self.compute.servers_named('web', page_size=2)
        self.assertEqual(['s-1', 's-2', 's-3'], [s['id'] for s in found])
        self.assertEqual([None, ['s-2']],
                         [s.query.get('marker') for s in self.sent])

    def test_a_refused_create_made_nothing_an_unanswered_one_may_have(self):
        self.answer('POST', 'servers', 400, {'badRequest': {
            'code': 400, 'message': 'Block Device Mapping is Invalid'}})
        refused = self.assertRaises(
            exception.ComputeError, self.compute.create_server, 'web',
            'f-1', [], 'none')
        self.assertEqual((400, False), (refused.status,
                                        refused.may_have_made))
        self.answer('POST', 'servers', 502, {'computeFault': {
            'code': 502, 'message': 'bad gateway'}})
        failed = self.assertRaises(
            exception.ComputeError, self.compute.create_server, 'web',
            'f-1', [], 'none')
        self.assertEqual((502, True), (failed.status, failed.may_have_made))


class TestNotSent(ComputeServerTestCase):

    def test_unreachable_names_the_request(self):
        self.auth.endpoint = 'http://127.0.0.1:9/v2.1'
        for call, args, what in (
                (self.compute.flavor_id, ('m1',), 'read of flavor m1'),
                (self.compute.create_server, ('web', 'f', [], 'auto'),
                 'create of server web'),
                (self.compute.get_server, ('s-1',), 'read of server s-1'),
                (self.compute.delete_server, ('s-1',),
                 'delete of server s-1')):
            err = self.assertRaises(exception.ComputeUnavailable, call,
                                    *args)
            self.assertIn('Nova could not be reached for %s: ' % what,
                          err.format_message())

    def test_no_compute_endpoint_is_unavailable(self):
        self.auth.error = ks_exc.EndpointNotFound('no compute endpoint')
        err = self.assertRaises(exception.ComputeUnavailable,
                                self.compute.get_server, 's-1')
        self.assertIn('Nova could not be reached for read of server s-1',
                      err.format_message())

    def test_a_bug_is_raised_as_it_came(self):
        self.auth.error = RuntimeError('a bug')
        err = self.assertRaises(RuntimeError, self.compute.get_server, 's')
        self.assertEqual('a bug', str(err))
