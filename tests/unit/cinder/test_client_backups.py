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

"""Cinder backups, volumes and quotas against a local HTTP server."""

import http.server
import json
import threading
import urllib.parse

from keystoneauth1 import session as ks_session

from nova_snapshot_ext.backup import copies
from nova_snapshot_ext.backup import copy_sets as restore_sets
from nova_snapshot_ext.cinder import client as cinder_mod
from nova_snapshot_ext import exception
from nova_snapshot_ext.restore import service as restore_service
from tests import base
from tests.unit.restore import fakes as restore_fakes

PREFIX = '/v3/p1/'
MICROVERSION_HEADER = 'volume %s' % cinder_mod.BACKUP_METADATA_VERSION


class Sent:
    """One request the server received (path relative to the project)."""

    def __init__(self, method, path, headers, body):
        parts = urllib.parse.urlsplit(path)
        self.method = method
        self.path = parts.path[len(PREFIX):]
        self.query = urllib.parse.parse_qs(parts.query)
        self.microversion = headers.get('OpenStack-API-Version')
        self.body = json.loads(body) if body else None


class _Handler(http.server.BaseHTTPRequestHandler):

    #: method -> path relative to the project (no query) -> answer:
    #: ``(code, document)``, ``(code, bytes, content type)`` or a callable
    #: given the :class:`Sent` and answering one of those.
    answers: dict = {}
    sent: list = []

    def log_message(self, *args):
        pass

    def _serve(self):
        length = int(self.headers.get('Content-Length') or 0)
        sent = Sent(self.command, self.path, self.headers,
                    self.rfile.read(length) if length else b'')
        self.sent.append(sent)
        answer = self.answers.get(self.command, {}).get(
            sent.path, (404, {'itemNotFound': {'code': 404,
                                               'message': 'not found'}}))
        if callable(answer):
            answer = answer(sent)
        code, body = answer[:2]
        content_type = (answer[2] if len(answer) > 2
                        else 'application/json')
        data = body if isinstance(body, bytes) else (
            json.dumps(body).encode() if body is not None else b'')
        self.send_response(code)
        self.send_header('Content-Type', content_type)
        self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_DELETE = _serve


class CinderServerTestCase(base.TestCase):

    def setUp(self):
        super().setUp()
        _Handler.answers = {}
        _Handler.sent = []
        server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), _Handler)
        thread = threading.Thread(target=server.serve_forever,
                                  kwargs={'poll_interval': 0.05},
                                  daemon=True)
        thread.start()
        self.addCleanup(server.server_close)
        self.addCleanup(server.shutdown)
        endpoint = 'http://127.0.0.1:%d/v3/p1' % server.server_address[1]
        self.client = cinder_mod.CinderClient.for_auth(
            ks_session.Session(), endpoint_override=endpoint,
            connect_retries=0)

    def answer(self, method, path, *answer):
        _Handler.answers.setdefault(method, {})[path] = (
            answer[0] if callable(answer[0]) else answer)

    @property
    def sent(self):
        return _Handler.sent


class TestVolumesNamed(CinderServerTestCase):

    def test_cinder_name_filter_then_an_exact_comparison(self):
        self.answer('GET', 'volumes/detail', 200, {'volumes': [
            {'id': 'v-1', 'name': 'web-vda'}, {'id': 'v-2', 'name': 'WEB-vda'},
            'junk']})
        self.assertEqual([{'id': 'v-1', 'name': 'web-vda'}],
                         self.client.volumes_named('web-vda'))
        [sent] = self.sent
        self.assertEqual(['web-vda'], sent.query['name'])

    def test_what_a_failed_restore_says_of_its_answer(self):
        self.answer('POST', 'backups/b-1/restore', 413, {'overLimit': {
            'code': 413, 'message': 'VolumeLimitExceeded'}})
        refused = self.assertRaises(exception.CinderError,
                                    self.client.restore_backup, 'b-1', 'n')
        self.assertEqual((413, True, False), (
            refused.status, refused.sent, refused.may_have_made))
        self.answer('POST', 'backups/b-1/restore', 200, b'not json',
                    'text/plain')
        unreadable = self.assertRaises(
            exception.CinderError, self.client.restore_backup, 'b-1', 'n')
        self.assertEqual((None, True), (unreadable.status,
                                        unreadable.may_have_made))


