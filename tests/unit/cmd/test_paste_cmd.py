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

"""``nova-snapshot-ext paste`` on the paste files of Nova 29 to 34.

Each release's own ``etc/nova/api-paste.ini`` (``tests/unit/paste_files``,
copied from the PyPI wheels) through the command, then the upgrade
check's paste check (``nova-snapshot-ext-status upgrade check
--api-paste``) on what it wrote; the second run's bytes; ``--remove``
back to the release's file; layouts it refuses and paths it cannot use,
with nothing written.
"""

import configparser
import json
import os
import stat
from unittest import mock

import testtools

from nova_snapshot_ext.cmd import checks
from nova_snapshot_ext.cmd import paste as paste_cmd
from nova_snapshot_ext.cmd import status
from nova_snapshot_ext.nova import paste
from nova_snapshot_ext.nova import paste_edit
from tests.unit.cmd import test_cmd

FILES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))), 'paste_files')
#: The Nova releases whose paste file is kept here.
RELEASES = ('29.0.0', '30.0.0', '31.0.0', '32.0.0', '33.0.0', '34.0.0')


def release_file(version):
    return os.path.join(FILES, 'nova-%s-api-paste.ini' % version)


def read(path):
    with open(path, 'rb') as f:
        return f.read()


class PasteCommandCase(test_cmd.CLITestCase):

    def paste(self, *argv):
        self.stdout.seek(0)
        self.stdout.truncate()
        return self.run_main('paste', *argv)

    def upgrade_check(self, path):
        conf = status.new_conf()
        conf(['--api-paste', path], project='x', default_config_files=[])
        return status.UpgradeChecks(conf)._check_paste()


