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

"""The process base of every embedded service: start, wait, stop.

Every process runs in its own session (process group) with its output in
a log file.  One gunicorn command line (:func:`gunicorn_command`), one
bounded wait that names the process and shows its log's tail
(:func:`wait_for`), one stop of a whole group (:func:`stop_group`): the
standalone Glance and Keystone use them, and the cloud's
:class:`Processes` tracks its processes with them and ends them in
reverse start order.
"""

import collections
import os
import random
import re
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request

from nova_snapshot_ext.embedded import logs
from nova_snapshot_ext.embedded import watchdog

#: Listening ports are taken below the ephemeral range (32768-60999 on
#: Linux): a listener there can collide with a client socket.
PORT_RANGE = (20000, 32000)
STOP_TIMEOUT = 15.0
#: At most this many error lines per log in :meth:`Processes.errors_since`.
ERROR_LINES = 20
#: A line at ERROR or CRITICAL in the formats the cloud's logs use:
#: oslo.log's ``<date> <time> <pid> ERROR <logger>``, gunicorn's
#: ``[<time>] [<pid>] [ERROR]`` and MariaDB's ``<date> <time> <n> [ERROR]``.
_ERROR_LINE = re.compile(
    rb'^(\S+ \S+ \d+ (ERROR|CRITICAL) |'
    rb'\[[^\]]*\] \[\d+\] \[(ERROR|CRITICAL)\] |'
    rb'\S+ +\S+ \d+ \[ERROR\] )')


#: The file of process group ids a watchdog ends if the launcher dies.
PGIDS_NAME = watchdog.PGIDS_NAME


def start_watchdog(directory, epmd_port):
    """Stop the cloud in ``directory`` if this process dies first.

    :func:`nova_snapshot_ext.embedded.watchdog.start`: the process groups
    :class:`Processes` recorded, RabbitMQ's node (its pid file) and its
    ``epmd``.

    :returns: the watchdog's :class:`subprocess.Popen` (kill it after a
        normal stop).
    """
    return watchdog.start(directory, epmd_port)


class CloudError(RuntimeError):
    """A piece of the cloud did not start or answer."""


