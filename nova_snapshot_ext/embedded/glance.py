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

"""Run a real, unmodified glance-api in a subprocess for functional tests.

:class:`EmbeddedGlance` writes a small ``glance-api.conf`` and paste ini
into a (temporary) directory, prepares a SQLite database, and serves
``glance.wsgi.api:application`` with gunicorn on a free port of 127.0.0.1
below the ephemeral range (glance 33 is WSGI only), started, awaited and
stopped with :mod:`nova_snapshot_ext.embedded.process`.  There is no
Keystone: identity comes from request headers (``identity='headers'``)
or from a fake token (``identity='token'``, see
:mod:`nova_snapshot_ext.embedded.tokenauth`).

Example::

    with EmbeddedGlance(disk_formats=['qcow2', 'raw']) as glance:
        client = glance.client(project_id, user_id)
        image = client.images.create(name='x', disk_format='raw',
                                     container_format='bare')
"""

import atexit
import copy
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import typing as ty

from oslo_log import log as logging

from nova_snapshot_ext.embedded import database as database_mod
from nova_snapshot_ext.embedded import glance_config
from nova_snapshot_ext.embedded import glance_venv
from nova_snapshot_ext.embedded import logs
from nova_snapshot_ext.embedded import process as proc_mod
from nova_snapshot_ext.embedded import tokenauth

LOG = logging.getLogger(__name__)

#: glance 33's default ``[image_format] disk_formats``.
DEFAULT_DISK_FORMATS = ('ami', 'ari', 'aki', 'vhd', 'vhdx', 'vmdk', 'raw',
                        'qcow2', 'vdi', 'iso', 'ploop')
#: glance 33's default ``[image_format] container_formats``.
DEFAULT_CONTAINER_FORMATS = ('ami', 'ari', 'aki', 'bare', 'ovf', 'ova',
                             'docker', 'compressed')
#: Without Keystone there are no implied roles: send the full set.
DEFAULT_ROLES = ('admin', 'member', 'reader')
IDENTITY_MODES = ('headers', 'token', 'keystone')

#: Named settings for :class:`EmbeddedGlance` (keyword arguments).
PROFILES: dict[str, dict[str, ty.Any]] = {
    'default': {},
    'no-raw': {'disk_formats': ('qcow2', 'vmdk', 'vhd', 'vhdx', 'iso')},
    'vhd-only': {'disk_formats': ('vhd', 'vhdx')},
    'vmdk-only': {'disk_formats': ('vmdk',)},
    'iso-only': {'disk_formats': ('iso',)},
    # Format sets of real deployments (field reports, issue 10).
    'qcow2-only': {'disk_formats': ('qcow2',)},
    'vdi-only': {'disk_formats': ('vdi',)},
    'vhdx-only': {'disk_formats': ('vhdx',)},
    'ploop-only': {'disk_formats': ('ploop',)},
    'vmdk-iso': {'disk_formats': ('vmdk', 'iso')},
    'no-enforcement': {'require_image_format_match': False},
    'http-store': {'http_store': True, 'allowed_hosts': ('127.0.0.1',)},
    'legacy-locations': {'http_store': True,
                         'allowed_hosts': ('127.0.0.1',),
                         'show_multiple_locations': True},
}

START_TIMEOUT = 180.0  # seconds; a loaded 2-core CI box has needed > 60
STOP_TIMEOUT = 10.0
DB_SYNC_TIMEOUT = 120.0
_WSGI_APP = 'nova_snapshot_ext.embedded.glance_wsgi:application'
_WATCH_PID_ENV = 'NOVA_SNAPSHOT_EXT_WATCH_PID'
_CLEANUP_DIR_ENV = 'NOVA_SNAPSHOT_EXT_CLEANUP_DIR'
_DB_NAME = 'glance.sqlite'
_LOG_NAME = 'glance-api.log'
_ACCESS_LOG_NAME = 'glance-access.log'

# Process-wide cache of migrated (db_sync'ed) databases, keyed by the
# python executable that ran db_sync.
_template_lock = threading.Lock()
_template_dir = None
_templates: dict[str, str] = {}


