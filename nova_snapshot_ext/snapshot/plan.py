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

"""The activation plan: the ordered attempts for one snapshot.

An attempt uploads an honest payload (:mod:`nova_snapshot_ext.image.
payloads`): zero bytes labelled ``raw``, or a genuinely valid empty image
of another format.  The order is:

1. the operator's ``[snapshot_ext] disk_formats`` if set, else ``raw``
   followed by the driver's readable formats in its preference order;
2. filtered to what this Glance's schema allows, what the driver reads
   (``raw`` zero bytes excepted: it is what Nova itself uploads and no
   hypervisor ever reads it, the image boots from its volume mappings),
   and what we can make honestly.

Every attempt uses container_format ``bare``: Glance inspects ``bare``
uploads, so the label is checked; other container formats would skip the
check, which design rule 1 forbids relying on.
"""

from __future__ import annotations

import dataclasses
import typing as ty

from nova_snapshot_ext.image import payloads

if ty.TYPE_CHECKING:
    from nova_snapshot_ext import driver as driver_mod
    from nova_snapshot_ext.image import capabilities as caps_mod

CONTAINER_FORMAT = 'bare'


@dataclasses.dataclass(frozen=True)
class PlannedAttempt:
    """One way to activate the image.

    :ivar method: ``'upload'``.
    :ivar disk_format: Glance disk_format declared.
    :ivar container_format: Glance container_format declared.
    :ivar size: payload size in bytes.
    """

    method: str
    disk_format: str
    container_format: str = CONTAINER_FORMAT
    size: int = 0

    def describe(self) -> str:
        """Human form, e.g. ``upload qcow2 (1536 B, valid empty image)``."""
        if self.size == 0:
            return 'upload %s (0 B)' % self.disk_format
        return 'upload %s (%d B, valid empty image)' % (
            self.disk_format, self.size)

    def to_dict(self) -> dict[str, ty.Any]:
        return dataclasses.asdict(self)


def candidate_formats(driver: driver_mod.SnapshotDriver,
                      pinned: ty.Sequence[str] = ()) -> list[str]:
    """Formats in the order they would be tried, before Glance filtering.

    :param driver: the hypervisor driver.
    :param pinned: ``[snapshot_ext] disk_formats``.
    """
    readable = list(driver.disk_formats)
    order = list(pinned) if pinned else ['raw'] + readable
    result = []
    for fmt in order:
        if fmt in result:
            continue
        if fmt != 'raw' and fmt not in readable:
            continue
        result.append(fmt)
    return result


def build_plan(capabilities: caps_mod.GlanceCapabilities,
               driver: driver_mod.SnapshotDriver,
               pinned: ty.Sequence[str] = ()) -> list[PlannedAttempt]:
    """The ordered attempts this Glance and this driver allow.

    :returns: possibly empty list of :class:`PlannedAttempt`; the caller
        turns an empty plan into
        :class:`~nova_snapshot_ext.exception.FormatNotAllowed`.
    """
    if CONTAINER_FORMAT not in capabilities.container_formats:
        return []
    plan = []
    for fmt in candidate_formats(driver, pinned):
        if fmt not in capabilities.disk_formats:
            continue
        if fmt not in payloads.SUPPORTED_FORMATS:
            continue
        plan.append(PlannedAttempt('upload', fmt, CONTAINER_FORMAT,
                                   payloads.payload_size(fmt)))
    return plan


def explain_empty_plan(capabilities: caps_mod.GlanceCapabilities,
                       driver: driver_mod.SnapshotDriver,
                       pinned: ty.Sequence[str] = ()) -> str:
    """Why :func:`build_plan` returned nothing, in one sentence."""
    if CONTAINER_FORMAT not in capabilities.container_formats:
        return ("this Glance does not allow container_format 'bare', the "
                "only one whose content Glance checks")
    candidates = candidate_formats(driver, pinned)
    allowed = [f for f in candidates if f in capabilities.disk_formats]
    if not allowed:
        why = ('none of the formats tried (%s) is allowed by this Glance'
               % ', '.join(candidates))
        if pinned:
            why += ' (option [snapshot_ext] disk_formats)'
        return why
    return ('no honest empty image can be made in %s (we can make: %s)'
            % (', '.join(allowed), ', '.join(payloads.SUPPORTED_FORMATS)))
