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


"""``nova-snapshot-ext-status upgrade check``: the checks without Glance.

The Glance-facing checks run against embedded real Glances in
``tests/functional/test_status.py``; Nova's real ``api-paste.ini`` of the
installed Nova in ``tests/nova/test_status.py``.
"""

import io
import json
import os
from unittest import mock

import fixtures
from keystoneauth1 import exceptions as ks_exc

from nova_snapshot_ext.cmd import status
from nova_snapshot_ext.nova import paste
from tests import base

#: The compute API lines of Nova's own api-paste.ini (Nova 29 to 34 ship
#: the same two composites), with the plugin's filter placed as
#: doc/source/nova.rst says.
NOVA_PIPELINES = """\
[composite:openstack_compute_api_v21]
use = call:nova.api.auth:pipeline_factory_v21
keystone = cors http_proxy_to_wsgi compute_req_id faultwrap request_log \
sizelimit osprofiler authtoken keystonecontext snapshot_ext \
osapi_compute_app_v21

[composite:openstack_compute_api_v21_legacy_v2_compatible]
use = call:nova.api.auth:pipeline_factory_v21
keystone = cors http_proxy_to_wsgi compute_req_id faultwrap request_log \
sizelimit osprofiler authtoken keystonecontext snapshot_ext \
legacy_v2_compatible osapi_compute_app_v21

[filter:keystonecontext]
paste.filter_factory = nova.api.auth:NovaKeystoneContext.factory

[filter:snapshot_ext]
paste.filter_factory = nova_snapshot_ext.nova.filter:filter_factory
"""

V21 = '[composite:openstack_compute_api_v21]'
LEGACY = '[composite:openstack_compute_api_v21_legacy_v2_compatible]'


class TestPasteFilter(base.TestCase):

    def test_placed_right(self):
        self.assertEqual([], paste.filter_problems(NOVA_PIPELINES))

    def test_other_filter_name_accepted(self):
        text = NOVA_PIPELINES.replace(
            ' snapshot_ext ', ' snapext ').replace('[filter:snapshot_ext]',
                                                   '[filter:snapext]')
        self.assertEqual([], paste.filter_problems(text))

    def test_filter_section_missing(self):
        text = NOVA_PIPELINES.split('[filter:snapshot_ext]')[0]
        problems = paste.filter_problems(text)
        self.assertIn('add [filter:snapshot_ext]', problems[0])

    def test_wrong_factory_line_names_section_key_value_and_fix(self):
        right = paste.FILTER_FACTORY
        good = 'paste.filter_factory = %s' % right
        cases = (
            # (the filter's section, its factory line, the key shown)
            ('snapshot_ext', 'paste.filter_factory = '
             'nova_snapshot_ext.nova.filtr:filter_factory',
             'paste.filter_factory'),
            ('snapshot_ext', 'paste.filter_factory = '
             'nova_snapshot_ext.nova.filter:factory', 'paste.filter_factory'),
            ('snapshot_ext', 'paste.filter_factory = '
             'nova-snapshot-ext.nova.filter:filter_factory',
             'paste.filter_factory'),
            ('snapshot_ext', 'paste.filter_factory = '
             'nova_snapshot_ext.filter:filter_factory',
             'paste.filter_factory'),
            ('snapext', 'paste.filter_factory = '
             'nova_snapshot_ext.nova.filters:filter_factory',
             'paste.filter_factory'),
            ('snapshot_ext', 'filter_factory = %s' % right,
             'filter_factory'),
            ('snapshot_ext', 'paste.app_factory = %s' % right,
             'paste.app_factory'),
            ('snapext', 'paste.filter-factory = %s' % right,
             'paste.filter-factory'),
        )
        for name, line, key in cases:
            with self.subTest(line=line):
                text = NOVA_PIPELINES.replace(good, line).replace(
                    ' snapshot_ext ', ' %s ' % name).replace(
                    '[filter:snapshot_ext]', '[filter:%s]' % name)
                problems = paste.filter_problems(text)
                self.assertEqual(1, len(problems), problems)
                problem = problems[0]
                bad = line.split('=', 1)[1].strip()
                for words in ('[filter:%s]' % name, '%s = %s' % (key, bad),
                              good):
                    self.assertIn(words, problem)
                # Never the advice to add what is there.
                self.assertNotIn('add [filter:', problem)
                self.assertNotIn('lacks', problem)

    def test_wrong_factory_and_misplaced_are_both_named(self):
        text = NOVA_PIPELINES.replace(
            'nova.filter:filter_factory', 'nova.filtr:filter_factory'
        ).replace('authtoken keystonecontext snapshot_ext',
                  'snapshot_ext authtoken keystonecontext')
        problems = paste.filter_problems(text)
        self.assertEqual(3, len(problems), problems)
        self.assertIn('nova.filtr:filter_factory', problems[0])
        self.assertIn('before keystonecontext', problems[1])

    def test_pipeline_name_without_a_section_is_named(self):
        # The section renamed (or the pipeline's name mistyped): paste
        # cannot load the pipeline; say which name has no section.
        text = NOVA_PIPELINES.replace('[filter:snapshot_ext]',
                                      '[filter:snapshot-ext]')
        problems = paste.filter_problems(text)
        self.assertEqual(2, len(problems), problems)
        for problem in problems:
            self.assertIn('names snapshot_ext, which has no '
                          '[filter:snapshot_ext] section', problem)
            self.assertIn('snapshot-ext', problem.split(':', 1)[1])
            self.assertNotIn('lacks', problem)
        # No filter section at all: add one under the pipeline's name.
        text = NOVA_PIPELINES.split('[filter:snapshot_ext]')[0].replace(
            ' snapshot_ext ', ' snapshotext ')
        problems = paste.filter_problems(text)
        self.assertIn('add [filter:snapshotext] with paste.filter_factory '
                      '= %s' % paste.FILTER_FACTORY, problems[-1])

    def test_stray_unused_section_beside_the_right_one_is_ignored(self):
        text = NOVA_PIPELINES + (
            '\n[filter:snapshot_ext_old]\npaste.filter_factory = '
            'nova_snapshot_ext.old:filter_factory\n')
        self.assertEqual([], paste.filter_problems(text))

    def test_missing_from_one_pipeline(self):
        head, tail = NOVA_PIPELINES.split(LEGACY)
        text = head + LEGACY + tail.replace(' snapshot_ext ', ' ', 1)
        problems = paste.filter_problems(text)
        self.assertEqual(1, len(problems), problems)
        self.assertIn(LEGACY.strip('[]'), problems[0])
        self.assertIn('lacks snapshot_ext: add it right after '
                      'keystonecontext', problems[0])

    def test_before_keystonecontext(self):
        text = NOVA_PIPELINES.replace(
            'authtoken keystonecontext snapshot_ext',
            'snapshot_ext authtoken keystonecontext')
        problems = paste.filter_problems(text)
        self.assertEqual(2, len(problems), problems)
        self.assertIn('before keystonecontext', problems[0])

    def test_last_in_pipeline(self):
        text = NOVA_PIPELINES.replace(
            'keystonecontext snapshot_ext osapi_compute_app_v21',
            'keystonecontext osapi_compute_app_v21 snapshot_ext')
        problems = paste.filter_problems(text)
        self.assertEqual(1, len(problems), problems)
        self.assertIn('must be the application', problems[0])

    def test_not_a_nova_paste_file(self):
        problems = paste.filter_problems('[app:x]\npaste.app_factory = y\n')
        self.assertIn("not nova-api's paste file", problems[0])

    def test_not_ini(self):
        self.assertRaises(ValueError, paste.filter_problems, 'keystone = x')


