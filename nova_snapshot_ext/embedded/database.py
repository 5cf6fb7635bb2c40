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

"""Private MariaDB and PostgreSQL servers for an embedded Glance.

Production Glance runs on MySQL/MariaDB or PostgreSQL; the embedded
Glance (:mod:`.glance`) runs on SQLite unless it is given one of these
servers (``EmbeddedGlance(database=server)``).  Each server lives in a
temporary directory of its own, started from the Debian packages
(``mariadb-server``, ``postgresql``) without systemd, and is shared by
every Glance of one test process; each Glance gets its own database,
cloned from a template that ran ``glance-manage db_sync`` once per
Glance release (10-20 s saved per Glance).

* :class:`MariaDBServer` -- pifpaf's ``mysql`` driver (the fixture
  oslo.db's tests use): ``mysql_install_db`` + ``mysqld`` on a Unix
  socket in its temporary directory (``--skip-networking``, no grant
  tables); connections go through the socket.  Where the driver cannot
  run in the test process (Nova's tests monkey-patch it with eventlet,
  which removes ``select.poll``), ``pifpaf run mysql -- stestr ...``
  starts it outside and ``PIFPAF_MYSQL_SOCKET`` names it.  Clone:
  ``mariadb-dump`` of the template loaded into a new database
  (``CREATE TABLE ... LIKE`` would drop the foreign keys).
* :class:`PostgreSQLServer` -- our own launcher, because pifpaf's
  ``postgresql`` driver runs ``initdb`` as the calling user (``initdb``
  refuses root, which CI runs as) on a fixed port (9824, shared by
  every concurrent test process).  ``initdb`` and ``postgres`` run as
  the ``postgres`` system user when started by root, listen on a free
  port of 127.0.0.1 and a socket in the temporary directory.  Clone:
  ``CREATE DATABASE ... TEMPLATE``.

:func:`shared_server` gives the process-wide server of a kind, started
on first use and stopped at exit; :func:`missing` says why a kind cannot
run here (tests skip with that reason).
"""

import atexit
import contextlib
import glob
import logging as std_logging
import os
import pwd
import shutil
import subprocess
import tempfile
import threading
import time
import uuid

from oslo_log import log as logging

from nova_snapshot_ext.embedded import process as proc_mod
from nova_snapshot_ext.embedded import watchdog

LOG = logging.getLogger(__name__)

#: Database kinds an embedded Glance can run on besides SQLite.
KINDS = ('mariadb', 'postgresql')
#: Environment: run the functional tests' Glances on this kind.
DATABASE_ENV = 'NOVA_SNAPSHOT_EXT_GLANCE_DB'
#: Environment: gunicorn workers of the functional tests' Glances.
WORKERS_ENV = 'NOVA_SNAPSHOT_EXT_GLANCE_WORKERS'
#: Environment set by ``pifpaf run mysql``: use that server.
PIFPAF_MYSQL_SOCKET_ENV = 'PIFPAF_MYSQL_SOCKET'

_tmp_root_lock = threading.Lock()
_tmp_root = None

_PG_BIN_ROOT = '/usr/lib/postgresql'
_PG_USER = 'postgres'
START_TIMEOUT = 60.0
_COMMAND_TIMEOUT = 120.0


class DatabaseServerError(RuntimeError):
    """A private database server could not be started or used."""


def _pg_bindir():
    """The newest ``/usr/lib/postgresql/N/bin`` with ``initdb``, or None."""
    try:
        versions = sorted((int(v) for v in os.listdir(_PG_BIN_ROOT)
                           if v.isdigit()), reverse=True)
    except OSError:
        return None
    for version in versions:
        path = os.path.join(_PG_BIN_ROOT, str(version), 'bin')
        if os.path.exists(os.path.join(path, 'initdb')):
            return path
    return None


def missing(kind):
    """Why a server of ``kind`` cannot run here, or None if it can.

    :param kind: one of :data:`KINDS`.
    :returns: a reason naming the missing package or module, or None.
    :raises ValueError: for an unknown kind.
    """
    import importlib.util

    if kind == 'mariadb':
        if not (shutil.which('mysqld', path=os.environ.get('PATH', '') +
                             ':/usr/sbin:/usr/libexec') and
                shutil.which('mysql_install_db') and
                shutil.which('mariadb-dump')):
            return ('MariaDB is not installed (apt-get install '
                    'mariadb-server)')
        for module, package in (('pymysql', 'PyMySQL'),
                                ('pifpaf', 'pifpaf')):
            if module == 'pifpaf' and os.environ.get(
                    PIFPAF_MYSQL_SOCKET_ENV):
                continue
            if importlib.util.find_spec(module) is None:
                return ('%s is not installed: install this package with '
                        "its 'mysql' extra (pip install "
                        "'nova-snapshot-ext[mysql]', or pip install "
                        '%s)' % (module, package))
        return None
    if kind == 'postgresql':
        if _pg_bindir() is None:
            return ('PostgreSQL is not installed (apt-get install '
                    'postgresql)')
        if os.geteuid() == 0:
            try:
                pwd.getpwnam(_PG_USER)
            except KeyError:
                return 'there is no %s system user to run initdb' % _PG_USER
        if importlib.util.find_spec('psycopg2') is None:
            return ("psycopg2 is not installed: install this package with "
                    "its 'postgresql' extra (pip install "
                    "'nova-snapshot-ext[postgresql]', or pip "
                    'install psycopg2-binary)')
        return None
    raise ValueError('database kind must be one of %s, not %r'
                     % (', '.join(KINDS), kind))