class EmbeddedGlanceError(RuntimeError):
    """The embedded glance-api could not be prepared, started or used."""


def _cleanup_templates():
    """Remove the process-wide DB template directory (atexit handler).

    :returns: None
    """
    global _template_dir
    with _template_lock:
        if _template_dir:
            shutil.rmtree(_template_dir, ignore_errors=True)
        _template_dir = None
        _templates.clear()


def _system_tempdir():
    """The system temporary directory, ignoring test overrides.

    :returns: :func:`nova_snapshot_ext.embedded.database.system_tempdir`.
    """
    return database_mod.system_tempdir()


def _template_path(python):
    """Return where the migrated DB template for ``python`` is cached.

    :param python: the python executable running glance.
    :returns: a path inside the process-wide template directory.
    """
    global _template_dir
    if _template_dir is None:
        _template_dir = tempfile.mkdtemp(prefix='embedded-glance-dbtmpl-',
                                         dir=_system_tempdir())
        atexit.register(_cleanup_templates)
    return os.path.join(_template_dir, 'glance-%d.sqlite' % len(_templates))


def _package_root():
    """Return the directory that contains the ``nova_snapshot_ext`` package.

    :returns: an absolute path suitable for ``PYTHONPATH``.
    """
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.dirname(os.path.dirname(here))


def _check_identity(identity, keystone, keystone_limits):
    """Refuse an identity mode the other arguments do not fit.

    :raises ValueError: naming the argument.
    """
    if identity not in IDENTITY_MODES:
        raise ValueError('identity must be one of %s, not %r' %
                         (', '.join(IDENTITY_MODES), identity))
    if (identity == 'keystone') != (keystone is not None):
        raise ValueError('identity=keystone needs keystone= (and only it '
                         'does)')
    if keystone_limits and keystone is None:
        raise ValueError('keystone_limits needs identity=keystone')


def _shared_database(other):
    """The database server of the Glance ``other`` (``shared_with``).

    :raises ValueError: it runs on SQLite (one process's file).
    """
    if other.database is None:
        raise ValueError('shared_with needs a Glance on a database server '
                         '(SQLite is one process\'s file)')
    return other.database


