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

"""The console script through a real Keystone 30 and a Glance behind it.

Keystone issues the tokens, Glance validates them with keystonemiddleware,
the CLI finds Glance in the catalog (region, interface): passwords,
application credentials, wrong passwords, missing roles, a reader-only
identity, the service token, and a token that expires mid-run.
"""

import io
import json
import os
import subprocess
import sys
import time
import uuid

import fixtures
import testtools

from nova_snapshot_ext.cmd import config as cli_config
from nova_snapshot_ext.embedded import keystone as embedded_keystone
from nova_snapshot_ext import exception
from nova_snapshot_ext.image import glance as glance_mod
from tests import base
from tests.functional import base as fbase
from tests.functional import keystone_base


#: Set (by the functional-keystone tox env) to run these tests: they
#: install Keystone into its own virtualenv on first use.
KEYSTONE_ENV = 'NOVA_SNAPSHOT_EXT_KEYSTONE'


def skip_reason():
    """Why the Keystone tests cannot run here, or None."""
    if not os.environ.get(KEYSTONE_ENV):
        return ('the Keystone tests run in tox -e functional-keystone '
                '(%s=1)' % KEYSTONE_ENV)
    return fbase.SKIP_REASON


class KeystoneCLITestCase(testtools.TestCase):
    """Runs the CLI against a Keystone-backed Glance."""

    FIXTURE = {}

    def setUp(self):
        super().setUp()
        if skip_reason():
            self.skipTest(skip_reason())
        self.kg = keystone_base.shared(**self.FIXTURE)
        self.tmp = self.useFixture(fixtures.TempDir()).path

    def run_cli(self, *args, timeout=300):
        return subprocess.run(
            [sys.executable, '-m', 'nova_snapshot_ext.cmd.main'] +
            list(args), capture_output=True, text=True, timeout=timeout,
            check=False)

    def write_request(self, project='demo', name=None):
        data = base.sample_request_dict()
        project_id = self.kg.project_id(project)
        data['server']['project_id'] = project_id
        data['requester']['project_id'] = project_id
        data['name'] = name or 'ks-%s' % self.id().rsplit('.', 1)[-1][:40]
        for bdm in data['block_device_mappings']:
            if bdm.get('snapshot_id'):
                bdm['snapshot_id'] = str(uuid.uuid4())
        path = os.path.join(self.tmp, 'request.json')
        with open(path, 'w', encoding='utf-8') as f:
            json.dump(data, f)
        return path, data['name']

    def snapshot(self, conf_file, **request):
        path, name = self.write_request(**request)
        proc = self.run_cli('snapshot', '--config-file', conf_file,
                            '--format', 'json', path)
        return proc, name

    def images_named(self, name, project='demo'):
        return [i for i in self.kg.images_of(project)
                if i.get('name') == name]

    def error_of(self, proc):
        return json.loads(proc.stdout)['error']

    def conf(self, path):
        return cli_config.load_conf_files([path])


