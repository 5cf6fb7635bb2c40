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

"""Base classes for functional tests that run against a real glance-api.

:class:`GlanceFixture` hands out an
:class:`~nova_snapshot_ext.embedded.glance.EmbeddedGlance` per profile and
settings.  Starting glance takes a couple of seconds, so one server per
(profile, overrides) is shared by all tests of a test process and stopped
when the process exits.  Tests isolate themselves by using fresh, random
project and user ids (:meth:`FunctionalTestCase.new_project`).

By default glance-api runs from the glance installed with the tests.  With
``NOVA_SNAPSHOT_EXT_GLANCE=NN`` (the ``glanceNN`` tox envs) every server
runs Glance NN from the package index instead, from its cached virtualenv
(:mod:`nova_snapshot_ext.embedded.glance_venv`, installed on first use).
"""

import atexit
import importlib.util
import os
import threading
import uuid

import fixtures
from oslo_log import log as logging
import testtools
from testtools import content

from nova_snapshot_ext.embedded import database as embedded_database
from nova_snapshot_ext.embedded import glance as embedded_glance
from nova_snapshot_ext.embedded import glance_venv

try:
    from oslotest import base as _oslotest_base
    _BaseTestCase = _oslotest_base.BaseTestCase
except ImportError:  # pragma: no cover - oslotest is a test requirement
    _BaseTestCase = testtools.TestCase

LOG = logging.getLogger(__name__)

ADMIN_ROLES = ('admin', 'member', 'reader')
MEMBER_ROLES = ('member', 'reader')
READER_ROLES = ('reader',)

#: The Glance major every server of the test run uses (unset: the glance
#: installed with the tests).
GLANCE_MAJOR_ENV = 'NOVA_SNAPSHOT_EXT_GLANCE'


def glance_major():
    """The Glance major chosen with ``NOVA_SNAPSHOT_EXT_GLANCE``.

    :returns: an int, or None when the installed glance is used.
    :raises nova_snapshot_ext.embedded.glance_venv.GlanceVenvError: for a
        major not in :data:`~nova_snapshot_ext.embedded.glance_venv.RELEASES`.
    """
    value = os.environ.get(GLANCE_MAJOR_ENV)
    if not value:
        return None
    return glance_venv.release(value).major


def _missing_requirements():
    """Name the modules needed to run glance that cannot be imported.

    :returns: a list of module names (empty when all are present).
    """
    names = ('glanceclient',) if os.environ.get(GLANCE_MAJOR_ENV) else (
        'glance', 'gunicorn', 'glanceclient')
    return [name for name in names
            if importlib.util.find_spec(name) is None]


MISSING_REQUIREMENTS = _missing_requirements()
SKIP_REASON = (
    'a real glance-api is needed for functional tests but %s cannot be '
    'imported (pip install glance gunicorn python-glanceclient)' %
    ', '.join(MISSING_REQUIREMENTS)) if MISSING_REQUIREMENTS else None

#: What a Glance release without a behaviour lacks (skip reasons).
_WITHOUT = {
    'inspects_uploads': 'does not inspect uploads (no 415 on a format '
                        'mismatch before Glance 30, 2025.1)',
    'location_api': 'has no location API v2.17 (POST /v2/images/{id}/'
                    'locations arrived in Glance 29, 2024.2)',
}

_servers_lock = threading.Lock()
_servers = {}
_atexit_registered = False


def _cache_key(profile, overrides):
    """Build a hashable key for a profile and its overrides.

    :param profile: the profile name.
    :param overrides: a dict of keyword overrides.
    :returns: a tuple usable as a dict key.
    """
    items = []
    for key, value in sorted(overrides.items()):
        if isinstance(value, (list, tuple, set, frozenset)):
            value = tuple(value)
        items.append((key, value))
    return (profile, tuple(items))


def stop_all_servers():
    """Stop every shared glance-api started by :class:`GlanceFixture`.

    :returns: None
    """
    with _servers_lock:
        servers = list(_servers.values())
        _servers.clear()
    for server in servers:
        try:
            server.stop()
        except Exception:
            LOG.exception('Could not stop embedded glance %s',
                          server.profile)