class StatusCase(base.TestCase):

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path

    def checks(self, text='', *argv):
        path = os.path.join(self.tmp, 'c.conf')
        with open(path, 'w') as f:
            f.write(text)
        conf = status.new_conf()
        conf(['--config-file', path] + list(argv), project='x',
             default_config_files=[])
        return status.UpgradeChecks(conf)


class TestDriverCheck(StatusCase):

    def test_configured(self):
        result = self.checks('[snapshot_ext]\ndriver = hyperv\n')\
            ._check_driver()
        self.assertEqual(status.Code.SUCCESS, result.code)
        self.assertIn('[snapshot_ext] driver = hyperv', result.details)

    def test_inferred(self):
        result = self.checks('[DEFAULT]\ncompute_driver = '
                             'vmwareapi.VMwareVCDriver\n')._check_driver()
        self.assertEqual(status.Code.SUCCESS, result.code)
        self.assertIn('inferred from [DEFAULT] compute_driver', result.details)

    def test_guessed(self):
        for text in ('', '[DEFAULT]\ncompute_driver = powervm.Driver\n'):
            result = self.checks(text)._check_driver()
            self.assertEqual(status.Code.WARNING, result.code, text)
            self.assertIn('only guessed', result.details)
            self.assertIn('[snapshot_ext] driver', result.details)

    def test_unknown_driver_fails(self):
        result = self.checks('[snapshot_ext]\ndriver = libvrt\n')\
            ._check_driver()
        self.assertEqual(status.Code.FAILURE, result.code)
        self.assertIn("'libvrt'", result.details)