class EmbeddedGlance(object):
    """A real glance-api served by gunicorn in a subprocess.

    :param base_dir: directory for config, database, store and log; a fresh
        temporary directory (removed by :meth:`stop`) if None.
    :param disk_formats: allowed disk formats; glance's defaults if None.
    :param container_formats: allowed container formats; glance's defaults
        if None.
    :param require_image_format_match: ``[image_format]
        require_image_format_match`` (uploaded data must match disk_format).
    :param http_store: also enable the http store (``web:http``).
    :param rbd_store: ``{'pool': ..., 'ceph_conf': ..., 'user': ...}`` to
        store images in Ceph (``ceph:rbd``, the default backend; the
        ``rbd`` binding must be importable by ``python``), or None.
    :param show_multiple_locations: set the legacy
        ``show_multiple_locations`` option.
    :param allowed_hosts: ``[import_filtering_opts] allowed_hosts``.
    :param allowed_ports: ``[import_filtering_opts] allowed_ports``; empty
        means any port.
    :param identity: ``'headers'`` (trust X-Roles/X-Project-Id/... headers),
        ``'token'`` (fake ``X-Auth-Token user:project:roles``) or
        ``'keystone'`` (keystonemiddleware ``auth_token`` against
        ``keystone``).
    :param keystone: with ``identity='keystone'``, a started
        :class:`~nova_snapshot_ext.embedded.keystone.EmbeddedKeystone`
        (its :meth:`glance_options` are written into the config).
    :param keystone_limits: ``[DEFAULT] use_keystone_limits`` (Glance's
        unified limits, read from ``keystone``).
    :param python: python executable with glance and gunicorn installed;
        ``sys.executable`` if None.  Glance 28 to 33 from the package
        index, each in its own cached virtualenv:
        :func:`nova_snapshot_ext.embedded.glance_venv.ensure`.
    :param access_log: also write gunicorn's access log, one line per HTTP
        request served (gunicorn's default format), to
        :attr:`access_log_file`; used to count requests at the server.
    :param custom_schema: write :data:`.glance_config.STOCK_SCHEMA_IMAGE` as
        ``schema-image.json`` next to ``glance-api.conf``, as distributions
        install it (custom properties with uuid patterns and enums).
    :param database: a private MariaDB or PostgreSQL server
        (:mod:`nova_snapshot_ext.embedded.database`) to keep Glance's
        database on, in a database of its own cloned from a migrated
        template; None for SQLite in the base directory.
    :param workers: gunicorn worker processes (8 threads each).
    :param port: the port on 127.0.0.1 to serve on (None: any free one;
        the cloud in a box picks ports below the ephemeral range).
    :param shared_with: another (started) :class:`EmbeddedGlance` on a
        database server whose database and image store this one shares:
        a second glance-api node of the same deployment.
    :raises ValueError: for an unknown identity mode,
        ``identity='keystone'`` without ``keystone``, fewer than one
        worker, or ``shared_with`` on SQLite.
    """

    def __init__(self, base_dir=None, *, disk_formats=None,
                 container_formats=None, require_image_format_match=True,
                 http_store=False, show_multiple_locations=False,
                 allowed_hosts=('127.0.0.1',), allowed_ports=(),
                 identity='headers', python=None, access_log=False,
                 custom_schema=True, image_size_cap=None, database=None,
                 workers=1, shared_with=None, keystone=None,
                 keystone_limits=False, port=None, rbd_store=None):
        _check_identity(identity, keystone, keystone_limits)
        self.keystone = keystone
        self.keystone_limits = bool(keystone_limits)
        self.disk_formats = tuple(disk_formats if disk_formats is not None
                                  else DEFAULT_DISK_FORMATS)
        self.container_formats = tuple(
            container_formats if container_formats is not None
            else DEFAULT_CONTAINER_FORMATS)
        if not self.disk_formats or not self.container_formats:
            raise ValueError('disk_formats and container_formats must not '
                             'be empty')
        self.require_image_format_match = bool(require_image_format_match)
        if shared_with is not None:
            database = _shared_database(shared_with)
        self.database = database
        self.shared_with = shared_with
        self.workers = int(workers)
        if self.workers < 1:
            raise ValueError('workers must be at least 1, not %r' % workers)
        #: The database name on :attr:`database` (None on SQLite).
        self.database_name = None
        self.http_store = bool(http_store)
        self.rbd_store = dict(rbd_store) if rbd_store else None
        self.show_multiple_locations = bool(show_multiple_locations)
        self.allowed_hosts = tuple(allowed_hosts or ())
        self.allowed_ports = tuple(int(p) for p in (allowed_ports or ()))
        self.identity = identity
        self.python = python or sys.executable
        self.access_log = bool(access_log)
        self.custom_schema = bool(custom_schema)
        #: Glance's ``[DEFAULT] image_size_cap`` (bytes; None: Glance's
        #: default, 1 TiB): a larger upload is refused with 413.
        self.image_size_cap = (None if image_size_cap is None
                               else int(image_size_cap))
        #: Path of the access log while running with ``access_log=True``.
        self.access_log_file = None
        self.profile_name = None
        self._requested_base_dir = base_dir
        self.base_dir = None
        self.port = None
        #: The port asked for (None: any free one).
        self._requested_port = port
        self.log_file = None
        self._owns_base_dir = False
        self._process = None
        self._log_fh = None
        self._lock = threading.RLock()
        self._glance_version = None

    # ------------------------------------------------------------------
    # properties

    @property
    def glance_version(self):
        """The version of the glance package :attr:`python` runs.

        :returns: a version string such as ``'29.2.1'``.
        :raises nova_snapshot_ext.embedded.glance_venv.GlanceVenvError: if
            that interpreter cannot import glance and gunicorn.
        """
        if self._glance_version is None:
            self._glance_version = glance_venv.installed_version(self.python)
        return self._glance_version

    @property
    def endpoint(self):
        """The glance-api URL, e.g. ``http://127.0.0.1:PORT``.

        :returns: the endpoint string.
        :raises EmbeddedGlanceError: if the server is not running.
        """
        if self.port is None:
            raise EmbeddedGlanceError('embedded glance is not started')
        return 'http://127.0.0.1:%d' % self.port

    @property
    def glance_api_conf(self):
        """The path of the ``glance-api.conf`` this server runs with.

        What ``nova-snapshot-ext-status upgrade check --glance-api-conf``
        reads for Glance's default store.

        :returns: an absolute path.
        :raises EmbeddedGlanceError: if no base directory exists yet (the
            server was never started).
        """
        if not self.base_dir:
            raise EmbeddedGlanceError('embedded glance is not started')
        return os.path.join(self.base_dir, glance_config.CONF_NAME)

    @property
    def pid(self):
        """The gunicorn master process id, or None when not running.

        :returns: an int or None.
        """
        return self._process.pid if self._process is not None else None

    @property
    def running(self):
        """Whether the server process is alive.

        :returns: a bool.
        """
        return self._process is not None and self._process.poll() is None

    @property
    def enabled_backends(self):
        """The ``enabled_backends`` value written to the config.

        :returns: a string such as ``fs:file,web:http``.
        """
        backends = ['fs:file']
        if self.rbd_store:
            backends.insert(0, 'ceph:rbd')
        if self.http_store:
            backends.append('web:http')
        return ','.join(backends)

    @property
    def default_backend(self):
        """``[glance_store] default_backend``: ``ceph`` or ``fs``."""
        return 'ceph' if self.rbd_store else 'fs'

    @property
    def profile(self):
        """Describe the settings of this server, e.g. for printing.

        :returns: a dict of plain values.
        """
        return {
            'profile': self.profile_name,
            'endpoint': self.endpoint if self.port is not None else None,
            'base_dir': self.base_dir,
            'log_file': self.log_file,
            'disk_formats': list(self.disk_formats),
            'container_formats': list(self.container_formats),
            'require_image_format_match': self.require_image_format_match,
            'enabled_backends': self.enabled_backends,
            'http_store': self.http_store,
            'rbd_store': self.rbd_store,
            'show_multiple_locations': self.show_multiple_locations,
            'allowed_hosts': list(self.allowed_hosts),
            'allowed_ports': list(self.allowed_ports),
            'identity': self.identity,
            'python': self.python,
            'access_log_file': self.access_log_file,
            'custom_schema': self.custom_schema,
            'database': (self.database.kind if self.database is not None
                         else 'sqlite'),
            'workers': self.workers,
        }

    # ------------------------------------------------------------------
    # lifecycle

    def __enter__(self):
        return self.start()

    def __exit__(self, exc_type, exc_value, tb):
        self.stop()
        return False

    def start(self):
        """Configure and launch glance-api, and wait until it is healthy.

        :returns: self
        :raises EmbeddedGlanceError: if db_sync fails, or the server exits
            early or is not healthy within :data:`START_TIMEOUT` seconds.
            The message includes the tail of :attr:`log_file`.
        """
        with self._lock:
            if self._process is not None:
                return self
            started = time.monotonic()
            self._prepare_base_dir()
            try:
                sock = proc_mod.listening_socket(self._requested_port)
                try:
                    self.port = sock.getsockname()[1]
                    self._write_config()
                    self._prepare_database()
                    self._launch(sock)
                finally:
                    sock.close()
                self._wait_healthy(started + START_TIMEOUT)
            except BaseException:
                self.stop()
                raise
            LOG.info('Embedded glance-api %(endpoint)s (pid %(pid)s) '
                     'started in %(secs).2f s, base dir %(base)s',
                     {'endpoint': self.endpoint, 'pid': self.pid,
                      'secs': time.monotonic() - started,
                      'base': self.base_dir})
            return self

    def stop(self):
        """Stop glance-api and remove the temporary directory it created.

        SIGINT first, SIGKILL (whole process group) if it does not exit
        within :data:`STOP_TIMEOUT` seconds.  Safe to call more than once.

        :returns: None
        """
        with self._lock:
            process, self._process = self._process, None
            if process is not None:
                self._terminate(process)
            if self._log_fh is not None:
                self._log_fh.close()
                self._log_fh = None
            if (self.database is not None and self.database_name and
                    self.shared_with is None):
                try:
                    self.database.drop(self.database_name)
                except Exception as exc:  # noqa: B902 - best effort
                    LOG.warning('Could not drop database %s: %s',
                                self.database_name, exc)
            self.database_name = None
            if self._owns_base_dir and self.base_dir:
                shutil.rmtree(self.base_dir, ignore_errors=True)
                self.base_dir = None
                self.log_file = None
                self.access_log_file = None
                self._owns_base_dir = False
            self.port = None

    def restart(self, down_seconds=0.0):
        """Stop glance-api and start it again on the same port and database.

        The base directory (config, SQLite database, image store, logs) is
        kept, so images created before the restart are still there; only
        the server process is replaced.  Used to hold a request while
        Glance is down (see ``tests/functional/faultproxy.py``).

        :param down_seconds: how long to stay down between stop and start.
        :returns: self
        :raises EmbeddedGlanceError: if the server is not running, the port
            was taken meanwhile, or the new process is not healthy within
            :data:`START_TIMEOUT` seconds.
        """
        with self._lock:
            if self._process is None or self.port is None:
                raise EmbeddedGlanceError('embedded glance is not started')
            process, self._process = self._process, None
            self._terminate(process)
            if down_seconds:
                time.sleep(down_seconds)
            started = time.monotonic()
            try:
                sock = proc_mod.listening_socket(self.port)
            except OSError as exc:
                raise EmbeddedGlanceError(
                    'cannot restart glance-api on port %d: %s' %
                    (self.port, exc))
            try:
                self._launch(sock)
            finally:
                sock.close()
            self._wait_healthy(started + START_TIMEOUT)
            LOG.info('Embedded glance-api %(endpoint)s restarted (pid '
                     '%(pid)s) in %(secs).2f s',
                     {'endpoint': self.endpoint, 'pid': self.pid,
                      'secs': time.monotonic() - started})
            return self

    @staticmethod
    def _terminate(master):
        """Stop a gunicorn master and its workers (SIGINT: at once).

        :param master: the :class:`subprocess.Popen` of the master.
        :returns: None
        """
        if not proc_mod.stop_group(master, STOP_TIMEOUT, signal.SIGINT):
            LOG.warning('glance-api pid %s did not stop on SIGINT; '
                        'killed it', master.pid)

    def _prepare_base_dir(self):
        """Create the base directory and its sub directories.

        :returns: None
        """
        if self.base_dir is None:
            if self._requested_base_dir is None:
                self.base_dir = tempfile.mkdtemp(prefix='embedded-glance-',
                                                 dir=_system_tempdir())
                self._owns_base_dir = True
            else:
                self.base_dir = os.path.abspath(self._requested_base_dir)
                os.makedirs(self.base_dir, exist_ok=True)
        for sub in ('images', 'staging', 'tasks', 'locks'):
            os.makedirs(os.path.join(self.base_dir, sub), exist_ok=True)
        self.log_file = os.path.join(self.base_dir, _LOG_NAME)
        if self.access_log:
            self.access_log_file = os.path.join(self.base_dir,
                                                _ACCESS_LOG_NAME)

    def _write_config(self):
        """Write ``glance-api.conf``, the paste ini and the schema file.

        :returns: None
        """
        glance_config.write(self)

    def _env(self):
        """Build the environment of the glance subprocesses.

        :returns: a dict.
        """
        env = dict(os.environ)
        env['OS_GLANCE_CONFIG_DIR'] = self.base_dir
        env[_WATCH_PID_ENV] = str(os.getpid())
        if self._owns_base_dir:
            env[_CLEANUP_DIR_ENV] = self.base_dir
        else:
            env.pop(_CLEANUP_DIR_ENV, None)
        root = _package_root()
        paths = [p for p in env.get('PYTHONPATH', '').split(os.pathsep) if p]
        if root not in paths:
            env['PYTHONPATH'] = os.pathsep.join([root] + paths)
        env.setdefault('PYTHONUNBUFFERED', '1')
        return env

    def _open_log(self):
        """Open (append) the server log for the subprocesses.

        :returns: the open binary file object.
        """
        if self._log_fh is None:
            self._log_fh = open(self.log_file, 'ab')
        return self._log_fh

    def _connection(self):
        """The ``[database] connection`` URL of this Glance."""
        if self.database is None:
            return 'sqlite:///%s/%s?timeout=30' % (self.base_dir, _DB_NAME)
        if self.database_name is None:
            return ''
        return self.database.url(self.database_name)

    def _prepare_server_database(self):
        """Clone the migrated template into a database of this Glance.

        The first Glance of a release on a server runs db_sync into the
        template; a second node takes the first one's database.

        :returns: None
        :raises EmbeddedGlanceError: if db_sync or the clone fail.
        """
        if self.shared_with is not None:
            self.database_name = self.shared_with.database_name
            self._write_config()
            return
        server = self.database
        try:
            with _template_lock:
                template = server.template(self.python)
                if template is None:
                    template = server.new_name('glance_template')
                    server.create(template)
                    self.database_name = template
                    self._write_config()
                    self._db_sync()
                    server.keep_template(self.python, template)
            self.database_name = server.new_name()
            server.clone(template, self.database_name)
        except database_mod.DatabaseServerError as exc:
            raise EmbeddedGlanceError('cannot prepare a %s database: %s'
                                      % (server.kind, exc))
        self._write_config()

    def _prepare_database(self):
        """Copy the cached migrated DB, or run db_sync and cache the result.

        :returns: None
        :raises EmbeddedGlanceError: if ``glance-manage db_sync`` fails.
        """
        if self.database is not None:
            if self.database_name is None:
                self._prepare_server_database()
            return
        db_path = os.path.join(self.base_dir, _DB_NAME)
        if os.path.exists(db_path):
            # A caller supplied base_dir that already has a database: keep
            # it, but make sure the schema is current.
            self._db_sync()
            return
        with _template_lock:
            template = _templates.get(self.python)
            if template is None or not os.path.exists(template):
                self._db_sync()
                template = _template_path(self.python)
                shutil.copyfile(db_path, template)
                _templates[self.python] = template
                return
        shutil.copyfile(template, db_path)

    def _db_sync(self):
        """Run ``glance-manage db_sync`` against this server's config.

        :returns: None
        :raises EmbeddedGlanceError: if it fails or times out.
        """
        cmd = [self.python, '-m', 'glance.cmd.manage', '--config-file',
               os.path.join(self.base_dir, glance_config.CONF_NAME), 'db_sync']
        started = time.monotonic()
        log = self._open_log()
        log.write(b'--- glance-manage db_sync ---\n')
        log.flush()
        try:
            result = subprocess.run(cmd, cwd=self.base_dir, env=self._env(),
                                    stdin=subprocess.DEVNULL, stdout=log,
                                    stderr=log, timeout=DB_SYNC_TIMEOUT)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise EmbeddedGlanceError(
                'glance-manage db_sync failed (%s); log %s:\n%s' %
                (exc, self.log_file, logs.tail(self.log_file)))
        if result.returncode != 0:
            raise EmbeddedGlanceError(
                'glance-manage db_sync exited with %d; log %s:\n%s' %
                (result.returncode, self.log_file, logs.tail(self.log_file)))
        LOG.debug('db_sync took %.2f s', time.monotonic() - started)

    def _launch(self, sock):
        """Start gunicorn serving glance on the already bound ``sock``.

        :param sock: a listening socket inherited by gunicorn (``fd://``),
            so that no other process can take the port in between.
        :returns: None
        :raises EmbeddedGlanceError: if the process cannot be started.
        """
        fd = sock.fileno()
        cmd = proc_mod.gunicorn_command(
            self.python, _WSGI_APP, 'fd://%d' % fd,
            'embedded-glance-%d' % self.port, self.base_dir,
            workers=self.workers, access_log=self.access_log_file)
        log = self._open_log()
        log.write(b'--- gunicorn glance-api ---\n')
        log.flush()
        try:
            self._process = subprocess.Popen(
                cmd, cwd=self.base_dir, env=self._env(),
                stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                pass_fds=(fd,), start_new_session=True)
        except OSError as exc:
            raise EmbeddedGlanceError('cannot run %s: %s' % (cmd[0], exc))

    def _wait_healthy(self, deadline):
        """Poll ``/healthcheck`` until it answers 200.

        :param deadline: ``time.monotonic()`` value to give up at.
        :returns: None
        :raises EmbeddedGlanceError: if the process exits or the deadline
            passes first.
        """
        url = self.endpoint + '/healthcheck'
        proc_mod.wait_for(lambda: proc_mod.http_ok(url),
                          'glance-api healthy at %s' % url,
                          deadline - time.monotonic(), self._process,
                          'glance-api', self.log_file,
                          error=EmbeddedGlanceError, max_delay=0.25)

    # ------------------------------------------------------------------
    # clients

    def identity_headers(self, project_id, user_id, roles=DEFAULT_ROLES,
                         service_roles=()):
        """Return the request headers that carry an identity.

        :param project_id: the project id.
        :param user_id: the user id.
        :param roles: role names (send the full set, e.g. member+reader).
        :param service_roles: role names of a service token, if any.
        :returns: a dict of headers.
        """
        headers = {
            'X-Identity-Status': 'Confirmed',
            'X-Roles': ','.join(roles),
            'X-Project-Id': project_id,
            'X-User-Id': user_id,
        }
        if service_roles:
            headers['X-Service-Roles'] = ','.join(service_roles)
        return headers

    def token(self, project_id, user_id, roles=DEFAULT_ROLES,
              service_roles=()):
        """Return a fake token accepted in ``identity='token'`` mode.

        :param project_id: the project id.
        :param user_id: the user id.
        :param roles: role names.
        :param service_roles: service role names.
        :returns: the token string ``user:project:roles[:service_roles]``.
        """
        return tokenauth.make_token(user_id, project_id, roles,
                                    service_roles)

    def session(self, project_id, user_id, roles=DEFAULT_ROLES,
                service_roles=()):
        """Return a keystoneauth1 session acting as the given identity.

        In ``headers`` mode the identity goes in X-* headers; in ``token``
        mode it goes in a fake ``X-Auth-Token``.

        :param project_id: the project id.
        :param user_id: the user id.
        :param roles: role names (there are no implied roles).
        :param service_roles: roles of a service token, if any.
        :returns: a :class:`keystoneauth1.session.Session`.
        """
        from keystoneauth1 import noauth
        from keystoneauth1 import session as ks_session
        from keystoneauth1 import token_endpoint
        import requests

        if self.identity == 'token':
            auth = token_endpoint.Token(
                self.endpoint,
                self.token(project_id, user_id, roles, service_roles))
            headers = {}
        else:
            auth = noauth.NoAuth(endpoint=self.endpoint)
            headers = self.identity_headers(project_id, user_id, roles,
                                            service_roles)
        http = requests.Session()
        http.trust_env = False  # never send loopback traffic to a proxy
        return ks_session.Session(auth=auth, session=http,
                                  additional_headers=headers)

    def client(self, project_id, user_id, roles=DEFAULT_ROLES,
               service_roles=()):
        """Return a glanceclient v2 client acting as the given identity.

        :param project_id: the project id.
        :param user_id: the user id.
        :param roles: role names.
        :param service_roles: roles of a service token, if any.
        :returns: a ``glanceclient.v2.client.Client``.
        """
        import glanceclient

        return glanceclient.Client(
            '2', session=self.session(project_id, user_id, roles,
                                      service_roles))


def from_profile(name='default', base_dir=None, **overrides):
    """Build an (unstarted) :class:`EmbeddedGlance` from :data:`PROFILES`.

    :param name: a key of :data:`PROFILES`.
    :param base_dir: passed to :class:`EmbeddedGlance`.
    :param overrides: keyword arguments replacing the profile's.
    :returns: an :class:`EmbeddedGlance`.
    :raises KeyError: for an unknown profile name.
    """
    if name not in PROFILES:
        raise KeyError('unknown embedded glance profile %r (known: %s)' %
                       (name, ', '.join(sorted(PROFILES))))
    kwargs = copy.deepcopy(PROFILES[name])
    kwargs.update(overrides)
    glance = EmbeddedGlance(base_dir, **kwargs)
    glance.profile_name = name
    return glance