class TestReleases(PasteCommandCase):

    def test_each_release_file_is_accepted_by_the_upgrade_check(self):
        for version in RELEASES:
            out = os.path.join(self.tmp, 'api-paste-%s.ini' % version)
            # As shipped, the check refuses it: the edit is what it judges.
            self.assertEqual(status.Code.FAILURE, self.upgrade_check(
                release_file(version)).code, version)
            self.assertEqual(0, self.paste('--from', release_file(version),
                                           '--output', out), version)
            result = self.upgrade_check(out)
            self.assertEqual(status.Code.SUCCESS, result.code,
                             '%s: %s' % (version, result.details))

    def test_filter_right_after_keystonecontext_in_both_pipelines(self):
        for version in RELEASES:
            out = os.path.join(self.tmp, 'p.ini')
            self.paste('--from', release_file(version), '--output', out)
            parser = configparser.ConfigParser(interpolation=None)
            parser.read(out)
            for section in ('composite:openstack_compute_api_v21',
                            'composite:openstack_compute_api_v21_legacy_'
                            'v2_compatible'):
                words = parser[section]['keystone'].split()
                self.assertEqual(words.index('keystonecontext') + 1,
                                 words.index('snapshot_ext'), section)
                # noauth2 (29 to 31) is not nova-api's default pipeline
                # and stays as shipped.
                self.assertNotIn('snapshot_ext',
                                 parser[section].get('noauth2', ''))
            self.assertEqual(paste.FILTER_FACTORY,
                             parser['filter:snapshot_ext'][
                                 'paste.filter_factory'])

    def test_only_the_pipelines_and_the_section_change(self):
        for version in RELEASES:
            stock = read(release_file(version)).decode()
            out = os.path.join(self.tmp, 'p.ini')
            self.paste('--from', release_file(version), '--output', out)
            self.assertEqual(stock.replace(
                'keystonecontext ', 'keystonecontext snapshot_ext ') +
                '\n' + paste_edit.FILTER_SECTION, read(out).decode(),
                version)

    def test_second_run_is_byte_identical(self):
        for version in RELEASES:
            out = os.path.join(self.tmp, 'p.ini')
            self.paste('--from', release_file(version), '--output', out)
            once = read(out)
            mtime = os.stat(out).st_mtime_ns
            self.assertEqual(0, self.paste('--from', out, '--output', out,
                                           '--format', 'json'))
            self.assertEqual(once, read(out), version)
            report = json.loads(self.stdout.getvalue())
            self.assertFalse(report['changed'])
            # In place and already right: not even rewritten.
            self.assertEqual(mtime, os.stat(out).st_mtime_ns)

    def test_remove_gives_the_release_file_back(self):
        for version in RELEASES:
            out = os.path.join(self.tmp, 'p.ini')
            self.paste('--from', release_file(version), '--output', out)
            self.assertEqual(0, self.paste('--from', out, '--output', out,
                                           '--remove'))
            self.assertEqual(read(release_file(version)), read(out), version)
            self.assertEqual(status.Code.FAILURE,
                             self.upgrade_check(out).code)

    def test_json_sections_are_the_ansible_overrides(self):
        out = os.path.join(self.tmp, 'p.ini')
        self.assertEqual(0, self.paste('--from', release_file('34.0.0'),
                                       '--output', out, '--format', 'json'))
        report = json.loads(self.stdout.getvalue())
        self.assertTrue(report['changed'])
        self.assertEqual(['composite:openstack_compute_api_v21',
                          'composite:openstack_compute_api_v21_legacy_v2_'
                          'compatible'], report['composites'])
        # Applied over the release's file as a config_template override
        # does (section by section, key by key), they give the file the
        # command wrote, as PasteDeploy reads it.
        merged = configparser.ConfigParser(interpolation=None)
        merged.read(release_file('34.0.0'))
        for section, keys in report['sections'].items():
            if not merged.has_section(section):
                merged.add_section(section)
            for key, value in keys.items():
                merged[section][key] = value
        written = configparser.ConfigParser(interpolation=None)
        written.read(out)
        self.assertEqual({s: dict(written[s]) for s in written.sections()},
                         {s: dict(merged[s]) for s in merged.sections()})

    def install_then_remove(self, appended=''):
        """Nova 34's file installed (plus ``appended``), then removed.

        :returns: the installed file's path, the removed one's, and the
            removal's JSON report.
        """
        installed = os.path.join(self.tmp, 'installed.ini')
        self.assertEqual(0, self.paste('--from', release_file('34.0.0'),
                                       '--output', installed))
        with open(installed, 'a') as f:
            f.write(appended)
        self.stdout.seek(0)
        self.stdout.truncate()
        out = os.path.join(self.tmp, 'removed.ini')
        self.assertEqual(0, self.paste('--from', installed, '--output', out,
                                       '--remove', '--format', 'json'))
        return installed, out, json.loads(self.stdout.getvalue())

    def test_remove_json_sections_take_the_filter_out_by_merge(self):
        # OpenStack-Ansible's removal: os_nova merges the overrides over
        # the live, already edited file; merged over it, the removal's
        # sections give Nova's own pipelines, and the filter's section is
        # the one thing left over, named by no pipeline (PasteDeploy then
        # never imports it: nova-api starts without the package).
        installed, out, report = self.install_then_remove()
        self.assertTrue(report['removed'])
        self.assertEqual(set(report['composites']), set(report['sections']))
        merged = configparser.ConfigParser(interpolation=None)
        merged.read(installed)
        for section, keys in report['sections'].items():
            for key, value in keys.items():
                merged[section][key] = value
        nova = configparser.ConfigParser(interpolation=None)
        nova.read(release_file('34.0.0'))
        self.assertEqual(['filter:snapshot_ext'],
                         sorted(set(merged.sections()) -
                                set(nova.sections())))
        for section in nova.sections():
            self.assertEqual(dict(nova[section]), dict(merged[section]),
                             section)
        self.assertEqual(read(release_file('34.0.0')), read(out))

    def test_remove_reads_values_raw(self):
        # Kind: a value PasteDeploy interpolates ('%' not followed by '%'
        # or '('), anywhere in the file: the removal compares raw values.
        installed, out, report = self.install_then_remove(
            '\n[filter:pct]\npaste.filter_factory = x:y\nfmt = 100% done\n')
        self.assertEqual(set(report['composites']), set(report['sections']))
        self.assertIn('fmt = 100% done', read(out).decode())

    def test_permissions_of_an_edited_file_are_kept(self):
        out = os.path.join(self.tmp, 'p.ini')
        with open(out, 'wb') as f:
            f.write(read(release_file('34.0.0')))
        os.chmod(out, 0o640)
        self.assertEqual(0, self.paste('--from', out, '--output', out))
        self.assertEqual(0o640, stat.S_IMODE(os.stat(out).st_mode))


