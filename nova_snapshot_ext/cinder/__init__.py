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

"""Cinder, the block-storage service: one home for the plugin's calls.

Two clients with one interface (``get_snapshot``-style reads,
``delete_snapshot(snapshot_id, owner)`` answering :data:`DELETED` or
:data:`GONE`, ``set_snapshot_metadata``), in rooms of one concern:

* :mod:`.client`: :class:`CinderClient`, keystoneauth1 on the
  block-storage service, its session from the loader and checks Glance's
  has (:func:`nova_snapshot_ext.loading.load_session`,
  ``[snapshot_ext_cinder]``): the CLI's ``backup`` and ``audit``;
* :mod:`.nova_api`: :class:`NovaCinder`, Nova's own Cinder API for one
  request context (the user's token, Nova's ``[cinder]``): inside
  nova-api;
* :mod:`.waits`: a volume snapshot made, and gone (Cinder answers before
  it acts), through either client.

Taking, settling and discarding the volume snapshots of a server is
Nova's work (its compute API, quiesce, BDMs) and stays in
:mod:`nova_snapshot_ext.nova.volumes`.
"""

from nova_snapshot_ext.cinder import client
from nova_snapshot_ext.cinder import nova_api

CinderClient = client.CinderClient
NovaCinder = nova_api.NovaCinder
translate = client.translate
DELETED = client.DELETED
GONE = client.GONE
PROJECT_ATTRIBUTE = client.PROJECT_ATTRIBUTE
SENT_ERRORS = client.SENT_ERRORS