class TestOptionsCheck(StatusCase):

    def test_bad_value_fails_naming_section(self):
        result = self.checks('[snapshot_ext_glance]\ntimeout = abc\n')\
            ._check_options()
        self.assertEqual(status.Code.FAILURE, result.code)
        self.assertIn('[snapshot_ext_glance] timeout', result.details)

    def test_unknown_auth_type_fails(self):
        result = self.checks('[snapshot_ext_glance]\nauth_type = x\n')\
            ._check_options()
        self.assertEqual(status.Code.FAILURE, result.code)
        self.assertIn('auth_type', result.details)

    def test_misspelled_section_failure_says_did_you_mean(self):
        # Where nova-api needs [snapshot_ext_glance], its missing auth is
        # a failure and the misspelled section is named as the likely why.
        result = self.checks('[snapshot_ext_glace]\nauth_type = password\n'
                             '[snapshot_ext_nova]\nglance_connection = '
                             'snapshot_ext_glance\n')._check_options()
        self.assertEqual(status.Code.FAILURE, result.code)
        self.assertIn('unknown section [snapshot_ext_glace] (did you mean '
                      '[snapshot_ext_glance]?)', result.details)
        # Elsewhere nothing requires it (the Glance check says what it
        # could not check): the misspelling alone is a warning.
        result = self.checks('[snapshot_ext_glace]\nauth_type = password\n'
                             )._check_options()
        self.assertEqual(status.Code.WARNING, result.code)
        self.assertIn('unknown section [snapshot_ext_glace] (did you mean '
                      '[snapshot_ext_glance]?)', result.details)

    def test_catalogless_plugin_without_endpoint_fails(self):
        for auth in ('admin_token\ntoken = t', 'none'):
            result = self.checks('[snapshot_ext_glance]\nauth_type = %s\n'
                                 % auth)._check_options()
            self.assertEqual(status.Code.FAILURE, result.code, auth)
            self.assertIn('set [snapshot_ext_glance] endpoint',
                          result.details)
        result = self.checks('[snapshot_ext_glance]\nauth_type = '
                             'admin_token\ntoken = t\nendpoint = '
                             'http://g:9292\n')._check_options()
        self.assertEqual(status.Code.SUCCESS, result.code, result.details)

    def test_valid(self):
        result = self.checks('[snapshot_ext_glance]\nauth_type = none\n'
                             'endpoint = http://g:9292\n')\
            ._check_options()
        self.assertEqual(status.Code.SUCCESS, result.code)

    def test_bad_nova_group_values_fail_without_nova(self):
        # [snapshot_ext_nova] is registered only inside nova-api; the
        # check judges it as the paste filter would.
        result = self.checks('[snapshot_ext_glance]\nauth_type = none\n'
                             'endpoint = http://g:9292\n'
                             '[snapshot_ext_nova]\nactivation = maybe\n'
                             'glance_connection = bogus\n')._check_options()
        self.assertEqual(status.Code.FAILURE, result.code)
        self.assertIn('[snapshot_ext_nova] activation', result.details)
        self.assertIn('[snapshot_ext_nova] glance_connection',
                      result.details)

    def test_typos_warn_naming_the_close_name(self):
        result = self.checks('[snapshot_ext_glance]\nauth_type = none\n'
                             'endpoint = http://g:9292\n'
                             '[snapshot_ext_nva]\nactivation = true\n'
                             '[snapshot_ext]\nearly_refusl = 1\n'
                             )._check_options()
        self.assertEqual(status.Code.WARNING, result.code)
        self.assertIn('every option valid', result.details)
        self.assertIn('[snapshot_ext_nva] (did you mean [snapshot_ext_nova]?)',
                      result.details)
        self.assertIn('early_refusl', result.details)

    def test_bad_choice_fails_every_check_that_reads_it(self):
        checks = self.checks('[snapshot_ext]\nactivation_method = uplod\n')
        result = checks._check_options()
        self.assertEqual(status.Code.FAILURE, result.code)
        self.assertIn('activation_method', result.details)
        # Read again by a later check: that check fails naming it too,
        # the command does not crash (oslo.upgradecheck's 255).
        for name, check in checks._upgrade_checks:
            if name.startswith('Location activation'):
                result = check(checks)
        self.assertEqual(status.Code.FAILURE, result.code)
        self.assertIn('activation_method', result.details)