def port_is_free(port, host='127.0.0.1'):
    """Whether ``port`` can be bound on ``host`` now.

    :param port: an int.
    :param host: the address.
    :returns: a bool.
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.bind((host, port))
    except OSError:
        return False
    finally:
        sock.close()
    return True


def free_ports(count, taken=(), rng=None, port_range=PORT_RANGE,
               is_free=port_is_free):
    """Pick ``count`` distinct free ports below the ephemeral range.

    :param count: how many.
    :param taken: ports not to return.
    :param rng: a :class:`random.Random` (tests pass a seeded one).
    :param port_range: ``(low, high)``, both inclusive.
    :param is_free: the check (tests replace it).
    :returns: a list of ints.
    :raises CloudError: if not enough are free.
    """
    rng = rng or random.SystemRandom()
    low, high = port_range
    chosen = []
    seen = set(taken)
    for _ in range(20 * count + 200):
        if len(chosen) == count:
            break
        port = rng.randint(low, high)
        if port in seen:
            continue
        seen.add(port)
        if is_free(port):
            chosen.append(port)
    if len(chosen) < count:
        raise CloudError('only %d of %d free ports found in %d-%d' % (
            len(chosen), count, low, high))
    return chosen


def listening_socket(port=None, host='127.0.0.1', rng=None,
                     port_range=PORT_RANGE):
    """A listening TCP socket, held for a service to inherit.

    The one port rule of the embedded services: ``port`` when asked, else
    a free port below the ephemeral range (:data:`PORT_RANGE`), like the
    cloud's.  Held open until the service inherits it (gunicorn's
    ``fd://``), so no other process takes the port in between.

    :param port: the port wanted, or None.
    :param rng: a :class:`random.Random` (tests pass a seeded one).
    :returns: a bound, listening :class:`socket.socket` (close it once
        the service has inherited it).
    :raises OSError: ``port`` was asked and cannot be bound.
    :raises CloudError: no free port was found in ``port_range``.
    """
    rng = rng or random.SystemRandom()
    low, high = port_range
    candidates = [port] if port else [rng.randint(low, high)
                                      for _ in range(200)]
    for candidate in candidates:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, candidate))
        except OSError:
            sock.close()
            if port:
                raise
            continue
        sock.listen(128)
        return sock
    raise CloudError('no free port found in %d-%d' % (low, high))


def http_ok(url, timeout=2.0):
    """Whether ``url`` answers with a status below 500 (no proxy).

    :param url: the URL.
    :param timeout: seconds.
    :returns: a bool.
    """
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(url, timeout=timeout) as resp:
            return resp.status < 500
    except urllib.error.HTTPError as exc:
        return exc.code < 500
    except (urllib.error.URLError, OSError):
        return False


def gunicorn_command(python, app, bind, name, directory, workers=1,
                     threads=8, pythonpath=None, access_log=None):
    """The gunicorn command line of an embedded WSGI service.

    gthread workers, a 300 s request timeout, 5 s to finish requests on
    stop, no control socket, the worker heartbeat files and the working
    directory in ``directory``.

    :param python: the interpreter of the service's virtualenv.
    :param app: the WSGI application, ``module:callable``.
    :param bind: ``'127.0.0.1:PORT'``, or ``'fd://N'`` for a listening
        socket the process inherits (``pass_fds``).
    :param name: the process title (``ps`` shows it).
    :param directory: the service's directory.
    :param workers: worker processes; ``threads`` threads each.
    :param pythonpath: a directory to import ``app`` from, or None.
    :param access_log: a file for one line per request, or None.
    :returns: a list of strings.
    """
    cmd = [python, '-m', 'gunicorn', '--bind', bind,
           '--workers', str(workers), '--worker-class', 'gthread',
           '--threads', str(threads), '--timeout', '300',
           '--graceful-timeout', '5', '--no-control-socket',
           '--worker-tmp-dir', directory, '--chdir', directory,
           '--name', name]
    if pythonpath:
        cmd += ['--pythonpath', pythonpath]
    if access_log:
        cmd += ['--access-logfile', access_log]
    return cmd + [app]


def wait_for(check, what, timeout, process=None, name=None, log=None,
             error=None, max_delay=1.0):
    """Wait until ``check()`` is true, at most ``timeout`` seconds.

    :param check: a callable returning a bool.
    :param what: what is awaited, for the message.
    :param timeout: seconds.
    :param process: the :class:`subprocess.Popen` that must stay alive
        meanwhile, or None.
    :param name: the process's label, for the message.
    :param log: its log file: its tail ends the message.
    :param error: the exception class raised (:class:`CloudError`).
    :param max_delay: the longest pause between two checks (seconds).
    :returns: the seconds waited.
    :raises error: ``<name> exited with <status> before <what>`` or
        ``<what> not reached after <timeout> s``, with the log's tail.
    """
    error = error or CloudError
    started = time.monotonic()
    delay = 0.05
    while True:
        if check():
            return time.monotonic() - started
        if process is not None and process.poll() is not None:
            raise error('%s exited with %s before %s; log %s:\n%s'
                        % (name, process.returncode, what, log,
                           logs.tail(log) if log else ''))
        if time.monotonic() - started > timeout:
            raise error('%s not reached after %.0f s; log %s:\n%s'
                        % (what, timeout, log or '-',
                           logs.tail(log) if log else ''))
        time.sleep(delay)
        delay = min(delay * 1.5, max_delay)


def stop_group(process, timeout=STOP_TIMEOUT, first=signal.SIGTERM):
    """Stop a process started in its own session, and all of its group.

    ``first`` to the group, SIGKILL when it has not exited after
    ``timeout`` seconds, then SIGKILL to whatever is left of the group
    (gunicorn's workers).  The process is reaped.

    :param process: a :class:`subprocess.Popen` started with
        ``start_new_session=True``.
    :param first: the polite signal (gunicorn: SIGTERM waits for requests
        to finish, SIGINT does not).
    :returns: True when it exited on ``first``, False when killed.
    """
    polite = True
    for sig, wait in ((first, timeout), (signal.SIGKILL, 5)):
        _killpg(process.pid, sig)
        try:
            process.wait(wait)
            break
        except subprocess.TimeoutExpired:
            polite = False
    _killpg(process.pid, signal.SIGKILL)
    return polite


def _killpg(pgid, sig):
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


class Service(object):
    """One started process.

    :ivar name: a label, e.g. ``'nova-api'``.
    :ivar process: the :class:`subprocess.Popen`.
    :ivar log: the log file path.
    """

    def __init__(self, name, process, log, stop=None):
        self.name = name
        self.process = process
        self.log = log
        self._stop = stop

    @property
    def pid(self):
        return self.process.pid if self.process is not None else None

    def running(self):
        return self.process is not None and self.process.poll() is None

    def stop(self, timeout=STOP_TIMEOUT):
        """SIGTERM the process group, then SIGKILL it after ``timeout``.

        A service with its own stop command (RabbitMQ) runs it first.

        :returns: None
        """
        self.run_stop_command()
        if self.process is not None:
            stop_group(self.process, timeout)

    def run_stop_command(self):
        """The service's own stop command, if it has one (RabbitMQ's).

        Its failure is ignored: the process group is stopped regardless.
        """
        if self._stop is not None:
            try:
                self._stop()
            except Exception:  # noqa: B902 - stop the group regardless
                pass


def _line_start(fh, offset, back=65536):
    """Where the line holding byte ``offset`` of ``fh`` begins.

    A line being written when a mark was taken is read whole (looking
    back at most ``back`` bytes).
    """
    if offset <= 0:
        return 0
    begin = max(0, offset - back)
    fh.seek(begin)
    newline = fh.read(offset - begin).rfind(b'\n')
    return begin + newline + 1 if newline >= 0 else begin


class Processes(object):
    """The processes of one cloud, stopped in reverse order.

    :param base_dir: where the logs go (``<base_dir>/logs/<name>.log``).
    """

    def __init__(self, base_dir):
        self.base_dir = base_dir
        self.log_dir = os.path.join(base_dir, 'logs')
        os.makedirs(self.log_dir, exist_ok=True)
        self.services = []
        #: Logs kept outside :attr:`log_dir` (a service started by its
        #: own launcher, e.g. Glance) that :meth:`log_marks` reads too.
        self.other_logs = []

    def log_path(self, name):
        return os.path.join(self.log_dir, name + '.log')

    def run(self, name, cmd, env=None, timeout=300.0, cwd=None):
        """Run a set-up command to its end, its output in ``name``'s log.

        :returns: None
        :raises CloudError: if it fails or times out (with the log's tail).
        """
        log = self.log_path(name)
        with open(log, 'ab') as fh:
            fh.write(('$ %s\n' % ' '.join(cmd)).encode())
            fh.flush()
            try:
                rc = subprocess.run(cmd, stdin=subprocess.DEVNULL,
                                    stdout=fh, stderr=fh, env=env,
                                    cwd=cwd or self.base_dir,
                                    timeout=timeout,
                                    start_new_session=True).returncode
            except (OSError, subprocess.TimeoutExpired) as exc:
                raise CloudError('%s: %s; log %s:\n%s' % (
                    name, exc, log, logs.tail(log)))
        if rc != 0:
            raise CloudError('%s exited with %d; log %s:\n%s' % (
                name, rc, log, logs.tail(log)))

    def start(self, name, cmd, env=None, cwd=None, stop=None):
        """Start a long-running process in its own session.

        :returns: the :class:`Service`.
        :raises CloudError: if it cannot be started.
        """
        log = self.log_path(name)
        fh = open(log, 'ab')
        try:
            fh.write(('$ %s\n' % ' '.join(cmd)).encode())
            fh.flush()
            process = subprocess.Popen(
                cmd, stdin=subprocess.DEVNULL, stdout=fh, stderr=fh,
                env=env, cwd=cwd or self.base_dir, start_new_session=True)
        except OSError as exc:
            raise CloudError('cannot start %s: %s' % (name, exc))
        finally:
            fh.close()
        service = Service(name, process, log, stop)
        self.services.append(service)
        with open(os.path.join(self.base_dir, PGIDS_NAME), 'a') as fh:
            fh.write('%d\n' % process.pid)
        return service

    def add(self, service):
        """Track a process started elsewhere (stopped with the rest)."""
        self.services.append(service)
        return service

    def named(self, name):
        """The running :class:`Service` called ``name``, or None.

        :param name: as given to :meth:`start` (e.g. ``'nova-compute'``).
        :returns: the newest such service, or None.
        """
        found = [s for s in self.services if s.name == name]
        return found[-1] if found else None

    def stop_named(self, name, timeout=STOP_TIMEOUT):
        """Stop every service called ``name`` and forget it.

        :returns: None
        """
        for service in [s for s in self.services if s.name == name]:
            service.stop(timeout)
            self.services.remove(service)

    def wait(self, service, check, what, timeout):
        """Wait until ``check()`` is true, at most ``timeout`` seconds.

        :param service: the :class:`Service` that must stay alive (or
            None).
        :param check: a callable returning a bool.
        :param what: for the message.
        :param timeout: seconds.
        :returns: the seconds waited.
        :raises CloudError: if the process exits or time runs out.
        """
        if service is None:
            return wait_for(check, what, timeout)
        return wait_for(check, what, timeout, service.process, service.name,
                        service.log)

    def stop_all(self, timeout=STOP_TIMEOUT):
        """Stop every process at once (idempotent).

        SIGTERM to every process group (newest first; RabbitMQ by its own
        stop command), one shared wait of ``timeout`` seconds, then
        SIGKILL to every group.

        :returns: None
        """
        services, self.services = list(reversed(self.services)), []
        for service in services:
            service.run_stop_command()
            if service.process is not None:
                _killpg(service.process.pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for service in services:
            if service.process is None:
                continue
            try:
                service.process.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
            # Whatever is left of the group (gunicorn workers).
            _killpg(service.process.pid, signal.SIGKILL)
            try:
                service.process.wait(5)
            except subprocess.TimeoutExpired:
                pass

    def pids(self):
        return [s.pid for s in self.services if s.running()]

    def log_marks(self):
        """Where every log ends now: ``{log path: size in bytes}``."""
        marks = {}
        try:
            names = sorted(os.listdir(self.log_dir))
        except OSError:  # the cloud's directory removed
            names = []
        paths = [os.path.join(self.log_dir, name) for name in names]
        for path in paths + self.other_logs:
            try:
                marks[path] = os.path.getsize(path)
            except OSError:
                pass
        return marks

    def errors_since(self, marks, lines=ERROR_LINES):
        """The ERROR and CRITICAL lines the logs gained since ``marks``.

        :param marks: a :meth:`log_marks` result (a log not in it is read
            from its start).
        :param lines: at most this many lines per log, the last ones.
        :returns: ``{log file name: text}``, only logs with such lines;
            oslo.log writes a logged traceback as such lines too.
        """
        found = {}
        for path, size in self.log_marks().items():
            start = marks.get(path, 0)
            if size < start:  # truncated since: all of it is new
                start = 0
            kept = collections.deque(maxlen=lines)
            try:
                with open(path, 'rb') as fh:
                    fh.seek(_line_start(fh, start))
                    for raw in fh:
                        if _ERROR_LINE.search(raw):
                            kept.append(raw.decode('utf-8', 'replace'))
            except OSError:
                continue
            if kept:
                found[os.path.basename(path)] = ''.join(kept)
        return found
