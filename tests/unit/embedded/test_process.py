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

"""The process base every embedded service starts, waits and stops with."""

import os
import signal
import subprocess
import time

import fixtures
import testtools

from nova_snapshot_ext.embedded import process


class GunicornCommandTest(testtools.TestCase):

    def test_one_command_line_with_the_options_of_each_service(self):
        cmd = process.gunicorn_command(
            '/venv/bin/python', 'mod:application', 'fd://7', 'embedded-x-1',
            '/srv/x', workers=4, threads=2, pythonpath='/srv/x',
            access_log='/srv/x/access.log')
        self.assertEqual(['/venv/bin/python', '-m', 'gunicorn'], cmd[:3])
        self.assertEqual('mod:application', cmd[-1])
        self.assertIn('--no-control-socket', cmd)
        options = [c for c in cmd[3:-1] if c != '--no-control-socket']
        self.assertEqual({'--bind': 'fd://7', '--workers': '4',
                          '--worker-class': 'gthread', '--threads': '2',
                          '--timeout': '300', '--graceful-timeout': '5',
                          '--worker-tmp-dir': '/srv/x', '--chdir': '/srv/x',
                          '--name': 'embedded-x-1', '--pythonpath': '/srv/x',
                          '--access-logfile': '/srv/x/access.log'},
                         dict(zip(options[::2], options[1::2])))

    def test_no_pythonpath_nor_access_log_unless_asked(self):
        cmd = process.gunicorn_command('py', 'a:b', '127.0.0.1:20001', 'n',
                                       '/d')
        self.assertNotIn('--pythonpath', cmd)
        self.assertNotIn('--access-logfile', cmd)
        self.assertEqual('1', cmd[cmd.index('--workers') + 1])


class Refused(Exception):
    pass


class WaitForTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.log = self.useFixture(fixtures.TempDir()).join('svc.log')
        with open(self.log, 'w') as fh:
            fh.write('starting\nthe last words\n')

    def test_returns_once_the_check_holds(self):
        calls = []
        waited = process.wait_for(lambda: calls.append(1) or len(calls) > 2,
                                  'ready', 5)
        self.assertEqual(3, len(calls))
        self.assertLess(waited, 5)

    def test_an_exited_process_is_named_with_its_log(self):
        done = subprocess.Popen(['true'])
        done.wait()
        err = self.assertRaises(Refused, process.wait_for, lambda: False,
                                'svc answering', 5, done, 'svc', self.log,
                                error=Refused)
        self.assertIn('svc exited with 0 before svc answering', str(err))
        self.assertIn('the last words', str(err))

    def test_time_runs_out(self):
        started = time.monotonic()
        err = self.assertRaises(process.CloudError, process.wait_for,
                                lambda: False, 'svc answering', 0.2,
                                log=self.log, max_delay=0.05)
        self.assertIn('svc answering not reached after 0 s', str(err))
        self.assertIn('the last words', str(err))
        self.assertLess(time.monotonic() - started, 2)


class StopGroupTest(testtools.TestCase):

    def _start(self, script):
        child = subprocess.Popen(['sh', '-c', script],
                                 start_new_session=True)
        self.addCleanup(lambda: child.poll() is None and os.killpg(
            child.pid, signal.SIGKILL))
        time.sleep(0.2)  # the shell sets its trap
        return child

    def test_a_polite_stop(self):
        child = self._start('sleep 60 & wait')
        self.assertTrue(process.stop_group(child, 5))
        self.assertIsNotNone(child.poll())

    def test_a_process_that_ignores_the_signal_is_killed(self):
        child = self._start('trap "" INT; sleep 60 & wait; sleep 60')
        self.assertFalse(process.stop_group(child, 0.3, signal.SIGINT))
        self.assertEqual(-signal.SIGKILL, child.poll())


class ListeningSocketTest(testtools.TestCase):

    def test_a_free_port_below_the_ephemeral_range(self):
        sock = process.listening_socket()
        self.addCleanup(sock.close)
        low, high = process.PORT_RANGE
        self.assertTrue(low <= sock.getsockname()[1] <= high)
        # It is held: nobody else can bind it meanwhile.
        self.assertFalse(process.port_is_free(sock.getsockname()[1]))

    def test_the_port_asked_for_or_the_error(self):
        held = process.listening_socket()
        self.addCleanup(held.close)
        port = held.getsockname()[1]
        self.assertRaises(OSError, process.listening_socket, port)
        held.close()
        again = process.listening_socket(port)
        self.addCleanup(again.close)
        self.assertEqual(port, again.getsockname()[1])

    def test_no_free_port_is_named(self):
        held = process.listening_socket()
        self.addCleanup(held.close)
        port = held.getsockname()[1]
        err = self.assertRaises(process.CloudError,
                                process.listening_socket,
                                port_range=(port, port))
        self.assertIn('no free port found in %d-%d' % (port, port), str(err))