class TestRefusals(PasteCommandCase):

    def stock(self):
        return read(release_file('34.0.0')).decode()

    def assert_refused(self, text, *needles, argv=()):
        source = self.write('in.ini', text)
        out = os.path.join(self.tmp, 'out.ini')
        code = self.paste('--from', source, '--output', out, *argv)
        self.assertEqual(checks.EXIT_INPUT, code)
        self.assertFalse(os.path.exists(out))
        for needle in needles:
            self.assertIn(needle, self.stderr.getvalue())
        return self.stderr.getvalue()

    def test_pipeline_without_keystonecontext_names_the_composite(self):
        text = self.stock().replace(
            'authtoken keystonecontext legacy_v2_compatible',
            'authtoken legacy_v2_compatible')
        self.assert_refused(
            text, 'composite:openstack_compute_api_v21_legacy_v2_compatible',
            'has no keystonecontext')

    def test_unclosed_header_is_named_as_one(self):
        # Kind: a "[section" line without "]", first in the file (where
        # configparser says "before any header") or later (where it takes
        # it for an option): its line is named, no line quoted.
        stock = self.stock()
        first = '[composite:osapi_compute\n' + stock.split('\n', 1)[1]
        for text, line in ((first, 1), (
                stock.replace('[composite:openstack_compute_api_v21]',
                              '[composite:openstack_compute_api_v21', 1),
                stock[:stock.index('[composite:openstack_compute_api_v21]')]
                .count('\n') + 1)):
            message = self.assert_refused(
                text, 'line(s) %d open a [section] header without closing '
                'it' % line)
            self.assertNotIn('before any', message)
            self.assertNotIn('not an ini file', message)

    def test_bracket_after_a_form_feed_in_a_comment_is_no_header(self):
        # configparser splits lines at \n only: a '[' after a form feed
        # or U+2028 inside a comment line starts no line of its own.
        for sep in ('\x0c', '\u2028'):
            text = '# old layout:%s[composite:old\n' % sep + self.stock()
            source = self.write('in.ini', text)
            out = os.path.join(self.tmp, 'out.ini')
            self.assertEqual(0, self.paste('--from', source, '--output',
                                           out), self.stderr.getvalue())

    def test_composite_without_keystone_pipeline(self):
        text = self.stock().replace(
            'keystone = cors http_proxy_to_wsgi compute_req_id faultwrap '
            'request_log sizelimit osprofiler authtoken keystonecontext '
            'osapi_compute_app_v21',
            'noauth2 = cors osapi_compute_app_v21')
        self.assert_refused(text, '[composite:openstack_compute_api_v21] '
                            'has no keystone pipeline')

    def test_misplaced_filter_is_not_guessed_at(self):
        text = paste_edit.add_filter(self.stock()).text.replace(
            'authtoken keystonecontext snapshot_ext osapi_compute_app_v21',
            'snapshot_ext authtoken keystonecontext osapi_compute_app_v21')
        self.assert_refused(text, 'composite:openstack_compute_api_v21]',
                            'before keystonecontext')

    def test_not_nova_api_paste_file(self):
        glance = os.path.join('/work/shared/reference',
                              'glance-api-paste.ini.example')
        text = ('[composite:api]\nuse = egg:Paste#urlmap\n/: x\n'
                if not os.path.exists(glance) else read(glance).decode())
        self.assert_refused(text, "not nova-api's paste file")

    def test_not_ini(self):
        self.assert_refused('keystone = x\n', 'not an ini file')

    def test_json_error_names_the_composite(self):
        text = self.stock().replace('authtoken keystonecontext osapi',
                                    'authtoken osapi')
        self.assert_refused(text, argv=('--format', 'json'))
        report = json.loads(self.stdout.getvalue())
        self.assertEqual(2, report['exit_code'])
        self.assertEqual('composite:openstack_compute_api_v21',
                         report['composite'])


