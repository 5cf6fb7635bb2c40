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

import argparse
import io
import json
import logging
import os
import signal
import sys

from unittest import mock

import fixtures
from keystoneauth1 import exceptions as ks_exc

from nova_snapshot_ext.cmd import checks
from nova_snapshot_ext.cmd import logs
from nova_snapshot_ext.cmd import main
from nova_snapshot_ext.cmd import snapshot as snapshot_cmd
from nova_snapshot_ext import exception
from nova_snapshot_ext.image import glance as glance_mod
from nova_snapshot_ext.image import quotas
from nova_snapshot_ext.snapshot import service
from tests import base


class CLITestCase(base.TestCase):
    """A temp dir for input files; stdout and stderr captured."""

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path
        self.stderr = self.useFixture(fixtures.MonkeyPatch(
            'sys.stderr', io.StringIO())).new_value
        self.stdout = self.useFixture(fixtures.MonkeyPatch(
            'sys.stdout', io.StringIO())).new_value

    def write(self, name, text):
        path = os.path.join(self.tmp, name)
        with open(path, 'w', encoding='utf-8') as f:
            f.write(text)
        return path

    def run_main(self, *argv):
        return main.main(list(argv))


class TestCLIInput(CLITestCase):

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

    def test_deprecated_option_names_help_shows_are_accepted(self):
        # --help lists '--log-file PATH, --logfile PATH' and
        # '--log-config-append PATH, --log-config PATH, --log_config PATH'.
        log = os.path.join(self.tmp, 'x.log')
        req = self.write('r.json', json.dumps(base.sample_request_dict()))
        conf = self.write('c.conf', '[snapshot_ext_glance]\n'
                          'auth_type = nosuchplugin\n')
        self.assertEqual(2, self.run_main('--logfile', log, 'snapshot',
                                          '--config-file', conf, req))
        self.assertNotIn('unknown option', self.stderr.getvalue())
        self.assertIn('[snapshot_ext_glance] auth_type',
                      self.stderr.getvalue())
        self.assertEqual(2, self.run_main('--logdir', ' ', 'probe'))
        self.assertIn('--logdir must not be empty', self.stderr.getvalue())

    def test_config_dir_is_a_file(self):
        # oslo.config globs <file>/*.conf: nothing read, silently.
        req = self.write('r.json', json.dumps(base.sample_request_dict()))
        conf = self.write('c.conf', '[snapshot_ext]\ndriver = libvirt\n')
        self.assertEqual(2, self.run_main('snapshot', '--config-dir', conf,
                                          req))
        self.assertIn('--config-dir %s is not a directory' % conf,
                      self.stderr.getvalue())

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

    def assert_input_error(self, argv, *words):
        self.stdout.seek(0)
        self.stdout.truncate()
        self.stderr.seek(0)
        self.stderr.truncate()
        self.assertEqual(2, self.run_main('--format', 'json', *argv))
        shown = json.loads(self.stdout.getvalue())
        self.assertEqual(2, shown['exit_code'])
        for word in words:
            self.assertIn(word, shown['error'])
            self.assertIn(word, self.stderr.getvalue())
        self.assertNotIn('Traceback', self.stderr.getvalue())

    def write_bytes(self, name, data):
        path = os.path.join(self.tmp, name)
        with open(path, 'wb') as f:
            f.write(data)
        return path

    def test_config_file_not_utf8(self):
        # Latin-1, UTF-16 with BOM: oslo.config raised UnicodeDecodeError
        # (traceback, exit 1, no JSON).
        for data in ('[snapshot_ext]\n# caf\xe9\n'.encode('latin-1'),
                     '[snapshot_ext]\n'.encode('utf-16')):
            conf = self.write_bytes('c.conf', data)
            self.assert_input_error(['--config-file', conf, 'probe'],
                                    conf, 'not UTF-8')

    def test_config_dir_file_not_utf8(self):
        directory = os.path.join(self.tmp, 'conf.d')
        os.mkdir(directory)
        bad = os.path.join(directory, '10-bad.conf')
        with open(bad, 'wb') as f:
            f.write(b'[DEFAULT]\n\xff\xfe\n')
        self.assert_input_error(['--config-dir', directory, 'probe'],
                                bad, 'not UTF-8')

    def test_log_file_cannot_be_opened(self):
        missing = os.path.join(self.tmp, 'no', 'such', 'dir')
        self.assert_input_error(
            ['--log-file', os.path.join(missing, 'x.log'), 'probe'],
            'log file', 'log_file', missing)
        self.assert_input_error(['--log-dir', missing, 'probe'],
                                'log_dir', missing)
        conf = self.write('c.conf', '[DEFAULT]\nlog_file = %s/x.log\n'
                          % missing)
        self.assert_input_error(['--config-file', conf, 'probe'],
                                'log_file', missing)

    def test_log_config_append_missing(self):
        conf = self.write('c.conf', '[DEFAULT]\nlog_config_append = '
                          '%s/nope.conf\n' % self.tmp)
        self.assert_input_error(['--config-file', conf, 'probe'],
                                'log_config_append', 'nope.conf')

    def test_unreachable_endpoint_of_auth_plugin_named(self):
        # admin_token names its own endpoint: no catalog was read, so the
        # error must not send the operator to the Keystone catalog.
        conf = self.write('c.conf', '[snapshot_ext_glance]\n'
                          'auth_type = admin_token\n'
                          'endpoint = http://127.0.0.1:9\ntoken = t\n'
                          'connect_retries = 0\n')
        self.assertEqual(3, self.run_main('--config-file', conf, 'probe'))
        err = self.stderr.getvalue()
        self.assertIn('[snapshot_ext_glance] endpoint of auth_type '
                      'admin_token', err)
        self.assertNotIn('Keystone catalog', err)

    def test_catalogless_auth_plugin_without_endpoint_is_bad_config(self):
        # admin_token / none / http_basic read no catalog: without their
        # endpoint (and no endpoint_override) the option is missing; no
        # Keystone was asked, none is unreachable.
        for plugin, extra in (('admin_token', 'token = t\n'),
                              ('none', ''),
                              ('http_basic', 'username = u\n'
                                             'password = p\n')):
            with self.subTest(plugin=plugin):
                self.stderr.seek(0)
                self.stderr.truncate()
                conf = self.write('c-%s.conf' % plugin,
                                  '[snapshot_ext_glance]\nauth_type = %s\n'
                                  '%s' % (plugin, extra))
                self.assertEqual(2, self.run_main('--config-file', conf,
                                                  'probe'))
                err = self.stderr.getvalue()
                self.assertIn('[snapshot_ext_glance] endpoint', err)
                self.assertIn('auth_type %s' % plugin, err)
                self.assertNotIn('catalog has no image endpoint', err)

    def test_bad_format_value_named_without_internal_repr(self):
        for argv in (['--format', 'xml', 'probe'],
                     ['probe', '--format=JSON']):
            self.stderr.seek(0)
            self.stderr.truncate()
            self.assertEqual(2, self.run_main(*argv))
            err = self.stderr.getvalue()
            self.assertIn('error: --format must be text or json', err)
            self.assertNotIn('String(', err)

    def test_redact_image(self):
        image = {'id': 'i', 'direct_url': 'http://u:pw@h/x?sig=s',
                 'locations': [{'url': 'http://u:pw@h/x?sig=s',
                                'metadata': {}}]}
        shown = snapshot_cmd.redact_image(image)
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
        from nova_snapshot_ext.cmd import demo
        with mock.patch.object(demo.embedded, 'EmbeddedGlance') as glance:
            self.assertRaises(exception.DriverNotFound, demo.run,
                              driver='bogus')
        glance.assert_not_called()