class TestKeystoneAuth(KeystoneCLITestCase):

    def test_password_with_catalog_discovery(self):
        for interface in ('public', 'internal'):
            conf = self.kg.cli_config(self.tmp, interface=interface)
            proc, name = self.snapshot(conf, name='pw-%s' % interface)
            self.assertEqual(0, proc.returncode, proc.stderr)
            out = json.loads(proc.stdout)
            self.assertEqual('active', out['image']['status'])
            self.assertEqual(self.kg.project_id('demo'),
                             out['image']['owner'])

    def test_application_credential(self):
        cred = self.kg.keystone.application_credential('demo', 'demo')
        conf = self.kg.cli_config(self.tmp, app_credential=cred)
        proc, name = self.snapshot(conf)
        self.assertEqual(0, proc.returncode, proc.stderr)
        self.assertEqual('active', json.loads(proc.stdout)['image']['status'])

    def test_unknown_region_has_no_image_endpoint(self):
        conf = self.kg.cli_config(self.tmp, region='RegionTwo')
        proc, name = self.snapshot(conf)
        self.assertEqual(3, proc.returncode, proc.stderr)
        self.assertIn('no image endpoint', self.error_of(proc))
        self.assertIn('region_name=RegionTwo', self.error_of(proc))
        self.assertEqual([], self.images_named(name))

    def test_wrong_password(self):
        conf = self.kg.cli_config(self.tmp, password='not-the-password')
        proc, name = self.snapshot(conf)
        self.assertEqual(3, proc.returncode, proc.stderr)
        error = self.error_of(proc)
        self.assertIn('refused the credentials of [snapshot_ext_glance]',
                      error)
        self.assertNotIn('expired', error)
        self.assertEqual([], self.images_named(name))

    def test_missing_role_on_project(self):
        # Keystone answers a user without a role on the project with the
        # same 401 as a wrong password: the message names both causes.
        conf = self.kg.cli_config(self.tmp, user='norole', project='demo')
        proc, name = self.snapshot(conf)
        self.assertEqual(3, proc.returncode, proc.stderr)
        error = self.error_of(proc)
        self.assertIn('has a role on that project', error)
        self.assertNotIn('expired', error)
        self.assertEqual([], self.images_named(name))

    def test_reader_cannot_snapshot(self):
        conf = self.kg.cli_config(self.tmp, user='reader', project='demo')
        proc, name = self.snapshot(conf)
        self.assertNotEqual(0, proc.returncode, proc.stderr)
        error = self.error_of(proc)
        self.assertIn('Glance policy "add_image"', error)
        self.assertIn('member role', error)
        self.assertNotIn('credentials', error)
        self.assertEqual([], self.images_named(name))

    def test_reader_in_probe(self):
        conf = self.kg.cli_config(self.tmp, user='reader', project='demo')
        proc = self.run_cli('probe', '--config-file', conf, '--format',
                            'json')
        self.assertEqual(1, proc.returncode, proc.stderr)
        out = json.loads(proc.stdout)
        self.assertFalse(out['permissions']['ok'])
        self.assertIsNone(out['permissions']['left'])
        self.assertIn('create', [s['step'] for s in
                                 out['permissions']['steps']
                                 if not s['ok']])
        self.assertEqual([], [i for i in self.kg.images_of('demo')
                              if i['name'].startswith(
                                  'nova-snapshot-ext-probe-')])
        roles = out['roles']
        self.assertEqual(['reader'], roles['roles'])
        # activation_method = upload: the location route is not used,
        # so its roles are not judged.
        self.assertEqual({'upload': False, 'location': None,
                          "share with the server's project": False},
                         {r['route']: r['ok'] for r in roles['routes']})
        self.assertIsNone(out['quotas'])
        proc = self.run_cli('probe', '--config-file', conf)
        self.assertIn('upload: MISSING ROLE (needs member or admin',
                      proc.stdout)

    def test_member_in_probe(self):
        conf = self.kg.cli_config(self.tmp, service_user='nova')
        proc = self.run_cli('probe', '--config-file', conf, '--format',
                            'json')
        self.assertEqual(0, proc.returncode, proc.stderr)
        roles = json.loads(proc.stdout)['roles']
        self.assertEqual(['member', 'reader'], roles['roles'])
        self.assertEqual(['service'], roles['service_token_roles'])
        # activation_method = upload: the location route is not used.
        self.assertEqual({'upload': True, 'location': None,
                          "share with the server's project": True},
                         {r['route']: r['ok'] for r in roles['routes']})
        self.assertNotIn('MISSING ROLE', self.run_cli(
            'probe', '--config-file', conf).stdout)

    def test_location_read_needs_the_service_role(self):
        # Glance 32+ (rule service_api: role:service or role:admin) checks
        # the roles of the request's own token; a service token beside a
        # member's token does not grant it.
        image = self.kg.client('demo').images.create(
            name='loc-read', disk_format='raw', container_format='bare',
            visibility='community')
        self.addCleanup(self.kg.client('demo').images.delete, image['id'])
        for service_user in (None, 'nova'):
            member = glance_mod.GlanceClient.from_conf(self.conf(
                self.kg.cli_config(self.tmp, service_user=service_user)))
            err = self.assertRaises(exception.GlanceForbidden,
                                    member.get_locations, image['id'])
            self.assertIn('Glance policy "fetch_image_location"',
                          err.format_message())
            self.assertIn('service role', err.format_message())
        service = glance_mod.GlanceClient.from_conf(self.conf(
            self.kg.cli_config(self.tmp, user='nova', project='service')))
        self.assertEqual([], service.get_locations(image['id']))

    def test_snapshot_with_service_token(self):
        conf = self.kg.cli_config(self.tmp, service_user='nova')
        proc, name = self.snapshot(conf)
        self.assertEqual(0, proc.returncode, proc.stderr)
        self.assertEqual('active', json.loads(proc.stdout)['image']['status'])