class TestPaths(PasteCommandCase):

    def test_missing_from(self):
        out = os.path.join(self.tmp, 'out.ini')
        self.assertEqual(2, self.paste('--from', '/nonexistent/a.ini',
                                       '--output', out))
        self.assertIn('--from /nonexistent/a.ini cannot be read',
                      self.stderr.getvalue())
        self.assertFalse(os.path.exists(out))

    def test_from_a_directory(self):
        self.assertEqual(2, self.paste('--from', self.tmp, '--output',
                                       os.path.join(self.tmp, 'o.ini')))
        self.assertIn('is a directory', self.stderr.getvalue())

    def test_from_not_utf8(self):
        path = os.path.join(self.tmp, 'latin.ini')
        with open(path, 'wb') as f:
            f.write(b'[filter:x]\nk = \xe9\n')
        self.assertEqual(2, self.paste('--from', path, '--output',
                                       os.path.join(self.tmp, 'o.ini')))
        self.assertIn('not UTF-8', self.stderr.getvalue())

    def test_output_directory_missing(self):
        out = os.path.join(self.tmp, 'no', 'such', 'api-paste.ini')
        self.assertEqual(2, self.paste('--from', release_file('34.0.0'),
                                       '--output', out))
        self.assertIn('does not exist', self.stderr.getvalue())
        self.assertFalse(os.path.exists(os.path.dirname(out)))

    def test_output_is_a_directory(self):
        self.assertEqual(2, self.paste('--from', release_file('34.0.0'),
                                       '--output', self.tmp))
        self.assertIn('--output %s is a directory' % self.tmp,
                      self.stderr.getvalue())

    def test_output_directory_not_writable_leaves_the_file(self):
        if os.geteuid() == 0:
            self.skipTest('root writes into any directory')
        directory = os.path.join(self.tmp, 'ro')
        os.mkdir(directory)
        out = os.path.join(directory, 'api-paste.ini')
        with open(out, 'wb') as f:
            f.write(b'before')
        os.chmod(directory, 0o500)
        self.addCleanup(os.chmod, directory, 0o700)
        self.assertEqual(2, self.paste('--from', release_file('34.0.0'),
                                       '--output', out))
        self.assertEqual(b'before', read(out))

    def test_output_required(self):
        self.assertEqual(2, self.paste('--from', release_file('34.0.0')))

    def test_refused_edit_leaves_the_output_untouched(self):
        out = os.path.join(self.tmp, 'api-paste.ini')
        with open(out, 'wb') as f:
            f.write(b'[composite:x]\nuse = egg:Paste#urlmap\n')
        self.assertEqual(2, self.paste('--from', out, '--output', out))
        self.assertEqual(b'[composite:x]\nuse = egg:Paste#urlmap\n',
                         read(out))
        self.assertEqual(['api-paste.ini'], os.listdir(self.tmp))

    def test_default_from_without_nova(self):
        from importlib import metadata

        try:
            metadata.distribution('nova')
        except metadata.PackageNotFoundError:
            self.assertEqual(2, self.paste('--output', os.path.join(
                self.tmp, 'o.ini')))
            self.assertIn('nova is not installed', self.stderr.getvalue())
            self.assertIn('--from FILE', self.stderr.getvalue())
        else:
            # Nova here: the shipped file is found and edited.
            out = os.path.join(self.tmp, 'o.ini')
            self.assertEqual(0, self.paste('--output', out))
            self.assertEqual([], paste.filter_problems(
                read(out).decode()))
            self.assertTrue(paste_cmd.shipped_paste().endswith(
                paste_cmd.SHIPPED))