class TestAuthPluginOptions(CLITestCase):
    """Options an auth plugin checks itself are configuration errors."""

    CASES = [
        # (config lines, text the plugin's own message holds)
        ('auth_type = password\nauth_url = http://127.0.0.1:9/v3\n'
         'username = u\n', 'password is a required attribute'),
        ('auth_type = v3applicationcredential\n'
         'auth_url = http://127.0.0.1:9/v3\n', 'application credential'),
    ]

    def test_missing_plugin_option_is_exit_2_naming_auth_type(self):
        for lines, text in self.CASES:
            for fmt in ('text', 'json'):
                with self.subTest(lines=lines, fmt=fmt):
                    self.stderr.seek(0)
                    self.stderr.truncate()
                    self.stdout.seek(0)
                    self.stdout.truncate()
                    conf = self.write('c.conf', '[snapshot_ext_glance]\n'
                                      + lines)
                    self.assertEqual(2, self.run_main(
                        'probe', '--config-file', conf, '--format', fmt))
                    err = self.stderr.getvalue()
                    self.assertNotIn('Traceback', err)
                    self.assertIn('[snapshot_ext_glance] auth_type', err)
                    self.assertIn(text, err)
                    if fmt == 'json':
                        out = json.loads(self.stdout.getvalue())
                        self.assertEqual(2, out['exit_code'])

    def test_other_errors_are_not_called_configuration(self):
        conf = main.new_conf()
        try:
            raise ValueError('not from an auth plugin')
        except ValueError as err:
            self.assertIsNone(glance_mod.auth_option_error(conf, err))
        self.assertIsNone(glance_mod.auth_option_error(
            conf, ks_exc.ConnectFailure('refused')))