def system_tempdir():
    """Return the system temporary directory, ignoring test overrides.

    Test frameworks (e.g. ``fixtures.NestedTempfile`` used by oslotest)
    point ``tempfile.tempdir`` at a per-test directory that is deleted when
    the test ends; a server shared between tests, and the DB template, must
    not live there.  ``TMPDIR``/``TEMP``/``TMP`` are still honoured.

    :returns: an absolute directory path.
    """
    global _tmp_root
    with _tmp_root_lock:
        if _tmp_root is None:
            saved = tempfile.tempdir
            try:
                tempfile.tempdir = None
                _tmp_root = tempfile.gettempdir()
            finally:
                tempfile.tempdir = saved
        return _tmp_root


def _run(cmd, what, **kwargs):
    """Run a command; raise :class:`DatabaseServerError` naming ``what``."""
    try:
        result = subprocess.run(cmd, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT,
                                timeout=_COMMAND_TIMEOUT, **kwargs)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise DatabaseServerError('%s failed: %s' % (what, exc))
    if result.returncode:
        raise DatabaseServerError('%s exited with %d: %s' % (
            what, result.returncode,
            result.stdout.decode('utf-8', 'replace')[-2000:]))
    return result.stdout


def _start_watchdog(directory):
    """Stop the server in ``directory`` if this process dies first.

    A test runner killed mid-run (timeout, Ctrl-C twice) runs no atexit
    handler; the server (its pid file) and its data directory would stay
    behind (:func:`nova_snapshot_ext.embedded.watchdog.start`).

    :returns: the watchdog's :class:`subprocess.Popen`.
    """
    return watchdog.start(directory)


class _Server(object):
    """The part both servers share: templates per Glance release."""

    kind = ''

    def __init__(self):
        self._lock = threading.Lock()
        self._templates = {}
        self._counter = 0
        self._watchdog = None

    def _stop_watchdog(self):
        watchdog, self._watchdog = self._watchdog, None
        if watchdog is not None:
            watchdog.kill()
            watchdog.wait()

    def new_name(self, prefix='glance'):
        """A database name not used yet on this server.

        :returns: e.g. ``glance_3_1a2b3c4d``.
        """
        with self._lock:
            self._counter += 1
            return '%s_%d_%s' % (prefix, self._counter, uuid.uuid4().hex[:8])

    def template(self, key):
        """The migrated template database for ``key`` (a python), or None.

        :returns: a database name or None.
        """
        return self._templates.get(key)

    def keep_template(self, key, name):
        """Remember ``name`` as the migrated template for ``key``."""
        self._templates[key] = name

    # The subclasses implement: start(), stop(), url(name),
    # create(name), clone(template, name), drop(name), sql(name, text).


