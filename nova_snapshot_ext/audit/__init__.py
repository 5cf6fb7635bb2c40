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

"""Find and repair the volume-backed snapshot images a Glance already has.

The facade of ``nova-snapshot-ext audit``, each part in a room of one
concern:

* :mod:`.report`: the problem vocabulary (:data:`KINDS`) and what a run
  returns (:class:`Finding`, :class:`Action`, :class:`Report`);
* :mod:`.images`: the image checks (:func:`scan`, :func:`judge`,
  :func:`repair`), through :class:`AuditGlance`; every image kind is
  described there;
* :mod:`.references`: images that name a plugin volume snapshot without
  its tag;
* :mod:`.volume_snapshots`: with Cinder credentials, the volume snapshots
  the plugin recorded taking for an image that is gone;
* :mod:`.backups`: with Cinder credentials, backups whose volume
  snapshots are gone, and which volume snapshots were listed;
* :mod:`.copies`: with Cinder credentials, the copies off the primary
  storage (in error, a broken chain, past retention, never made).

The audit reads what :mod:`nova_snapshot_ext.backup` writes (its marks and
records); nothing there imports the audit.  The names below are defined
in their rooms only.
"""

from nova_snapshot_ext.audit import images
from nova_snapshot_ext.audit import report

KINDS = report.KINDS
QUEUED_LEFTOVER = report.QUEUED_LEFTOVER
DISHONEST_PAYLOAD = report.DISHONEST_PAYLOAD
MIN_DISK_ABOVE_ROOT = report.MIN_DISK_ABOVE_ROOT
BORROWED_PROPERTY = report.BORROWED_PROPERTY
MALFORMED_MAPPING = report.MALFORMED_MAPPING
UNSAFE_MAPPING = report.UNSAFE_MAPPING
DELETION_HAZARD = report.DELETION_HAZARD
IMAGE = report.IMAGE
VOLUME_SNAPSHOT = report.VOLUME_SNAPSHOT
COPY = report.COPY
Finding = report.Finding
Action = report.Action
Report = report.Report
record_actions = report.record_actions

NOT_JUDGED_KINDS = images.NOT_JUDGED_KINDS
NOT_REMOVABLE_KINDS = images.NOT_REMOVABLE_KINDS
NOT_REMOVABLE_PREFIXES = images.NOT_REMOVABLE_PREFIXES
OWN_IDENTITY_WITH_SNAPSHOT_TYPE = images.OWN_IDENTITY_WITH_SNAPSHOT_TYPE
GLANCE_ATTRIBUTES = images.GLANCE_ATTRIBUTES
FORBIDDEN_MAPPING_FIELDS = images.FORBIDDEN_MAPPING_FIELDS
RAW_LIKE = images.RAW_LIKE
borrowed_kind = images.borrowed_kind
root_volume_limit = images.root_volume_limit
unsafe_entries = images.unsafe_entries
json_pointer = images.json_pointer
DEFAULT_QUEUED_AGE = images.DEFAULT_QUEUED_AGE
DEFAULT_MAX_DOWNLOAD = images.DEFAULT_MAX_DOWNLOAD
DEFAULT_PAGE_SIZE = images.DEFAULT_PAGE_SIZE
MADE_BY_PLUGIN = images.MADE_BY_PLUGIN
MADE_BY_OTHER = images.MADE_BY_OTHER
AuditGlance = images.AuditGlance
is_volume_snapshot = images.is_volume_snapshot
authorship_refusal = images.authorship_refusal
judge = images.judge
listed_pages = images.listed_pages
scan = images.scan
repair = images.repair
