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
"""

from nova.virt import fake


class SnapshotExtFakeDriver(fake.FakeDriverWithoutFakeNodes):
    """Nova's single-node fake driver, unchanged."""