def stock_text(version='34.0.0'):
    return read(release_file(version)).decode()


V21 = '[composite:openstack_compute_api_v21]'
PIPELINE = ('keystone = cors http_proxy_to_wsgi compute_req_id faultwrap '
            'request_log sizelimit osprofiler authtoken keystonecontext '
            'osapi_compute_app_v21')


def pipelines(text):
    """``{(section, key): words}`` of every pipeline paste would read."""
    parsed = paste.Paste(text)
    found = {}
    for section in parsed.parser.sections():
        kind = section.split(':', 1)[0]
        if kind in paste.COMPOSITE_PREFIXES + ('pipeline',):
            for key, value in parsed.local(section).items():
                if key != 'use':
                    found[(section, key)] = value.split()
    return found


class TestLayouts(PasteCommandCase):
    """Layouts configparser and PasteDeploy read, through add and remove.

    Each is added (the upgrade check's rule must then hold), removed
    (the file must come back byte for byte), or refused naming what is
    not supported, with nothing written.
    """

    def round_trip(self, text):
        added = paste_edit.add_filter(text)
        self.assertTrue(added.changed)
        self.assertEqual([], paste.filter_problems(added.text))
        self.assertEqual(text, paste_edit.remove_filter(added.text).text)
        return added.text

    def test_section_headers_as_configparser_reads_them(self):
        # RawConfigParser matches "[...]" at the start of the stripped
        # line: a comment after it, and spaces around the name (which
        # PasteDeploy strips), are the same section.
        for header in ('[composite:openstack_compute_api_v21]  # v2.1',
                       '[composite:openstack_compute_api_v21] ; v2.1',
                       '[composite: openstack_compute_api_v21 ]'):
            text = stock_text().replace(V21, header)
            added = self.round_trip(text)
            self.assertIn(header, added)
            self.assertIn('openstack_compute_api_v21',
                          [paste.Paste.name(section) for section in
                           paste_edit.add_filter(text).composites])

    def test_remove_keeps_a_section_after_the_filter_whatever_its_header(self):
        for header in ('[app:extra]  # keep me', '[app:extra];x',
                       '[ app:extra ]', '[filter:other] # snapshot_ext'):
            extra = '\n%s\npaste.app_factory = x:y\n' % header
            text = paste_edit.add_filter(stock_text()).text + extra
            self.assertEqual(stock_text() + extra,
                             paste_edit.remove_filter(text).text, header)

    def test_crlf_file_stays_crlf(self):
        for version in RELEASES:
            text = stock_text(version).replace('\n', '\r\n')
            added = self.round_trip(text)
            self.assertEqual(added.count('\n'), added.count('\r\n'))

    def test_file_without_final_newline(self):
        for version in RELEASES:
            for newline in ('\n', '\r\n'):
                text = stock_text(version).replace(
                    '\n', newline).rstrip('\r\n')
                added = self.round_trip(text)
                self.assertFalse(added.endswith('\n'))

    def test_pipeline_over_several_lines(self):
        # configparser continues a value over deeper-indented lines, with
        # comment and blank lines between them.
        for continued in (
                'keystone = cors http_proxy_to_wsgi compute_req_id\n'
                '    faultwrap request_log sizelimit osprofiler authtoken\n'
                '    keystonecontext\n    osapi_compute_app_v21',
                'keystone = cors http_proxy_to_wsgi compute_req_id faultwrap'
                ' request_log sizelimit osprofiler authtoken keystonecontext'
                '\n# the application\n\n  osapi_compute_app_v21',
                'keystone =\n  cors http_proxy_to_wsgi compute_req_id '
                'faultwrap request_log sizelimit osprofiler authtoken\n'
                '; comment\n  keystonecontext osapi_compute_app_v21'):
            text = stock_text().replace(PIPELINE, continued)
            self.round_trip(text)

    def test_composites_inheriting_their_pipeline_through_use(self):
        base = ('[composite:base]\nuse = call:nova.api.auth:'
                'pipeline_factory_v21\n%s\n\n' % PIPELINE)
        text = stock_text().replace(
            V21 + '\nuse = call:nova.api.auth:pipeline_factory_v21\n'
            + PIPELINE + '\n', base + V21 + '\nuse = base\n'
            'noauth2 = cors osapi_compute_app_v21\n')
        self.assertNotEqual(stock_text(), text)
        added = self.round_trip(text)
        # Written once, where it is defined.
        self.assertEqual(1, added.count('keystonecontext snapshot_ext '
                                        'osapi_compute_app_v21'))

    def test_composite_without_a_pipeline_anywhere_says_so(self):
        text = stock_text().replace(PIPELINE, 'noauth2 = cors x')
        err = self.assertRaises(paste_edit.LayoutError,
                                paste_edit.add_filter, text)
        self.assertIn('[composite:openstack_compute_api_v21] has no keystone'
                      ' pipeline, neither its own nor through use = NAME',
                      str(err))


