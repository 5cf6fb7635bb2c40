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

"""Audit with Cinder: backups that cannot be restored, leaked snapshots.

Two findings (:data:`nova_snapshot_ext.audit.KINDS`), reported, never
fixed:

``backup-snapshot-gone``
    an image marked ``image_type=backup`` whose ``block_device_mapping``
    names a volume snapshot Cinder answers 404 for: the backup cannot be
    restored.
``unnamed-volume-snapshot``
    a volume snapshot Nova took for an image (Nova names them
    ``snapshot for <image name>``) that no image the identity can list
    names: the image was deleted (a rotation without Cinder credentials,
    or Nova's own image delete) and the snapshot leaked.

Only what both identities can see is judged: images of projects the
Glance identity cannot list may still name a snapshot.
"""

from __future__ import annotations

import typing as ty

from nova_snapshot_ext import audit
from nova_snapshot_ext.backup import cinder as cinder_mod
from nova_snapshot_ext.backup import mark

#: The name prefix Nova gives the volume snapshots of an image
#: (``compute.api.API.snapshot_volume_backed``).
NOVA_SNAPSHOT_NAME_PREFIX = 'snapshot for '


def _images(auditor: audit.AuditGlance, page_size: int,
            filters: ty.Mapping[str, ty.Any] | None
            ) -> ty.Iterator[dict[str, ty.Any]]:
    """Every image listed, each once, one page held at a time."""
    for page in audit.listed_pages(auditor, page_size, filters):
        yield from page


def scan(auditor: audit.AuditGlance, cinder: cinder_mod.CinderClient,
         page_size: int = audit.DEFAULT_PAGE_SIZE,
         filters: ty.Mapping[str, ty.Any] | None = None
         ) -> list[audit.Finding]:
    """The Cinder findings over every image and volume snapshot seen.

    :raises GlanceError: an image page could not be listed.
    :raises CinderError: Cinder could not be read.
    """
    findings: list[audit.Finding] = []
    named: set[str] = set()
    for image in _images(auditor, page_size, filters):
        ids = mark.mapped_snapshot_ids(image)
        named.update(map(mark.snapshot_key, ids))
        if image.get('image_type') != 'backup':
            continue
        gone = [snap_id for snap_id in ids
                if cinder.get_snapshot(snap_id) is None]
        if gone:
            findings.append(audit.Finding(
                image_id=image['id'], kind='backup-snapshot-gone',
                evidence={'volume_snapshots_gone': gone,
                          'instance_uuid': image.get('instance_uuid'),
                          'backup_type': image.get('backup_type')},
                owner=image.get('owner'), name=image.get('name')))
    for snap in cinder.list_snapshots():
        name = snap.get('name') or snap.get('display_name') or ''
        if (str(name).startswith(NOVA_SNAPSHOT_NAME_PREFIX) and
                mark.snapshot_key(str(snap.get('id'))) not in named):
            findings.append(audit.Finding(
                image_id=str(snap.get('id')), kind='unnamed-volume-snapshot',
                evidence={'volume_snapshot': snap.get('id'),
                          'snapshot_name': name,
                          'volume_id': snap.get('volume_id')},
                owner=snap.get(cinder_mod.PROJECT_ATTRIBUTE)))
    return findings