class TestConventions(CLITestCase):
    """Parsing, warnings and exit codes of the console script."""

    def test_global_options_hoisted_before_the_command(self):
        conf = main.new_conf()
        cases = [
            (['probe', '--config-file', 'a', '--debug'],
             ['--config-file', 'a', '--debug', 'probe']),
            (['snapshot', 'r.json', '--format=json', '--log-file', 'l'],
             ['--format=json', '--log-file', 'l', 'snapshot', 'r.json']),
            (['--config-file', 'probe', 'audit', '--fix', '-d'],
             ['--config-file', 'probe', '-d', 'audit', '--fix']),
            (['demo', '--profile', 'no-raw', '--', '--debug'],
             ['demo', '--profile', 'no-raw', '--', '--debug']),
            (['probe', '--help'], ['probe', '--help']),
        ]
        for argv, expected in cases:
            self.assertEqual(expected, main.hoist_global_options(conf, argv))

    def test_mistyped_option_before_the_command_is_named(self):
        cases = [
            (['--confg-file', 'a.conf', 'snapshot', 'r.json'],
             '--confg-file', '--config-file'),
            (['--debgu', 'probe'], '--debgu', '--debug'),
            (['--format=jsn', 'probe'], None, None),
            (['--zzzzzz=1', 'audit'], '--zzzzzz', None),
        ]
        for argv, name, close in cases:
            with self.subTest(argv=argv):
                self.stderr.seek(0)
                self.stderr.truncate()
                self.assertEqual(2, main.main(argv))
                err = self.stderr.getvalue()
                self.assertNotIn('invalid choice', err)
                if name:
                    self.assertIn('unknown option %s' % name, err)
                if close:
                    self.assertIn('did you mean %s?' % close, err)
                else:
                    self.assertNotIn('did you mean', err)

    def test_help_lists_every_exit_code(self):
        self.assertEqual(0, main.main(['--help']))
        text = ' '.join(self.stdout.getvalue().split())
        for code, _ in checks.EXIT_CODES:
            self.assertIn('%d ' % code, text)
        self.assertIn('3 cannot reach or authenticate', text)

    def test_usage_error_is_json_with_format_json(self):
        self.assertEqual(2, main.main(['nope', '--format', 'json']))
        out = json.loads(self.stdout.getvalue())
        self.assertEqual(2, out['exit_code'])
        self.assertIn("invalid choice: 'nope'", out['error'])

    def test_bad_global_option_value_is_exit_2(self):
        self.assertEqual(2, main.main(['probe', '--format', 'xml']))
        self.assertIn('xml', self.stderr.getvalue())

    def test_clean_message_hides_location_info(self):
        text = ("Value for option x from LocationInfo(location=<Locations."
                "user: (4, True)>, detail='/etc/a.conf') is not valid")
        self.assertEqual('Value for option x in /etc/a.conf is not valid',
                         checks.clean_message(text))
        text = ("x LocationInfo(location=<Locations.opt_default: (1, "
                "False)>, detail=None)")
        self.assertEqual('x opt default', checks.clean_message(text))

    def test_unknown_sections_and_options(self):
        path = self.write('c.conf', (
            '[DEFAULT]\ndebug = true\n'
            '[snapshot_ext]\ndriver = libvirt\nactivaton_method = upload\n'
            '[snapshot_ext_glance]\nauth_type = password\n'
            'auth_url = http://k/v3\nusernme = u\n'
            '[snapshot_ext_glace]\nx = 1\n[snapshot-ext]\n[glance]\n'
            'api_servers = x\n[snapshot_ext_libvirt]\nvirt_type = kvm\n'
            '[snapshot_ext_nova]\n'))
        conf = main.parse(['--config-file', path, 'probe'])
        found = main.warn_configuration(conf)
        self.assertEqual(4, len(found), found)
        text = '\n'.join(found)
        self.assertIn('unknown option [snapshot_ext] activaton_method (did '
                      'you mean activation_method?)', text)
        self.assertIn('unknown option [snapshot_ext_glance] usernme (did '
                      'you mean username?)', text)
        self.assertIn('unknown section [snapshot_ext_glace] (did you mean '
                      '[snapshot_ext_glance]?)', text)
        self.assertIn('unknown section [snapshot-ext] (did you mean '
                      '[snapshot_ext]?)', text)
        self.assertIn('warning: %s: unknown' % path, self.stderr.getvalue())

    def test_no_config_file_warning(self):
        conf = main.parse(['probe'])
        found = main.warn_configuration(conf)
        self.assertIn('no configuration file found or given', found[0])

    def test_sigterm_handled_like_ctrl_c(self):
        def interrupted(conf):
            os.kill(os.getpid(), signal.SIGTERM)
            self.fail('SIGTERM did not interrupt')

        def ctrl_c(conf):
            raise exception.SnapshotInterrupted(mock.Mock(
                leftover=['img-9'], unconfirmed=[], status='failed',
                image_id=None), KeyboardInterrupt())

        conf = self.write('c.conf', '')
        with mock.patch.dict(main.HANDLERS, probe=interrupted):
            self.assertEqual(143, main.main(['probe', '--config-file', conf,
                                             '--format', 'json']))
        out = json.loads(self.stdout.getvalue())
        self.assertEqual((143, []), (out['exit_code'], out['left']))
        self.assertIn('terminated (SIGTERM)', self.stderr.getvalue())
        self.stdout.seek(0)
        self.stdout.truncate()
        with mock.patch.dict(main.HANDLERS, probe=ctrl_c):
            self.assertEqual(130, main.main(['probe', '--config-file', conf,
                                             '--format', 'json']))
        out = json.loads(self.stdout.getvalue())
        self.assertEqual(['img-9'], out['left'])
        self.assertIn('COULD NOT DELETE image(s) img-9', out['error'])
        # The handler is restored afterwards.
        self.assertIsNot(signal.getsignal(signal.SIGTERM), main._on_sigterm)

    def test_interrupt_with_cleanup_cut_short_claims_no_cleanup(self):
        from nova_snapshot_ext.snapshot import result as result_mod

        def ctrl_c_twice(conf):
            result = result_mod.SnapshotResult(None, 'snap', 'failed')
            result.leftover.append('img-7')
            result.leftover_status['img-7'] = result_mod.CUT_SHORT
            result.cleanup_cut_short = True
            raise exception.SnapshotInterrupted(result, KeyboardInterrupt())

        conf = self.write('c.conf', '')
        before = signal.getsignal(signal.SIGINT)
        with mock.patch.dict(main.HANDLERS, probe=ctrl_c_twice):
            self.assertEqual(130, main.main(['probe', '--config-file', conf,
                                             '--format', 'json']))
        out = json.loads(self.stdout.getvalue())
        self.assertEqual(['img-7'], out['left'])
        self.assertNotIn('cleaned up,', out['error'])
        self.assertNotIn('was cleaned up', out['error'])
        self.assertIn('img-7 NOT CONFIRMED DELETED', out['error'])
        self.assertIn('second signal cut the cleanup short', out['error'])
        # The handlers are restored after the report.
        self.assertIs(before, signal.getsignal(signal.SIGINT))

    def test_interrupt_leaving_the_image_claims_no_cleanup(self):
        from nova_snapshot_ext.snapshot import result as result_mod

        def ctrl_c(conf):
            result = result_mod.SnapshotResult(None, 'snap', 'failed')
            result.leave('img-8', 'queued')
            raise exception.SnapshotInterrupted(result, KeyboardInterrupt())

        conf = self.write('c.conf', '')
        with mock.patch.dict(main.HANDLERS, probe=ctrl_c):
            self.assertEqual(130, main.main(['probe', '--config-file', conf,
                                             '--format', 'json']))
        out = json.loads(self.stdout.getvalue())
        self.assertEqual(['img-8'], out['left'])
        self.assertNotIn('cleaned up', out['error'])
        self.assertNotIn('COULD NOT DELETE', out['error'])
        self.assertIn('nothing was deleted', out['error'])
        self.assertIn('img-8 (status queued) left in place, not deleted: '
                      'another try of this snapshot may be finishing it',
                      out['error'])
        self.assertIn('a retry of this snapshot adopts it', out['error'])

    def test_glance_errors_map_to_exit_codes(self):
        cases = [
            (exception.GlanceUnavailable(operation='get', reason='r'), 3),
            (exception.GlanceForbidden(operation='get', reason='r',
                                       status=401), 3),
            (exception.GlanceForbidden(operation='get', reason='r',
                                       status=403), 1),
            (exception.GlanceError(operation='get', reason='r',
                                   status=500), 1),
            (exception.FormatNotAllowed(reason='r', allowed='a',
                                        containers='c', driver='d',
                                        readable='r'), 2),
        ]
        conf = self.write('c.conf', '')
        for err, code in cases:
            def handler(conf, err=err):
                raise err
            with mock.patch.dict(main.HANDLERS, probe=handler):
                self.assertEqual(code, main.main(['probe', '--config-file',
                                                  conf]), err)