class TestCreateBackup(CinderServerTestCase):

    meta = {'snapshot_ext_image': 'img-1', 'snapshot_ext_copy': 'proof'}

    def create(self, incremental=True):
        return self.client.create_backup('vol-1', 'snap-1', incremental,
                                         'copy of x', 'a description',
                                         self.meta)

    def test_backup_of_a_snapshot_with_its_metadata(self):
        self.answer('POST', 'backups', 202,
                    {'backup': {'id': 'b-1', 'name': 'copy of x'}})
        self.assertEqual({'id': 'b-1', 'name': 'copy of x'}, self.create())
        [sent] = self.sent
        self.assertEqual(('POST', 'backups'), (sent.method, sent.path))
        self.assertEqual(
            {'backup': {'volume_id': 'vol-1', 'snapshot_id': 'snap-1',
                        'incremental': True, 'name': 'copy of x',
                        'description': 'a description',
                        'metadata': self.meta}}, sent.body)
        # Backup metadata needs microversion 3.43.
        self.assertEqual(MICROVERSION_HEADER, sent.microversion)

    def test_full_backup_asked_as_such(self):
        self.answer('POST', 'backups', 202, {'backup': {'id': 'b-1'}})
        self.create(incremental=0)
        self.assertIs(False, self.sent[0].body['backup']['incremental'])

    def test_refusal_names_the_snapshot(self):
        self.answer('POST', 'backups', 400, {'badRequest': {
            'code': 400, 'message': 'Invalid snapshot: not available'}})
        err = self.assertRaises(exception.CinderError, self.create)
        self.assertNotIsInstance(err, exception.CinderForbidden)
        self.assertIn('backup of volume snapshot snap-1',
                      err.format_message())
        self.assertIn('400', err.format_message())

    def test_refusal_keeps_cinder_s_reason(self):
        # keystoneauth1 reads only {"error": ...} bodies; Cinder's
        # {"badRequest": {"message"}} is read by the client itself.
        self.answer('POST', 'backups', 400, {'badRequest': {
            'code': 400, 'message': 'Invalid backup: No backups available '
            'to do an incremental backup.'}})
        err = self.assertRaises(exception.CinderError, self.create)
        self.assertIn('No backups available to do an incremental backup',
                      err.format_message())

    def test_incremental_refused_for_no_parent_falls_back_to_full(self):
        snap = '9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c01'
        self.answer('GET', 'snapshots/%s' % snap, 200, {'snapshot': {
            'id': snap, 'volume_id': 'vol-1', 'status': 'available'}})
        self.answer('GET', 'backups/detail', 200, {'backups': [
            {'id': 'old', 'volume_id': 'vol-1', 'status': 'available'}]})

        def create(sent):
            if sent.body['backup']['incremental']:
                return 400, {'badRequest': {
                    'code': 400, 'message': 'Invalid backup: No backups '
                    'available to do an incremental backup.'}}
            return 202, {'backup': {'id': 'b-full'}}

        self.answer('POST', 'backups', create)
        image = {'id': 'img-1', 'instance_uuid': 'srv', 'backup_type': 'd',
                 'block_device_mapping': [{'snapshot_id': snap,
                                           'device_name': '/dev/vda',
                                           'boot_index': 0}]}
        result = copies.make_copies(self.client, image, 'p1')
        self.assertEqual([], result.failed)
        self.assertEqual([('b-full', False)],
                         [(c['backup_id'], c['incremental'])
                          for c in result.started])

    def test_forbidden_and_unavailable_translated(self):
        self.answer('POST', 'backups', 403, {'forbidden': {'code': 403}})
        err = self.assertRaises(exception.CinderForbidden, self.create)
        self.assertIn('volume snapshot snap-1', err.format_message())
        self.answer('POST', 'backups', 503, {'error': {'message': 'down'}})
        err = self.assertRaises(exception.CinderUnavailable, self.create)
        self.assertIn('volume snapshot snap-1', err.format_message())

    def test_answer_not_json_names_the_snapshot(self):
        self.answer('POST', 'backups', 202, b'<html>proxy</html>',
                    'text/html')
        err = self.assertRaises(exception.CinderError, self.create)
        self.assertIn('volume snapshot snap-1', err.format_message())
        self.assertIn('not a JSON document', err.format_message())

    def test_answer_without_backup_document_refused(self):
        for body in ({'backups': []}, {'backup': 'b-1'}, [1, 2]):
            self.answer('POST', 'backups', 202, body)
            err = self.assertRaises(exception.CinderError, self.create)
            self.assertIn('volume snapshot snap-1', err.format_message())
        self.answer('POST', 'backups', 202, None)
        err = self.assertRaises(exception.CinderError, self.create)
        self.assertIn("no 'backup' document", err.format_message())


