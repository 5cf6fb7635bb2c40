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

"""``.ci/failures.py``: why each test failed, from stestr's output."""

import importlib.util
import os

import testtools

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
_spec = importlib.util.spec_from_file_location(
    'ci_failures', os.path.join(ROOT, '.ci', 'failures.py'))
failures = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(failures)

LOG = """\
{0} tests.a.TestA.test_ok [0.1s] ... ok
{1} tests.cloud.T.test_volume [43.2s] ... FAILED

Captured traceback:
~~~~~~~~~~~~~~~~~~~
    Traceback (most recent call last):

      File "x.py", line 1, in test_volume
    raise AssertionError('volume v is error: ...')

    AssertionError: volume v is error: {'id': 'v'}; Cinder messages: none


Captured errors in cinder-volume.log:
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
    2026-12-03 04:01:02.000 7 ERROR cinder.volume.manager [-] one
    2026-12-03 04:01:02.000 7 ERROR cinder.volume.manager [-] two

Captured pythonlogging:
~~~~~~~~~~~~~~~~~~~~~~~
    DEBUG [keystoneauth.session] RESP: [200]

{0} tests.b.TestB.test_match [0.2s] ... FAILED

Captured traceback:
~~~~~~~~~~~~~~~~~~~
    Traceback (most recent call last):
    testtools.matchers._impl.MismatchError: !=:
    reference = ['a']
    actual    = ['b']
    extra line


{0} tests.b.TestB.test_next [0.2s] ... ok

==============================
Failed 2 tests - output below:
==============================

tests.cloud.T.test_volume
-------------------------

Captured traceback:
~~~~~~~~~~~~~~~~~~~
    AssertionError: printed again in the summary
"""


class FailuresTest(testtools.TestCase):

    def test_each_failure_with_its_exception_and_service_errors(self):
        found = failures.failures(LOG.splitlines(True))
        self.assertEqual(['tests.cloud.T.test_volume',
                          'tests.b.TestB.test_match'],
                         [test_id for test_id, _ in found])
        self.assertEqual([
            'tests.cloud.T.test_volume',
            "    AssertionError: volume v is error: {'id': 'v'}; "
            "Cinder messages: none",
            '    errors in cinder-volume.log:',
            '      2026-12-03 04:01:02.000 7 ERROR cinder.volume.manager '
            '[-] one',
            '      2026-12-03 04:01:02.000 7 ERROR cinder.volume.manager '
            '[-] two',
            'tests.b.TestB.test_match',
            "    testtools.matchers._impl.MismatchError: !=: | "
            "reference = ['a'] | actual    = ['b']",
        ], failures.summary(found))

    def test_the_kinds_of_output_seen(self):
        # A chained exception whose class ends in no Error word, its
        # message's second line unindented (subunit-trace does that); a
        # skip right after; a class fixture's id with a space; the same
        # failure in two runs; tox's lines after the last one; an errors
        # detail longer than what is shown (its last lines are).
        chained = """\
{0} tests.x.T.test_chain [0.5s] ... FAILED

Captured traceback:
~~~~~~~~~~~~~~~~~~~
    Traceback (most recent call last):
      File "x.py", line 3, in test_chain
    raise ConnectionError('refused')
    ConnectionError: refused

    During handling of the above exception, another exception occurred:

    Traceback (most recent call last):
      File "x.py", line 5, in test_chain
    raise exception.GlanceUnavailable(reason)
    nova_snapshot_ext.exception.GlanceUnavailable: Glance is unavailable
Details: the second line
third line

Captured errors in nova-api.log:
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
    2026-12-03 04:01:02.000 7 ERROR nova [-] a
    2026-12-03 04:01:02.000 7 ERROR nova [-] Traceback
    2026-12-03 04:01:02.000 7 ERROR nova [-]   File "y.py"
    2026-12-03 04:01:02.000 7 ERROR nova [-]     raise x
    2026-12-03 04:01:02.000 7 ERROR nova [-] ValueError: why

{0} tests.x.T.test_skip ... SKIPPED: needs a cloud
{1} setUpClass (tests.x.U) [0.000000s] ... FAILED

Captured traceback:
~~~~~~~~~~~~~~~~~~~
    Traceback (most recent call last):
    tempest.lib.exceptions.BadRequest: Bad request
Details: {'message': 'no'}

  py3: commands[0]> stestr run
py3: exit 1 (3.00 seconds)
"""
        found = failures.failures((chained + chained).splitlines(True))
        self.assertEqual(4, len(found))
        self.assertEqual([
            'tests.x.T.test_chain',
            '    nova_snapshot_ext.exception.GlanceUnavailable: Glance is '
            'unavailable | Details: the second line | third line',
            '    errors in nova-api.log:',
            '      2026-12-03 04:01:02.000 7 ERROR nova [-] Traceback',
            '      2026-12-03 04:01:02.000 7 ERROR nova [-]   File "y.py"',
            '      2026-12-03 04:01:02.000 7 ERROR nova [-]     raise x',
            '      2026-12-03 04:01:02.000 7 ERROR nova [-] ValueError: why',
            'setUpClass (tests.x.U)',
            "    tempest.lib.exceptions.BadRequest: Bad request | Details: "
            "{'message': 'no'}",
        ], failures.summary(found))

    def test_code_lines_and_passing_tests_are_not_the_failure(self):
        log = """\
{0} tests.x.T.test_annotated [0.1s] ... FAILED

Captured traceback:
~~~~~~~~~~~~~~~~~~~
    Traceback (most recent call last):
      File "x.py", line 3, in test_annotated
    value: dict = self.compute()
                  ^^^^^^^^^^^^^^
    KeyError: 'x'

{0} tests.x.T.test_ok [0.1s] ... ok
    Traceback (most recent call last):
    note: printed by a passing test
"""
        self.assertEqual(['tests.x.T.test_annotated', "    KeyError: 'x'"],
                         failures.summary(failures.failures(
                             log.splitlines(True))))

    def test_a_failure_without_traceback_is_still_named(self):
        found = failures.failures(
            ['{0} tests.c.T.test_x [1.0s] ... FAILED\n', '\n'])
        self.assertEqual(['tests.c.T.test_x',
                          '    (no traceback captured)'],
                         failures.summary(found))

    def test_a_failed_tempest_runs_service_errors_are_kept(self):
        # tests/tempest_run.py prints this section after a failed run;
        # its last lines per log reach the end of CI's output.
        log = """\
== errors in the box's logs while the tests ran (the last lines of each)
cinder-volume.log:
    2026 ERROR one
    2026 ERROR two
    2026 ERROR three
    2026 ERROR oslo_messaging ImageCopyFailure: the cause
nova-compute.log:
    2026 ERROR boot failed
== tempest default-plugin: 1 passed, 1 failed, 0 skipped
cinder-volume.log:
    not a section line
== errors in the box's logs while the tests ran (the last lines of each)
(none)
"""
        self.assertEqual([
            ['  cinder-volume.log:\n      2026 ERROR two\n'
             '      2026 ERROR three\n'
             '      2026 ERROR oslo_messaging ImageCopyFailure: the cause',
             '  nova-compute.log:\n      2026 ERROR boot failed'],
            ['  (none)'],
        ], failures.box_errors(log.splitlines(True)))