class FakeSession:
    def __init__(self, project):
        self.auth = object() if project is not None else None
        self.project = project

    def get_project_id(self):
        return self.project


class TestOwnership(base.TestCase):

    def glance(self, project):
        glance = glance_mod.GlanceClient.__new__(glance_mod.GlanceClient)
        glance.session = FakeSession(project)
        return glance

    def test_identity_in_the_requester_project(self):
        self.assertEqual(
            {'identity_project': 'p1', 'owner': 'p1', 'member': None},
            checks.check_ownership(self.glance('p1'), 'p1', 'p1'))
        # An admin's snapshot of another project's server: shared, as Nova.
        self.assertEqual(
            {'identity_project': 'p1', 'owner': 'p1', 'member': 's'},
            checks.check_ownership(self.glance('p1'), 'p1', 's'))

    def test_identity_in_another_project_is_refused(self):
        err = self.assertRaises(checks.CLIError, checks.check_ownership,
                                self.glance('svc'), 'p1', 'p1')
        self.assertEqual(2, err.code)
        self.assertIn('owned by project svc', err.message)
        self.assertIn('Scope [snapshot_ext_glance] to project p1',
                      err.message)
        self.assertIn('set requester.project_id to svc', err.message)

    def test_unknown_identity_project_is_not_checked(self):
        # Nothing is claimed before Glance says who owns the image.
        self.assertEqual(
            {'identity_project': None, 'owner': None, 'member': None},
            checks.check_ownership(self.glance(None), 'p1', 'p1'))

    def test_owner_reported_from_the_image(self):
        from nova_snapshot_ext.snapshot import request as request_mod

        stderr = self.useFixture(fixtures.MonkeyPatch(
            'sys.stderr', io.StringIO())).new_value
        req = request_mod.SnapshotRequest.from_dict(
            dict(base.sample_request_dict(),
                 requester={'project_id': 'p1', 'user_id': 'u1'}))
        ownership = {'identity_project': None, 'owner': None,
                     'member': None}
        snapshot_cmd._report_owner(ownership, {'id': 'i', 'owner': 'p1'}, req)
        self.assertEqual(('p1', ''), (ownership['owner'],
                                      stderr.getvalue()))
        snapshot_cmd._report_owner(ownership, {'id': 'i', 'owner': 'svc'}, req)
        self.assertEqual('svc', ownership['owner'])
        self.assertIn('owned by project svc', stderr.getvalue())
        self.assertIn("not by the requester's project p1",
                      stderr.getvalue())