class TestPasteCheck(StatusCase):

    def write(self, text):
        path = os.path.join(self.tmp, 'api-paste.ini')
        with open(path, 'w') as f:
            f.write(text)
        return path

    def test_good_file(self):
        path = self.write(NOVA_PIPELINES)
        result = self.checks('', '--api-paste', path)._check_paste()
        self.assertEqual(status.Code.SUCCESS, result.code)

    def test_bad_file_names_composite(self):
        path = self.write(NOVA_PIPELINES.replace(' snapshot_ext ', ' '))
        result = self.checks('', '--api-paste', path)._check_paste()
        self.assertEqual(status.Code.FAILURE, result.code)
        self.assertIn('openstack_compute_api_v21', result.details)

    def test_wrong_factory_is_named_with_the_right_one(self):
        bad = 'nova_snapshot_ext.nova.filtr:filter_factory'
        path = self.write(NOVA_PIPELINES.replace(paste.FILTER_FACTORY, bad))
        result = self.checks('', '--api-paste', path)._check_paste()
        self.assertEqual(status.Code.FAILURE, result.code)
        self.assertIn('[filter:snapshot_ext] paste.filter_factory = %s'
                      % bad, result.details)
        self.assertIn('set paste.filter_factory = %s'
                      % paste.FILTER_FACTORY, result.details)
        self.assertNotIn('add [filter:snapshot_ext]', result.details)

    def test_missing_default_file_without_nova_warns(self):
        with mock.patch.object(status, '_nova_importable',
                               return_value=False), mock.patch.object(
                status, 'DEFAULT_API_PASTE', '/nonexistent/api-paste.ini'):
            result = self.checks('')._check_paste()
        self.assertEqual(status.Code.WARNING, result.code)
        self.assertIn('--api-paste', result.details)

    def test_missing_named_file_fails_even_without_nova(self):
        # The operator named it: meant to be read, on any host.
        for nova in (False, True):
            with mock.patch.object(status, '_nova_importable',
                                   return_value=nova):
                result = self.checks('', '--api-paste', '/nonexistent')\
                    ._check_paste()
            self.assertEqual(status.Code.FAILURE, result.code, nova)
            self.assertIn('--api-paste /nonexistent', result.details)

    def test_missing_file_with_nova_fails(self):
        with mock.patch.object(status, '_nova_importable',
                               return_value=True):
            result = self.checks('', '--api-paste', '/nonexistent')\
                ._check_paste()
        self.assertEqual(status.Code.FAILURE, result.code)


class TestGlanceConf(StatusCase):

    def write(self, text):
        path = os.path.join(self.tmp, 'glance-api.conf')
        with open(path, 'w') as f:
            f.write(text)
        return path

    def test_multi_store(self):
        kind, source = status._store_from_glance_conf(self.write(
            '[DEFAULT]\nenabled_backends = a:file, b:cinder\n'
            '[glance_store]\ndefault_backend = b\n'))
        self.assertEqual('cinder', kind)
        self.assertIn('default_backend = b', source)

    def test_single_store(self):
        kind, _ = status._store_from_glance_conf(self.write(
            '[glance_store]\ndefault_store = cinder\n'))
        self.assertEqual('cinder', kind)
        kind, _ = status._store_from_glance_conf(self.write(''))
        self.assertEqual('file', kind)

    def test_named_missing_file_fails_even_when_glance_tells(self):
        checks = self.checks('', '--glance-api-conf', '/nonexistent.conf')
        glance = mock.Mock()
        glance.stores_detail.return_value = [{'id': 'fs', 'type': 'file',
                                              'default': 'true'}]
        with mock.patch.object(checks, '_connect', return_value=glance):
            result = checks._check_default_store()
        self.assertEqual(status.Code.FAILURE, result.code)
        self.assertIn('--glance-api-conf /nonexistent.conf', result.details)

    def test_unreadable(self):
        self.assertRaises(ValueError, status._store_from_glance_conf,
                          '/nonexistent')

    def test_cinder_default_warns_in_upload_mode_only(self):
        path = self.write('[glance_store]\ndefault_store = cinder\n')
        checks = self.checks('', '--glance-api-conf', path)
        with mock.patch.object(checks, '_connect', return_value=None):
            result = checks._check_default_store()
            self.assertEqual(status.Code.WARNING, result.code)
            self.assertIn('1 GiB volume', result.details)
        checks = self.checks('[snapshot_ext]\nactivation_method = '
                             'location-first\n', '--glance-api-conf', path)
        with mock.patch.object(checks, '_connect', return_value=None):
            result = checks._check_default_store()
        self.assertEqual(status.Code.SUCCESS, result.code)


class TestLocationRoles(StatusCase):
    """Kind: a check judges only what the configuration needs."""

    def glance(self, roles=None, error=None):
        access = mock.Mock(role_names=roles)
        auth = mock.Mock()
        if error:
            auth.get_access.side_effect = error
        else:
            auth.get_access.return_value = access
        return mock.Mock(session=mock.Mock(auth=auth))

    def check(self, glance):
        checks = self.checks('[snapshot_ext]\nactivation_method = '
                             'location-first\n')
        with mock.patch.object(checks, '_connect', return_value=glance):
            return checks._check_location_roles()

    def test_roles(self):
        # member without service: location-first activates (the plugin
        # adds a location and never reads one back).
        for roles, code in ((['member', 'reader'], status.Code.SUCCESS),
                            (['member', 'service'], status.Code.SUCCESS),
                            (['service'], status.Code.SUCCESS),
                            (['admin'], status.Code.SUCCESS),
                            (['reader'], status.Code.FAILURE),
                            ([], status.Code.FAILURE)):
            result = self.check(self.glance(roles))
            self.assertEqual(code, result.code, roles)
        self.assertIn('add_image_location', result.details)
        self.assertIn('member', result.details)

    def test_legacy_api_needs_member_or_admin(self):
        checks = self.checks('[snapshot_ext]\nactivation_method = '
                             'location-first\nlocation_api = legacy\n')
        for roles, code in ((['service'], status.Code.FAILURE),
                            (['member'], status.Code.SUCCESS)):
            with mock.patch.object(checks, '_connect',
                                   return_value=self.glance(roles)):
                result = checks._check_location_roles()
            self.assertEqual(code, result.code, roles)
        self.assertIn('set_image_location', result.details)

    def test_unknown_roles_warn(self):
        result = self.check(self.glance(error=ks_exc.AuthorizationFailure()))
        self.assertEqual(status.Code.WARNING, result.code)
        self.assertIn('cannot tell', result.details)

    def test_upload_mode_needs_none(self):
        checks = self.checks('')
        self.assertEqual(status.Code.SUCCESS,
                         checks._check_location_roles().code)