class TestReadBackups(CinderServerTestCase):

    def test_get_backup_with_its_metadata(self):
        self.answer('GET', 'backups/b-1', 200, {'backup': {
            'id': 'b-1', 'metadata': {'k': 'v'}}})
        self.assertEqual({'id': 'b-1', 'metadata': {'k': 'v'}},
                         self.client.get_backup('b-1'))
        self.assertEqual(MICROVERSION_HEADER, self.sent[0].microversion)

    def test_get_missing_backup_is_none(self):
        self.assertIsNone(self.client.get_backup('b-404'))
        self.assertEqual(['backups/b-404'], [s.path for s in self.sent])

    def test_get_backup_errors_name_the_backup(self):
        self.answer('GET', 'backups/b-1', 500, {'computeFault': {}})
        err = self.assertRaises(exception.CinderError,
                                self.client.get_backup, 'b-1')
        self.assertIn('read of backup b-1', err.format_message())
        self.answer('GET', 'backups/b-1', 200, b'not json', 'text/plain')
        err = self.assertRaises(exception.CinderError,
                                self.client.get_backup, 'b-1')
        self.assertIn('backup b-1', err.format_message())
        self.assertIn('not a JSON document', err.format_message())
        self.answer('GET', 'backups/b-1', 401, {'error': {'message': 'x'}})
        err = self.assertRaises(exception.CinderForbidden,
                                self.client.get_backup, 'b-1')
        self.assertIn('backup b-1', err.format_message())

    def pages(self, count):
        backups = [{'id': 'b-%d' % n, 'status': 'available'}
                   for n in range(count)]

        def page(sent):
            limit = int(sent.query['limit'][0])
            start = 0
            if 'marker' in sent.query:
                start = [b['id'] for b in backups].index(
                    sent.query['marker'][0]) + 1
            return 200, {'backups': backups[start:start + limit]}

        self.answer('GET', 'backups/detail', page)
        return [b['id'] for b in backups]

    def test_list_backups_pages_with_marker(self):
        ids = self.pages(5)
        listed = list(self.client.list_backups(page_size=2))
        self.assertEqual(ids, [b['id'] for b in listed])
        self.assertEqual(
            [{'limit': ['2']}, {'limit': ['2'], 'marker': ['b-1']},
             {'limit': ['2'], 'marker': ['b-3']}],
            [s.query for s in self.sent])
        self.assertEqual({'backups/detail'}, {s.path for s in self.sent})
        self.assertEqual({MICROVERSION_HEADER},
                         {s.microversion for s in self.sent})

    def test_list_full_last_page_asks_once_more(self):
        ids = self.pages(4)
        self.assertEqual(ids, [b['id'] for b in
                               self.client.list_backups(page_size=2)])
        self.assertEqual(3, len(self.sent))
        self.assertEqual({'limit': ['2'], 'marker': ['b-3']},
                         self.sent[-1].query)

    def test_list_one_volume_s_backups(self):
        self.pages(1)
        list(self.client.list_backups(volume_id='vol-1'))
        self.assertEqual({'limit': ['200'], 'volume_id': ['vol-1']},
                         self.sent[0].query)

    def test_list_not_a_backup_list_names_backups(self):
        for body in ({'backup': {}}, {'backups': 'b-1'}):
            self.answer('GET', 'backups/detail', 200, body)
            err = self.assertRaises(exception.CinderError, list,
                                    self.client.list_backups())
            self.assertIn('list of backups', err.format_message())
            self.assertIn('not a Cinder backup list', err.format_message())
        self.answer('GET', 'backups/detail', 200, b'[', 'application/json')
        err = self.assertRaises(exception.CinderError, list,
                                self.client.list_backups())
        self.assertIn('list of backups', err.format_message())

    def test_list_error_names_backups(self):
        self.answer('GET', 'backups/detail', 500, {'computeFault': {}})
        err = self.assertRaises(exception.CinderError, list,
                                self.client.list_backups())
        self.assertIn('list of backups', err.format_message())

    def test_list_skips_what_is_not_a_backup(self):
        self.answer('GET', 'backups/detail', 200,
                    {'backups': [{'id': 'b-1'}, 'b-2', None]})
        self.assertEqual([{'id': 'b-1'}], list(self.client.list_backups()))


