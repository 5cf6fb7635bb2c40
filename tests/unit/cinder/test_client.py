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

"""The Cinder adapter against a local HTTP server (no Cinder needed)."""

import http.server
import json
import threading

from keystoneauth1 import session as ks_session

from nova_snapshot_ext.cinder import client as cinder_mod
from nova_snapshot_ext import exception
from nova_snapshot_ext import opts
from tests import base


class _Handler(http.server.BaseHTTPRequestHandler):

    snapshots: dict = {}
    deleted: list = []
    status: dict = {}
    listed: list = []

    def log_message(self, *args):
        pass

    def _answer(self, code, body=None):
        data = json.dumps(body).encode() if body is not None else b''
        self.send_response(code)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _snapshot_id(self):
        return self.path.rsplit('/', 1)[-1]

    def do_GET(self):
        if '/snapshots/detail?' in self.path:
            self.listed.append(self.path.split('?', 1)[1])
            return self._answer(200, {'snapshots': list(
                self.snapshots.values())})
        snap = self.snapshots.get(self._snapshot_id())
        if self.status.get('GET'):
            return self._answer(self.status['GET'], {'error': 'x'})
        if snap is None:
            return self._answer(404, {'itemNotFound': {'code': 404}})
        return self._answer(200, {'snapshot': snap})

    def do_DELETE(self):
        snap_id = self._snapshot_id()
        if self.status.get('DELETE'):
            return self._answer(self.status['DELETE'], {'error': 'x'})
        if self.snapshots.pop(snap_id, None) is None:
            return self._answer(404, {'itemNotFound': {'code': 404}})
        self.deleted.append(snap_id)
        return self._answer(202)


class TestCinderClient(base.TestCase):

    def setUp(self):
        super().setUp()
        _Handler.snapshots = {
            'mine': {'id': 'mine', 'status': 'available',
                     cinder_mod.PROJECT_ATTRIBUTE: 'p1'},
            'theirs': {'id': 'theirs', 'status': 'available',
                       cinder_mod.PROJECT_ATTRIBUTE: 'p2'}}
        _Handler.deleted = []
        _Handler.status = {}
        _Handler.listed = []
        server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), _Handler)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        self.addCleanup(server.server_close)
        self.addCleanup(server.shutdown)
        endpoint = 'http://127.0.0.1:%d/v3/p1' % server.server_address[1]
        self.client = cinder_mod.CinderClient.for_auth(
            ks_session.Session(), endpoint_override=endpoint,
            connect_retries=0)

    def test_delete_own_snapshot(self):
        self.assertEqual(cinder_mod.DELETED,
                         self.client.delete_snapshot('mine', 'p1'))
        self.assertEqual(['mine'], _Handler.deleted)

    def test_gone_is_fine(self):
        self.assertEqual(cinder_mod.GONE,
                         self.client.delete_snapshot('nope', 'p1'))

    def test_other_project_refused(self):
        err = self.assertRaises(exception.CinderForbidden,
                                self.client.delete_snapshot, 'theirs', 'p1')
        self.assertIn('p2', err.format_message())
        self.assertEqual([], _Handler.deleted)

    def test_errors_translated(self):
        _Handler.status = {'DELETE': 403}
        self.assertRaises(exception.CinderForbidden,
                          self.client.delete_snapshot, 'mine', 'p1')
        _Handler.status = {'DELETE': 500}
        err = self.assertRaises(exception.CinderError,
                                self.client.delete_snapshot, 'mine', 'p1')
        self.assertNotIsInstance(err, exception.CinderForbidden)

    def test_every_project_asked_only_when_said(self):
        # Cinder honours all_tenants for an admin only; the client asks
        # for it exactly when its caller says so.
        ids = [s['id'] for s in self.client.list_snapshots()]
        self.assertEqual(['mine', 'theirs'], sorted(ids))
        list(self.client.list_snapshots(all_projects=True))
        self.assertEqual(['limit=200', 'limit=200&all_tenants=1'],
                         _Handler.listed)

    def test_endpoint_keystoneauth_cannot_choose_names_the_options(self):
        # A system-scoped token: keystoneauth raises ValueError choosing
        # the endpoint; the client says what to change, never crashes.
        from unittest import mock

        with mock.patch.object(self.client._adapter, 'request',
                               side_effect=ValueError('Programming error '
                                                      'choosing an endpoint')):
            err = self.assertRaises(exception.CinderError,
                                    self.client.get_snapshot, 'mine')
        self.assertIn('scope [snapshot_ext_cinder] to a project',
                      err.format_message())
        with mock.patch.object(self.client._adapter, 'request',
                               side_effect=ValueError('Programming error')):
            err = self.assertRaises(exception.CinderError, list,
                                    self.client.list_snapshots())
        self.assertNotIn('not JSON', err.format_message())

    def test_unreachable(self):
        client = cinder_mod.CinderClient.for_auth(
            ks_session.Session(), endpoint_override='http://127.0.0.1:9/v3',
            connect_retries=0)
        self.assertRaises(exception.CinderUnavailable,
                          client.delete_snapshot, 'mine', 'p1')

    def test_from_conf_without_auth_names_option(self):
        err = self.assertRaises(exception.ConfigurationError,
                                cinder_mod.CinderClient.from_conf, self.conf)
        self.assertIn('snapshot_ext_cinder', err.format_message())

    def _from_conf(self, **options):
        for name, value in options.items():
            self.conf.set_override(name, value, group=opts.CINDER_GROUP)
        return self.assertRaises(exception.ConfigurationError,
                                 cinder_mod.CinderClient.from_conf,
                                 self.conf)

    def test_from_conf_checks_as_glance_s_loader_does(self):
        # The loader Glance's session has (nova_snapshot_ext.loading):
        # an unknown plugin and a transport number out of range are each
        # named before anything is sent.
        err = self._from_conf(auth_type='no-such-plugin')
        self.assertEqual('auth_type', err.kwargs['option'])
        self.assertIn('no-such-plugin', err.format_message())
        self.conf.set_override('auth_type', 'admin_token',
                               group=opts.CINDER_GROUP)
        err = self._from_conf(timeout=0)
        self.assertEqual('timeout', err.kwargs['option'])
        self.assertIn('[snapshot_ext_cinder]', err.format_message())

    def test_from_conf_with_the_caller_s_auth_still_checks_transport(self):
        self.conf.set_override('connect_retries', -3,
                               group=opts.CINDER_GROUP)
        err = self.assertRaises(
            exception.ConfigurationError, cinder_mod.CinderClient.from_conf,
            self.conf, auth=object())
        self.assertEqual('connect_retries', err.kwargs['option'])