class TestDemoWithoutExtra(base.TestCase):

    def test_missing_extra_is_exit_2_and_says_what_to_install(self):
        from nova_snapshot_ext.cmd import demo

        stdout = self.useFixture(fixtures.MonkeyPatch(
            'sys.stdout', io.StringIO())).new_value
        stderr = self.useFixture(fixtures.MonkeyPatch(
            'sys.stderr', io.StringIO())).new_value
        real = demo.importlib.util.find_spec
        with mock.patch.object(demo.importlib.util, 'find_spec',
                               lambda name: None if name == 'glance'
                               else real(name)):
            self.assertEqual(2, main.main(['demo', '--format', 'json']))
        out = json.loads(stdout.getvalue())
        self.assertEqual(2, out['exit_code'])
        self.assertIn('not installed: glance', out['error'])
        self.assertIn('%s -m pip install -c constraints.txt -r '
                      'embedded-requirements.txt' % sys.executable,
                      out['error'])
        self.assertIn('demo runs a real glance-api', out['error'])
        self.assertNotIn('Traceback', stderr.getvalue())
        self.assertNotIn('log', out['error'].replace('glance-api', ''))


class FakePermGlance:
    """Records calls; ``refuse`` maps a call name to the error it raises."""

    def __init__(self, **refuse):
        self.refuse = refuse
        self.calls = []

    def _do(self, name, *args):
        self.calls.append((name,) + args)
        if name in self.refuse:
            raise self.refuse[name]

    def create(self, **kwargs):
        self._do('create', kwargs['disk_format'], kwargs['visibility'])

    def upload(self, image_id, data, disk_format=None):
        self._do('upload', len(data))

    def add_member(self, image_id, member):
        self._do('add_member')

    def delete(self, image_id):
        self._do('delete')