class MariaDBServer(_Server):
    """A private MariaDB server (pifpaf's ``mysql`` driver) on a socket."""

    kind = 'mariadb'

    def __init__(self):
        super().__init__()
        self._driver = None
        self.socket = None

    def start(self):
        """Start the server.

        :returns: self
        :raises DatabaseServerError: if pifpaf cannot start it.
        """
        external = os.environ.get(PIFPAF_MYSQL_SOCKET_ENV)
        if external:
            # Started outside this process (``pifpaf run mysql -- ...``):
            # pifpaf's driver cannot run under eventlet (Nova's tests
            # monkey-patch ``select``, psutil needs ``select.poll``).
            self.socket = external
            self.sql('', 'SET GLOBAL max_connections = 1000')
            return self
        from pifpaf.drivers import mysql

        # Not in tempfile's current directory: a test's NestedTempfile
        # removes that when the test ends, and the server outlives it.
        driver = mysql.MySQLDriver(tmp_rootdir=system_tempdir())
        try:
            driver.setUp()
        except Exception as exc:
            raise DatabaseServerError('MariaDB (pifpaf mysql) did not '
                                      'start: %s' % exc)
        self._driver = driver
        self.socket = driver.socket
        self._watchdog = _start_watchdog(driver.tempdir)
        # Several Glances of 4 workers each (oslo.db pools of up to 55
        # connections per worker): more than the default 151.
        self.sql('', 'SET GLOBAL max_connections = 1000')
        return self

    @property
    def pid(self):
        """The mysqld process id, from its pid file.

        None if not started here (an external ``pifpaf run`` server) or
        not running.
        """
        if self._driver is None:
            return None
        return self._pid_of(self._driver)

    def stop(self):
        """Stop the server and remove its directory (idempotent).

        The server is shut down cleanly first (``SHUTDOWN``, waited for):
        pifpaf's own stop sends SIGTERM, waits 10 s and then SIGKILLs the
        process group, logging that as a warning, while mysqld may still
        be flushing.  pifpaf's log lines are kept off the terminal.
        """
        driver, self._driver = self._driver, None
        if driver is not None:
            pid = self._pid_of(driver)
            with contextlib.suppress(Exception):
                self.sql('', 'SHUTDOWN')
            _wait_gone(pid, SHUTDOWN_TIMEOUT)
            pifpaf_log = std_logging.getLogger('pifpaf')
            level = pifpaf_log.level
            pifpaf_log.setLevel(std_logging.ERROR)
            try:
                driver.cleanUp()
            finally:
                pifpaf_log.setLevel(level)
        self._stop_watchdog()

    @staticmethod
    def _pid_of(driver):
        """The mysqld process id in pifpaf ``driver``'s pid file, or None."""
        for path in glob.glob(os.path.join(driver.tempdir, '**', '*.pid'),
                              recursive=True):
            try:
                with open(path, encoding='ascii') as f:
                    return int(f.readline().strip())
            except (OSError, ValueError):
                continue
        return None

    def url(self, name):
        """The SQLAlchemy URL Glance connects to database ``name`` with.

        :returns: a ``mysql+pymysql://`` URL over the server's socket.
        """
        return ('mysql+pymysql://root@localhost/%s?unix_socket=%s'
                '&charset=utf8' % (name, self.socket))

    def _client(self, *args):
        return ['mysql', '--no-defaults', '-S', self.socket] + list(args)

    def sql(self, name, text):
        """Run SQL in database ``name`` with the ``mysql`` client.

        :returns: the output (tab separated, no column names) as text.
        """
        return _run(self._client('-N', '-B', name or '', '-e', text),
                    'mysql').decode('utf-8', 'replace')

    def create(self, name):
        """Create an empty database (server defaults, as an operator)."""
        self.sql('', 'CREATE DATABASE `%s`' % name)

    def clone(self, template, name):
        """Create database ``name`` as a copy of ``template``."""
        self.create(name)
        dump = _run(['mariadb-dump', '--no-defaults', '-S', self.socket,
                     '--single-transaction', '--routines', template],
                    'mariadb-dump')
        _run(self._client(name), 'mysql (load %s)' % name, input=dump)

    def drop(self, name):
        """Drop database ``name``."""
        self.sql('', 'DROP DATABASE IF EXISTS `%s`' % name)


