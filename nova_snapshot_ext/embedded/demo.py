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

"""``nova-snapshot-ext demo``: the real job against an embedded Glance.

Starts a real glance-api (:mod:`nova_snapshot_ext.embedded.glance`) in a
temp dir, writes an ordinary config file for it (``[snapshot_ext_glance]
auth_type = admin_token`` whose token the embedded Glance reads as
``user:project:roles``), runs exactly what ``nova-snapshot-ext snapshot
--config-file FILE REQUEST.json`` runs, prints the image as Glance returns
it, then stops Glance and removes the temp dir.  Nothing is left running
and nothing is written outside the temp dir.
"""

from __future__ import annotations

import json
import os
import sys

from nova_snapshot_ext.cmd import main as cli
from nova_snapshot_ext.embedded import glance as embedded


CONFIG_TEMPLATE = """\
[snapshot_ext]
driver = {driver}

[snapshot_ext_glance]
auth_type = admin_token
endpoint = {endpoint}
token = {token}
endpoint_override = {endpoint}
"""


def write_config(path: str, endpoint: str, token: str, driver: str) -> None:
    """Write a nova-snapshot-ext config file for an embedded Glance."""
    with open(path, 'w', encoding='utf-8') as f:
        f.write(CONFIG_TEMPLATE.format(endpoint=endpoint, token=token,
                                       driver=driver))


def run(profile: str = 'default', driver: str = 'libvirt',
        request_path: str = cli.SAMPLE_REQUEST, fmt: str = 'text') -> int:
    """Run the demo; returns the process exit code.

    :raises InvalidRequest: the request file is malformed.
    :raises ConfigurationError: unknown profile.
    """
    from nova_snapshot_ext import exception

    if profile not in embedded.PROFILES:
        raise exception.ConfigurationError(
            group='demo', option='--profile',
            reason='unknown profile %r; known: %s' % (
                profile, ', '.join(sorted(embedded.PROFILES))))
    request = cli._read_request(request_path)
    roles = request.requester.roles or ['member', 'reader']
    token = '%s:%s:%s' % (request.requester.user_id or 'demo-user',
                          request.requester.project_id, ','.join(roles))
    log = sys.stderr if fmt == 'text' else open(os.devnull, 'w')
    print('Starting an embedded real Glance (profile %s)...' % profile,
          file=log)
    with embedded.EmbeddedGlance(identity='token',
                                 **embedded.PROFILES[profile]) as glance:
        print('Glance %s is up; snapshotting %s with driver %s'
              % (glance.endpoint, os.path.basename(request_path), driver),
              file=log)
        conf_path = os.path.join(glance.base_dir, 'nova-snapshot-ext.conf')
        write_config(conf_path, glance.endpoint, token, driver)
        conf = cli._load_conf([conf_path])
        code, image = cli.run_snapshot(conf, request, fmt)
        if image and fmt == 'text':
            mappings = json.loads(image.get('block_device_mapping', '[]'))
            print('\n%d block device mappings: %s' % (len(mappings), ', '.join(
                '%s %s->%s' % (m['device_name'], m['source_type'],
                               m['destination_type']) for m in mappings)))
    print('Glance stopped; temp dir removed.', file=log)
    if log is not sys.stderr:
        log.close()
    return code
