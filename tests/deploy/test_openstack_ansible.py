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

"""The OpenStack-Ansible recipe through Ansible's own config_template.

``tox -e deploy-ansible`` installs ansible-core and OpenStack-Ansible's
``config_template`` plugin (the ``ansible-config-template`` package) and
runs, on this machine (``connection: local``), the two tasks of os_nova
that write nova-api's ``api-paste.ini``: "Fetch override files" (the live
file is fetched as the merge base) and "Copy common config"
(``config_template`` with ``nova_api_paste_ini_overrides``), as
``tasks/nova_post_install.yml`` of openstack/openstack-ansible-os_nova
(commit 11ff642fe688) has them.  doc/source/openstack-ansible.rst is the
recipe; each step here is one of its steps, over Nova 34's own file.
"""

import configparser
import json
import os
import shutil
import subprocess
import sys

import fixtures
import testtools

from nova_snapshot_ext.nova import paste

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
NOVA_34 = os.path.join(ROOT, 'tests', 'unit', 'paste_files',
                       'nova-34.0.0-api-paste.ini')
#: os_nova's two tasks, with the plugin's short name (the PyPI package
#: puts it on ANSIBLE_ACTION_PLUGINS, not in the openstack namespace).
PLAYBOOK = """\
- hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: Fetch override files
      ansible.builtin.fetch:
        src: "{{ target_f }}"
        dest: "{{ tmp_f }}"
        flat: true
      changed_when: false
    - name: Copy common config
      config_template:
        src: "{{ tmp_f }}"
        dest: "{{ target_f }}"
        mode: "0640"
        config_overrides: "{{ nova_api_paste_ini_overrides }}"
        config_type: ini
"""


def _ansible_bin():
    return os.path.dirname(shutil.which('ansible-playbook') or
                           sys.executable)


class OpenStackAnsibleRecipeTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        bindir = _ansible_bin()
        self.playbook_cmd = os.path.join(bindir, 'ansible-playbook')
        if not os.path.exists(self.playbook_cmd):
            self.skipTest('ansible-playbook is not installed: run tox -e '
                          'deploy-ansible')
        share = os.path.join(os.path.dirname(bindir), 'share', 'ansible',
                             'plugins')
        self.tmp = self.useFixture(fixtures.TempDir()).path
        self.env = dict(
            os.environ, ANSIBLE_ACTION_PLUGINS=os.path.join(share, 'action'),
            ANSIBLE_LIBRARY=os.path.join(share, 'modules'),
            ANSIBLE_PYTHON_INTERPRETER=sys.executable,
            ANSIBLE_LOCAL_TEMP=os.path.join(self.tmp, 'ansible-tmp'),
            ANSIBLE_HOME=os.path.join(self.tmp, 'ansible-home'),
            ANSIBLE_NOCOLOR='1')
        self.live = os.path.join(self.tmp, 'api-paste.ini')
        shutil.copyfile(NOVA_34, self.live)
        with open(os.path.join(self.tmp, 'play.yml'), 'w') as f:
            f.write(PLAYBOOK)

    def run_role(self, overrides):
        """One playbook run with these overrides; the live file after."""
        variables = os.path.join(self.tmp, 'vars.json')
        with open(variables, 'w') as f:
            json.dump({'nova_api_paste_ini_overrides': overrides,
                       'target_f': self.live,
                       'tmp_f': os.path.join(self.tmp, 'fetched.ini')}, f)
        proc = subprocess.run(
            [self.playbook_cmd, '-i', 'localhost,',
             os.path.join(self.tmp, 'play.yml'), '-e', '@' + variables],
            env=self.env, capture_output=True, text=True, timeout=300,
            check=False)
        self.assertEqual(0, proc.returncode, proc.stdout + proc.stderr)
        with open(self.live) as f:
            return f.read()

    def paste_sections(self, *argv, output=None):
        """The ``sections`` of ``paste --format json`` on the live file."""
        proc = subprocess.run(
            [sys.executable, '-m', 'nova_snapshot_ext.cmd.main', 'paste',
             '--from', self.live, '--output',
             output or os.path.join(self.tmp, 'out.ini'), '--format',
             'json'] + list(argv), capture_output=True, text=True,
            timeout=120, check=False)
        self.assertEqual(0, proc.returncode, proc.stderr)
        return json.loads(proc.stdout)['sections']

    def pipelines(self, text):
        parser = configparser.ConfigParser(interpolation=None)
        parser.read_string(text)
        return {section: parser[section]['keystone']
                for section in parser.sections()
                if parser.has_option(section, 'keystone')}

    def test_install_then_removal_in_the_documented_order(self):
        with open(NOVA_34) as f:
            nova = self.pipelines(f.read())
        # Install: the command's sections as the overrides.
        installed = self.run_role(self.paste_sections())
        self.assertEqual([], paste.filter_problems(installed))
        for section, pipeline in self.pipelines(installed).items():
            self.assertIn('keystonecontext snapshot_ext ', pipeline, section)
        # The trap the doc warns of: without the overrides, the merge over
        # the live file keeps the filter (nova-api would then fail to
        # start once the package is gone).
        kept = self.run_role({})
        self.assertEqual(self.pipelines(installed), self.pipelines(kept))
        # Removal, step 1-2: the removal's sections, computed on the live
        # file, as the overrides.
        removed = self.run_role(self.paste_sections('--remove'))
        self.assertEqual(nova, self.pipelines(removed))
        self.assertNotIn('snapshot_ext', ''.join(
            self.pipelines(removed).values()))
        # The filter's section is left (a merge cannot delete it), named
        # by no pipeline: PasteDeploy never imports it.
        self.assertIn('[filter:snapshot_ext]', removed)
        # Step 3: the overrides deleted; the next run keeps the removal.
        again = self.run_role({})
        self.assertEqual(nova, self.pipelines(again))

    def test_in_place_removal_needs_the_overrides_gone_first(self):
        with open(NOVA_34) as f:
            nova = f.read()
        install = self.paste_sections()
        self.run_role(install)
        # Removed in place on the host while the install's overrides are
        # still set: the next run merges the filter back.
        self.paste_sections('--remove', output=self.live)
        with open(self.live) as f:
            removed = f.read()
        # config_template rewrote the file's layout (``/: meta`` became
        # ``/ = meta``): Nova's own settings, not Nova's own bytes.
        self.assertEqual(self.pipelines(nova), self.pipelines(removed))
        self.assertNotIn('snapshot_ext', removed)
        back = self.run_role(install)
        self.assertEqual([], paste.filter_problems(back))
        # The documented order: overrides deleted first, then the removal
        # in place; the next runs keep Nova's own pipelines.
        self.paste_sections('--remove', output=self.live)
        kept = self.run_role({})
        self.assertEqual(self.pipelines(nova), self.pipelines(kept))
        self.assertNotIn('snapshot_ext', kept)
