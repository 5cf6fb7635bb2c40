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

"""Glance on MariaDB and PostgreSQL: what the preflight refuses, and why.

Every kind of record :mod:`nova_snapshot_ext.snapshot.database_rules`
refuses is sent twice to a real Glance 33 on a private MariaDB or
PostgreSQL server (Debian packages, 4 gunicorn workers):

* raw, straight to Glance: the database that cannot store it makes
  Glance answer 500 (and nothing is left: the insert rolls back), the
  other stores it -- so the rule is that database's, not a guess;
* through ``nova-snapshot-ext snapshot``: exit 2 before anything exists,
  the key (both keys) named.

Then 16 concurrent tries of one snapshot on two glance-api nodes of one
database, 4 workers each, make exactly one image -- also with each node
behind its own fault proxy injecting random faults (the exactly-once
rounds of tests/functional/test_faults.py).  ``tox -e
functional-mariadb`` / ``functional-postgresql`` run this module on one
database each; elsewhere the class of each database runs when its
packages are installed.
"""

import json
import os
import subprocess
import sys
import threading
import unittest

import ddt
import fixtures
from glanceclient import exc as glance_exc

from nova_snapshot_ext.embedded import database as embedded_database
from nova_snapshot_ext.embedded import demo
from nova_snapshot_ext.embedded import glance as embedded_glance
from nova_snapshot_ext.snapshot import database_rules
from nova_snapshot_ext.snapshot import request as request_mod
from nova_snapshot_ext.snapshot import service as service_mod
from tests.functional import base as fbase
from tests.functional import faultproxy
from tests.functional import test_faults

MARIADB = frozenset(['mariadb'])
POSTGRESQL = frozenset(['postgresql'])
EVERY = frozenset(embedded_database.KINDS)

#: label -> (extra image properties, snapshot name suffix, the databases
#: under which Glance answers 500, what the refusal must name).
REFUSED = {
    'case': ({'image_Foo': '1', 'image_foo': '2'}, '', MARIADB,
             ("'image_Foo'", "'image_foo'")),
    'trailing_space': ({'tag': '1', 'tag ': '2'}, '', MARIADB,
                       ("'tag'", "'tag '")),
    'accent': ({'cafe': '1', 'café': '2'}, '', MARIADB,
               ("'cafe'", "'café'")),
    'sharp_s': ({'strase': '1', 'STRAßE': '2'}, '', MARIADB,
                ("'strase'", "'STRAßE'")),
    'greek_tonos': ({'άλφα': '1', 'ΑΛΦΑ': '2'}, '', MARIADB,
                    ("'άλφα'", "'ΑΛΦΑ'")),
    'value_70000_bytes': ({'big': 'x' * 70000}, '', MARIADB,
                          ("'big'", '70000 bytes')),
    'value_65536_bytes_32768_chars': ({'big': 'é' * 32768}, '', MARIADB,
                                      ("'big'", '65536 bytes')),
    'nul_in_value': ({'note': 'a\x00b'}, '', POSTGRESQL,
                     ("'note'", 'NUL')),
    'nul_in_key': ({'no\x00te': 'x'}, '', POSTGRESQL, ('NUL',)),
    'nul_in_name': ({}, '\x00', POSTGRESQL, ("'name'", 'NUL')),
    # (the request's own validation already refuses it)
    'lone_surrogate': ({'note': 'a\udc80'}, '', EVERY,
                       ('note', 'surrogate')),
}

#: label -> extra image properties every database stores: the rules do
#: not over-refuse.
ACCEPTED = {
    'exactly_65535_bytes': {'big': 'x' * 65535},
    'distinct_under_the_collation': {'tag': '1', ' tag': '2', 'ss': '3',
                                     'ß': '4', 'ae': '5', 'æ': '6'},
}


def _workers():
    return int(os.environ.get(embedded_database.WORKERS_ENV) or 4)


class DatabaseTestBase(fbase.FunctionalTestCase):
    """A Glance on ``KIND`` (4 workers, token identity)."""

    KIND = None
    DRIVER = 'libvirt'

    def setUp(self):
        if self.KIND is None:
            self.skipTest('base class')
        chosen = fbase.database_kind()
        if chosen and chosen != self.KIND:
            self.skipTest('this run puts Glance on %s' % chosen)
        reason = embedded_database.missing(self.KIND)
        if reason:
            self.skipTest('Glance on %s: %s' % (self.KIND, reason))
        self.GLANCE_OVERRIDES = {
            'identity': 'token', 'workers': _workers(),
            'database': embedded_database.shared_server(self.KIND)}
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path
        self.conf_file = self.write_conf(self.glance.endpoint, 'plugin')

    def write_conf(self, endpoint, name):
        path = os.path.join(self.tmp, '%s.conf' % name)
        token = self.glance.token(self.project_id, self.user_id,
                                  roles=fbase.MEMBER_ROLES)
        demo.write_config(path, endpoint, token, self.DRIVER)
        return path

    def request(self, properties=None, suffix=''):
        data = test_faults.fresh_request_dict(self.project_id,
                                              self.user_id)
        data['name'] += suffix
        data['metadata'] = dict(properties or {})
        return data

    def run_cli(self, data):
        path = os.path.join(self.tmp, 'request.json')
        with open(path, 'w', encoding='utf-8') as f:
            json.dump(data, f)
        return subprocess.run(
            [sys.executable, '-m', 'nova_snapshot_ext.cmd.main', 'snapshot',
             '--config-file', self.conf_file, path], capture_output=True,
            text=True, timeout=180, check=False)

    def project_images(self):
        return self.list_all_images(filters={'owner': self.project_id})


