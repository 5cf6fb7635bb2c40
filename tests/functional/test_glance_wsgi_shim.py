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

"""The SQLite transaction rewrite of the embedded Glance's WSGI shim.

Real sqlite3 connections; the shim needs SQLAlchemy (installed with
glance, hence functional).  The release axis' bookkeeping is in
tests/unit/embedded/test_glance_releases_support.py.
"""

import os
import sqlite3
import types

import fixtures
import testtools

from nova_snapshot_ext.embedded import glance_wsgi

_SQLITE = types.SimpleNamespace(dialect=types.SimpleNamespace(name='sqlite'))


class TestBeginImmediate(testtools.TestCase):

    def setUp(self):
        super().setUp()
        path = os.path.join(self.useFixture(fixtures.TempDir()).path, 'db')
        self.conns = [sqlite3.connect(path, isolation_level=None,
                                      timeout=0.1) for _ in range(2)]
        for conn in self.conns:
            self.addCleanup(conn.close)
        self.conns[0].execute('CREATE TABLE t (x)')
        self.useFixture(fixtures.MonkeyPatch(
            'nova_snapshot_ext.embedded.glance_wsgi._thread_state',
            glance_wsgi.threading.local()))

    def begin(self, conn):
        cursor = conn.cursor()
        statement, _ = glance_wsgi._begin_immediate(
            _SQLITE, cursor, 'BEGIN', (), None, False)
        cursor.execute(statement)
        return statement

    def test_outer_immediate_nested_deferred_and_can_read(self):
        outer, nested = self.conns
        self.assertEqual('BEGIN IMMEDIATE', self.begin(outer))
        outer.execute('INSERT INTO t VALUES (1)')
        # Same thread, another connection: as BEGIN IMMEDIATE this would
        # wait for the lock its own thread holds.
        self.assertEqual('BEGIN', self.begin(nested))
        self.assertEqual([], nested.execute('SELECT x FROM t').fetchall())
        nested.execute('COMMIT')
        outer.execute('COMMIT')
        # Nothing open any more: the next one takes the write lock again.
        self.assertEqual('BEGIN IMMEDIATE', self.begin(nested))
        nested.execute('COMMIT')

    def test_other_statements_and_dialects_untouched(self):
        cursor = self.conns[0].cursor()
        self.assertEqual(('SELECT 1', ()), glance_wsgi._begin_immediate(
            _SQLITE, cursor, 'SELECT 1', (), None, False))
        mysql = types.SimpleNamespace(
            dialect=types.SimpleNamespace(name='mysql'))
        self.assertEqual(('BEGIN', ()), glance_wsgi._begin_immediate(
            mysql, cursor, 'BEGIN', (), None, False))