class TestMain(base.TestCase):

    def test_missing_config_file(self):
        stderr = self.useFixture(fixtures.MonkeyPatch(
            'sys.stderr', io.StringIO())).new_value
        # Not a check result: oslo.upgradecheck's 255, never Failure's 2.
        self.assertEqual(255, status.main(['--config-file', '/nonexistent',
                                           'upgrade', 'check']))
        self.assertIn('/nonexistent', stderr.getvalue())

    def test_errors_that_are_no_check_result_exit_255(self):
        self.useFixture(fixtures.MonkeyPatch('sys.stderr', io.StringIO()))
        self.useFixture(fixtures.MonkeyPatch('sys.stdout', io.StringIO()))
        tmp = self.useFixture(fixtures.TempDir()).path
        broken = os.path.join(tmp, 'broken.conf')
        with open(broken, 'w') as f:
            f.write('[snapshot_ext\nx = 1\n')
        latin = os.path.join(tmp, 'latin.conf')
        with open(latin, 'wb') as f:
            f.write(b'# caf\xe9\n')
        for argv in (['--config-file', broken, 'upgrade', 'check'],
                     ['--config-file', latin, 'upgrade', 'check'],
                     ['--config-dir', os.path.join(tmp, 'none'), 'upgrade',
                      'check'],
                     ['upgrade'], ['upgrade', 'check', '--nope'],
                     ['bogus'], [], ['--api-paste', '', 'upgrade',
                                     'check'],
                     ['--config-dir', broken, 'upgrade', 'check']):
            self.assertEqual(255, status.main(argv), argv)

    def test_abbreviated_global_options_are_refused(self):
        # argparse would take --config-f for --config-file and --api-p for
        # --api-paste, past the checks of an empty value and of a
        # --config-file (a traceback, or a blank path judged as given).
        stderr = self.useFixture(fixtures.MonkeyPatch(
            'sys.stderr', io.StringIO())).new_value
        self.useFixture(fixtures.MonkeyPatch('sys.stdout', io.StringIO()))
        for argv in (['--config-f', '', 'upgrade', 'check'],
                     ['--config-f=', 'upgrade', 'check'],
                     ['--api-p', ' ', 'upgrade', 'check'],
                     ['--glance-api', ' ', 'upgrade', 'check', '--json']):
            self.assertEqual(255, status.main(argv), argv)
        self.assertIn('did you mean --config-file?', stderr.getvalue())
        self.assertNotIn('Traceback', stderr.getvalue())
        # The deprecated names --help shows are options, not typos.
        self.assertEqual(255, status.main(['--logfile', ' ', 'upgrade',
                                           'check']))
        self.assertIn('--logfile must not be empty', stderr.getvalue())

    def test_an_action_other_than_check_is_refused(self):
        # oslo.upgradecheck takes any word after 'upgrade' as its check.
        stderr = self.useFixture(fixtures.MonkeyPatch(
            'sys.stderr', io.StringIO())).new_value
        stdout = self.useFixture(fixtures.MonkeyPatch(
            'sys.stdout', io.StringIO())).new_value
        for argv in (['upgrade', 'chek'], ['upgrade', '--json', 'checks'],
                     ['upgrade', 'status', 'check']):
            self.assertEqual(255, status.main(argv), argv)
        self.assertIn("unknown action 'chek' after 'upgrade'",
                      stderr.getvalue())
        self.assertIn("'checks'", stderr.getvalue())
        self.assertEqual('', stdout.getvalue())

    def test_the_action_is_read_where_the_command_is(self):
        conf = status.new_conf()
        from nova_snapshot_ext.cmd import main as cmd_main

        def judged(argv):
            status.refuse_unknown_action(argv, cmd_main.refuse_unknown_globals(
                conf, argv, ('upgrade',), status.PROG))

        # An option's value that spells the command is not the command.
        judged(['--log-file', 'upgrade', 'upgrade', 'check'])
        judged(['--config-dir', 'upgrade', '--config-file', 'p.conf',
                'upgrade', '--json', 'check'])
        judged(['upgrade', '--', 'check'])
        err = self.assertRaises(status.checks.CLIError, judged,
                                ['upgrade', '--api-paste', '/dev/null',
                                 'check'])
        self.assertIn("option --api-paste after 'upgrade': options other "
                      'than --json go before it', err.message)
        err = self.assertRaises(status.checks.CLIError, judged,
                                ['--log-file', 'upgrade', 'upgrade', 'chek'])
        self.assertIn("unknown action 'chek'", err.message)
        # After check too, and no abbreviation of --json.
        for argv, name in ((['upgrade', 'check', '--jso'], '--jso'),
                           (['upgrade', 'check', '--config-file', 'x'],
                            '--config-file')):
            err = self.assertRaises(status.checks.CLIError, judged, argv)
            self.assertIn('option %s after ' % name, err.message)
        # Help wins over a wrong word.
        judged(['upgrade', '-h', 'chek'])

    def test_version_and_help(self):
        stdout = self.useFixture(fixtures.MonkeyPatch(
            'sys.stdout', io.StringIO())).new_value
        self.useFixture(fixtures.MonkeyPatch('sys.stderr', io.StringIO()))
        self.assertEqual(0, status.main(['--version']))
        self.assertEqual(0, status.main(['--help']))
        self.assertIn('nova-snapshot-ext-status', stdout.getvalue())

    def test_json_and_exit_code_is_the_worst_result(self):
        stdout = self.useFixture(fixtures.MonkeyPatch(
            'sys.stdout', io.StringIO())).new_value
        self.useFixture(fixtures.MonkeyPatch('sys.stderr', io.StringIO()))
        tmp = self.useFixture(fixtures.TempDir()).path
        path = os.path.join(tmp, 'c.conf')
        with open(path, 'w') as f:
            f.write('[snapshot_ext_glance]\nauth_type = none\n'
                    'endpoint_override = http://127.0.0.1:9\n'
                    'connect_retries = 0\n')
        code = status.main(['--config-file', path, '--api-paste',
                            os.path.join(tmp, 'none.ini'), 'upgrade',
                            'check', '--json'])
        out = json.loads(stdout.getvalue())
        results = {c['check']: c['result'] for c in out['checks']}
        self.assertEqual(max(results.values()), code)
        self.assertEqual(2, results['Glance'])
        self.assertEqual(0, results['Plugin options'])
        self.assertEqual(1, results['Snapshot driver'])