class TestDeleteAndRestore(CinderServerTestCase):

    def test_delete_backup(self):
        self.answer('DELETE', 'backups/b-1', 202, None)
        self.assertEqual(cinder_mod.DELETED, self.client.delete_backup('b-1'))
        self.assertEqual([('DELETE', 'backups/b-1')],
                         [(s.method, s.path) for s in self.sent])

    def test_delete_missing_backup_is_gone(self):
        self.assertEqual(cinder_mod.GONE, self.client.delete_backup('b-404'))

    def test_delete_backup_refused_names_the_backup(self):
        self.answer('DELETE', 'backups/b-1', 400, {'badRequest': {
            'code': 400, 'message': 'Incremental backups exist for this '
            'backup.'}})
        err = self.assertRaises(exception.CinderError,
                                self.client.delete_backup, 'b-1')
        self.assertIn('delete of backup b-1', err.format_message())

    def test_restore_into_a_new_volume(self):
        self.answer('POST', 'backups/b-1/restore', 202, {'restore': {
            'backup_id': 'b-1', 'volume_id': 'vol-new',
            'volume_name': 'restored'}})
        self.assertEqual('vol-new',
                         self.client.restore_backup('b-1', 'restored'))
        [sent] = self.sent
        self.assertEqual(('POST', 'backups/b-1/restore'),
                         (sent.method, sent.path))
        self.assertEqual({'restore': {'name': 'restored'}}, sent.body)

    def test_restore_answer_without_volume_refused(self):
        for body in ({'restore': {'backup_id': 'b-1'}},
                     {'restore': {'volume_id': ''}},
                     {'restore': {'volume_id': 7}}, {'backup': {}}):
            self.answer('POST', 'backups/b-1/restore', 202, body)
            err = self.assertRaises(exception.CinderError,
                                    self.client.restore_backup, 'b-1', 'x')
            self.assertIn('restore of backup b-1', err.format_message())

    def test_restore_over_quota_names_the_backup(self):
        self.answer('POST', 'backups/b-1/restore', 413, {'overLimit': {
            'code': 413, 'message': 'VolumeLimitExceeded'}})
        err = self.assertRaises(exception.CinderError,
                                self.client.restore_backup, 'b-1', 'x')
        self.assertNotIsInstance(err, exception.CinderForbidden)
        self.assertIn('restore of backup b-1', err.format_message())
        self.assertIn('413', err.format_message())

    def test_restore_of_missing_backup_is_an_error(self):
        err = self.assertRaises(exception.CinderError,
                                self.client.restore_backup, 'b-404', 'x')
        self.assertIn('backup b-404', err.format_message())


