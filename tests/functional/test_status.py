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


"""``nova-snapshot-ext-status upgrade check`` against embedded real Glances.

Each Glance-facing check passes on one embedded Glance and fails (or
warns) on another configured to fail it:

* API 2.17: listed by Glance 33 (pass); Glance 28 lacks it - run
  ``tox -e glance28 -- tests.functional.test_status`` (skipped otherwise).
* ``raw``: the default profile (pass), ``no-raw`` (warning naming the
  fallback), ``ploop-only`` with ``driver_formats_only`` (failure: no
  honest activation).
* Default store: the embedded Glance's ``file`` store read from
  ``GET /v2/info/stores/detail`` with an admin token (pass).  A Cinder
  default store is checked from a ``glance-api.conf`` only: running
  glance_store's cinder driver needs a Cinder (and os-brick), which the
  embedded Glance does not have, so the file is written by the test (the
  fake) and the identity is a member, which ``stores/detail`` refuses.
* Location activation (roles): ``upload`` mode needs none (pass); in
  location mode the embedded Glance's fake tokens (``admin_token``) do not
  tell keystoneauth the roles, so the check warns that it cannot tell (the
  role cases are unit tests over keystoneauth access objects).
* Paste filter: :mod:`tests.unit.cmd.test_status` and ``tests/nova`` (Nova's
  real ``api-paste.ini``).
"""

import json
import os
import subprocess
import sys

import fixtures

from tests import base
from tests.functional import base as fbase

GOOD_PASTE = """\
[composite:openstack_compute_api_v21]
use = call:nova.api.auth:pipeline_factory_v21
keystone = cors authtoken keystonecontext snapshot_ext osapi_compute_app_v21

[filter:snapshot_ext]
paste.filter_factory = nova_snapshot_ext.nova.filter:filter_factory
"""

CINDER_GLANCE_CONF = """\
[DEFAULT]
enabled_backends = fs:file, vol:cinder

[glance_store]
default_backend = vol
"""


class StatusTestCase(fbase.FunctionalTestCase):

    GLANCE_OVERRIDES = {'identity': 'token'}
    DRIVER = 'libvirt'
    ROLES = fbase.ADMIN_ROLES

    def setUp(self):
        super().setUp()
        self.conf_file = self.write_cli_config('status.conf', self.DRIVER,
                                               roles=self.ROLES)
        self.paste = os.path.join(self.tmp, 'api-paste.ini')
        with open(self.paste, 'w') as f:
            f.write(GOOD_PASTE)

    def add_options(self, text):
        with open(self.conf_file, 'a') as f:
            f.write('\n' + text + '\n')

    def status(self, *extra):
        proc = subprocess.run(
            [sys.executable, '-m', 'nova_snapshot_ext.cmd.status',
             '--config-file', self.conf_file, '--api-paste', self.paste] +
            list(extra) + ['upgrade', 'check', '--json'],
            capture_output=True, text=True, timeout=120, check=False)
        self.assertNotIn('Traceback', proc.stdout + proc.stderr)
        out = json.loads(proc.stdout)
        results = {c['check']: (c['result'], c['details'])
                   for c in out['checks']}
        self.assertEqual(max(r for r, _ in results.values()),
                         proc.returncode, proc.stdout)
        return proc.returncode, results