class PostgreSQLServer(_Server):
    """A private PostgreSQL cluster on 127.0.0.1 (own launcher)."""

    kind = 'postgresql'

    def __init__(self):
        super().__init__()
        self.base_dir = None
        self.port = None
        self._process = None
        self._bindir = _pg_bindir()

    def _as_pg_user(self):
        """Keyword arguments that run a command as the postgres user."""
        if os.geteuid() != 0:
            return {}
        entry = pwd.getpwnam(_PG_USER)

        def demote():
            os.setgid(entry.pw_gid)
            os.setgroups([])
            os.setuid(entry.pw_uid)
        return {'preexec_fn': demote}

    def start(self):
        """``initdb`` a cluster in a temporary directory and start it.

        :returns: self
        :raises DatabaseServerError: if initdb or postgres fail.
        """
        if self._bindir is None:
            raise DatabaseServerError(missing('postgresql'))
        self.base_dir = tempfile.mkdtemp(prefix='embedded-glance-pg-',
                                         dir=system_tempdir())
        if os.geteuid() == 0:
            entry = pwd.getpwnam(_PG_USER)
            os.chown(self.base_dir, entry.pw_uid, entry.pw_gid)
        data = os.path.join(self.base_dir, 'data')
        _run([os.path.join(self._bindir, 'initdb'), '-D', data,
              '-U', 'postgres', '--auth=trust', '-E', 'UTF8',
              '--locale=C.UTF-8', '--no-sync'], 'initdb',
             cwd=self.base_dir, **self._as_pg_user())
        # The one port rule (postgres binds the port itself).
        self.port = proc_mod.free_ports(1)[0]
        self._watchdog = _start_watchdog(self.base_dir)
        log = open(os.path.join(self.base_dir, 'postgres.log'), 'ab')
        try:
            self._process = subprocess.Popen(
                [os.path.join(self._bindir, 'postgres'), '-D', data,
                 '-p', str(self.port), '-k', self.base_dir,
                 '-c', 'listen_addresses=127.0.0.1', '-c', 'fsync=off',
                 '-c', 'max_connections=500'],
                cwd=self.base_dir, stdin=subprocess.DEVNULL, stdout=log,
                stderr=log, start_new_session=True, **self._as_pg_user())
        finally:
            log.close()
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            if self._process.poll() is not None:
                self.stop()
                raise DatabaseServerError('postgres exited early; see its '
                                          'log')
            try:
                self.sql('postgres', 'SELECT 1')
                return self
            except DatabaseServerError:
                if time.monotonic() > deadline:
                    self.stop()
                    raise
                time.sleep(0.2)

    @property
    def pid(self):
        """The postmaster's process id (its backends are its children).

        None when not running.
        """
        process = self._process
        if process is None or process.poll() is not None:
            return None
        return process.pid

    def stop(self):
        """Stop the cluster (fast shutdown) and remove its directory."""
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        if self.base_dir:
            shutil.rmtree(self.base_dir, ignore_errors=True)
            self.base_dir = None
        self._stop_watchdog()

    def url(self, name):
        """The SQLAlchemy URL Glance connects to database ``name`` with.

        :returns: a ``postgresql+psycopg2://`` URL on 127.0.0.1.
        """
        return 'postgresql+psycopg2://postgres@127.0.0.1:%d/%s' % (
            self.port, name)

    def sql(self, name, text):
        """Run SQL in database ``name`` with ``psql``.

        :returns: the output (unaligned, tuples only) as text.
        """
        return _run([os.path.join(self._bindir, 'psql'), '-h', '127.0.0.1',
                     '-p', str(self.port), '-U', 'postgres', '-X', '-q',
                     '-A', '-t', '-v', 'ON_ERROR_STOP=1', '-d', name,
                     '-c', text], 'psql').decode('utf-8', 'replace')

    def create(self, name):
        """Create an empty database."""
        self.sql('postgres', 'CREATE DATABASE "%s"' % name)

    def clone(self, template, name):
        """Create database ``name`` from ``template`` (``TEMPLATE``)."""
        self.sql('postgres', 'CREATE DATABASE "%s" TEMPLATE "%s"'
                 % (name, template))

    def drop(self, name):
        """Drop database ``name`` (its connections closed first)."""
        self.sql('postgres', 'DROP DATABASE IF EXISTS "%s" WITH (FORCE)'
                 % name)


_CLASSES = {'mariadb': MariaDBServer, 'postgresql': PostgreSQLServer}
_shared_lock = threading.Lock()
_shared: dict[str, _Server] = {}


#: Seconds a database server gets to shut down cleanly.
SHUTDOWN_TIMEOUT = 60


def _wait_gone(pid, timeout):
    """Wait until process ``pid`` has exited (or ``timeout`` passed)."""
    if not pid:
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except OSError:
            return
        # An exited child of this process stays a zombie until its
        # launcher (pifpaf) reaps it: it has stopped.
        with contextlib.suppress(OSError, IndexError):
            with open('/proc/%d/stat' % pid, encoding='ascii') as f:
                if f.read().rsplit(')', 1)[1].split()[0] == 'Z':
                    return
        time.sleep(0.2)


def stop_shared():
    """Stop every shared server now (as at exit); safe to call again."""
    _stop_shared()


def _stop_shared():
    with _shared_lock:
        servers = list(_shared.values())
        _shared.clear()
    for server in servers:
        try:
            server.stop()
        except Exception:  # noqa: B902 - best effort at exit
            LOG.exception('Could not stop the %s server', server.kind)


def shared_server(kind):
    """The process-wide server of ``kind``, started on first use.

    :param kind: one of :data:`KINDS`.
    :returns: a started :class:`MariaDBServer` or
        :class:`PostgreSQLServer` (stopped at exit).
    :raises DatabaseServerError: if it cannot run here (see
        :func:`missing`) or does not start.
    """
    reason = missing(kind)
    if reason:
        raise DatabaseServerError(reason)
    with _shared_lock:
        server = _shared.get(kind)
        if server is None:
            if not _shared:
                atexit.register(_stop_shared)
            server = _CLASSES[kind]().start()
            _shared[kind] = server
        return server
