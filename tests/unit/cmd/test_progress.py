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

"""Progress on stderr: when it is shown, how often, what it says."""

import io
from unittest import mock

import fixtures

from nova_snapshot_ext import audit
from nova_snapshot_ext.cmd import audit as audit_cmd
from nova_snapshot_ext.cmd import main
from nova_snapshot_ext.cmd import progress
from tests import base


class Terminal(io.StringIO):
    def isatty(self):
        return True


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


class TestWanted(base.TestCase):

    def test_auto_is_text_on_a_terminal_only(self):
        self.assertTrue(progress.wanted(None, 'text', Terminal()))
        self.assertFalse(progress.wanted(None, 'json', Terminal()))
        self.assertFalse(progress.wanted(None, 'text', io.StringIO()))

    def test_asked_wins(self):
        self.assertTrue(progress.wanted(True, 'json', io.StringIO()))
        self.assertFalse(progress.wanted(False, 'text', Terminal()))


class TestProgress(base.TestCase):

    def test_at_most_once_per_interval_then_a_final_line(self):
        out, clock = io.StringIO(), Clock()
        shown = progress.Progress(out, 'audit', clock=clock)
        for page in range(1, 11):
            clock.now += 0.3
            shown.update(page * 200, page)
        clock.now += 0.1
        shown.done(2000, 10)
        lines = out.getvalue().splitlines()
        # 3.0 s of pages: updates at 1.2, 2.4 s (0.3 s steps), then done.
        self.assertEqual(['audit: 800 images read, 4 pages, 666 images/s',
                          'audit: 1,600 images read, 8 pages, 666 images/s',
                          'audit: read 2,000 images in 10 pages, 3.1 s, '
                          '645 images/s'], lines)

    def test_terminal_line_rewritten_in_place(self):
        out, clock = Terminal(), Clock()
        shown = progress.Progress(out, 'audit', clock=clock)
        clock.now += 2
        shown.update(12345, 62, '1 problem so far')
        clock.now += 2
        shown.done(20000, 100)
        text = out.getvalue()
        self.assertEqual(1, text.count('\n'), text)
        self.assertTrue(text.endswith('\n'))
        first, final = text.split('\r')[1:]
        self.assertEqual('audit: 12,345 images read, 62 pages, 6,172 '
                         'images/s, 1 problem so far', first)
        self.assertTrue(final.startswith('audit: read 20,000 images in '
                                         '100 pages, 4.0 s, 5,000 images/s'))
        # Padded over the longer first line.
        self.assertEqual(len(first) + 1, len(final))


class TestAuditProgress(base.TestCase):
    """The CLI's choice, over a scan of three pages."""

    def run_audit(self, argv, stderr):
        stdout = self.useFixture(fixtures.MonkeyPatch(
            'sys.stdout', io.StringIO())).new_value
        self.useFixture(fixtures.MonkeyPatch('sys.stderr', stderr))
        self.useFixture(fixtures.MonkeyPatch(
            'nova_snapshot_ext.cmd.progress.INTERVAL_S', 0.0))

        def scan(auditor, progress=None, **kwargs):
            report = audit.Report()
            for _ in range(3):
                report.scanned += 2
                report.pages += 1
                progress(report)
            return report

        conf = main.parse(['audit'] + argv)
        with mock.patch.object(audit, 'scan', scan), mock.patch.object(
                audit_cmd, '_cinder_checks'):
            self.assertEqual(0, audit_cmd.run(conf, mock.Mock()))
        return stdout.getvalue(), stderr.getvalue()

    def test_json_is_quiet_on_a_terminal(self):
        stdout, stderr = self.run_audit(['--format', 'json'], Terminal())
        self.assertEqual('', stderr)
        self.assertEqual(3, audit_cmd.json.loads(stdout)['pages'])

    def test_text_on_a_terminal_shows_it(self):
        _stdout, stderr = self.run_audit([], Terminal())
        self.assertIn('audit: 2 images read, 1 pages', stderr)
        self.assertIn('audit: read 6 images in 3 pages', stderr)

    def test_pipe_is_quiet_unless_asked(self):
        _stdout, stderr = self.run_audit([], io.StringIO())
        self.assertEqual('', stderr)
        _stdout, stderr = self.run_audit(['--progress', '--format', 'json'],
                                         io.StringIO())
        lines = stderr.splitlines()
        self.assertEqual(4, len(lines), stderr)
        self.assertTrue(lines[-1].startswith('audit: read 6 images in 3 '
                                             'pages'))

    def test_cinder_checks_read_again_with_their_own_progress(self):
        from nova_snapshot_ext.audit import backups as backup_audit
        from nova_snapshot_ext.audit import copies as copies_audit
        from nova_snapshot_ext.audit import volume_snapshots as vs_audit
        from nova_snapshot_ext.cmd import backup as backup_cmd

        stderr = Terminal()
        self.useFixture(fixtures.MonkeyPatch('sys.stderr', stderr))
        self.useFixture(fixtures.MonkeyPatch(
            'sys.stdout', io.StringIO()))
        self.useFixture(fixtures.MonkeyPatch(
            'nova_snapshot_ext.cmd.progress.INTERVAL_S', 0.0))

        def scan(auditor, progress=None, **kwargs):
            report = audit.Report()
            report.scanned, report.pages = 4, 2
            progress(report)
            return report

        def cinder_scan(auditor, cinder, progress=None, **kwargs):
            for pages in (1, 2):
                progress(2 * pages, pages)
            return [], backup_audit.coverage(vs_audit.Scope('p1'),
                                             vs_audit.Scope('p1'), None)

        def copies_scan(auditor, cinder, group, **kwargs):
            return [], copies_audit.coverage('p1', [], False)

        conf = main.parse(['audit'])
        with mock.patch.object(audit, 'scan', scan), mock.patch.object(
                backup_cmd, 'cinder_client', return_value=mock.Mock()), \
                mock.patch.object(backup_audit, 'scan', cinder_scan), \
                mock.patch.object(copies_audit, 'scan', copies_scan):
            self.assertEqual(0, audit_cmd.run(conf, mock.Mock()))
        lines = [line.strip() for line in
                 stderr.getvalue().replace('\r', '\n').splitlines()
                 if line.strip()]
        self.assertEqual('audit: read 4 images in 2 pages',
                         lines[1].split(',')[0])
        self.assertEqual(['audit (Cinder checks): 2 images read',
                          'audit (Cinder checks): 4 images read'],
                         [line.split(',')[0] for line in lines[2:4]])
        self.assertEqual('audit (Cinder checks): read 4 images in 2 pages',
                         lines[-1].split(',')[0])

    def test_no_progress_on_a_terminal(self):
        _stdout, stderr = self.run_audit(['--no-progress'], Terminal())
        self.assertEqual('', stderr)