class TestPasteReadAsPasteReadsIt(base.TestCase):
    """Kind: the paste check reads the file as PasteDeploy's loader does."""

    FILTER = ('[filter:snapshot_ext]\n'
              'paste.filter_factory = '
              'nova_snapshot_ext.nova.filter:filter_factory\n')

    def test_filter_by_use_call(self):
        for use in ('call:%s' % paste.FILTER_FACTORY,
                    'CALL:%s' % paste.FILTER_FACTORY,
                    'call:%s#main' % paste.FILTER_FACTORY):
            text = NOVA_PIPELINES.replace(
                self.FILTER, '[filter:snapshot_ext]\nuse = %s\n' % use)
            self.assertEqual([], paste.filter_problems(text), use)
        text = NOVA_PIPELINES.replace(
            self.FILTER, '[filter:snapshot_ext]\nuse = call:nova_snapshot_'
            'ext.nova.filtr:filter_factory\n')
        problems = paste.filter_problems(text)
        self.assertEqual(1, len(problems), problems)
        self.assertIn('[filter:snapshot_ext] use = call:nova_snapshot_ext.'
                      'nova.filtr:filter_factory does not load', problems[0])
        self.assertNotIn('add [filter:snapshot_ext]', problems[0])

    def test_use_names_another_section(self):
        text = NOVA_PIPELINES.replace(
            self.FILTER, '[filter:snapshot_ext]\nuse = real_snapshot\n\n'
            '[filter:real_snapshot]\npaste.filter_factory = %s\n'
            % paste.FILTER_FACTORY)
        self.assertEqual([], paste.filter_problems(text))
        text = ('[composite:base]\nuse = call:nova.api.auth:pipeline_'
                'factory_v21\nkeystone = authtoken keystonecontext app\n\n'
                '[composite:openstack_compute_api_v21]\nuse = base\n'
                'keystone = authtoken keystonecontext snapshot_ext app\n\n'
                + self.FILTER)
        # base lacks the filter; the composite that uses it has its own
        # keystone line, which overrides.
        problems = paste.filter_problems(text)
        self.assertEqual(1, len(problems), problems)
        self.assertIn('[composite:base]', problems[0])

    def test_default_interpolation(self):
        text = ('[DEFAULT]\nfactory = %s\nauthn = authtoken keystonecontext'
                '\n\n' % paste.FILTER_FACTORY + NOVA_PIPELINES.replace(
                    'authtoken keystonecontext', '%(authn)s').replace(
                    'paste.filter_factory = %s' % paste.FILTER_FACTORY,
                    'paste.filter_factory = %(factory)s'))
        self.assertEqual([], paste.filter_problems(text))
        # %(here)s is paste's own default.
        text = NOVA_PIPELINES.replace(
            self.FILTER, self.FILTER + 'config = %(here)s/x.conf\n')
        self.assertEqual([], paste.filter_problems(text))

    def test_default_keys_are_not_the_sections_own(self):
        # A [DEFAULT] value naming the plugin does not make every filter
        # "meant for the plugin".
        text = ('[DEFAULT]\nnote = snapshot_ext is enabled\n\n' +
                NOVA_PIPELINES)
        self.assertEqual([], paste.filter_problems(text))
        # A key also in [DEFAULT] is a global one: paste passes the
        # composite no keystone pipeline of its own.
        text = '[DEFAULT]\nkeystone = x\n\n' + NOVA_PIPELINES
        problems = paste.filter_problems(text)
        self.assertIn('has no keystone pipeline', ' '.join(problems))

    def test_explicit_factory_key_is_case_sensitive(self):
        # paste's _context_from_explicit looks the protocol up exactly:
        # 'Paste.Filter_Factory' is no loader ("No loader given").
        text = NOVA_PIPELINES.replace(
            'paste.filter_factory = ', 'Paste.Filter_Factory = ')
        problems = paste.filter_problems(text)
        self.assertEqual(1, len(problems), problems)
        self.assertIn('[filter:snapshot_ext] Paste.Filter_Factory',
                      problems[0])
        self.assertIn('paste.filter_factory', problems[0])
        self.assertNotIn('is not the plugin\'s filter factory', problems[0])

    def test_use_wins_over_the_factory_key(self):
        # paste's get_context: a section with use loads what use names;
        # its paste.filter_factory is only one more key for that factory.
        for use in ('call:oslo_middleware:RequestId.factory',
                    'other_filter'):
            text = NOVA_PIPELINES.replace(
                self.FILTER, self.FILTER + 'use = %s\n\n'
                '[filter:other_filter]\npaste.filter_factory = '
                'oslo_middleware:RequestId.factory\n' % use)
            problems = paste.filter_problems(text)
            self.assertEqual(1, len(problems), (use, problems))
            self.assertIn('[filter:snapshot_ext] use = %s' % use,
                          problems[0])
        # use naming a section whose factory is the plugin's: right.
        text = NOVA_PIPELINES.replace(
            self.FILTER, '[filter:snapshot_ext]\nuse = real\n'
            'paste.filter_factory = oslo_middleware:RequestId.factory\n\n'
            '[filter:real]\npaste.filter_factory = %s\n'
            % paste.FILTER_FACTORY)
        self.assertEqual([], paste.filter_problems(text))

    def test_interpolation_error_is_named(self):
        text = NOVA_PIPELINES.replace(
            'paste.filter_factory = %s' % paste.FILTER_FACTORY,
            'paste.filter_factory = %(nosuch)s')
        problems = paste.filter_problems(text)
        self.assertIn('[filter:snapshot_ext] paste.filter_factory cannot be '
                      'read as paste reads it', ' '.join(problems))


