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

"""The deployment recipes, run on the cloud in a box with stock Nova.

Both start from the box's nova-api *without* the plugin (its Glance
refuses ``raw``, where stock Nova 34's ``createImage`` of a volume-backed
server fails) and put it in the way the tool would:

* :class:`DevstackPluginTest`: ``devstack/plugin.sh`` with devstack's
  functions from ``tests/cloud/devstack_shim.sh``, its ``stack install``,
  ``stack post-config``, nova-api restarted (devstack starts it after
  post-config), ``stack extra``, the box's scenarios, then ``unstack`` and
  ``clean``: the paste file and ``nova.conf`` byte for byte as before,
  the package gone from nova-api's environment.
* :class:`KollaRouteTest`: the complete paste file written by
  ``nova-snapshot-ext paste`` from the installed Nova's own file, as the
  kolla image's footer writes ``/etc/nova/api-paste.ini``; and, first,
  the route the issue proposed, ``[wsgi] api_paste_config`` pointing at
  that file, shown not to load the plugin in Nova 34's WSGI nova-api.
"""

import os
import subprocess

from oslotest import base as oslotest_base

from nova_snapshot_ext.embedded.cloud import venv
from nova_snapshot_ext.nova import paste
from tests.cloud import test_scenarios

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
SHIM = os.path.join(ROOT, 'tests', 'cloud', 'devstack_shim.sh')
#: What the filter logs in nova-api once loaded (nova/filter.py).
LOADED = 'nova-snapshot-ext loaded: driver'


def _read(path):
    with open(path, 'rb') as f:
        return f.read()


class _Deploy(test_scenarios._Cloud):
    """The stock-Nova box on the Glance without ``raw``."""

    profile = 'no-raw'
    plugin = False
    expected_format = 'qcow2'

    def setUp(self):
        super().setUp()
        self.api_dir = self.cloud.nova_api_dir
        self.paste_ini = os.path.join(self.api_dir, 'api-paste.ini')
        self.nova_conf = os.path.join(self.api_dir, 'nova.conf')
        self.stock_paste = _read(self.paste_ini)
        self.stock_conf = _read(self.nova_conf)
        self.bin_dir = os.path.dirname(self.cloud.python)
        self.venv_root = os.path.dirname(self.bin_dir)
        self.log = self.cloud.procs.log_path('nova-api')

    def restore_stock(self):
        """The box's stock files back, nova-api restarted (cleanup)."""
        if (_read(self.paste_ini) != self.stock_paste or
                _read(self.nova_conf) != self.stock_conf):
            with open(self.paste_ini, 'wb') as f:
                f.write(self.stock_paste)
            with open(self.nova_conf, 'wb') as f:
                f.write(self.stock_conf)
            self.cloud.restart_nova_api()

    def restart_and_log(self):
        """Restart nova-api; its log lines since the restart."""
        start = os.path.getsize(self.log)
        self.cloud.restart_nova_api()
        with open(self.log, 'rb') as f:
            f.seek(start)
            return f.read().decode('utf-8', 'replace')

    def installed(self):
        return subprocess.run(
            [os.path.join(self.bin_dir, 'pip'), 'show', 'nova-snapshot-ext'],
            capture_output=True, timeout=120).returncode == 0

    def scenarios(self):
        """The box's own scenario tests, on this nova-api."""
        self.check_boot_from_snapshot_image()