class TestRemoveEverywhere(PasteCommandCase):
    """--remove takes out every name of the plugin's filter, or refuses."""

    def assert_removed(self, text):
        out = self.write('p.ini', text)
        self.assertEqual(0, self.paste('--from', out, '--output', out,
                                       '--remove'))
        removed = read(out).decode()
        for where, words in pipelines(removed).items():
            self.assertNotIn('snapshot_ext', words, where)
        self.assertEqual({where: [word for word in words
                                  if word != 'snapshot_ext']
                          for where, words in pipelines(text).items()},
                         pipelines(removed))
        self.assertNotIn('[filter:snapshot_ext]', removed)
        return removed

    def added(self):
        return paste_edit.add_filter(stock_text()).text

    def test_in_every_pipeline_that_names_it(self):
        for old, new in (
                # keystone continued after a comment and a blank line
                ('keystonecontext osapi_compute_app_v21\n',
                 'keystonecontext\n# the plugin\n\n'
                 '    snapshot_ext osapi_compute_app_v21\n'),
                # noauth2 too
                (PIPELINE + '\n', PIPELINE + '\n'
                 'noauth2 = cors snapshot_ext osapi_compute_app_v21\n'),
                # a [pipeline:...] section
                ('pipeline = cors faultwrap request_log http_proxy_to_wsgi '
                 'oscomputeversionapp',
                 'pipeline = cors faultwrap snapshot_ext request_log '
                 'http_proxy_to_wsgi oscomputeversionapp'),
                # a composite header with a comment
                (V21, V21 + '  # v2.1')):
            self.assertIn(old, stock_text())
            text = stock_text().replace(old, new) + (
                '\n' + paste_edit.FILTER_SECTION)
            removed = self.assert_removed(text)
            if old == V21:
                self.assertIn(V21 + '  # v2.1', removed)

    def test_pipeline_continuation_line_left_empty_goes(self):
        text = stock_text().replace(
            'keystonecontext osapi_compute_app_v21\n',
            'keystonecontext\n    snapshot_ext\n'
            '    osapi_compute_app_v21\n') + '\n' + paste_edit.FILTER_SECTION
        removed = self.assert_removed(text)
        self.assertIn('keystonecontext\n    osapi_compute_app_v21\n',
                      removed)

    def test_a_name_it_cannot_take_out_is_refused(self):
        for extra in ('[app:other]\npaste.app_factory = x:y\n'
                      'filter-with = snapshot_ext\n',
                      '[composite:more]\nuse = egg:Paste#urlmap\n'
                      '/x: snapshot_ext\n'):
            text = self.added() + '\n' + extra
            out = self.write('p.ini', text)
            self.assertEqual(checks.EXIT_INPUT, self.paste(
                '--from', out, '--output', out, '--remove'))
            self.assertEqual(text.encode(), read(out))
            self.assertIn('still names snapshot_ext', self.stderr.getvalue())
            self.assertIn('nothing is written', self.stderr.getvalue())

    def test_an_operators_own_filter_of_that_name_is_refused(self):
        text = stock_text().replace(
            'keystonecontext osapi', 'keystonecontext snapshot_ext osapi'
        ) + ('\n[filter:snapshot_ext]\n'
             'paste.filter_factory = mycorp.snapshots:Audit.factory\n')
        out = self.write('p.ini', text)
        for argv in ((), ('--remove',)):
            self.assertEqual(checks.EXIT_INPUT, self.paste(
                '--from', out, '--output', out, *argv))
            self.assertEqual(text.encode(), read(out))
            self.assertIn("[filter:snapshot_ext] is not the plugin's filter",
                          self.stderr.getvalue())