class TestDefaultGlance(StatusTestCase):

    def test_every_check_passes(self):
        self.skipUnlessGlanceHas('location_api')
        code, results = self.status()
        self.assertEqual(0, code, results)
        self.assertIn('type file', results['Default store'][1])
        self.assertIn('v2.17', results['Glance API 2.17 (location '
                                       'activation)'][1])

    def test_without_2_17(self):
        rel = self.glance_release
        if rel is None or rel.location_api:
            self.skipTest('needs a Glance without API 2.17: tox -e glance28 '
                          '-- tests.functional.test_status')
        code, results = self.status()
        check = 'Glance API 2.17 (location activation)'
        self.assertEqual(1, results[check][0])
        self.assertIn('no v2.17', results[check][1])
        self.add_options('[snapshot_ext]\nactivation_method = '
                         'location-first\nlocation_url = '
                         'http://127.0.0.1:9/empty.qcow2')
        code, results = self.status()
        # location_api = auto falls back to the legacy API, which may
        # work: not a Failure (a check never fails what may work).
        self.assertEqual(1, results[check][0])
        self.assertIn('the legacy API is used', results[check][1])
        self.add_options('location_api = new')
        code, results = self.status()
        self.assertEqual(2, results[check][0])
        self.assertIn('Upgrade Glance to 29 or later', results[check][1])

    def test_cinder_default_store_from_glance_conf(self):
        conf = os.path.join(self.tmp, 'glance-api.conf')
        with open(conf, 'w') as f:
            f.write(CINDER_GLANCE_CONF)
        self.conf_file = self.write_cli_config('member.conf', self.DRIVER,
                                               roles=fbase.MEMBER_ROLES)
        code, results = self.status('--glance-api-conf', conf)
        result, details = results['Default store']
        self.assertEqual(1, result, details)
        self.assertIn('1 GiB volume', details)
        self.assertIn('activation_method = location-first', details)
        # Without the file a member cannot learn the store type.
        code, results = self.status()
        self.assertEqual(1, results['Default store'][0])
        self.assertIn('--glance-api-conf', results['Default store'][1])

    def test_location_roles_unknown_with_a_static_token(self):
        self.add_options('[snapshot_ext]\nactivation_method = '
                         'location-fallback\nlocation_url = '
                         'http://127.0.0.1:9/empty.qcow2')
        code, results = self.status()
        result, details = results['Location activation (roles)']
        self.assertEqual(1, result, details)
        self.assertIn('cannot tell the roles', details)

    def test_paste_filter_missing_fails(self):
        with open(self.paste, 'w') as f:
            f.write(GOOD_PASTE.replace(' snapshot_ext', ''))
        code, results = self.status()
        self.assertEqual(2, code)
        self.assertIn('lacks snapshot_ext', results['Paste filter'][1])

    def test_unreachable_glance_fails_each_glance_check(self):
        with open(self.conf_file) as f:
            text = f.read()
        with open(self.conf_file, 'w') as f:
            f.write(text.replace(self.glance.endpoint, 'http://127.0.0.1:9'))
        code, results = self.status()
        self.assertEqual(2, code)
        self.assertIn('could not be reached', results['Glance'][1])
        self.assertEqual(2, results["'raw' allowed"][0])


class TestNoRawGlance(StatusTestCase):

    GLANCE_PROFILE = 'no-raw'

    def test_raw_refused_names_the_fallback(self):
        code, results = self.status()
        result, details = results["'raw' allowed"]
        self.assertEqual(1, result, details)
        self.assertIn('falls back to upload qcow2', details)
        self.assertIn('[image_format] disk_formats', details)


class TestNoHonestActivation(StatusTestCase):

    GLANCE_PROFILE = 'ploop-only'

    def test_no_plan_fails(self):
        # libvirt (kvm) does not read ploop: only a fallback remains, and
        # driver_formats_only refuses fallbacks.
        self.add_options('[snapshot_ext]\ndriver_formats_only = true')
        code, results = self.status()
        self.assertEqual(2, code)
        result, details = results["'raw' allowed"]
        self.assertEqual(2, result, details)
        self.assertIn('snapshots would be refused', details)


class TestNoCheckResult(base.TestCase):
    """Through the console script: errors that are no check result.

    oslo.upgradecheck's convention: 0, 1, 2 are check results only; a
    usage error or a configuration that cannot be read is 255.
    """

    def run_status(self, *argv):
        return subprocess.run(
            [sys.executable, '-m', 'nova_snapshot_ext.cmd.status'] +
            list(argv), capture_output=True, text=True, timeout=120,
            check=False)

    def test_exit_255_and_version(self):
        tmp = self.useFixture(fixtures.TempDir()).path
        broken = os.path.join(tmp, 'broken.conf')
        with open(broken, 'w') as f:
            f.write('[snapshot_ext\n')
        for argv in (['--config-file', '/nonexistent', 'upgrade', 'check'],
                     ['--config-file', broken, 'upgrade', 'check'],
                     ['upgrade'], ['upgrade', 'check', '--bogus']):
            proc = self.run_status(*argv)
            self.assertEqual(255, proc.returncode, (argv, proc.stderr))
            self.assertNotIn('Traceback', proc.stderr)
        proc = self.run_status('--version')
        self.assertEqual(0, proc.returncode, proc.stderr)
        self.assertRegex(proc.stdout + proc.stderr, r'\d')
