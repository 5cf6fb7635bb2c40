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

"""The console script, as an operator runs it, against a real Glance."""

import json
import os
import subprocess
import sys

import fixtures
import testtools

from nova_snapshot_ext.embedded import demo
from tests import base
from tests.functional import base as fbase


class TestCLI(fbase.FunctionalTestCase):

    GLANCE_PROFILE = 'no-raw'
    GLANCE_OVERRIDES = {'identity': 'token'}

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path
        self.conf_file = os.path.join(self.tmp, 'snapshot.conf')
        token = self.glance.token(self.project_id, self.user_id,
                                  roles=fbase.MEMBER_ROLES)
        demo.write_config(self.conf_file, self.glance.endpoint, token,
                          'hyperv')

    def run_cli(self, *args):
        return subprocess.run(
            [sys.executable, '-m', 'nova_snapshot_ext.cmd.main'] +
            list(args), capture_output=True, text=True, timeout=120,
            check=False)

    def write_request(self, **changes):
        data = base.sample_request_dict()
        data['server']['project_id'] = self.project_id
        data['requester']['project_id'] = self.project_id
        data['name'] = 'cli-%s' % self.project_id[:8]
        data.update(changes)
        path = os.path.join(self.tmp, 'request.json')
        with open(path, 'w', encoding='utf-8') as f:
            json.dump(data, f)
        return path, data['name']

    def test_snapshot_json(self):
        path, name = self.write_request()
        proc = self.run_cli('snapshot', '--config-file', self.conf_file,
                            '--format', 'json', path)
        self.assertEqual(0, proc.returncode, proc.stderr)
        out = json.loads(proc.stdout)
        self.assertEqual(('active', 'vhdx'),
                         (out['image']['status'],
                          out['image']['disk_format']))
        self.assertEqual(out['result']['image_id'], out['image']['id'])
        self.assertEqual('hyperv', out['image']['hypervisor_type'])

    def test_snapshot_human(self):
        path, name = self.write_request()
        proc = self.run_cli('snapshot', '--config-file', self.conf_file,
                            path)
        self.assertEqual(0, proc.returncode, proc.stderr)
        self.assertIn('"status": "active"', proc.stdout)
        self.assertIn('attempt 1: upload vhdx/bare', proc.stdout)

    def test_probe_json(self):
        proc = self.run_cli('probe', '--config-file', self.conf_file,
                            '--format', 'json')
        self.assertEqual(0, proc.returncode, proc.stderr)
        info = json.loads(proc.stdout)
        self.assertNotIn('raw', info['glance']['disk_formats'])
        # Hyper-V's formats first, then every other honest format this
        # Glance allows, smallest first (marked fallback).
        self.assertEqual([('vhdx', False), ('vhd', False), ('iso', False),
                          ('qcow2', True), ('vmdk', True)],
                         [(p['disk_format'], p['fallback'])
                          for p in info['plan']])
        self.assertEqual('hyperv', info['driver']['name'])

    def test_bad_request_names_field_and_creates_nothing(self):
        path, name = self.write_request()
        with open(path) as f:
            data = json.load(f)
        data['block_device_mappings'][1]['volume_size'] = 'big'
        with open(path, 'w') as f:
            json.dump(data, f)
        proc = self.run_cli('snapshot', '--config-file', self.conf_file,
                            path)
        self.assertEqual(2, proc.returncode)
        self.assertIn('block_device_mappings[1].volume_size', proc.stderr)
        self.assertEqual([], self.list_all_images(filters={'name': name}))

    def test_missing_config_file(self):
        path, _ = self.write_request()
        proc = self.run_cli('snapshot', '--config-file',
                            os.path.join(self.tmp, 'nope.conf'), path)
        self.assertEqual(2, proc.returncode)
        self.assertIn('nope.conf does not exist', proc.stderr)

    def test_preflight_refusal_exit_code(self):
        path, name = self.write_request(metadata={'os_glance_x': '1'})
        proc = self.run_cli('snapshot', '--config-file', self.conf_file,
                            path)
        self.assertEqual(2, proc.returncode)
        self.assertIn("'os_glance_x' is reserved", proc.stderr)
        self.assertEqual([], self.list_all_images(filters={'name': name}))


class TestDemo(testtools.TestCase):
    """The README's demo command, as a subprocess."""

    def setUp(self):
        super().setUp()
        if fbase.SKIP_REASON:
            self.skipTest(fbase.SKIP_REASON)

    def test_demo_prints_active_raw_image_with_three_mappings(self):
        proc = subprocess.run(
            [sys.executable, '-m', 'nova_snapshot_ext.cmd.main', 'demo',
             '--format', 'json'], capture_output=True, text=True,
            timeout=300, check=False)
        self.assertEqual(0, proc.returncode, proc.stderr[-3000:])
        out = json.loads(proc.stdout)
        image = out['image']
        self.assertEqual(('active', 'raw', 'bare', 0),
                         (image['status'], image['disk_format'],
                          image['container_format'], image['size']))
        self.assertEqual(3, len(json.loads(image['block_device_mapping'])))
        # Nothing left: the demo's temp dir is gone.
        self.assertFalse(os.path.exists(image['direct_url'][len('file://'):]
                                        .rsplit('/images/', 1)[0]))

    def test_demo_unknown_profile(self):
        proc = subprocess.run(
            [sys.executable, '-m', 'nova_snapshot_ext.cmd.main', 'demo',
             '--profile', 'nope'], capture_output=True, text=True,
            timeout=60, check=False)
        self.assertEqual(2, proc.returncode)
        self.assertIn("unknown profile 'nope'", proc.stderr)
