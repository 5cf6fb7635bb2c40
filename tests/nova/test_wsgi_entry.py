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

"""nova-api's own WSGI entry point under gunicorn, 1 and 2 workers.

The real start-up of a nova-api process: gunicorn loads
``nova.wsgi.osapi_compute:application`` (Nova 30+; Nova 29's
``nova.api.openstack.compute.wsgi:init_application()``), which reads
``$OS_NOVA_CONFIG_DIR/api-paste.ini`` and ``nova.conf``, registers the
service in Nova's database (sqlite files synced with ``nova-manage``),
loads the paste pipeline (Nova's own ``api-paste.ini`` edited as the guide
says) and dumps every option value (``[DEFAULT] log_options``, with
``debug = true`` so the dump reaches the log).  Only 127.0.0.1 is used.
"""

import atexit
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

import fixtures
import testtools

from tests.nova import base

NOVA_CONF = """\
[DEFAULT]
transport_url = fake://
log_options = true
debug = true
host = apihost
[api]
auth_strategy = keystone
[api_database]
connection = sqlite:///{dir}/api.db
[database]
connection = sqlite:///{dir}/main.db
[oslo_concurrency]
lock_path = {dir}/locks
{extra}
"""

_db_template = {}


def _free_port():
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


def _entry_point():
    from nova_snapshot_ext.nova import hook

    if (hook.nova_major() or 0) >= 30:
        return 'nova.wsgi.osapi_compute:application'
    return 'nova.api.openstack.compute.wsgi:init_application()'


class TestNovaApiUnderGunicorn(testtools.TestCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        if base.NOVA_MISSING:
            raise testtools.TestCase.skipException('nova is not installed')
        if 'dir' not in _db_template:
            # nova-manage api_db sync + db sync once (about 30 s).
            where = tempfile.mkdtemp(prefix='nova-db-template-')
            # Shared by this process's tests: removed when it exits.
            atexit.register(shutil.rmtree, where, True)
            with open(os.path.join(where, 'nova.conf'), 'w') as f:
                f.write(NOVA_CONF.format(dir=where, extra=''))
            manage = os.path.join(os.path.dirname(sys.executable),
                                  'nova-manage')
            for command in ('api_db', 'db'):
                subprocess.run(
                    [manage, '--config-file',
                     os.path.join(where, 'nova.conf'), command, 'sync'],
                    check=True, capture_output=True, timeout=300)
            _db_template['dir'] = where

    def start_nova_api(self, workers, extra, marker):
        """gunicorn + nova-api's entry point; returns (base URL, log path).

        Ready when ``/`` answers and every worker has logged ``marker``
        and finished Nova's option dump (framed by lines of 80 ``*``).
        """
        where = self.useFixture(fixtures.TempDir()).path
        for name in ('api.db', 'main.db'):
            shutil.copy(os.path.join(_db_template['dir'], name), where)
        with open(os.path.join(where, 'nova.conf'), 'w') as f:
            f.write(NOVA_CONF.format(dir=where, extra=extra))
        with open(os.path.join(where, 'api-paste.ini'), 'w') as f:
            f.write(base.nova_api_paste_ini())
        port = _free_port()
        # Nova parses sys.argv: gunicorn gets everything from its config
        # file, as with uwsgi's --pyargv.
        with open(os.path.join(where, 'gunicorn.conf.py'), 'w') as f:
            f.write('wsgi_app = %r\nbind = %r\nworkers = %d\n' % (
                _entry_point(), '127.0.0.1:%d' % port, workers))
        log_path = os.path.join(where, 'nova-api.log')
        log = open(log_path, 'w')
        self.addCleanup(log.close)
        env = dict(os.environ, OS_NOVA_CONFIG_DIR=where,
                   NO_PROXY='127.0.0.1', no_proxy='127.0.0.1')
        proc = subprocess.Popen([sys.executable, '-m', 'gunicorn'],
                                cwd=where, env=env, stdout=log,
                                stderr=subprocess.STDOUT)

        def stop():
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self.addCleanup(stop)
        url = 'http://127.0.0.1:%d' % port
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(url + '/', timeout=5) as resp:
                    if resp.status == 200 and self._workers_up(
                            log_path, workers, marker):
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                with open(log_path) as f:
                    self.fail('nova-api did not start:\n' + f.read()[-5000:])
            time.sleep(0.5)
        return url, log_path

    @staticmethod
    def _workers_up(log_path, workers, marker):
        with open(log_path) as f:
            text = f.read()
        return (text.count(marker) >= workers and
                text.count('*' * 80) >= 2 * workers)

    def get(self, url):
        req = urllib.request.Request(url, headers={
            'X-User-Id': 'u1', 'X-Project-Id': 'p1',
            'X-Roles': 'member,reader', 'X-Auth-Token': 't'})
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, resp.read()

    def test_bad_value_two_workers_serve_and_log_options(self):
        url, log_path = self.start_nova_api(
            2, '[snapshot_ext_nova]\nactivation = maybe\n'
               '[snapshot_ext]\nimage_property_quota = lots\n',
            'nova-snapshot-ext is NOT active')
        for _ in range(4):
            self.assertEqual((200, b'{"keypairs": []}'),
                             self.get(url + '/v2.1/os-keypairs'))
        with open(log_path) as f:
            text = f.read()
        errors = [line for line in text.splitlines()
                  if 'nova-snapshot-ext is NOT active' in line]
        # One ERROR line per worker, naming both values.
        self.assertEqual(2, len(errors), text[-5000:])
        for line in errors:
            self.assertIn("[snapshot_ext_nova] activation = 'maybe'", line)
            self.assertIn("[snapshot_ext] image_property_quota = 'lots'",
                          line)
        # Nova's option dump ran in both workers and lists none of ours.
        self.assertEqual(2, text.count('log_options'), text[-5000:])
        self.assertNotIn('snapshot_ext_nova.activation', text)
        self.assertNotIn('Traceback', text)

    def test_valid_values_one_worker_plugin_loaded(self):
        url, log_path = self.start_nova_api(
            1, '[snapshot_ext_nova]\nglance_connection = nova\n',
            'nova-snapshot-ext loaded')
        self.assertEqual(200, self.get(url + '/v2.1/os-keypairs')[0])
        with open(log_path) as f:
            text = f.read()
        self.assertEqual(1, text.count('nova-snapshot-ext loaded'), text)
        self.assertIn('so libvirt is assumed', text)
        self.assertIn('log_options', text)
        from nova_snapshot_ext.nova import hook

        if (hook.nova_major() or 0) >= 33:
            # Nova 33+ dumps the options after loading the pipeline, so
            # the plugin's valid options are listed; Nova 29-32 dump them
            # before, when no plugin option is registered yet.
            self.assertIn('snapshot_ext_nova.glance_connection', text)
        self.assertNotIn('nova-snapshot-ext is NOT active', text)
