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

"""Restore a server from its copies off the primary storage.

The copies are Cinder backups the plugin made of a backup image's volume
snapshots (:mod:`nova_snapshot_ext.backup.copies`); a restore reads only
Cinder (the image and its snapshots may be gone), in rooms of one
concern:

* :mod:`nova_snapshot_ext.backup.copy_sets`: the copies grouped by
  backup image, and the set to restore (the copies' record is read
  there, beside where it is written);
* :mod:`.service`: the restore itself (checks, volumes, server, undo);
* :mod:`.compute`: Nova's compute API (flavors, servers).

See doc/source/backups.rst.
"""

from nova_snapshot_ext.backup import copy_sets as sets
from nova_snapshot_ext.restore import compute
from nova_snapshot_ext.restore import service

Compute = compute.Compute
CopySet = sets.CopySet
Restore = service.Restore
RestoreResult = service.RestoreResult
choose = sets.choose
find_sets = sets.find_sets
