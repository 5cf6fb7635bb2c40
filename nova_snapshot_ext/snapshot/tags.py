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

"""Image tags naming the Cinder volume snapshots an image's mappings name.

Every image the plugin makes carries one Glance tag per volume snapshot
its ``block_device_mapping`` names: ``snapshot-ext:volume-snapshot:<id>``
with the snapshot id in the one spelling :func:`snapshot_key` gives
(lower case UUID with dashes), 65 characters.  Glance filters on tags
server-side, exact match (``GET /v2/images?tag=...``; each ``tag``
parameter is one more AND condition on ``image_tags.value`` with
``deleted = false``: openstack/glance ``glance/db/sqlalchemy/api.py``
``_make_conditions_from_filters``, the same code in every stored version
of that file read, master included; proven against the embedded Glance 33
by ``tests/functional/test_backups.py``), so a rotation asks Glance only
about the volume snapshots it is about to delete, whatever the number of
other images (:mod:`nova_snapshot_ext.backup.rotation`).

Glance limits (``glance/api/v2/images.py`` image schema; ``glance/common/
config.py``): a tag is at most 255 characters, an image carries at most
``image_tag_quota`` tags (default 128; 413 past it), which the preflight
checks against ``[snapshot_ext] image_tag_quota`` before anything exists.

The prefix is the plugin's own namespace: a user tag takes that form
only on purpose, and its only effect is to keep a volume snapshot a
rotation would otherwise delete (a tag only ever protects).
"""

from __future__ import annotations

import typing as ty

from nova_snapshot_ext.snapshot import request as request_mod

#: The prefix of every volume snapshot tag.
PREFIX = 'snapshot-ext:volume-snapshot:'

#: Glance's limit on one tag (``image_tags.value`` is ``String(255)``).
MAX_TAG_LENGTH = 255


def snapshot_key(snapshot_id: str) -> str:
    """One key per Cinder snapshot, whichever spelling names it.

    Cinder ids are UUIDs, found in any spelling (case, braces, no dashes,
    blanks around: MySQL compares them case-insensitively), so an image
    that names ``SNAP`` boots from ``snap``.
    """
    return (request_mod.cinder_id(snapshot_id) or '').lower()


def tag_of(snapshot_id: str) -> str | None:
    """The tag naming volume snapshot ``snapshot_id``.

    :returns: the tag, or ``None`` for an empty id or one whose tag would
        be longer than :data:`MAX_TAG_LENGTH` (Cinder ids are UUIDs:
        never in practice); such a snapshot is not findable by tag.
    """
    key = snapshot_key(snapshot_id)
    tag = PREFIX + key
    if not key or len(tag) > MAX_TAG_LENGTH:
        return None
    return tag


def tags_of(snapshot_ids: ty.Iterable[str]) -> list[str]:
    """The tags of these volume snapshots, sorted, one per snapshot."""
    return sorted({tag for tag in map(tag_of, snapshot_ids) if tag})


def untagged(image: ty.Mapping[str, ty.Any],
             snapshot_ids: ty.Iterable[str]) -> list[str]:
    """The ids among ``snapshot_ids`` that ``image`` carries no tag for.

    :param image: a Glance image (``tags`` a list of strings).
    :returns: the ids, in the order given.
    """
    # Exactly the plugin's tag: the one a rotation's tag query finds on
    # every database (PostgreSQL and SQLite compare tags case-sensitively).
    held = image.get('tags')
    held = set(held) if isinstance(held, list) else set()
    return [snap_id for snap_id in snapshot_ids
            if tag_of(snap_id) not in held]


def tagged_keys(image: ty.Mapping[str, ty.Any]) -> set[str]:
    """The snapshot keys ``image``'s volume snapshot tags name.

    Read as a volume snapshot id is read (:func:`snapshot_key`): a tag in
    another case or spelling (a user's look-alike; MySQL's tag filter
    matches it case-insensitively) names the same snapshot, so it
    protects it wherever tags are read from the images themselves.
    """
    held = image.get('tags')
    if not isinstance(held, list):
        return set()
    keys = {snapshot_key(tag[len(PREFIX):]) for tag in held
            if isinstance(tag, str) and tag.lower().startswith(PREFIX)}
    keys.discard('')
    return keys