class TestWrite(PasteCommandCase):
    """The written file keeps owner, group and mode; links are followed."""

    def test_owner_group_and_mode_are_kept(self):
        out = self.write('p.ini', stock_text())
        os.chmod(out, 0o640)
        if os.geteuid() == 0:
            os.chown(out, 4242, 4343)
        before = os.stat(out)
        for argv in ((), ('--remove',)):
            self.assertEqual(0, self.paste('--from', out, '--output', out,
                                           *argv))
            after = os.stat(out)
            self.assertNotEqual(before.st_ino, after.st_ino)  # replaced
            self.assertEqual((before.st_uid, before.st_gid, 0o640),
                             (after.st_uid, after.st_gid,
                              stat.S_IMODE(after.st_mode)))
            before = after

    def test_symlink_output_is_written_through(self):
        real_dir = os.path.join(self.tmp, 'real')
        os.mkdir(real_dir)
        target = os.path.join(real_dir, 'api-paste.ini')
        with open(target, 'w') as f:
            f.write(stock_text())
        os.chmod(target, 0o640)
        link = os.path.join(self.tmp, 'api-paste.ini')
        os.symlink(target, link)
        self.assertEqual(0, self.paste('--from', link, '--output', link))
        self.assertTrue(os.path.islink(link))
        self.assertEqual(target, os.readlink(link))
        self.assertEqual(paste_edit.add_filter(stock_text()).text.encode(),
                         read(target))
        self.assertEqual(0o640, stat.S_IMODE(os.stat(target).st_mode))
        self.assertEqual(['api-paste.ini'], os.listdir(real_dir))

    def test_owner_that_cannot_be_kept_leaves_the_file(self):
        if os.geteuid() != 0:
            self.skipTest('only root can give the file another owner')
        out = self.write('p.ini', stock_text())
        os.chown(out, 4242, 4343)
        with mock.patch.object(paste_cmd.os, 'chown',
                               side_effect=PermissionError(1, 'no')):
            self.assertEqual(2, self.paste('--from', out, '--output', out))
        self.assertEqual(stock_text().encode(), read(out))
        self.assertEqual(['p.ini'], os.listdir(self.tmp))
        self.assertIn('cannot keep its owner and group 4242:4343',
                      self.stderr.getvalue())


class TestUnreadableQuotesNothing(testtools.TestCase):
    """Kind: a file given by mistake; its content never reaches the error."""

    def test_error_names_lines_not_their_text(self):
        for text, words in (
                ('root:x:0:0:secret-token\n', 'line 1 comes before'),
                ('[a]\nkey = v\n  bad\n!!secret-token!!\n', 'cannot be '
                 'parsed')):
            err = self.assertRaises(ValueError, paste.Paste, text)
            self.assertIn(words, str(err))
            self.assertNotIn('secret-token', str(err))