class TestPermissionCheck(base.TestCase):

    def forbidden(self):
        return exception.GlanceForbidden(operation='x', reason='policy',
                                         status=403)

    def test_all_allowed_and_nothing_left(self):
        glance = FakePermGlance()
        out = checks.check_permissions(glance, 'qcow2')
        self.assertTrue(out['ok'])
        self.assertEqual([('create', 'qcow2', 'shared'), ('upload', 1536),
                          ('add_member',), ('delete',)], glance.calls)
        self.assertIsNone(out['left'])

    def test_each_refusal_named_and_image_deleted(self):
        for step, needs in (('upload', 'upload image data'),
                            ('add_member', 'add image members')):
            glance = FakePermGlance(**{step: self.forbidden()})
            out = checks.check_permissions(glance, 'raw')
            self.assertFalse(out['ok'])
            self.assertEqual(1, len(out['missing']))
            self.assertIn(needs, out['missing'][0])
            self.assertEqual(('delete',), glance.calls[-1])

    def test_create_refused_deletes_nothing(self):
        glance = FakePermGlance(create=self.forbidden())
        out = checks.check_permissions(glance, 'raw')
        self.assertEqual([('create', 'raw', 'shared')], glance.calls)
        self.assertIn('create images', out['missing'][0])

    def test_delete_refused_names_the_image_left(self):
        glance = FakePermGlance(delete=self.forbidden())
        out = checks.check_permissions(glance, 'raw')
        self.assertEqual(out['image_id'], out['left'])
        self.assertIn('is left', out['missing'][-1])

    def test_glance_failing_is_not_a_missing_permission(self):
        for step in ('upload', 'add_member'):
            for err in (exception.GlanceError(operation=step, reason='boom',
                                              status=500),
                        exception.GlanceMalformedAnswer(operation=step,
                                                        reason='garbled')):
                glance = FakePermGlance(**{step: err})
                out = checks.check_permissions(glance, 'raw')
                self.assertFalse(out['ok'])
                self.assertEqual([], out['missing'])
                self.assertEqual(1, len(out['failed']))
                self.assertIn('not known', out['failed'][0])
                text = checks.permissions_text(out)
                self.assertNotIn('REFUSED', text)
                self.assertNotIn('cannot', text)
                self.assertIn('FAILED', text)
                self.assertEqual(('delete',), glance.calls[-1])

    def test_unreachable_glance_is_not_a_missing_permission(self):
        glance = FakePermGlance(upload=exception.GlanceUnavailable(
            operation='upload', reason='reset'))
        self.assertRaises(exception.GlanceUnavailable,
                          checks.check_permissions, glance, 'raw')
        self.assertEqual(('delete',), glance.calls[-1])

    def test_glance_start_failure_quotes_the_log_not_its_deleted_path(self):
        from nova_snapshot_ext.cmd import demo

        self.useFixture(fixtures.MonkeyPatch('sys.stdout', io.StringIO()))
        stderr = self.useFixture(fixtures.MonkeyPatch(
            'sys.stderr', io.StringIO())).new_value
        failure = demo.embedded.EmbeddedGlanceError(
            'glance-api exited early with 1; log /tmp/eg-x/glance.log:\n'
            'ImportError: no module named foo')
        with mock.patch.object(demo, 'check_embedded_requirements'), \
                mock.patch.object(demo.embedded, 'EmbeddedGlance',
                                  side_effect=failure):
            self.assertEqual(3, main.main(['demo']))
        text = stderr.getvalue()
        self.assertIn('the embedded Glance failed: glance-api exited early '
                      'with 1:', text)
        self.assertIn('no module named foo', text)
        self.assertNotIn('/tmp/eg-x', text)


