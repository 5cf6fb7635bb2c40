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

"""End what a launcher started when the launcher dies first.

A launcher (the cloud in a box, the MariaDB/PostgreSQL test servers)
starts a watchdog (:func:`start`): a separate process in its own session
that polls once a second.  When the launcher is gone without having
stopped the watchdog (SIGKILL, a test runner's timeout; an atexit handler
never runs then), the watchdog ends, in order SIGTERM then SIGKILL five
seconds apart:

* every process group listed in ``<directory>/pgids`` (one id a line);
* every process whose pid is the first line of a ``*.pid`` file under
  the directory (daemons that leave their group, e.g. RabbitMQ's node);
* the ``epmd`` whose environment has ``ERL_EPMD_PORT=<epmd_port>``, when
  a port is given (RabbitMQ's port mapper outlives its node);

then removes the directory.  A directory already gone means the launcher
stopped everything itself: nothing to do.

Run as ``python -m nova_snapshot_ext.embedded.watchdog LAUNCHER_PID
DIRECTORY [EPMD_PORT]``.
"""

from __future__ import annotations

import glob
import os
import shutil
import signal
import subprocess
import sys
import time

#: The file of process group ids, in the watched directory.
PGIDS_NAME = 'pgids'
#: Seconds between two looks at the launcher, and between the signals.
POLL = 1.0
GRACE = 5.0


def start(directory: str, epmd_port: int | None = None
          ) -> subprocess.Popen[bytes]:
    """Watch this process; end what ``directory`` lists if it dies first.

    :param directory: the launcher's directory (pid files, ``pgids``).
    :param epmd_port: the port of an ``epmd`` to end too, or None.
    :returns: the watchdog's :class:`subprocess.Popen`: kill and wait for
        it after a normal stop.
    """
    argv = [sys.executable, '-m', __name__, str(os.getpid()), directory]
    if epmd_port is not None:
        argv.append(str(epmd_port))
    return subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL,
                            start_new_session=True)


def _read_ints(path: str) -> list[int]:
    try:
        with open(path) as fh:
            return [int(line) for line in fh if line.strip()]
    except (OSError, ValueError):
        return []


def pid_files(directory: str) -> list[int]:
    """The pids in the first line of every ``*.pid`` file under it."""
    pids = []
    for path in glob.glob(os.path.join(directory, '**', '*.pid'),
                          recursive=True):
        pids.extend(_read_ints(path)[:1])
    return pids


def epmd_pids(port: int) -> list[int]:
    """Pids of the ``epmd`` processes serving this port.

    Those whose environment has ``ERL_EPMD_PORT=<port>`` (started by an
    Erlang node) or whose arguments name the port.
    """
    wanted = ('ERL_EPMD_PORT=%d' % port).encode()
    port_arg = ('%d' % port).encode()
    found = []
    for entry in os.listdir('/proc'):
        if not entry.isdigit():
            continue
        try:
            with open('/proc/%s/cmdline' % entry, 'rb') as fh:
                argv = fh.read().split(b'\0')
            with open('/proc/%s/environ' % entry, 'rb') as fh:
                environ = fh.read().split(b'\0')
        except OSError:
            continue
        if argv and argv[0].endswith(b'epmd') and (
                wanted in environ or port_arg in argv):
            found.append(int(entry))
    return found


def end(directory: str, epmd_port: int | None = None) -> None:
    """End everything ``directory`` lists, then remove it."""
    pgids = _read_ints(os.path.join(directory, PGIDS_NAME))
    pids = pid_files(directory)
    if epmd_port is not None:
        pids.extend(epmd_pids(epmd_port))
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pgid in pgids:
            try:
                os.killpg(pgid, sig)
            except OSError:
                pass
        for pid in pids:
            try:
                os.kill(pid, sig)
            except OSError:
                pass
        time.sleep(GRACE)
    shutil.rmtree(directory, ignore_errors=True)


def main(argv: list[str]) -> int:
    parent, directory = int(argv[0]), argv[1]
    epmd_port = int(argv[2]) if len(argv) > 2 else None
    while os.getppid() == parent and os.path.isdir(directory):
        time.sleep(POLL)
    if os.path.isdir(directory):
        end(directory, epmd_port)
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