@ddt.ddt
class RefusalTable(DatabaseTestBase):

    def raw_create(self, properties, suffix):
        """Send the record's kind straight to Glance (no plugin)."""
        client = self.glance.client(self.project_id, self.user_id)
        return client.images.create(
            name='raw' + suffix, disk_format='raw', container_format='bare',
            **properties)

    @ddt.data(*sorted(REFUSED))
    def test_glance_itself_answers_500_where_the_rule_says(self, label):
        properties, suffix, refused_on, _ = REFUSED[label]
        if self.KIND in refused_on:
            self.assertRaises(glance_exc.HTTPInternalServerError,
                              self.raw_create, properties, suffix)
            # The insert rolled back: nothing is left.
            self.assertEqual([], self.project_images())
        else:
            image = self.raw_create(properties, suffix)
            stored = self.glance.client(self.project_id,
                                        self.user_id).images.get(
                image['id'])
            for key, value in properties.items():
                self.assertEqual(value, stored[key])

    @ddt.data(*sorted(REFUSED))
    def test_plugin_refuses_first_with_exit_2(self, label):
        properties, suffix, _, named = REFUSED[label]
        proc = self.run_cli(self.request(properties, suffix))
        self.assertEqual(2, proc.returncode, proc.stdout + proc.stderr)
        for text in named:
            self.assertIn(text, proc.stderr)
        self.assertNotIn('retry', proc.stderr.lower())
        self.assertEqual([], self.project_images())

    @ddt.data(*sorted(ACCEPTED))
    def test_accepted_everywhere(self, label):
        proc = self.run_cli(self.request(ACCEPTED[label]))
        self.assertEqual(0, proc.returncode, proc.stderr)
        images = self.project_images()
        self.assertEqual(['active'], [i['status'] for i in images])
        for key, value in ACCEPTED[label].items():
            self.assertEqual(value, images[0][key])


class GlanceFailsOnRecord(DatabaseTestBase):
    """A 500 from Glance that the preflight could not foresee."""

    def test_500_with_no_image_says_retry_fails_the_same_way(self):
        proxy = self.useFixture(faultproxy.FaultProxyFixture(
            self.glance.endpoint)).proxy
        proxy.add_rule('POST', r'^/v2/images$', 'status', status=500,
                       times='always')
        self.conf_file = self.write_conf(proxy.endpoint, 'proxied')
        proc = self.run_cli(self.request())
        self.assertEqual(1, proc.returncode, proc.stderr)
        self.assertIn('Glance failed on this record (HTTP 500', proc.stderr)
        self.assertIn('a property its database refuses fails the same '
                      'way on every retry until the record changes',
                      proc.stderr)
        self.assertNotIn('adopts', proc.stderr)
        self.assertEqual([], self.project_images())