class TestAfterSuccess(base.TestCase):
    """Rule 1 of issue 9: after success every read is best effort."""

    def test_failed_display_read_is_a_warning_not_a_failure(self):
        stdout = self.useFixture(fixtures.MonkeyPatch(
            'sys.stdout', io.StringIO())).new_value
        stderr = self.useFixture(fixtures.MonkeyPatch(
            'sys.stderr', io.StringIO())).new_value
        result = mock.Mock(image_id='img-1', status='active')
        result.to_dict.return_value = {'image_id': 'img-1',
                                       'status': 'active'}
        fake = mock.Mock()
        fake.snapshot.return_value = result
        fake.glance.get.side_effect = exception.GlanceUnavailable(
            operation='get', reason='connection reset')
        with mock.patch.object(snapshot_cmd.service_mod, 'SnapshotService',
                               return_value=fake):
            image = snapshot_cmd.run_snapshot(self.conf, mock.Mock(), 'json')
        self.assertIsNone(image)
        out = json.loads(stdout.getvalue())
        self.assertEqual('active', out['result']['status'])
        self.assertIsNone(out['image'])
        self.assertIn('warning: snapshot image img-1 is active; it could not '
                      'be read back', stderr.getvalue())


class TestTerminalLog(base.TestCase):
    """The command's own error line is not said twice by the log."""

    def setUp(self):
        super().setUp()
        root = logging.getLogger()
        saved = list(root.handlers)
        self.addCleanup(setattr, root, 'handlers', saved)

    def records_shown(self, argv):
        conf = main.parse(argv + ['probe'])
        logs.setup_logging(conf)
        handlers = [h for h in logging.getLogger().handlers
                    if not isinstance(h, logging.FileHandler)]
        self.assertTrue(handlers)
        shown = []
        for name, level in (('nova_snapshot_ext.snapshot.attempts',
                             logging.ERROR),
                            ('nova_snapshot_ext.snapshot.attempts',
                             logging.WARNING),
                            ('somewhere.else', logging.ERROR)):
            record = logging.LogRecord(name, level, __file__, 1, 'm', (),
                                       None)
            if all(h.filter(record) for h in handlers):
                shown.append((name, level))
        return shown

    def test_product_errors_left_to_the_command(self):
        self.assertEqual(
            [('nova_snapshot_ext.snapshot.attempts', logging.WARNING),
             ('somewhere.else', logging.ERROR)],
            self.records_shown(['--config-dir', self.useFixture(
                fixtures.TempDir()).path]))

    def test_debug_shows_everything(self):
        self.assertEqual(3, len(self.records_shown(
            ['--debug', '--config-dir',
             self.useFixture(fixtures.TempDir()).path])))


