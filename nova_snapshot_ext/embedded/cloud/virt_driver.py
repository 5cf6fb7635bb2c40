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

"""The cloud's Nova compute driver (copied into ``nova.virt`` at set-up).

Nova resolves ``[DEFAULT] compute_driver`` inside the ``nova.virt``
package, so the launcher copies this file there as
``nova/virt/snapshot_ext_fake.py`` of the cloud's virtualenv.  It is
Nova's shipped ``FakeDriverWithoutFakeNodes`` (a stable node identity, so
nova-compute restarts): no guest runs.  A stand-in, said so in
doc/source/cloud.rst.

One addition: Nova's fake driver never uploads the snapshot of an
*image-backed* server, so such an image stays ``queued`` and Tempest's
image-backed ``createImage``/``createBackup`` tests time out.  Here the
"disk" of a guest that does not exist is an empty one, and the snapshot
uploads exactly that: a valid empty ``qcow2`` (this project's honest
payload, which Glance's format inspection accepts on every profile of
the box), through Nova's own image API as a real driver does.
Volume-backed snapshots never reach the driver (nova-api takes them).
"""

import io

from nova.compute import task_states
from nova.image import glance
from nova.virt import fake

from nova_snapshot_ext.image import payloads

#: The disk format of an image-backed snapshot's upload.
SNAPSHOT_DISK_FORMAT = 'qcow2'


class SnapshotExtFakeDriver(fake.FakeDriverWithoutFakeNodes):
    """Nova's single-node fake driver that uploads its snapshots."""

    def snapshot(self, context, instance, image_id, update_task_state):
        """Upload an empty ``qcow2`` as the server's snapshot ``image_id``.

        The task states move as a real driver moves them (pending upload,
        then uploading); the image's ``disk_format``/``container_format``
        are set with the upload, its other properties kept.

        :raises nova.exception.InstanceNotRunning: no such guest here.
        """
        super().snapshot(context, instance, image_id,
                         lambda **kwargs: None)
        update_task_state(task_state=task_states.IMAGE_PENDING_UPLOAD)
        update_task_state(
            task_state=task_states.IMAGE_UPLOADING,
            expected_state=task_states.IMAGE_PENDING_UPLOAD)
        glance.API().update(
            context, image_id,
            {'disk_format': SNAPSHOT_DISK_FORMAT,
             'container_format': 'bare'},
            data=io.BytesIO(payloads.payload(SNAPSHOT_DISK_FORMAT)),
            purge_props=False)
