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

import fixtures

from nova_snapshot_ext import exception
from tests import base


class TestException(base.TestCase):

    def test_format_with_kwargs(self):
        err = exception.InvalidRequest(field='name', reason='is required')
        self.assertEqual("Invalid snapshot request: field 'name': is "
                         "required", err.format_message())
        self.assertEqual({'field': 'name', 'reason': 'is required'},
                         err.kwargs)
        self.assertEqual(400, err.code)

    def test_explicit_message(self):
        self.assertEqual('x', exception.SnapshotExtException('x').message)

    def test_missing_kwarg_fatal_in_tests(self):
        self.assertRaises(KeyError, exception.InvalidRequest, field='f')

    def test_missing_kwarg_logged_at_run_time(self):
        self.useFixture(fixtures.MonkeyPatch(
            'nova_snapshot_ext.exception.FATAL_FORMAT_ERRORS', False))
        err = exception.InvalidRequest(field='f')
        self.assertEqual(exception.InvalidRequest.msg_fmt, err.message)

    def test_every_class_formats_with_its_placeholders(self):
        import re
        for cls in _all_subclasses(exception.SnapshotExtException):
            names = re.findall(r'%\((\w+)\)', str(cls.msg_fmt))
            counts = ('length', 'count', 'quota', 'limit', 'size')
            kwargs = {n: 1 if n in counts else 'x' for n in names}
            self.assertTrue(cls(**kwargs).format_message(), cls)


class TestDecisionAttributes(base.TestCase):
    """What callers decide on is an attribute, not a constructor kwarg."""

    def test_sent_reached_reason_status(self):
        err = exception.GlanceUnavailable(operation='create', reason='down')
        self.assertTrue(err.sent)
        self.assertEqual('down', err.reason)
        self.assertIsNone(err.status)
        self.assertFalse(exception.GlanceUnavailable(
            operation='create', reason='x', sent=False).sent)
        late = exception.GlanceDeadlineExceeded(
            operation='read', reason='slow', deadline=3, which='w')
        self.assertFalse(late.reached)
        self.assertTrue(exception.unreachable(late))
        reached = exception.GlanceDeadlineExceeded(
            operation='read', reason='slow', deadline=3, which='w',
            reached=True)
        self.assertTrue(reached.reached)
        self.assertFalse(exception.unreachable(reached))
        self.assertEqual(404, exception.GlanceNotFound(
            operation='read', reason='gone', status=404).status)

    def test_reason_of_any_error(self):
        self.assertEqual('a b', exception.reason_of(ValueError(' a\n b ')))
        self.assertEqual('KeyError', exception.reason_of(KeyError()))
        self.assertEqual(500, len(exception.reason_of(Exception('x' * 900))))


def _all_subclasses(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from _all_subclasses(sub)