class TestDemoHelp(base.TestCase):

    def test_profile_help_names_every_profile(self):
        from nova_snapshot_ext.embedded import glance as embedded_glance

        parser = argparse.ArgumentParser()
        main.add_commands(parser.add_subparsers())
        demo = parser._subparsers._group_actions[0].choices['demo']
        text = ' '.join(a.help or '' for a in demo._actions
                        if '--profile' in a.option_strings)
        for name in embedded_glance.PROFILES:
            self.assertIn(name, text)


class TestInterruptedReport(base.TestCase):
    """Ctrl-C / SIGTERM name every image the interrupted run may leave."""

    def report(self, **fields):
        from nova_snapshot_ext.snapshot import result as result_mod

        stdout = self.useFixture(fixtures.MonkeyPatch(
            'sys.stdout', io.StringIO())).new_value
        stderr = self.useFixture(fixtures.MonkeyPatch(
            'sys.stderr', io.StringIO())).new_value
        err = exception.SnapshotInterrupted(result_mod.SnapshotResult(
            image_id=fields.pop('image_id', None), name='n',
            status=fields.pop('status', 'failed'), **fields),
            main.Terminated())
        code = main._interrupted(err, 'json')
        return code, json.loads(stdout.getvalue()), stderr.getvalue()

    def test_unconfirmed_create_is_named(self):
        code, data, err = self.report(unconfirmed=['img-u'])
        self.assertEqual(143, code)
        self.assertEqual(['img-u'], data['unconfirmed'])
        self.assertIn('img-u', err)

    def test_leftover_and_active_are_named(self):
        code, data, err = self.report(leftover=['img-l'])
        self.assertEqual(['img-l'], data['left'])
        self.assertIn('COULD NOT DELETE image(s) img-l', err)
        code, data, err = self.report(image_id='img-a', status='active')
        self.assertEqual('img-a', data['image_id'])
        self.assertIn('img-a was already active', err)


class TestConsoleMain(base.TestCase):

    def test_late_interrupt_ignored_after_the_report(self):
        saved = {s: signal.getsignal(s)
                 for s in (signal.SIGINT, signal.SIGTERM)}
        for signum, handler in saved.items():
            self.addCleanup(signal.signal, signum, handler)
        with mock.patch.object(main, 'main', return_value=3):
            self.assertEqual(3, main.console_main())
        self.assertEqual(signal.SIG_IGN, signal.getsignal(signal.SIGINT))
        self.assertEqual(signal.SIG_IGN, signal.getsignal(signal.SIGTERM))


class TestQuotaText(base.TestCase):

    def test_unlimited_limit_is_said_not_counted(self):
        report = {'headroom': quotas.headroom({
            'image_count_total': {'usage': 4, 'limit': -1},
            'image_size_total': {'usage': 10, 'limit': 100}}),
            'create': None, 'attempts': []}
        text = snapshot_cmd._quota_text(report)
        self.assertIn('image_count_total: 4 / unlimited (limit -1)', text)
        self.assertIn('image_size_total: 10 / 100, 90 left', text)