class TestTokenExpiry(KeystoneCLITestCase):
    """A 10 s token and a Glance 20 s slow to take the upload."""

    FIXTURE = {'token_expiration': 10, 'proxy': True}

    def test_token_expires_mid_upload(self):
        # One attempt (each attempt's upload would wait 20 s again), the
        # zero-length raw one: Glance refuses the token before any body.
        conf = self.kg.cli_config(self.tmp, disk_formats=['raw'])
        self.kg.proxy.add_rule('PUT', r'^/v2/images/[^/]+/file$', 'delay',
                               seconds=20, when='before', times='always')
        self.addCleanup(self.kg.proxy.clear)
        started = time.monotonic()
        proc, name = self.snapshot(conf)
        self.assertGreater(time.monotonic() - started, 20)
        self.assertEqual(3, proc.returncode, proc.stderr)
        error = self.error_of(proc)
        self.assertIn('token expired', error)
        self.assertIn('credentials are not at fault', error)
        self.assertIn("[token] expiration (10 s)", error)
        self.assertNotIn('were refused', error)
        self.assertNotIn('refused the credentials', error)
        self.assertEqual([], self.images_named(name))


class TestKeystoneTemplate(testtools.TestCase):

    def test_ids_and_catalog(self):
        if skip_reason():
            self.skipTest(skip_reason())
        kg = keystone_base.shared()
        ids = kg.keystone.ids
        self.assertEqual(set(embedded_keystone.USERS) | {'admin'},
                         set(ids['users']))
        catalog = kg.keystone.admin('GET', '/endpoints?service_id=%s'
                                    % ids['image_service'])['endpoints']
        self.assertEqual({('public', kg.glance.endpoint),
                          ('internal', kg.glance.endpoint)},
                         {(e['interface'], e['url']) for e in catalog})