class DevstackPluginTest(_Deploy, oslotest_base.BaseTestCase):

    def phase(self, *args, **extra):
        env = {'PATH': '/usr/bin:/bin', 'HOME': os.environ.get('HOME', '/'),
               'NOVA_API_PASTE_INI': self.paste_ini,
               'NOVA_CONF': self.nova_conf, 'NOVA_BIN_DIR': self.bin_dir,
               'GLOBAL_VENV': 'True', 'DEVSTACK_VENV': self.venv_root,
               'DEST': '/nonexistent', 'NOVA_SNAPSHOT_EXT_DIR': ROOT,
               # The box's compute driver is its own fake; backups of
               # volume-backed servers for the backup scenario.
               'NOVA_SNAPSHOT_EXT_DRIVER': 'fake',
               'NOVA_SNAPSHOT_EXT_VOLUME_BACKED_BACKUPS': 'True'}
        env.update(extra)
        script = ('source %s; source %s/devstack/settings; '
                  'source %s/devstack/plugin.sh %s' % (
                      SHIM, ROOT, ROOT, ' '.join(args)))
        proc = subprocess.run(['bash', '-c', script], env=env,
                              capture_output=True, text=True, timeout=600)
        self.assertEqual(0, proc.returncode, '%s: %s\n%s' % (
            ' '.join(args), proc.stdout[-3000:], proc.stderr[-3000:]))
        return proc.stdout

    def _reinstall(self):
        # The box's other tests expect the plugin in its venv (the
        # launcher's ensure_plugin skips an install it has marked done).
        if not self.installed():
            mark = os.path.join(self.venv_root, venv._PLUGIN_MARK)
            if os.path.exists(mark):
                os.unlink(mark)
            venv.ensure_plugin(self.cloud.python)

    def test_phases_then_scenarios_then_nothing_left(self):
        self.addCleanup(self._reinstall)
        self.addCleanup(self.restore_stock)
        # The box installs the package for its plugin clouds: take it out
        # so that stack install is what puts it in.
        subprocess.run([os.path.join(self.bin_dir, 'pip'), 'uninstall',
                        '-y', 'nova-snapshot-ext'], check=True,
                       capture_output=True, timeout=300)
        self.assertFalse(self.installed())

        self.phase('stack', 'install')
        self.assertTrue(self.installed())
        self.assertEqual(self.stock_paste, _read(self.paste_ini))

        self.phase('stack', 'post-config')
        self.assertEqual([], paste.filter_problems(
            _read(self.paste_ini).decode()))
        conf = _read(self.nova_conf).decode()
        self.assertIn('[snapshot_ext]\nvolume_backed_backups = True\n'
                      'driver = fake\n', conf)
        log = self.restart_and_log()
        self.assertIn(LOADED, log)

        out = self.phase('stack', 'extra')
        self.assertIn('"check": "Paste filter", "result": 0', out)

        self.scenarios()
        self.check_create_backup_rotation()

        self.phase('unstack')
        self.assertEqual(self.stock_paste, _read(self.paste_ini))
        self.assertEqual(self.stock_conf, _read(self.nova_conf))
        log = self.restart_and_log()
        self.assertNotIn(LOADED, log)
        self.assertTrue(self.installed())

        self.phase('clean')
        self.assertFalse(self.installed())
        self.assertEqual(self.stock_paste, _read(self.paste_ini))
        self.assertEqual(self.stock_conf, _read(self.nova_conf))


class KollaRouteTest(_Deploy, oslotest_base.BaseTestCase):

    def write_complete_file(self, output):
        """``nova-snapshot-ext paste --output FILE``: the kolla footer's.

        ``--from`` left out, so the installed nova's own file is read.
        """
        proc = subprocess.run(
            [os.path.join(self.bin_dir, 'nova-snapshot-ext'), 'paste',
             '--output', output], capture_output=True, text=True,
            timeout=120, env=dict(os.environ, PATH=self.bin_dir + ':' +
                                  os.environ.get('PATH', '')))
        self.assertEqual(0, proc.returncode, proc.stderr)
        self.assertEqual([], paste.filter_problems(_read(output).decode()))

    def set_options(self, options):
        with open(self.nova_conf, 'ab') as f:
            f.write(options.encode())

    def test_complete_paste_file(self):
        self.addCleanup(self.restore_stock)
        # The operator's options, as /etc/kolla/config/nova.conf merges
        # them into nova-api's nova.conf.
        self.set_options('\n[snapshot_ext]\ndriver = fake\n')

        # The route: [wsgi] api_paste_config naming the complete
        # file. Nova 34's WSGI nova-api (nova.api.openstack.wsgi_app)
        # reads $OS_NOVA_CONFIG_DIR/api-paste.ini and never this option.
        elsewhere = os.path.join(self.cloud.base_dir, 'kolla-config')
        os.makedirs(elsewhere, exist_ok=True)
        complete = os.path.join(elsewhere, 'api-paste.ini')
        self.write_complete_file(complete)
        self.set_options('\n[wsgi]\napi_paste_config = %s\n' % complete)
        log = self.restart_and_log()
        self.assertNotIn(LOADED, log)

        # The route that works: the complete file where nova-api reads
        # it, /etc/nova/api-paste.ini in kolla's nova-api image (written
        # there at build time by the template override's footer).
        self.write_complete_file(self.paste_ini)
        log = self.restart_and_log()
        self.assertIn(LOADED, log)
        self.scenarios()
