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

"""What Nova writes into a snapshot image, per mapping: the one rule.

:func:`mapping_refusal` judges a request's mapping (the host's, before
its volume mapping is rewritten) and an entry already written in an image
(``nova-snapshot-ext audit``, Nova's own metadata in the hook).
"""

from __future__ import annotations

import typing as ty

from nova_snapshot_ext.snapshot import request_rules as rules


#: What Nova writes into a volume-backed snapshot image, per mapping
#: (``nova/compute/api.py`` ``API.snapshot_volume_backed`` with
#: ``nova/block_device.py`` ``snapshot_from_bdm`` and
#: ``BlockDeviceDict.get_image_mapping``): a ``no_device`` mapping is
#: skipped; a mapping with ``destination_type`` ``volume`` (any source)
#: is written as ``source_type`` ``snapshot`` with the ``snapshot_id`` of
#: the Cinder snapshot taken of it; every other mapping is copied as it
#: is, and Nova's other mappings are local disks (``destination_type``
#: ``local``) made from ``blank`` (swap, ephemeral) or an ``image``
#: (``BlockDeviceDict.from_api`` gives them no Cinder id;
#: ``from_legacy`` gives every mapping but ``no_device`` a destination).
LOCAL_SOURCE_TYPES = rules.LOCAL_SOURCE_TYPES


def mapping_refusal(entry: ty.Mapping[str, ty.Any], written: bool = False
                    ) -> tuple[str, str, bool] | None:
    """Why a mapping is not one Nova writes into a snapshot image.

    The one home of the rule (:data:`LOCAL_SOURCE_TYPES`), for a request
    mapping (the host's, before the volume mapping is rewritten) and for
    an entry already written in an image (``nova-snapshot-ext audit``).

    :param entry: the mapping's fields (``source_type``,
        ``destination_type``, ``snapshot_id``, ``volume_id``,
        ``no_device``).
    :param written: judge an image entry as written: a volume entry must
        then already be ``source_type`` ``snapshot`` (Nova attaches the
        ``volume_id`` of a ``volume`` entry, whatever else it says).
    :returns: ``(field, reason, unsafe)`` or ``None``; ``unsafe`` is
        False only for a volume mapping that lacks the id of its snapshot
        (incomplete: nothing would boot from it, nothing is handed over).
    """
    if entry.get('no_device'):
        if written and entry.get('volume_id'):
            # A boot reserves every entry's volume_id, no_device or not
            # (compute API _get_volumes_for_bdms, _validate_bdm); Nova
            # never writes a no_device entry into a snapshot image.
            return ('volume_id', 'a no_device entry of a snapshot image '
                    'must name no volume: a server booted from the image '
                    'would reserve volume %s' % entry.get('volume_id'), True)
        return None
    destination = entry.get('destination_type')
    if destination == 'volume':
        return _volume_refusal(entry, written)
    source = entry.get('source_type')
    if destination is None:
        snapshot_id = entry.get('snapshot_id')
        if source in ('volume', 'snapshot') and not _names_snapshot(entry):
            return ('snapshot_id', 'a %s mapping without destination_type '
                    'or snapshot_id would give a server booted from the '
                    'image the source\'s own volume %s; Nova writes a '
                    'volume into a snapshot image only as the Cinder '
                    'snapshot taken of it: set destination_type volume and '
                    'the snapshot_id' % (
                        source, entry.get('volume_id') or snapshot_id),
                    True)
        return ('destination_type', 'is required (volume or local) on a '
                'mapping that is not no_device: Nova gives every other '
                'mapping one', True)
    if destination != 'local':
        return ('destination_type', 'must be volume or local, got %r'
                % (destination,), True)
    if source not in LOCAL_SOURCE_TYPES:
        return ('source_type', 'a local disk (destination_type local) is '
                'made from %s, got %r: Nova writes a volume into a snapshot '
                'image only as the Cinder snapshot taken of it '
                '(destination_type volume with snapshot_id)'
                % (' or '.join(LOCAL_SOURCE_TYPES), source), True)
    for key in ('volume_id', 'snapshot_id'):
        if entry.get(key):
            return (key, 'a local disk (destination_type local) names no '
                    'Cinder %s: the image would hand %s to every server '
                    'booted from it; leave it out'
                    % (key.split('_')[0], entry.get(key)), True)
    return None


def _names_snapshot(entry: ty.Mapping[str, ty.Any]) -> bool:
    """Whether the mapping carries a (non-blank) ``snapshot_id``."""
    snapshot_id = entry.get('snapshot_id')
    return isinstance(snapshot_id, str) and bool(snapshot_id.strip())


def _volume_refusal(entry: ty.Mapping[str, ty.Any], written: bool
                    ) -> tuple[str, str, bool] | None:
    """:func:`mapping_refusal` of a ``destination_type`` volume mapping."""
    source = entry.get('source_type')
    if written and source != 'snapshot':
        return ('source_type', 'a volume entry of a snapshot image is the '
                'Cinder snapshot taken of the volume (source_type snapshot '
                'with snapshot_id), got source_type %r: a server booted '
                'from the image would be given %s'
                % (source, 'the in-use volume %s' % entry.get('volume_id')
                   if source == 'volume' else 'a disk Nova never records'),
                True)
    if not _names_snapshot(entry):
        return ('snapshot_id', 'a volume mapping must carry the id of the '
                'Cinder snapshot the host took of volume %s'
                % entry.get('volume_id'), False)
    if written and entry.get('volume_id'):
        # Nova's snapshot_from_bdm never writes one; a boot attaches any
        # volume_id it finds (compute API _validate_bdm), and creates a
        # volume from the snapshot only without one (virt/block_device.py
        # DriverVolSnapshotBlockDevice.attach).
        return ('volume_id', 'a snapshot entry of a snapshot image must '
                'name no volume: a server booted from the image would be '
                'given volume %s instead of a new volume made from '
                'snapshot %s' % (entry.get('volume_id'),
                                 entry.get('snapshot_id')), True)
    return None
