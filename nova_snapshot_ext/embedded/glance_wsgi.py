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

"""WSGI entry point used to serve an embedded glance-api with gunicorn.

The module is imported by gunicorn inside the glance-api subprocess started
by :class:`nova_snapshot_ext.embedded.glance.EmbeddedGlance`.  It does three
things before handing over to glance's own WSGI application:

* it makes every SQLite transaction start with ``BEGIN IMMEDIATE`` instead
  of the deferred ``BEGIN`` emitted by oslo.db, so that concurrent writers
  queue on SQLite's busy timeout instead of failing at once with
  "database is locked";
* it optionally watches the process that launched the server and asks the
  gunicorn master to stop when that process disappears, so a crashed test
  run does not leave a stray glance-api behind;
* it builds glance's application lazily (on first access of
  ``application``), so importing this module has no side effects beyond
  installing the SQLAlchemy hook.
"""

import os
import shutil
import signal
import threading
import time

from oslo_log import log as logging
import sqlalchemy
from sqlalchemy import event

LOG = logging.getLogger(__name__)

#: Environment variable holding the pid of the process to watch.
WATCH_PID_ENV = 'NOVA_SNAPSHOT_EXT_WATCH_PID'
#: Environment variable naming a temporary directory to remove when the
#: watched process has gone (set only for directories the launcher created).
CLEANUP_DIR_ENV = 'NOVA_SNAPSHOT_EXT_CLEANUP_DIR'

_WATCH_INTERVAL = 1.0
_hook_lock = threading.Lock()
#: Per thread: the sqlite3 connections this thread began a transaction on.
_thread_state = threading.local()
_hook_installed = False
_app_lock = threading.Lock()
_app = None


def _in_transaction(dbapi_conn):
    """Whether a sqlite3 connection has a transaction open.

    :param dbapi_conn: a :class:`sqlite3.Connection`.
    :returns: a bool (False for a closed connection).
    """
    try:
        return bool(dbapi_conn.in_transaction)
    except Exception:
        return False


def _begin_immediate(conn, cursor, statement, parameters, context,
                     executemany):
    """Rewrite a deferred SQLite ``BEGIN`` into ``BEGIN IMMEDIATE``.

    Except when this thread already has a transaction open on another
    connection: Glance 28 (seen; oslo.db's legacy ``EngineFacade``) reads
    image members in a second session while the first one is open; as ``BEGIN
    IMMEDIATE`` that read would wait for the write lock its own thread
    holds until the busy timeout, then fail ("database is locked", HTTP
    500).  Such a nested transaction stays deferred (a read shares the
    lock), as in an unmodified Glance.

    :param conn: the SQLAlchemy connection executing the statement.
    :param cursor: the DB-API cursor.
    :param statement: the SQL text about to be executed.
    :param parameters: the bound parameters.
    :param context: the SQLAlchemy execution context.
    :param executemany: whether ``executemany`` is being used.
    :returns: the (possibly rewritten) ``(statement, parameters)`` tuple.
    """
    if (conn.dialect.name == 'sqlite' and
            statement.strip().upper() == 'BEGIN'):
        mine = cursor.connection
        begun = [c for c in getattr(_thread_state, 'begun', ())
                 if c is not mine and _in_transaction(c)]
        if not begun:
            statement = 'BEGIN IMMEDIATE'
        begun.append(mine)
        _thread_state.begun = begun
    return statement, parameters


def install_sqlite_hook():
    """Install the ``BEGIN IMMEDIATE`` hook on every SQLAlchemy engine.

    The listener is attached to the :class:`sqlalchemy.engine.Engine`
    class, so it applies to engines created later by oslo.db as well.
    Calling this more than once is harmless.

    :returns: None
    """
    global _hook_installed
    with _hook_lock:
        if _hook_installed:
            return
        event.listen(sqlalchemy.engine.Engine, 'before_cursor_execute',
                     _begin_immediate, retval=True)
        _hook_installed = True


def _pid_alive(pid):
    """Tell whether a process id still exists.

    :param pid: the process id to check.
    :returns: True if a process with that id exists.
    """
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _watch_parent(pid, cleanup_dir=None):
    """Stop the gunicorn master once the process ``pid`` has gone.

    :param pid: the process id of the launcher to watch.
    :param cleanup_dir: a directory to remove first (the launcher's
        temporary base directory), or None.
    :returns: None
    """
    while _pid_alive(pid):
        time.sleep(_WATCH_INTERVAL)
    LOG.warning('Launcher process %(pid)s has gone; stopping glance-api '
                '(gunicorn master %(master)s).',
                {'pid': pid, 'master': os.getppid()})
    if cleanup_dir:
        shutil.rmtree(cleanup_dir, ignore_errors=True)
    try:
        os.kill(os.getppid(), signal.SIGINT)
    except OSError:
        os.kill(os.getpid(), signal.SIGTERM)


def _start_watchdog():
    """Start the launcher watchdog thread if ``WATCH_PID_ENV`` is set.

    :returns: None
    """
    value = os.environ.get(WATCH_PID_ENV)
    if not value:
        return
    try:
        pid = int(value)
    except ValueError:
        LOG.warning('Ignoring invalid %(env)s=%(value)s',
                    {'env': WATCH_PID_ENV, 'value': value})
        return
    cleanup_dir = os.environ.get(CLEANUP_DIR_ENV) or None
    thread = threading.Thread(target=_watch_parent,
                              args=(pid, cleanup_dir),
                              name='embedded-glance-watchdog', daemon=True)
    thread.start()


def _glance_application():
    """Build glance's WSGI application the way the installed release does.

    Glance 30 and later ship ``glance.wsgi.api`` (its module attribute
    ``application``); Glance 29 and older ship only the function behind
    their ``glance-wsgi-api`` script, ``glance.common.wsgi_app.init_app``.
    Either reads the config named by ``OS_GLANCE_CONFIG_DIR`` and builds
    the paste pipeline.

    :returns: the glance-api WSGI callable.
    """
    try:
        from glance.wsgi import api as glance_wsgi_api
    except ModuleNotFoundError as exc:
        if exc.name not in ('glance.wsgi', 'glance.wsgi.api'):
            raise
        from glance.common import wsgi_app
        return wsgi_app.init_app()
    return glance_wsgi_api.application


def get_application():
    """Build (once) and return glance's WSGI application.

    :returns: the glance-api WSGI callable.
    """
    global _app
    with _app_lock:
        if _app is None:
            install_sqlite_hook()
            _app = _glance_application()
            _start_watchdog()
        return _app


def __getattr__(name):
    """Provide ``application`` lazily (PEP 562 module attribute).

    :param name: the attribute being looked up.
    :returns: glance's WSGI application for ``application``.
    :raises AttributeError: for any other name.
    """
    if name == 'application':
        return get_application()
    raise AttributeError(name)


install_sqlite_hook()