class TestLocationApiCheck(StatusCase):
    """Kind: a check never fails what the configuration makes work."""

    def result(self, api):
        text = ('[snapshot_ext]\nactivation_method = location-first\n'
                'location_url = http://objects.example/empty.qcow2\n')
        if api:
            text += 'location_api = %s\n' % api
        checks = self.checks(text)
        info = {'glance': {'location_api': False}}
        with mock.patch.object(checks, '_plan_info', return_value=info):
            return checks._check_location_api()

    def test_without_2_17(self):
        self.assertEqual(status.Code.SUCCESS, self.result('legacy').code)
        auto = self.result(None)
        self.assertEqual(status.Code.WARNING, auto.code)
        self.assertIn('the legacy API is used', auto.details)
        new = self.result('new')
        self.assertEqual(status.Code.FAILURE, new.code)
        self.assertIn('Upgrade Glance to 29 or later', new.details)


class TestWithoutOwnGlanceAccess(StatusCase):
    """nova.conf as nova-api reads it: no [snapshot_ext_glance] auth."""

    NOVA_CONF = '[glance]\napi_servers = http://127.0.0.1:9292\n'

    def test_nova_connection_needs_none_and_glance_is_not_checked(self):
        for extra in ('', '[snapshot_ext_nova]\nglance_connection = nova\n'):
            with self.subTest(extra=extra):
                checks = self.checks(self.NOVA_CONF + extra)
                result = checks._check_options()
                self.assertEqual(status.Code.SUCCESS, result.code,
                                 result.details)
                result = checks._check_glance()
                self.assertEqual(status.Code.WARNING, result.code)
                for words in ('not checked', '[snapshot_ext_glance] names '
                              'no way to Glance', 'glance_connection = nova, '
                              'as here', 'set [snapshot_ext_glance] '
                              'auth_type'):
                    self.assertIn(words, result.details)
                # The checks that need Glance say so, as warnings.
                for name, check in checks._upgrade_checks:
                    if name in ("'raw' allowed",
                                'Glance API 2.17 (location activation)'):
                        result = check(checks)
                        self.assertEqual(status.Code.WARNING, result.code,
                                         name)
                        self.assertIn('not checked', result.details)

    def test_session_options_alone_do_not_make_it_needed(self):
        # TLS and timeout for the day the CLI is given credentials: nova-api
        # (glance_connection = nova) never reads the group.
        self.useFixture(fixtures.EnvironmentVariable(
            'OS_SNAPSHOT_EXT_GLANCE__TIMEOUT', '30'))
        checks = self.checks(self.NOVA_CONF + '[snapshot_ext_glance]\n'
                             'cafile = /etc/ssl/ca.pem\nregion_name = r1\n')
        self.assertEqual(status.Code.SUCCESS, checks._check_options().code)
        self.assertEqual(status.Code.WARNING, checks._check_glance().code)

    def test_where_the_group_is_needed_its_missing_auth_fails(self):
        # nova-api loads [snapshot_ext_glance] at start-up with
        # glance_connection = snapshot_ext_glance and steps aside when it
        # cannot (tests/nova/test_bad_options.py); a group with options
        # but no auth_type is the standalone commands' configuration
        # (probe exits 2 on it); an auth option set in the environment.
        self.useFixture(fixtures.EnvironmentVariable(
            'OS_SNAPSHOT_EXT_GLANCE__USERNAME'))
        cases = [
            (self.NOVA_CONF + '[snapshot_ext_nova]\n'
             'glance_connection = snapshot_ext_glance\n', None),
            ('[snapshot_ext_glance]\nauth_url = http://k:5000/v3\n'
             'username = snap\npassword = x\nproject_name = p\n', None),
            ('[snapshot_ext_glance]\nauth_tpye = password\n',
             'unknown option [snapshot_ext_glance] auth_tpye (did you mean '
             'auth_type?)'),
            (self.NOVA_CONF, 'env'),
        ]
        for text, hint in cases:
            with self.subTest(text=text):
                if hint == 'env':
                    self.useFixture(fixtures.EnvironmentVariable(
                        'OS_SNAPSHOT_EXT_GLANCE__USERNAME', 'snap'))
                checks = self.checks(text)
                for check in (checks._check_options, checks._check_glance):
                    result = check()
                    self.assertEqual(status.Code.FAILURE, result.code)
                    self.assertIn('[snapshot_ext_glance] auth_type: no auth '
                                  'plugin and no endpoint_override',
                                  result.details)
                self.assertIn('checked because [snapshot_ext_glance] is '
                              'needed: ', checks._check_options().details)
                if hint and hint != 'env':
                    self.assertIn(hint, checks._check_options().details)
                for name, check in checks._upgrade_checks:
                    if name == "'raw' allowed":
                        self.assertEqual(status.Code.FAILURE,
                                         check(checks).code)

    def test_auth_section_is_followed(self):
        # keystoneauth1 reads the plugin from the group auth_section names
        # (registered here: outside nova-api nobody else does).
        result = self.checks(
            '[snapshot_ext_glance]\nauth_section = ks\n'
            'endpoint_override = http://127.0.0.1:9\n'
            '[ks]\nauth_type = nosuchplugin\n')._check_options()
        self.assertEqual(status.Code.FAILURE, result.code)
        self.assertIn('nosuchplugin', result.details)
        result = self.checks(
            '[snapshot_ext_glance]\nauth_section = ks\n'
            'endpoint_override = http://127.0.0.1:9\n'
            '[ks]\nauth_type = admin_token\ntoken = t\n')._check_options()
        self.assertEqual(status.Code.SUCCESS, result.code, result.details)

    def test_a_bad_value_keeps_the_did_you_mean(self):
        result = self.checks('[snapshot_ext]\nactivation_method = bogus\n'
                             '[snapshot_ext_glanc]\nauth_type = password\n'
                             )._check_options()
        self.assertEqual(status.Code.FAILURE, result.code)
        self.assertIn("found 'bogus'", result.details)
        self.assertIn('[snapshot_ext_glanc] (did you mean '
                      '[snapshot_ext_glance]?)', result.details)

    def test_an_auth_plugin_set_is_judged_in_either_mode(self):
        result = self.checks(self.NOVA_CONF + '[snapshot_ext_glance]\n'
                             'auth_type = nosuchplugin\n')._check_options()
        self.assertEqual(status.Code.FAILURE, result.code)
        self.assertIn('auth_type', result.details)