def get_shared_glance(profile='default', **overrides):
    """Return a running, shared glance-api for a profile and overrides.

    :param profile: a key of
        :data:`nova_snapshot_ext.embedded.glance.PROFILES`.
    :param overrides: keyword arguments for ``EmbeddedGlance``.
    :returns: a started
        :class:`~nova_snapshot_ext.embedded.glance.EmbeddedGlance`.
    :raises nova_snapshot_ext.embedded.glance.EmbeddedGlanceError: if it
        cannot be started.
    """
    global _atexit_registered
    overrides = database_overrides(overrides)
    major = glance_major()
    if major is not None and 'python' not in overrides:
        overrides = dict(overrides, python=glance_venv.ensure(major))
    key = _cache_key(profile, overrides)
    with _servers_lock:
        if not _atexit_registered:
            atexit.register(stop_all_servers)
            _atexit_registered = True
        server = _servers.get(key)
        if server is not None and not server.running:
            LOG.warning('Shared embedded glance %s died; restarting it. '
                        'Log tail:\n%s', key,
                        embedded_glance._tail(server.log_file or ''))
            server.stop()
            server = None
        if server is None:
            server = embedded_glance.from_profile(profile, **overrides)
            server.start()
            _servers[key] = server
        return server


def database_kind():
    """The database ``NOVA_SNAPSHOT_EXT_GLANCE_DB`` puts Glance on.

    :returns: ``'mariadb'``, ``'postgresql'``, or None for SQLite.
    """
    return os.environ.get(embedded_database.DATABASE_ENV) or None


def database_overrides(overrides):
    """Put a Glance on the environment's database and workers.

    ``NOVA_SNAPSHOT_EXT_GLANCE_DB`` (``mariadb``, ``postgresql``) and
    ``NOVA_SNAPSHOT_EXT_GLANCE_WORKERS`` (gunicorn workers) apply to every
    Glance a test does not configure itself (tox -e functional-mariadb).

    :param overrides: the test's ``EmbeddedGlance`` keyword arguments.
    :returns: them, with ``database`` and ``workers`` filled in.
    :raises DatabaseServerError: if the server cannot run here.
    """
    overrides = dict(overrides)
    kind = database_kind()
    if kind and 'database' not in overrides:
        overrides['database'] = embedded_database.shared_server(kind)
    workers = os.environ.get(embedded_database.WORKERS_ENV)
    if workers and 'workers' not in overrides:
        overrides['workers'] = int(workers)
    return overrides


class GlanceFixture(fixtures.Fixture):
    """Provide a running embedded glance-api, shared per test process.

    :param profile: a key of
        :data:`nova_snapshot_ext.embedded.glance.PROFILES`.
    :param overrides: keyword arguments for ``EmbeddedGlance`` that replace
        the profile's.
    """

    def __init__(self, profile='default', **overrides):
        super(GlanceFixture, self).__init__()
        self.profile = profile
        self.overrides = overrides
        self.glance = None

    def _setUp(self):
        self.glance = get_shared_glance(self.profile, **self.overrides)
        self.addDetail('glance-endpoint',
                       content.text_content(self.glance.endpoint))

    def attach_errors_on_failure(self, test):
        """When ``test`` fails, attach glance-api's ERROR lines since now.

        The shared Glance's log lives in its temp dir, gone after the run:
        a failure that was Glance's own (a 500) says why, as a detail
        ``errors in glance-api.log`` (the last :data:`ERROR_LINES`).
        """
        path = getattr(self.glance, 'log_file', None)
        if not path:
            return
        try:
            start = os.path.getsize(path)
        except OSError:
            return

        def attach(exc_info):
            try:
                with open(path, 'rb') as fh:
                    fh.seek(start)
                    lines = [line.decode('utf-8', 'replace')
                             for line in fh if b' ERROR ' in line or
                             b' CRITICAL ' in line]
            except OSError:
                return
            if lines:
                test.addDetail('errors in glance-api.log',
                               content.text_content(
                                   ''.join(lines[-ERROR_LINES:])))

        test.addOnException(attach)


#: ERROR lines of Glance's log attached to a failed test (the last ones).
ERROR_LINES = 20