class TestVolumes(CinderServerTestCase):

    def test_get_volume(self):
        self.answer('GET', 'volumes/vol-1', 200,
                    {'volume': {'id': 'vol-1', 'status': 'available'}})
        self.assertEqual({'id': 'vol-1', 'status': 'available'},
                         self.client.get_volume('vol-1'))
        self.assertEqual(['volumes/vol-1'], [s.path for s in self.sent])

    def test_get_missing_volume_is_none(self):
        self.assertIsNone(self.client.get_volume('vol-404'))

    def test_get_volume_not_json_names_the_volume(self):
        self.answer('GET', 'volumes/vol-1', 200, b'<html/>', 'text/html')
        err = self.assertRaises(exception.CinderError,
                                self.client.get_volume, 'vol-1')
        self.assertIn('read of volume vol-1', err.format_message())
        self.answer('GET', 'volumes/vol-1', 200, {'snapshot': {}})
        err = self.assertRaises(exception.CinderError,
                                self.client.get_volume, 'vol-1')
        self.assertIn("no 'volume' document", err.format_message())

    def test_delete_volume(self):
        self.answer('DELETE', 'volumes/vol-1', 202, None)
        self.assertEqual(cinder_mod.DELETED,
                         self.client.delete_volume('vol-1'))
        self.assertEqual(cinder_mod.GONE,
                         self.client.delete_volume('vol-404'))
        self.assertEqual([('DELETE', 'volumes/vol-1'),
                          ('DELETE', 'volumes/vol-404')],
                         [(s.method, s.path) for s in self.sent])

    def test_delete_volume_refused_names_the_volume(self):
        self.answer('DELETE', 'volumes/vol-1', 400, {'badRequest': {
            'code': 400, 'message': 'Volume status must be available'}})
        err = self.assertRaises(exception.CinderError,
                                self.client.delete_volume, 'vol-1')
        self.assertIn('delete of volume vol-1', err.format_message())
        self.answer('DELETE', 'volumes/vol-1', 403, {'forbidden': {}})
        self.assertRaises(exception.CinderForbidden,
                          self.client.delete_volume, 'vol-1')


class TestVolumeQuota(CinderServerTestCase):

    def test_limits_and_use(self):
        self.answer('GET', 'os-quota-sets/p1', 200, {'quota_set': {
            'id': 'p1',
            'volumes': {'limit': 10, 'in_use': 3, 'reserved': 1,
                        'allocated': 0},
            'gigabytes': {'limit': -1, 'in_use': 120, 'reserved': 0},
            'snapshots': {'limit': 10, 'in_use': 0, 'reserved': 0}}})
        self.assertEqual(
            {'volumes': {'limit': 10, 'in_use': 3, 'reserved': 1},
             'gigabytes': {'limit': -1, 'in_use': 120, 'reserved': 0}},
            self.client.volume_quota('p1'))
        [sent] = self.sent
        self.assertEqual('os-quota-sets/p1', sent.path)
        self.assertEqual({'usage': ['True']}, sent.query)

    def test_missing_use_counts_as_zero(self):
        self.answer('GET', 'os-quota-sets/p1', 200, {'quota_set': {
            'volumes': {'limit': 10}, 'gigabytes': {'limit': 1000,
                                                    'in_use': None}}})
        usage = self.client.volume_quota('p1')
        self.assertEqual({'limit': 10, 'in_use': 0, 'reserved': 0},
                         usage['volumes'])
        self.assertEqual(0, usage['gigabytes']['in_use'])

    def test_quota_without_usage_names_the_project(self):
        # Without ?usage=True Cinder answers bare numbers.
        self.answer('GET', 'os-quota-sets/p1', 200, {'quota_set': {
            'volumes': 10, 'gigabytes': 1000}})
        err = self.assertRaises(exception.CinderError,
                                self.client.volume_quota, 'p1')
        self.assertIn('the quotas of project p1', err.format_message())
        self.assertIn("'volumes'", err.format_message())
        self.answer('GET', 'os-quota-sets/p1', 200, {'quota_set': {
            'volumes': {'limit': 10}}})
        err = self.assertRaises(exception.CinderError,
                                self.client.volume_quota, 'p1')
        self.assertIn("'gigabytes'", err.format_message())

    def test_quota_errors_name_the_project(self):
        self.answer('GET', 'os-quota-sets/p1', 200, b'{', 'application/json')
        err = self.assertRaises(exception.CinderError,
                                self.client.volume_quota, 'p1')
        self.assertIn('the quotas of project p1', err.format_message())
        self.assertIn('not a JSON document', err.format_message())
        # A quota set is not optional: a 404 is an error, not None.
        err = self.assertRaises(exception.CinderError,
                                self.client.volume_quota, 'p-404')
        self.assertIn('the quotas of project p-404', err.format_message())


