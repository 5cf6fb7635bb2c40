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

"""The watchdog, with real processes: a launcher killed with SIGKILL.

A "launcher" process starts the watchdog for its directory, then a
service in a process group of its own (recorded in ``pgids``, as the
cloud's :class:`~nova_snapshot_ext.embedded.process.Processes` does)
and a daemon known only by its pid file (as RabbitMQ's node and the test
databases).  The launcher is then killed with SIGKILL: no atexit handler,
no ``stop()``.  The watchdog must end both and remove the directory.
"""

import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time

from oslotest import base as oslotest_base

_LAUNCHER = textwrap.dedent('''
    import os, subprocess, sys, time
    from nova_snapshot_ext.embedded import watchdog
    directory = sys.argv[1]
    watchdog.start(directory)
    service = subprocess.Popen([sys.executable, '-c',
                                'import time; time.sleep(600)'],
                               start_new_session=True)
    with open(os.path.join(directory, watchdog.PGIDS_NAME), 'w') as fh:
        fh.write('%d\\n' % service.pid)
    daemon = subprocess.Popen([sys.executable, '-c',
                               'import time; time.sleep(600)'],
                              start_new_session=True)
    os.makedirs(os.path.join(directory, 'daemon'))
    with open(os.path.join(directory, 'daemon', 'd.pid'), 'w') as fh:
        fh.write('%d\\n' % daemon.pid)
    print(service.pid, daemon.pid, flush=True)
    time.sleep(600)
''')

#: Seconds the watchdog may take: one poll, SIGTERM, grace, SIGKILL.
DEADLINE = 30.0


def _alive(pid):
    """True while ``pid`` runs (a zombie counts as ended)."""
    try:
        with open('/proc/%d/stat' % pid) as fh:
            return fh.read().split(') ', 1)[1][0] != 'Z'
    except (OSError, IndexError):
        return False


class TestWatchdog(oslotest_base.BaseTestCase):

    def _launch(self, directory):
        launcher = subprocess.Popen(
            [sys.executable, '-c', _LAUNCHER, directory],
            stdout=subprocess.PIPE, text=True)
        self.addCleanup(launcher.wait)
        self.addCleanup(launcher.kill)
        pids = [int(p) for p in launcher.stdout.readline().split()]
        self.assertEqual(2, len(pids))
        for pid in pids:
            self.addCleanup(_kill_quietly, pid)
        return launcher, pids

    def test_launcher_killed_everything_ended_directory_removed(self):
        directory = tempfile.mkdtemp(prefix='watchdog-test-')
        self.addCleanup(_rmtree, directory)
        launcher, pids = self._launch(directory)
        self.assertTrue(all(_alive(pid) for pid in pids))
        launcher.send_signal(signal.SIGKILL)
        launcher.wait()
        deadline = time.monotonic() + DEADLINE
        while time.monotonic() < deadline and (
                os.path.isdir(directory) or any(map(_alive, pids))):
            time.sleep(0.5)
        self.assertEqual([], [pid for pid in pids if _alive(pid)])
        self.assertFalse(os.path.isdir(directory))

    def test_directory_removed_by_the_launcher_ends_nothing(self):
        # A launcher that stopped everything itself removes its directory:
        # the watchdog then touches no process.
        directory = tempfile.mkdtemp(prefix='watchdog-test-')
        launcher, pids = self._launch(directory)
        _rmtree(directory)
        time.sleep(3)
        launcher.send_signal(signal.SIGKILL)
        launcher.wait()
        time.sleep(3)
        self.assertEqual(pids, [pid for pid in pids if _alive(pid)])


def _kill_quietly(pid):
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass


def _rmtree(path):
    import shutil

    shutil.rmtree(path, ignore_errors=True)