class TwoNodes(DatabaseTestBase):
    """16 tries of one snapshot at once on 2 nodes x 4 workers."""

    TRIES = 16

    def test_concurrent_tries_make_one_image(self):
        node2 = embedded_glance.EmbeddedGlance(
            shared_with=self.glance, workers=_workers(), identity='token')
        node2.start()
        self.addCleanup(node2.stop)
        confs = [self.conf_file, self.write_conf(node2.endpoint, 'node2')]
        data = self.request()
        outcomes = [None] * self.TRIES

        def one_try(number):
            conf = test_faults.load_conf([confs[number % 2]])
            try:
                result = service_mod.SnapshotService(conf).snapshot(
                    request_mod.SnapshotRequest.from_dict(data))
                outcomes[number] = ('ok', result.image_id)
            except Exception as err:  # judged below, with its text
                outcomes[number] = ('error', repr(err))

        threads = [threading.Thread(target=one_try, args=(n,))
                   for n in range(self.TRIES)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(300)
        images = self.project_images()
        detail = json.dumps({'outcomes': outcomes, 'images': [
            (i['id'], i['status']) for i in images]})
        self.assertEqual(1, len(images), detail)
        self.assertEqual('active', images[0]['status'], detail)
        self.assertEqual([('ok', images[0]['id'])] * self.TRIES, outcomes,
                         detail)


class TwoNodesFaults(test_faults.TestConcurrentTries):
    """The exactly-once rounds on 2 nodes x 4 workers of one database.

    16 concurrent tries of one snapshot, 8 through each glance-api node,
    each node behind its own fault proxy with random faults; judged as
    every round is (one image, every successful try names it, nothing
    good deleted, nothing unnamed left, no traceback, the retry
    converges).
    """

    KIND = None
    ROUNDS = 2
    #: A little above the one-node rounds': every node sees faults.
    FAULT_PROBABILITY = 0.1

    def setUp(self):
        if self.KIND is None:
            self.skipTest('base class')
        chosen = fbase.database_kind()
        if chosen and chosen != self.KIND:
            self.skipTest('this run puts Glance on %s' % chosen)
        reason = embedded_database.missing(self.KIND)
        if reason:
            self.skipTest('Glance on %s: %s' % (self.KIND, reason))
        self.GLANCE_OVERRIDES = dict(
            test_faults.FaultTestBase.GLANCE_OVERRIDES, workers=_workers(),
            database=embedded_database.shared_server(self.KIND))
        super().setUp()
        first = self.glance
        node2 = embedded_glance.EmbeddedGlance(
            shared_with=first, workers=_workers(), identity=first.identity,
            http_store=first.http_store, allowed_hosts=first.allowed_hosts,
            disk_formats=first.disk_formats,
            container_formats=first.container_formats)
        node2.start()
        self.addCleanup(node2.stop)
        self.proxy2 = self.useFixture(faultproxy.FaultProxyFixture(
            node2.endpoint)).proxy
        self.conf_node2 = os.path.join(self.tmp, 'upload-node2.conf')

    def round_nodes(self):
        return [(self.proxy, self.conf_files['upload']),
                (self.proxy2, self.conf_node2)]

    def setUp_confs(self):
        super().setUp_confs()
        self.write_round_conf(self.conf_node2, self.proxy2.endpoint)

    def test_concurrent_tries_random_faults(self):
        results = self.run_rounds(self.ROUNDS, 9500, 'library',
                                  self.one_try)
        # (run_rounds judged every round) and the faults reached both
        # nodes
        by_node = [sum(faults) for faults in zip(
            *(counts['faults_by_node'] for counts in results))]
        self.assertEqual(2, len(by_node))
        self.assertNotIn(0, by_node, json.dumps(results))


class CollationTable(DatabaseTestBase):
    """The preflight's collation table is the server's own."""

    KIND = 'mariadb'

    def test_weights_of_every_bmp_character(self):
        server = self.GLANCE_OVERRIDES['database']
        out = server.sql(
            self.glance.database_name,
            'SELECT seq, HEX(WEIGHT_STRING(CONVERT(CHAR(seq USING ucs2) '
            'USING utf8mb3) COLLATE utf8mb3_general_ci)) FROM '
            'seq_0_to_65535 WHERE seq NOT BETWEEN 55296 AND 57343')
        weights = dict(line.split('\t') for line in out.splitlines())
        self.assertEqual(65536 - 2048, len(weights))
        wrong = [cp for cp, weight in weights.items()
                 if database_rules._WEIGHTS.get(chr(int(cp)), chr(int(cp)))
                 != chr(int(weight, 16))]
        self.assertEqual([], wrong[:20])

    def test_glance_tables_use_utf8mb3_general_ci(self):
        server = self.GLANCE_OVERRIDES['database']
        out = server.sql(
            'information_schema',
            "SELECT COLUMN_NAME, COLLATION_NAME, DATA_TYPE FROM COLUMNS "
            "WHERE TABLE_SCHEMA = '%s' AND TABLE_NAME = 'image_properties' "
            "AND COLUMN_NAME IN ('name', 'value') ORDER BY COLUMN_NAME"
            % self.glance.database_name)
        self.assertEqual(
            [['name', 'utf8mb3_general_ci', 'varchar'],
             ['value', 'utf8mb3_general_ci', 'text']],
            [line.split('\t') for line in out.splitlines()])


class RefusalTableMariaDB(RefusalTable):
    KIND = 'mariadb'


class RefusalTablePostgreSQL(RefusalTable):
    KIND = 'postgresql'


class GlanceFailsOnRecordMariaDB(GlanceFailsOnRecord):
    KIND = 'mariadb'


class TwoNodesMariaDB(TwoNodes):
    KIND = 'mariadb'


class TwoNodesPostgreSQL(TwoNodes):
    KIND = 'postgresql'


class TwoNodesFaultsMariaDB(TwoNodesFaults):
    KIND = 'mariadb'


class TwoNodesFaultsPostgreSQL(TwoNodesFaults):
    KIND = 'postgresql'


def load_tests(loader, standard_tests, pattern):
    """Leave out the abstract bases (they only skip)."""
    suite = unittest.TestSuite()
    for cls in (RefusalTableMariaDB, RefusalTablePostgreSQL,
                TwoNodesMariaDB, TwoNodesPostgreSQL, TwoNodesFaultsMariaDB,
                TwoNodesFaultsPostgreSQL, CollationTable,
                GlanceFailsOnRecordMariaDB):
        suite.addTests(loader.loadTestsFromTestCase(cls))
    return suite
