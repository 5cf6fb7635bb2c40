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

"""The console script's input handling (no Glance needed)."""

import io
import json
import os

from unittest import mock

import fixtures

from nova_snapshot_ext.cmd import main
from nova_snapshot_ext import exception
from nova_snapshot_ext.image import glance as glance_mod
from nova_snapshot_ext.snapshot import service
from tests import base


class TestCLIInput(base.TestCase):

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path
        self.stderr = self.useFixture(fixtures.MonkeyPatch(
            'sys.stderr', io.StringIO())).new_value

    def write(self, name, text):
        path = os.path.join(self.tmp, name)
        with open(path, 'w', encoding='utf-8') as f:
            f.write(text)
        return path

    def run_main(self, *argv):
        return main.main(list(argv))

    def test_deeply_nested_json(self):
        path = self.write('r.json', '[' * 100000 + ']' * 100000)
        self.assertEqual(2, self.run_main('snapshot', '--config-file',
                                          self.write('c.conf', ''), path))
        self.assertIn('nested too deeply', self.stderr.getvalue())

    def test_config_file_is_a_directory(self):
        req = self.write('r.json', json.dumps(base.sample_request_dict()))
        self.assertEqual(2, self.run_main('snapshot', '--config-file',
                                          self.tmp, req))
        self.assertIn('is not a file', self.stderr.getvalue())

    def test_unknown_auth_type_names_option(self):
        req = self.write('r.json', json.dumps(base.sample_request_dict()))
        conf = self.write('c.conf', '[snapshot_ext_glance]\n'
                          'auth_type = nosuchplugin\n')
        self.assertEqual(2, self.run_main('snapshot', '--config-file', conf,
                                          req))
        self.assertIn('[snapshot_ext_glance] auth_type',
                      self.stderr.getvalue())

    def test_no_auth_names_option(self):
        req = self.write('r.json', json.dumps(base.sample_request_dict()))
        self.assertEqual(2, self.run_main('snapshot', '--config-file',
                                          self.write('c.conf', ''), req))
        self.assertIn('[snapshot_ext_glance] auth_type',
                      self.stderr.getvalue())

    def test_bad_option_value_names_option(self):
        for text, option in (
                ('activation_poll_interval = -1', 'activation_poll_interval'),
                ('activation_timeout = abc', 'activation_timeout'),
                ('disk_formats = bogus,qcow9', 'disk_formats')):
            self.stderr.seek(0)
            self.stderr.truncate()
            conf = self.write('c.conf', '[snapshot_ext]\n%s\n' % text)
            req = self.write('r.json',
                             json.dumps(base.sample_request_dict()))
            self.assertEqual(2, self.run_main('snapshot', '--config-file',
                                              conf, req), text)
            self.assertIn('[snapshot_ext] %s' % option,
                          self.stderr.getvalue())

    def test_redact_image(self):
        image = {'id': 'i', 'direct_url': 'http://u:pw@h/x?sig=s',
                 'locations': [{'url': 'http://u:pw@h/x?sig=s',
                                'metadata': {}}]}
        shown = main.redact_image(image)
        self.assertEqual('http://***@h/x?***', shown['direct_url'])
        self.assertEqual('http://***@h/x?***', shown['locations'][0]['url'])
        self.assertIn('pw', image['direct_url'])


class TestCheckOptions(base.TestCase):

    def test_every_core_option_checked_at_start(self):
        self.flags(disk_formats=['qcow9'])
        err = self.assertRaises(exception.ConfigurationError,
                                service.check_options, self.conf)
        self.assertIn('qcow9', err.format_message())

    def test_service_refuses_to_start(self):
        self.flags(disk_formats=['ami'])
        self.assertRaises(exception.ConfigurationError,
                          service.SnapshotService, self.conf,
                          glance=glance_mod.GlanceClient.__new__(
                              glance_mod.GlanceClient))


class TestDemoChoices(base.TestCase):

    def test_location_object_format_follows_driver(self):
        from nova_snapshot_ext.embedded import demo
        self.assertEqual('qcow2', demo.location_format_for('libvirt'))
        self.assertEqual('vhdx', demo.location_format_for('hyperv'))
        self.assertEqual('vmdk', demo.location_format_for('vmwareapi'))
        self.assertRaises(exception.ConfigurationError,
                          demo.location_format_for, 'zvm')

    def test_unknown_driver_refused_before_glance_starts(self):
        from nova_snapshot_ext.embedded import demo
        with mock.patch.object(demo.embedded, 'EmbeddedGlance') as glance:
            self.assertRaises(exception.DriverNotFound, demo.run,
                              driver='bogus')
        glance.assert_not_called()