class FunctionalTestCase(_BaseTestCase):
    """Base class for tests against a real, embedded glance-api.

    Subclasses choose the server with ``GLANCE_PROFILE`` and
    ``GLANCE_OVERRIDES``.  Each test gets a fresh project and user
    (``self.project_id``, ``self.user_id``) and ``self.glance``.
    """

    GLANCE_PROFILE = 'default'
    GLANCE_OVERRIDES = {}

    def setUp(self):
        super(FunctionalTestCase, self).setUp()
        if SKIP_REASON:
            self.skipTest(SKIP_REASON)
        kind = database_kind()
        if kind and embedded_database.missing(kind):
            self.skipTest('Glance on %s: %s' % (
                kind, embedded_database.missing(kind)))
        fixture = self.useFixture(
            GlanceFixture(self.GLANCE_PROFILE, **self.GLANCE_OVERRIDES))
        fixture.attach_errors_on_failure(self)
        self.glance = fixture.glance
        #: What this Glance release does, from
        #: :data:`~nova_snapshot_ext.embedded.glance_venv.RELEASES`.
        self.glance_release = glance_venv.release_of_version(
            self.glance.glance_version)
        self.project_id = self.new_project()
        self.user_id = self.new_user()

    def write_cli_config(self, name, driver, roles=MEMBER_ROLES):
        """Write a CLI config for this test's identity (token identity).

        :param name: file name in a fresh temp dir (``self.tmp``).
        :param driver: ``[snapshot_ext] driver``.
        :param roles: the token's roles.
        :returns: the config file's path.
        """
        from nova_snapshot_ext.embedded import demo

        if not hasattr(self, 'tmp'):
            self.tmp = self.useFixture(fixtures.TempDir()).path
        path = os.path.join(self.tmp, name)
        token = self.glance.token(self.project_id, self.user_id,
                                  roles=roles)
        demo.write_config(path, self.glance.endpoint, token, driver)
        return path

    def skipUnlessGlanceHas(self, behaviour):
        """Skip the test on a Glance release without a behaviour.

        :param behaviour: a boolean attribute of
            :class:`~nova_snapshot_ext.embedded.glance_venv.GlanceRelease`
            (``'inspects_uploads'`` or ``'location_api'``).
        :returns: None
        """
        rel = self.glance_release
        if rel is not None and not getattr(rel, behaviour):
            self.skipTest('%s %s; tests/functional/test_glance_releases.py '
                          'asserts what it does instead' % (
                              rel.label, _WITHOUT[behaviour]))

    @staticmethod
    def new_project():
        """Return a random project id (32 hex digits).

        :returns: a string.
        """
        return uuid.uuid4().hex

    @staticmethod
    def new_user():
        """Return a random user id (32 hex digits).

        :returns: a string.
        """
        return uuid.uuid4().hex

    def client_for(self, project_id=None, user_id=None, roles=ADMIN_ROLES,
                   service_roles=()):
        """Return a glanceclient v2 client for an identity.

        :param project_id: the project id; this test's project if None.
        :param user_id: the user id; this test's user if None.
        :param roles: role names; there are no implied roles, so pass the
            full set (e.g. :data:`MEMBER_ROLES`).
        :param service_roles: roles of a service token, if any.
        :returns: a ``glanceclient.v2.client.Client``.
        """
        return self.glance.client(project_id or self.project_id,
                                  user_id or self.user_id,
                                  roles=roles, service_roles=service_roles)

    def admin_client(self):
        """Return an admin client (it can see the images of all projects).

        :returns: a ``glanceclient.v2.client.Client``.
        """
        return self.client_for(roles=ADMIN_ROLES)

    def list_all_images(self, client=None, filters=None):
        """List images including hidden ones.

        :param client: the client to list with; an admin client if None.
        :param filters: extra glance list filters.
        :returns: a list of image objects (visible and ``os_hidden``).
        """
        client = client or self.admin_client()
        images = {}
        for hidden in (False, True):
            query = dict(filters or {})
            query['os_hidden'] = hidden
            for image in client.images.list(filters=query):
                images[image['id']] = image
        return list(images.values())

    def assertNoImagesLeft(self, client=None, name_or_filter=None,
                           only_non_active=None):
        """Assert that no (unfinished) images are left behind.

        Images are listed with ``client`` (pass an admin client to see
        every project; an admin client is used if None), hidden images
        included.

        :param client: the glanceclient to list with.
        :param name_or_filter: an image name, a dict of glance list filters
            (e.g. ``{'owner': project_id}``), or None for all images.
        :param only_non_active: count only images whose status is not
            ``active``.  Defaults to True when ``name_or_filter`` is None
            and False otherwise, i.e. "no image by that name at all" but
            "no stuck image anywhere".
        :returns: None
        :raises AssertionError: if matching images are found.
        """
        if isinstance(name_or_filter, str):
            filters = {'name': name_or_filter}
        else:
            filters = dict(name_or_filter or {})
        if only_non_active is None:
            only_non_active = not filters
        left = [image for image in self.list_all_images(client, filters)
                if not (only_non_active and image['status'] == 'active')]
        if left:
            summary = ', '.join(
                '%s (name=%s status=%s owner=%s)' % (
                    image['id'], image.get('name'), image['status'],
                    image.get('owner'))
                for image in left)
            self.fail('%d image(s) left matching %r%s: %s' % (
                len(left), name_or_filter,
                ' in a non-active status' if only_non_active else '',
                summary))