class TestVolumeQuotaOddNumbers(CinderServerTestCase):
    """Numbers Python cannot make an int of; a limit not given."""

    def quota_answer(self, volumes, gigabytes='{"limit": 1000}'):
        body = ('{"quota_set": {"volumes": %s, "gigabytes": %s}}'
                % (volumes, gigabytes)).encode()
        self.answer('GET', 'os-quota-sets/p1', 200, body,
                    'application/json')

    def test_limit_too_big_for_an_int_is_a_cinder_error(self):
        # JSON's 1e400 is a float infinity: int() of it overflows.
        self.quota_answer('{"limit": 1e400, "in_use": 0}')
        err = self.assertRaises(exception.CinderError,
                                self.client.volume_quota, 'p1')
        self.assertEqual("Cinder read of the quotas of project p1 failed: "
                         "the usage of 'volumes' is not a number",
                         err.format_message())
        self.assertIsInstance(err.__context__, OverflowError)

    def test_use_too_big_or_not_a_number_is_a_cinder_error(self):
        for entry in ('{"limit": 10, "in_use": 1e400}',
                      '{"limit": 10, "reserved": -1e400}',
                      '{"limit": NaN}', '{"limit": "ten"}',
                      '{"limit": [10]}', '{"limit": 10, "in_use": [1]}'):
            self.quota_answer('{"limit": 10}', entry)
            err = self.assertRaises(exception.CinderError,
                                    self.client.volume_quota, 'p1')
            self.assertIn("the usage of 'gigabytes' is not a number",
                          err.format_message(), entry)

    def test_no_limit_given_is_unlimited(self):
        self.quota_answer('{"in_use": 4, "reserved": 1}')
        self.assertEqual(
            {'volumes': {'limit': -1, 'in_use': 4, 'reserved': 1},
             'gigabytes': {'limit': 1000, 'in_use': 0, 'reserved': 0}},
            self.client.volume_quota('p1'))

    def test_no_limit_given_is_not_checked_by_a_restore(self):
        # Far over any room a limit would leave: the limit not given is
        # left to Cinder, the gigabytes (given) are still checked.
        copy_set = restore_sets.find_sets(restore_fakes.two_disk_set(),
                                          restore_fakes.PROJECT)[0]
        self.quota_answer('{"in_use": 1000000}',
                          '{"in_use": 0, "limit": 1000}')
        restore = restore_service.Restore(self.client)
        self.assertIsNone(restore.check(copy_set, 'p1', None))
        self.quota_answer('{"in_use": 1000000}',
                          '{"in_use": 995, "limit": 1000}')
        err = self.assertRaises(exception.RestoreRefused, restore.check,
                                copy_set, 'p1', None)
        self.assertIn("Cinder quota 'gigabytes' of project p1 has room "
                      "for 5, the restore needs 15", err.format_message())
        self.assertEqual(['os-quota-sets/p1'] * 2,
                         [s.path for s in self.sent])


class TestUnreachable(base.TestCase):

    def test_every_call_names_what_it_asked(self):
        client = cinder_mod.CinderClient.for_auth(
            ks_session.Session(), endpoint_override='http://127.0.0.1:9/v3',
            connect_retries=0)
        for call, args, resource in (
                (client.create_backup, ('v', 's-1', False, 'n', 'd', {}),
                 'volume snapshot s-1'),
                (client.get_backup, ('b-1',), 'backup b-1'),
                (lambda: list(client.list_backups()), (), 'backups'),
                (client.delete_backup, ('b-1',), 'backup b-1'),
                (client.restore_backup, ('b-1', 'n'), 'backup b-1'),
                (client.get_volume, ('v-1',), 'volume v-1'),
                (client.delete_volume, ('v-1',), 'volume v-1'),
                (client.volume_quota, ('p1',), 'the quotas of project p1')):
            err = self.assertRaises(exception.CinderUnavailable, call, *args)
            self.assertIn(' of %s:' % resource, err.format_message())


class TestCinderErrorResource(base.TestCase):

    def test_default_is_the_volume_snapshot(self):
        err = exception.CinderError(operation='delete', snapshot_id='s-1',
                                    reason='x')
        self.assertEqual('Cinder delete of volume snapshot s-1 failed: x',
                         err.format_message())

    def test_resource_named(self):
        for cls in (exception.CinderError, exception.CinderUnavailable,
                    exception.CinderForbidden):
            err = cls(operation='read', resource='backup b-1', reason='x')
            self.assertIn('read of backup b-1', err.format_message())
            self.assertNotIn('volume snapshot', err.format_message())
