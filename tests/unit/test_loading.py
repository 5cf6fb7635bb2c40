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

"""One keystoneauth loader for every group (nova_snapshot_ext.loading):
each refusal names the option where the operator wrote it, before any
request."""

import os

import fixtures
from keystoneauth1 import session as ks_session
import testtools

from nova_snapshot_ext.cinder import client as cinder_mod
from nova_snapshot_ext.cmd import backup as backup_cmd
from nova_snapshot_ext import exception
from nova_snapshot_ext import loading
from nova_snapshot_ext import opts
from tests import base

GROUPS = (opts.GLANCE_GROUP, opts.CINDER_GROUP)
URL = 'auth_url = http://127.0.0.1:9/v3\n'
PASSWORD = ('auth_type = password\n' + URL + 'username = u\npassword = p\n'
            'project_name = p\nuser_domain_id = default\n'
            'project_domain_id = default\n')


class TestLoading(testtools.TestCase):

    def _conf(self, group, body, extra=''):
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'x.conf')
        with open(path, 'w') as fh:
            fh.write('[%s]\n%s\n%s' % (group, body, extra))
        return self.useFixture(base.PrivateConf([path])).conf

    def _refused(self, group, body, extra=''):
        conf = self._conf(group, body, extra)
        return self.assertRaises(exception.ConfigurationError,
                                 loading.load_session, conf, group)

    def test_transport_values_out_of_range_or_of_another_type(self):
        for group in GROUPS:
            for line, option in (
                    ('connect_retry_delay = -0.5', 'connect_retry_delay'),
                    ('status_code_retry_delay = -0.1',
                     'status_code_retry_delay'),
                    ('timeout = 0', 'timeout'),
                    ('connect_retries = -1', 'connect_retries'),
                    ('valid_interfaces = bogus', 'valid_interfaces'),
                    ('timeout = abc', 'timeout'),
                    ('insecure = maybe', 'insecure')):
                err = self._refused(group, PASSWORD + line)
                self.assertEqual((group, option), (
                    err.kwargs['group'], err.kwargs['option']), line)
                self.assertNotIn('LocationInfo', err.format_message())
            # The smallest values allowed are allowed.
            loading.load_session(self._conf(
                group, PASSWORD + 'connect_retry_delay = 0\n'
                'connect_retries = 0\ntimeout = 0.5'), group)

    def test_auth_section_faults_name_that_section(self):
        for group in GROUPS:
            for extra in ('', '[creds]\nusername = u\n'):
                err = self._refused(group, 'auth_section = creds', extra)
                self.assertEqual('creds', err.kwargs['group'])
                self.assertIn('[%s] auth_section' % group,
                              err.format_message())
            err = self._refused(group, 'auth_section = creds',
                                '[creds]\nauth_type = nosuch\n')
            self.assertEqual(('creds', 'auth_type'), (
                err.kwargs['group'], err.kwargs['option']))
            err = self._refused(
                group, 'auth_section = creds',
                '[creds]\nauth_type = v3applicationcredential\n' + URL +
                'application_credential_secret = s\n')
            self.assertIn('the v3applicationcredential plugin',
                          err.format_message())
            self.assertEqual('creds', err.kwargs['group'])

    def test_cinder_needs_credentials_glance_an_endpoint_will_do(self):
        endpoint = 'endpoint_override = http://127.0.0.1:9/v3'
        loading.load_session(self._conf(opts.GLANCE_GROUP, endpoint),
                             opts.GLANCE_GROUP)
        conf = self._conf(opts.CINDER_GROUP, endpoint)
        self.assertRaises(exception.ConfigurationError,
                          cinder_mod.CinderClient.from_conf, conf)
        # The CLI's backup does not go on without Cinder either.
        err = self.assertRaises(exception.ConfigurationError,
                                backup_cmd.cinder_client, conf)
        self.assertIn('endpoint_override', err.format_message())


class TestCinderAuthPluginFault(base.TestCase):

    def test_a_plugin_lacking_an_option_is_a_cinder_error(self):
        # keystoneauth's password plugin checks "password" only when it
        # first authenticates, with a bare Exception: the client answers
        # a CinderError naming the cause (a rotation handles it), never
        # the raw exception.
        from keystoneauth1.identity import generic

        auth = generic.Password(auth_url='http://127.0.0.1:9/v3',
                                username='u', project_name='p')
        client = cinder_mod.CinderClient.for_auth(
            ks_session.Session(), auth=auth,
            endpoint_override='http://127.0.0.1:9/v3/p')
        err = self.assertRaises(exception.CinderError,
                                client.get_snapshot, 'x')
        self.assertIn('lacks an option it needs', err.format_message())
        self.assertIn('password', err.format_message())

    def test_a_bug_is_raised_as_it_came(self):
        self.assertFalse(cinder_mod.sent_error(KeyError('x')))
        self.assertTrue(cinder_mod.sent_error(ValueError('x')))
