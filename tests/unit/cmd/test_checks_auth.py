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

"""Truthful auth errors: an expired token, refused or missing credentials,
a policy's 403 (cmd/checks.py and the 401/403 translation of glance.py)."""

import datetime
import time
from unittest import mock

from glanceclient import exc as gexc

from nova_snapshot_ext.cmd import checks
from nova_snapshot_ext.cmd import connection
from nova_snapshot_ext import exception
from nova_snapshot_ext.image import glance
from tests import base

UTC = datetime.timezone.utc


def _session(issued_ago, lifetime):
    """A session whose password plugin holds a token issued in the past.

    ``lifetime`` s long, issued ``issued_ago`` s ago (keystoneauth's
    ``auth_ref`` times).
    """
    now = datetime.datetime.now(UTC)
    issued = now - datetime.timedelta(seconds=issued_ago)
    ref = mock.Mock(issued=issued,
                    expires=issued + datetime.timedelta(seconds=lifetime))
    return mock.Mock(auth=mock.Mock(spec=['auth_ref'], auth_ref=ref))


def _failed(cause):
    err = exception.ActivationFailed(name='s', reason='r')
    err.__cause__ = cause
    return err


def _401(operation='upload'):
    return glance.translate(gexc.HTTPUnauthorized(
        'The request you have made requires authentication.'), operation)


class AuthTestBase(base.TestCase):

    def setUp(self):
        super().setUp()
        self.connected = self._cleared(connection.CONNECTED)
        self.authenticated = self._cleared(connection._AUTHENTICATED)

    def _cleared(self, target):
        patcher = mock.patch.dict(target, clear=True)
        patcher.start()
        self.addCleanup(patcher.stop)
        return target

    def keystone_issued(self, session, ago=30):
        self.connected.update(endpoint='http://glance:9292',
                              authenticated='yes')
        self.authenticated.update(session=session, at=time.time() - ago,
                                  keystone='http://keystone/v3')


class TestTokenRefusedHint(AuthTestBase):

    def test_no_token_issued_in_this_run(self):
        self.assertIsNone(checks.token_refused_hint())

    def test_expired_token(self):
        self.keystone_issued(_session(issued_ago=20, lifetime=10))
        hint = checks.token_refused_hint()
        self.assertTrue(hint.startswith('the token expired:'), hint)
        self.assertIn('credentials are not at fault', hint)
        self.assertIn('valid for 10 s', hint)
        self.assertIn('(passed)', hint)
        self.assertIn("[token] expiration (10 s)", hint)
        self.assertNotIn('were refused', hint)

    def test_unexpired_token_refused_is_expired_or_revoked(self):
        self.keystone_issued(_session(issued_ago=5, lifetime=3600))
        hint = checks.token_refused_hint()
        self.assertTrue(hint.startswith('the token expired or was revoked'),
                        hint)
        self.assertNotIn('(passed)', hint)
        self.assertIn('revoked', hint)

    def test_plugin_without_token_times(self):
        session = mock.Mock(auth=mock.Mock(spec=['auth_ref'],
                                           auth_ref=None))
        self.keystone_issued(session)
        hint = checks.token_refused_hint()
        self.assertTrue(hint.startswith('the token expired or was revoked'))
        self.assertNotIn('valid for', hint)

    def test_service_token_wrapper_reads_the_user_token(self):
        user = _session(issued_ago=20, lifetime=10).auth
        session = mock.Mock(auth=mock.Mock(spec=['user_auth'],
                                           user_auth=user))
        self.keystone_issued(session)
        self.assertIn('valid for 10 s', checks.token_refused_hint())


class TestGlance401(AuthTestBase):
    """The three causes of a 401 have three messages, all exit 3."""

    def test_expired_token_is_not_refused_credentials(self):
        self.keystone_issued(_session(issued_ago=20, lifetime=10))
        message, code = checks.glance_error(_401())
        self.assertEqual(checks.EXIT_UNREACHABLE, code)
        self.assertIn('the token expired', message)
        self.assertNotIn('were refused', message)
        message, code = checks.activation_failure(_failed(_401()))
        self.assertEqual(checks.EXIT_UNREACHABLE, code)
        self.assertIn('HTTP 401', message)
        self.assertIn('the token expired', message)
        self.assertNotIn('were refused', message)

    def test_refused_credentials(self):
        # Credentials sent without Keystone (e.g. a static token plugin).
        self.connected.update(endpoint='http://glance:9292',
                              authenticated='yes')
        message, code = checks.glance_error(_401())
        self.assertEqual(checks.EXIT_UNREACHABLE, code)
        self.assertIn('the credentials of [snapshot_ext_glance] were '
                      'refused', message)
        self.assertNotIn('expired', message)

    def test_no_credentials(self):
        self.connected.update(endpoint='http://glance:9292',
                              authenticated='')
        message, code = checks.glance_error(_401())
        self.assertEqual(checks.EXIT_UNREACHABLE, code)
        self.assertIn('no credentials were sent', message)
        self.assertIn('auth_type', message)
        self.assertNotIn('expired', message)


class TestGlance403(AuthTestBase):
    """A 403 names Glance's policy rule and the role usually needed."""

    def test_names_rule_and_role(self):
        cases = (('upload', 'upload_image', 'member role on the image'),
                 ('create', 'add_image', 'member role'),
                 ('get locations', 'fetch_image_location',
                  'service role in the service project'),
                 ('add location', 'add_image_location', 'member (or service)'),
                 ('delete', 'delete_image', 'member role'))
        for operation, rule, role in cases:
            err = glance.translate(gexc.HTTPForbidden('denied'), operation)
            self.assertIsInstance(err, exception.GlanceForbidden)
            message, code = checks.glance_error(err)
            self.assertIn('Glance policy "%s"' % rule, message)
            self.assertIn(role, message)
            # Glance refused: not a credential problem.
            self.assertEqual(checks.EXIT_FAILED, code, operation)

    def test_usage_names_no_policy(self):
        # GET /v2/info/usage is checked against no policy rule.
        err = glance.translate(gexc.HTTPForbidden('denied'), 'usage')
        self.assertNotIn('Glance policy', err.format_message())
