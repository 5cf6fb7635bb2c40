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

"""Volume snapshots the plugin took for an image that is gone (leaks).

Glance and Nova never delete the Cinder volume snapshots a volume-backed
snapshot image names: when such an image is deleted by anyone but the
rotation, its snapshots leak.  Nova names them ``snapshot for <image
name>``, which anyone can write, so that name proves nothing.  What the
plugin writes is the proof:

**The record.**  Once an image the plugin made is active, the plugin
writes Cinder snapshot metadata (``POST /snapshots/{id}/metadata``,
Cinder's snapshot metadata API) on each volume snapshot the image names:

``snapshot_ext_image``
    the image id;
``snapshot_ext_project``
    the image's owner project;
``snapshot_ext_record``
    ``uuid5(RECORD_NAMESPACE, "<snapshot id>|<image id>|<project>")``
    (:func:`record_of`): not a secret, it binds the record to this very
    snapshot (metadata copied onto another snapshot, or an edited image
    id, no longer matches), as the backup marker binds a backup to its
    image (:mod:`.mark`).

**The decision** is the audit's
(:mod:`nova_snapshot_ext.audit.volume_snapshots`): only a snapshot whose
record matches (:func:`record_refusal`) and whose image is provably gone
is ever deleted.
"""

from __future__ import annotations

import typing as ty
import uuid

from oslo_log import log as logging

from nova_snapshot_ext.cinder import client as cinder_mod
from nova_snapshot_ext import exception
from nova_snapshot_ext.snapshot import tags

LOG = logging.getLogger(__name__)

IMAGE_KEY = 'snapshot_ext_image'
PROJECT_KEY = 'snapshot_ext_project'
RECORD_KEY = 'snapshot_ext_record'

#: uuid5 namespace of the record (fixed forever).
RECORD_NAMESPACE = uuid.UUID('a7c3e91d-4b2f-5d60-8e1a-3f9b0c6d2e75')

#: The name prefix Nova gives the volume snapshots of an image
#: (``compute.api.API.snapshot_volume_backed``): reported, never proof.
NOVA_SNAPSHOT_NAME_PREFIX = 'snapshot for '


def record_of(snapshot_id: str, image_id: str, project: str
              ) -> dict[str, str]:
    """The Cinder snapshot metadata recording that ``image_id`` names it.

    :param snapshot_id: the volume snapshot (any spelling).
    :param image_id: the active image the plugin made.
    :param project: the image's owner project.
    """
    key = tags.snapshot_key(snapshot_id)
    proof = uuid.uuid5(RECORD_NAMESPACE, '|'.join((key, image_id, project)))
    return {IMAGE_KEY: image_id, PROJECT_KEY: project,
            RECORD_KEY: str(proof)}


def record_refusal(snap: ty.Mapping[str, ty.Any]) -> str | None:
    """Why ``snap`` carries no valid plugin record, or ``None``.

    :param snap: a Cinder snapshot document (``metadata`` a dict).
    """
    meta = snap.get('metadata')
    meta = meta if isinstance(meta, dict) else {}
    if not meta.get(IMAGE_KEY):
        return 'no %s record: not provably taken by the plugin' % IMAGE_KEY
    image_id, project = str(meta[IMAGE_KEY]), str(meta.get(PROJECT_KEY))
    wanted = record_of(str(snap.get('id')), image_id, project)
    if meta.get(RECORD_KEY) != wanted[RECORD_KEY]:
        return ('%s does not match the snapshot id, %s and %s (copied from '
                'another snapshot, edited, or not written by the plugin)'
                % (RECORD_KEY, IMAGE_KEY, PROJECT_KEY))
    held = snap.get(cinder_mod.PROJECT_ATTRIBUTE)
    if held is None:
        return ('Cinder does not show the snapshot\'s project (%s): the '
                'record cannot be proved to be its own'
                % cinder_mod.PROJECT_ATTRIBUTE)
    if held != project:
        return ('the record names project %s, the snapshot belongs to %s'
                % (project, held))
    return None


class SnapshotRecorder(ty.Protocol):
    """Writes Cinder snapshot metadata.

    :class:`~.cinder.CinderClient`, or inside Nova
    :class:`~nova_snapshot_ext.cinder.nova_api.NovaCinder`.
    """

    def set_snapshot_metadata(self, snapshot_id: str,
                              metadata: ty.Mapping[str, str]) -> None:
        """:raises CinderError: it could not."""


def record_taken(recorder: SnapshotRecorder, image_id: str, project: str,
                 snapshot_ids: ty.Iterable[str]) -> dict[str, str]:
    """Write the record on each volume snapshot an active image names.

    Called once the image is active: a failure here never fails the
    snapshot (it succeeded); it is logged (WARNING) and returned, and the
    audit then reports the snapshot without a record, never deletes it.

    :param image_id: the active image the plugin made.
    :param project: the image's owner project.
    :returns: snapshot id -> why its record was not written.
    """
    failed: dict[str, str] = {}
    for snap_id in sorted(set(snapshot_ids)):
        try:
            recorder.set_snapshot_metadata(
                snap_id, record_of(snap_id, image_id, project))
        except exception.CinderError as err:
            failed[snap_id] = err.format_message()
            LOG.warning('nova-snapshot-ext: image %(image)s is active; the '
                        'record on its volume snapshot %(snap)s was not '
                        'written (audit will not delete it if it leaks): '
                        '%(why)s', {'image': image_id, 'snap': snap_id,
                                    'why': failed[snap_id]})
    return failed
