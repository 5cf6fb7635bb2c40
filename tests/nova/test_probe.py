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

"""``nova-snapshot-ext probe --config-file nova.conf`` on a Nova config.

The probe runs outside nova-api, so it has no user token: it reaches Glance
only through ``[snapshot_ext_glance]`` (its own auth plugin and endpoint),
never through Nova's ``[glance]`` section.  Here the auth plugin is
keystoneauth's ``admin_token`` with the embedded Glance's fake token.
"""

import os
import subprocess
import sys

import fixtures

from tests.nova import base

NOVA_CONF = """\
[DEFAULT]
compute_driver = libvirt.LibvirtDriver
transport_url = rabbit://nova:secret@127.0.0.1:5672/

[api]
auth_strategy = keystone

[glance]
endpoint_override = http://127.0.0.1:1/

[libvirt]
virt_type = kvm

[database]
connection = sqlite://

[snapshot_ext_glance]
auth_type = admin_token
endpoint = {endpoint}
token = {token}
endpoint_override = {endpoint}
"""


class TestProbe(base.NovaGlanceTestCase):

    def test_probe_reads_nova_conf(self):
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'nova.conf')
        with open(path, 'w') as f:
            f.write(NOVA_CONF.format(
                endpoint=self.glance.endpoint,
                token=self.glance.token(self.project_id, self.user_id,
                                        base.MEMBER_ROLES)))
        proc = subprocess.run(
            [sys.executable, '-c',
             'import sys; from nova_snapshot_ext.cmd.main import main; '
             'sys.exit(main())',
             'probe', '--config-file', path],
            capture_output=True, text=True, timeout=120,
            env=dict(os.environ, NO_PROXY='127.0.0.1', no_proxy='127.0.0.1'))
        self.assertEqual(0, proc.returncode, proc.stdout + proc.stderr)
        # Driver inferred from Nova's [DEFAULT] compute_driver; the plan
        # avoids raw, which this Glance refuses.
        self.assertIn('Driver libvirt', proc.stdout)
        self.assertIn(self.glance.endpoint, proc.stdout)
        self.assertIn('qcow2', proc.stdout)
        self.assertNotIn('upload raw', proc.stdout)