class TestGlanceQuotas(KeystoneCLITestCase):
    """Glance with use_keystone_limits; each test changes project alt."""

    FIXTURE = {'keystone_limits': True, 'proxy': True}

    def set_limit(self, resource, value):
        self.kg.keystone.set_project_limit('alt', resource, value)
        self.addCleanup(self.kg.keystone.set_project_limit, 'alt', resource,
                        embedded_keystone.GLANCE_LIMITS[resource])

    def alt_snapshot(self):
        conf = self.kg.cli_config(self.tmp, user='alt')
        return self.snapshot(conf, project='alt')

    def assertRefusedBeforeCreate(self, proc, name, resource):
        # Over the project's quota: exit 1, as when Glance's 413 says so at
        # the create (test_quota_reached_at_the_create).
        self.assertEqual(1, proc.returncode, proc.stderr)
        error = self.error_of(proc)
        self.assertIn("Glance's quota %s" % resource, error)
        self.assertIn('nothing was created', error)
        self.assertEqual([], self.images_named(name, 'alt'))
        self.assertEqual(0, self.kg.proxy.count('POST', r'^/v2/images$'))

    def test_image_count_total(self):
        self.set_limit('image_count_total',
                       len(self.kg.images_of('alt')))
        self.kg.proxy.clear()
        proc, name = self.alt_snapshot()
        self.assertRefusedBeforeCreate(proc, name, 'image_count_total')

    def test_image_count_uploading_counts_the_image_itself(self):
        self.set_limit('image_count_uploading', 0)
        self.kg.proxy.clear()
        proc, name = self.alt_snapshot()
        self.assertRefusedBeforeCreate(proc, name, 'image_count_uploading')

    def test_image_size_total(self):
        client = self.kg.client('alt')
        big = client.images.create(name='two-mib', disk_format='raw',
                                   container_format='bare')
        self.addCleanup(client.images.delete, big['id'])
        client.images.upload(big['id'], io.BytesIO(b'\0' * (2 * 1024 * 1024)))
        self.set_limit('image_size_total', 1)
        self.kg.proxy.clear()
        proc, name = self.alt_snapshot()
        self.assertRefusedBeforeCreate(proc, name, 'image_size_total')
        self.assertIn('uses 2 of 1 MiB', self.error_of(proc))

    def test_probe_reports_headroom(self):
        self.set_limit('image_count_uploading', 0)
        conf = self.kg.cli_config(self.tmp, user='alt')
        proc = self.run_cli('probe', '--config-file', conf, '--format',
                            'json', '--no-write-check')
        self.assertEqual(0, proc.returncode, proc.stderr)
        quotas = json.loads(proc.stdout)['quotas']
        self.assertEqual({'usage': 0, 'limit': 0, 'left': 0},
                         quotas['headroom']['image_count_uploading'])
        self.assertEqual(set(embedded_keystone.GLANCE_LIMITS),
                         set(quotas['headroom']))
        self.assertIsNone(quotas['create'])
        self.assertTrue(quotas['attempts'])
        for attempt in quotas['attempts']:
            self.assertIn('image_count_uploading', attempt['refused'])
        text = self.run_cli('probe', '--config-file', conf,
                            '--no-write-check').stdout
        self.assertIn('image_count_uploading: 0 / 0, 0 left', text)

    def test_image_stage_total_is_not_met(self):
        # The plugin never stages (no interoperable import): a stage limit
        # of 0 leaves a snapshot possible.
        self.set_limit('image_stage_total', 0)
        proc, name = self.alt_snapshot()
        self.assertEqual(0, proc.returncode, proc.stderr)
        self.assertEqual('active', json.loads(proc.stdout)['image']['status'])

    def test_quota_reached_at_the_create(self):
        # The limit drops between the preflight and the create: Glance
        # answers 413 to the create; the same exit status as the
        # preflight's refusal of the same quota.
        count = len(self.kg.images_of('alt'))
        self.kg.proxy.clear()
        self.kg.proxy.add_rule(
            'POST', r'^/v2/images$', 'hook',
            hook=lambda: self.kg.keystone.set_project_limit(
                'alt', 'image_count_total', count))
        self.addCleanup(self.kg.proxy.clear)
        self.addCleanup(self.kg.keystone.set_project_limit, 'alt',
                        'image_count_total',
                        embedded_keystone.GLANCE_LIMITS['image_count_total'])
        proc, name = self.alt_snapshot()
        self.assertEqual(1, proc.returncode, proc.stderr)
        self.assertIn('image_count_total', self.error_of(proc))
        self.assertEqual([], self.images_named(name, 'alt'))
        self.assertEqual(1, self.kg.proxy.count('POST', r'^/v2/images$'))

    def test_quota_reached_during_the_upload(self):
        # The limit drops between the preflight and the upload: Glance
        # answers 413; the image is deleted and the message names it.
        self.kg.proxy.add_rule(
            'PUT', r'^/v2/images/[^/]+/file$', 'hook',
            hook=lambda: self.kg.keystone.set_project_limit(
                'alt', 'image_count_uploading', 0))
        self.addCleanup(self.kg.proxy.clear)
        self.addCleanup(self.kg.keystone.set_project_limit, 'alt',
                        'image_count_uploading',
                        embedded_keystone.GLANCE_LIMITS[
                            'image_count_uploading'])
        proc, name = self.alt_snapshot()
        self.assertEqual(1, proc.returncode, proc.stderr)
        error = self.error_of(proc)
        self.assertIn("Glance's quota image_count_uploading", error)
        self.assertIn('the image being uploaded counts itself', error)
        self.assertEqual([], self.images_named(name, 'alt'))
