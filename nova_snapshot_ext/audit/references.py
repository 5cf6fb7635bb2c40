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

"""Images naming a plugin volume snapshot without its tag (an audit finding).

A rotation asks Glance which images name a volume snapshot by the tag the
plugin gives every image it makes (:mod:`~..snapshot.tags`) and by the
deleted backup's fingerprint (:mod:`.rotation`).  An image that names
such a snapshot in its ``block_device_mapping`` with neither (a copy
whose mapping was rewritten, Nova's own snapshot path naming a snapshot
by hand) is invisible to that question: the rotation that deletes the
plugin image may delete the snapshot it boots from.  The audit reports
each one as :data:`KIND`, so an operator adds the tag (the fix the
finding names) or sets ``[snapshot_ext] rotation_full_scan``.

Only snapshots a tagged image names are judged: an untagged image naming
a snapshot no tagged image names is no risk to a rotation (a rotation
deleting an untagged backup scans every image).  Memory: one set entry
per volume snapshot a scanned image names.
"""

from __future__ import annotations

import typing as ty

from nova_snapshot_ext.backup import mark
from nova_snapshot_ext.snapshot import tags

#: The finding's kind (:data:`nova_snapshot_ext.audit.KINDS`).
KIND = 'untagged-snapshot-reference'

#: Its meaning in the report.
MEANING = ('an image names a volume snapshot that a tagged image (one the '
           'plugin made) also names, without the tag '
           '"snapshot-ext:volume-snapshot:<id>": a rotation deleting the '
           'tagged image does not see it and may delete the snapshot it '
           'boots from (unless [snapshot_ext] rotation_full_scan); not '
           'fixed: add the tag to the image')


class UntaggedReferences:
    """Collects, image by image, what :data:`KIND` findings need."""

    def __init__(self) -> None:
        self._tagged: set[str] = set()
        self._untagged: dict[str, list[dict[str, ty.Any]]] = {}

    def add(self, image: ty.Mapping[str, ty.Any]) -> None:
        """Note the volume snapshots ``image`` names, tagged or not."""
        mapped = mark.mapped_snapshot_ids(image)
        self._tagged.update(tags.tagged_keys(image))
        for snap_id in tags.untagged(image, mapped):
            self._untagged.setdefault(mark.snapshot_key(snap_id), []).append(
                {'image_id': str(image.get('id')),
                 'owner': image.get('owner'), 'name': image.get('name'),
                 'snapshot_id': snap_id})

    def findings(self) -> list[dict[str, ty.Any]]:
        """One entry per (image, snapshot) to report, sorted.

        :returns: dicts with ``image_id``, ``owner``, ``name``,
            ``snapshot_id`` and ``tag`` (the tag the image lacks).
        """
        found = []
        for key in sorted(set(self._untagged) & self._tagged):
            for ref in self._untagged[key]:
                found.append(dict(ref, tag=tags.tag_of(key)))
        return sorted(found, key=lambda f: (f['image_id'], f['snapshot_id']))
