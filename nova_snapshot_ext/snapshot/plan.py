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
   and what we can make honestly;
3. then, unless ``[snapshot_ext] driver_formats_only`` is set or
   ``disk_formats`` pins the list, every *other* format this Glance allows
   and we can make honestly, smallest payload first, marked
   ``fallback``.  The driver's formats are a preference, not a limit: a
   volume-backed boot never reads the payload.  Verified in Nova 34:
   ``nova/scheduler/request_filter.py`` ``require_image_type_support``
   returns without asking for a ``COMPUTE_IMAGE_TYPE_*`` trait when
   ``request_spec.is_bfv`` ("compute node image disk_format support does
   not matter"), and ``nova/compute/api.py``
   ``_validate_flavor_image_nostatus`` compares only ``min_disk`` with
   the root volume's size for a volume root; the disk itself is created
   from the snapshot in ``block_device_mapping``.  So a Glance whose
   formats the driver does not read still gets an honest image, and a 413
   on one payload has a smaller one to go to.

Every attempt uses container_format ``bare``: Glance inspects ``bare``
uploads, so the label is checked; other container formats would skip the
check, which design rule 1 forbids relying on.

A *location* attempt (``[snapshot_ext] activation_method``, issue 4) points
the image at the checked object of ``[snapshot_ext] location_url``
(:mod:`nova_snapshot_ext.image.locations`) instead of uploading.  It is
placed first (``location-first``) or last (``location-fallback``: reached
only after Glance refused every upload format); ``upload`` never adds it.
"""

from __future__ import annotations

import dataclasses
import functools
import typing as ty

from oslo_config import cfg
from oslo_log import log as logging

from nova_snapshot_ext import exception
from nova_snapshot_ext.image import payloads

if ty.TYPE_CHECKING:
    from nova_snapshot_ext import driver as driver_mod
    from nova_snapshot_ext.image import capabilities as caps_mod

LOG = logging.getLogger(__name__)

CONTAINER_FORMAT = 'bare'


@dataclasses.dataclass(frozen=True)
class PlannedAttempt:
    """One way to activate the image.

    :ivar method: ``'upload'`` or ``'location'``.
    :ivar disk_format: Glance disk_format declared.
    :ivar container_format: Glance container_format declared.
    :ivar size: payload (or location object) size in bytes.
    :ivar location_api: for a location: ``'new'`` (API 2.17) or
        ``'legacy'`` (JSON-patch); ``None`` for uploads.
    :ivar url: for a location: the *redacted* URL (safe to print).
    :ivar fallback: the format is not one the driver reads (planned only
        because a volume-backed boot never reads the payload).
    """

    method: str
    disk_format: str
    container_format: str = CONTAINER_FORMAT
    size: int = 0
    location_api: str | None = None
    url: str | None = None
    fallback: bool = False

    def describe(self) -> str:
        """Human form of the attempt.

        E.g. ``upload qcow2 (1536 B, valid empty image)`` or
        ``location http://host/empty.qcow2 (new API, qcow2, 1536 B)``.
        """
        return self._description

    @functools.cached_property
    def _description(self) -> str:
        # Once per planned attempt: a kept plan serves many snapshots, and
        # each result lists the plan.
        if self.method == 'location':
            return 'location %s (%s API, %s, %d B)' % (
                self.url, self.location_api, self.disk_format, self.size)
        tail = ', not a driver format' if self.fallback else ''
        if self.size == 0:
            return 'upload %s (0 B%s)' % (self.disk_format, tail)
        return 'upload %s (%d B, valid empty image%s)' % (
            self.disk_format, self.size, tail)

    def fallback_note(self) -> str:
        """The WARNING / result note when this fallback attempt is used."""
        return ('activated as %s, a format the driver does not read: the '
                'image boots from its volume mappings, which never read '
                'the payload (set [snapshot_ext] driver_formats_only to '
                'refuse instead)' % self.disk_format)

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


def location_attempt(disk_format: str, size: int, location_api: str,
                     redacted_url: str) -> PlannedAttempt:
    """A location :class:`PlannedAttempt` for a checked object.

    :param disk_format: the object's verified disk_format.
    :param size: the object's size in bytes (> 0).
    :param location_api: ``'new'`` or ``'legacy'``.
    :param redacted_url: the URL as :func:`~nova_snapshot_ext.image.
        locations.redact_url` shows it.
    """
    return PlannedAttempt('location', disk_format, CONTAINER_FORMAT, size,
                          location_api=location_api, url=redacted_url)


def place_location(uploads: list[PlannedAttempt],
                   location: PlannedAttempt | None,
                   method: str) -> list[PlannedAttempt]:
    """Insert the location attempt per ``[snapshot_ext] activation_method``.

    :param uploads: the upload attempts, in order.
    :param location: the location attempt, or ``None`` (none usable).
    :param method: ``'upload'``, ``'location-first'`` or
        ``'location-fallback'``.
    :returns: a new list.
    """
    if location is None or method == 'upload':
        return list(uploads)
    if method == 'location-first':
        return [location] + list(uploads)
    return list(uploads) + [location]


def build_plan(capabilities: caps_mod.GlanceCapabilities,
               driver: driver_mod.SnapshotDriver,
               pinned: ty.Sequence[str] = (),
               location: PlannedAttempt | None = None,
               method: str = 'upload',
               driver_formats_only: bool | None = None
               ) -> list[PlannedAttempt]:
    """The ordered attempts this Glance and this driver allow.

    :param capabilities: this Glance's capabilities.
    :param driver: the hypervisor driver.
    :param pinned: ``[snapshot_ext] disk_formats``.
    :param location: a usable location attempt (already checked against
        this Glance and the object), or ``None``.
    :param method: ``[snapshot_ext] activation_method``.
    :param driver_formats_only: ``[snapshot_ext] driver_formats_only``;
        ``None`` reads it from the driver's configuration.
    :returns: possibly empty list of :class:`PlannedAttempt`; the caller
        turns an empty plan into
        :class:`~nova_snapshot_ext.exception.FormatNotAllowed`.
    """
    uploads = upload_plan(capabilities, driver, pinned, driver_formats_only)
    if uploads and uploads[0].fallback and not (
            location is not None and method == 'location-first'):
        # Said when the plan is made, not as a warning: nothing is
        # activated yet (the engine warns once the fallback is what
        # activated the image; probe shows the plan).
        LOG.debug('planned fallback: %s', uploads[0].fallback_note())
    return place_location(uploads, location, method)


def formats_only(driver: driver_mod.SnapshotDriver,
                 value: bool | None = None) -> bool:
    """``[snapshot_ext] driver_formats_only`` as the plan reads it.

    :param value: the caller's value; ``None`` reads the driver's own
        configuration (a host may load the driver on another conf than
        the service's).
    """
    if value is not None:
        return value
    try:
        return bool(driver.conf.snapshot_ext.driver_formats_only)
    except (AttributeError, cfg.NoSuchOptError, cfg.NoSuchGroupError):
        return False


def fallback_formats(capabilities: caps_mod.GlanceCapabilities,
                     driver: driver_mod.SnapshotDriver,
                     pinned: ty.Sequence[str] = (),
                     driver_formats_only: bool | None = None) -> list[str]:
    """Formats planned after the driver's own, smallest payload first.

    Empty when ``pinned`` is set or ``driver_formats_only`` is true
    (``None``: read from the driver's configuration).
    """
    if pinned or formats_only(driver, driver_formats_only):
        return []
    own = set(candidate_formats(driver))
    others = [f for f in payloads.SUPPORTED_FORMATS
              if f in capabilities.disk_formats and f not in own]
    return sorted(others, key=lambda f: (payloads.payload_size(f), f))


def upload_plan(capabilities: caps_mod.GlanceCapabilities,
                driver: driver_mod.SnapshotDriver,
                pinned: ty.Sequence[str] = (),
                driver_formats_only: bool | None = None
                ) -> list[PlannedAttempt]:
    """The upload attempts alone, in order (see module docstring)."""
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
    for fmt in fallback_formats(capabilities, driver, pinned,
                                driver_formats_only):
        plan.append(PlannedAttempt('upload', fmt, CONTAINER_FORMAT,
                                   payloads.payload_size(fmt),
                                   fallback=True))
    return plan


def explain_empty_plan(capabilities: caps_mod.GlanceCapabilities,
                       driver: driver_mod.SnapshotDriver,
                       pinned: ty.Sequence[str] = (),
                       driver_formats_only: bool | None = None) -> str:
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
        elif formats_only(driver, driver_formats_only):
            why += ' (option [snapshot_ext] driver_formats_only)'
        else:
            why += (', and this Glance allows no other format an honest '
                    'empty image can be made in')
        return why
    return ('no honest empty image can be made in %s (we can make: %s)'
            % (', '.join(allowed), ', '.join(payloads.SUPPORTED_FORMATS)))


@dataclasses.dataclass(frozen=True)
class PlanDecision:
    """The plan policy's verdict for one Glance, driver and configuration.

    :ivar attempts: the plan (without the location when it is unusable).
    :ivar notes: why a configured location is left out
        (``location-fallback``), for the result and the log.
    :ivar refused: why preflight refuses every snapshot, in words, or
        ``None``: ``location-first`` with an unusable location, or no
        honest activation at all.
    :ivar error: the exception preflight raises for ``refused``
        (:class:`~nova_snapshot_ext.exception.LocationUnusable` or
        :class:`~nova_snapshot_ext.exception.FormatNotAllowed`).
    """

    attempts: list[PlannedAttempt]
    notes: list[str]
    refused: str | None = None
    error: exception.PreflightError | None = None


def decide(capabilities: caps_mod.GlanceCapabilities,
           driver: driver_mod.SnapshotDriver, pinned: ty.Sequence[str],
           method: str, location: PlannedAttempt | None,
           why_not: ty.Sequence[str], url: str | None) -> PlanDecision:
    """The one home of the plan policy (service, CLI ``probe``, demo).

    Location first (``location-first``: an unusable location refuses),
    location as a fallback (``location-fallback``: noted and left out),
    an empty plan (refused, saying why).

    :param pinned: ``[snapshot_ext] disk_formats``.
    :param method: ``[snapshot_ext] activation_method``.
    :param location: the usable location attempt, or ``None``.
    :param why_not: why the configured location is unusable (empty when
        it is usable or none is configured).
    :param url: the location's redacted URL (when one is configured).
    :returns: a :class:`PlanDecision`.
    """
    attempts = build_plan(capabilities, driver, pinned, location, method)
    unusable = '; '.join(why_not)
    notes = []
    if why_not and method != 'location-first':
        notes.append('location %s not used: %s' % (url, unusable))
    if why_not and method == 'location-first':
        return PlanDecision(
            attempts, notes,
            'activation_method is location-first and the location cannot '
            'be used: %s' % unusable,
            exception.LocationUnusable(url=url, reason=unusable))
    if attempts:
        return PlanDecision(attempts, notes)
    empty = explain_empty_plan(capabilities, driver, pinned)
    if why_not:
        reason = '%s; and no upload is possible either: %s' % (unusable,
                                                               empty)
        return PlanDecision(attempts, notes, reason,
                            exception.LocationUnusable(url=url,
                                                       reason=reason))
    return PlanDecision(attempts, notes, empty, exception.FormatNotAllowed(
        reason=empty,
        allowed=', '.join(capabilities.disk_formats) or '(none)',
        containers=', '.join(capabilities.container_formats) or '(none)',
        driver=driver.name, readable=', '.join(driver.disk_formats)))
