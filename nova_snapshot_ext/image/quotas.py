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

"""Glance's quotas (Keystone unified limits) against a snapshot's plan.

With ``[DEFAULT] use_keystone_limits = True`` Glance enforces four limits
registered in Keystone for the image service, per project
(``GET /v2/info/usage`` reports usage and limit of each).  Where each is
checked (Glance 33, ``glance/api/v2/images.py`` and ``image_data.py``;
oslo.limit refuses when usage + delta > limit):

* ``image_count_total`` -- at the create, delta 1: refused with 413 when
  the project already holds ``limit`` images;
* ``image_count_uploading`` -- at an upload, *after* Glance set the image
  to ``saving``, delta 0: the image counts itself, so a limit of 0 always
  refuses and a limit of 1 refuses while another upload of the project
  runs (413; the image returns to ``queued``);
* ``image_size_total`` (MiB) -- at an upload, delta = the payload's whole
  MiB: refused when usage + delta > limit;
* ``image_stage_total`` (MiB) -- only for the interoperable import's
  staging, which the plugin never uses.

Adding a location (API 2.17) is checked against none of them.  Usage is
Glance's (floor of bytes / MiB for the sizes).  Before Glance 31
(LP#2118756) an image deleted with ``[DEFAULT] delayed_delete`` stays
``pending_delete`` and still counts in ``image_count_total`` and
``image_size_total`` until ``glance-scrubber`` runs -- e.g. the images a
failed snapshot's cleanup just deleted.  The usage document does not say
which images it counts, and a ``pending_delete`` image is marked deleted
in Glance's database (no image list shows it), so a refusal of those two
limits says the headroom may be held by ``pending_delete`` images and
that the scrubber frees it (:data:`PENDING_DELETE_NOTE`).
"""

from __future__ import annotations

import typing as ty

from oslo_log import log as logging

from nova_snapshot_ext import exception

LOG = logging.getLogger(__name__)

MIB = 1024 * 1024
COUNT_TOTAL = 'image_count_total'
COUNT_UPLOADING = 'image_count_uploading'
SIZE_TOTAL = 'image_size_total'
STAGE_TOTAL = 'image_stage_total'
#: The limits Glance enforces, in the order a snapshot meets them.
RESOURCES = (COUNT_TOTAL, COUNT_UPLOADING, SIZE_TOTAL, STAGE_TOTAL)
#: The limits an image in ``pending_delete`` held before Glance 31.
HELD_BY_PENDING_DELETE = (COUNT_TOTAL, SIZE_TOTAL)
#: Appended to a refusal of :data:`HELD_BY_PENDING_DELETE` limits.
PENDING_DELETE_NOTE = (
    '; with [DEFAULT] delayed_delete on a Glance older than 31, images of '
    'the project deleted but still pending_delete (e.g. a failed '
    "snapshot's cleanup) count here too: running glance-scrubber frees "
    'what they hold')
#: The unit of each resource in messages.
UNITS = {COUNT_TOTAL: 'images', COUNT_UPLOADING: 'uploads',
         SIZE_TOTAL: 'MiB', STAGE_TOTAL: 'MiB'}


def named_in(text: str) -> str | None:
    """The Glance quota a refusal's text names (a 413's body), or None.

    :param text: Glance's answer, e.g. ``'... Resource image_count_uploading
        is over limit of 0 ...'``.
    """
    for name in RESOURCES:
        if name in text:
            return name
    return None


def describe(resource: str) -> str:
    """What a quota refusal means and what to change, for a message."""
    return ("Glance's quota %s, a Keystone unified limit of the image "
            "service for the image's project, was reached%s: raise the "
            "project's limit or free some of it; retrying unchanged fails "
            "the same way" % (
                resource, ' (the image being uploaded counts itself)'
                if resource == COUNT_UPLOADING else ''))


def _is_count(value: ty.Any) -> ty.TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def parse_usage(document: ty.Mapping[str, ty.Any]
                ) -> tuple[dict[str, dict[str, int]], list[str]]:
    """The usable entries of a usage document, and what was skipped.

    The one home of the usage document's shape (``GET /v2/info/usage``'s
    ``usage`` object): each entry must be an object with an integer
    ``usage`` (0 or more) and an integer ``limit`` (a negative limit is
    Keystone's "unlimited", kept: :func:`_over` never refuses it).  An
    entry of another shape (``null``, ``"unlimited"``, a bare number, a
    missing key) is skipped: its limit is not checked before the snapshot
    (Glance still enforces it).

    :param document: the ``usage`` object, already known to be a mapping.
    :returns: ``({resource: {'usage': int, 'limit': int}}, skipped)``;
        ``skipped`` holds one sentence per unusable entry, naming it.
    """
    entries: dict[str, dict[str, int]] = {}
    skipped: list[str] = []
    for name, entry in document.items():
        if not isinstance(entry, ty.Mapping):
            skipped.append('%s is %r, not an object with usage and limit'
                           % (name, entry))
            continue
        used, limit = entry.get('usage'), entry.get('limit')
        if not _is_count(used) or used < 0 or not _is_count(limit):
            skipped.append('%s has usage %r and limit %r, not integers'
                           % (name, used, limit))
            continue
        entries[str(name)] = {'usage': used, 'limit': limit}
    return entries, skipped


def unlimited(entry: ty.Mapping[str, int]) -> bool:
    """Whether a usage entry's limit is Keystone's "unlimited" (< 0).

    oslo.limit, which Glance enforces with, skips a negative limit.
    """
    return entry['limit'] < 0


def read_usage(glance: ty.Any
               ) -> dict[str, dict[str, int]] | None:
    """The project's usage and limits, or None when Glance has none.

    :param glance: a :class:`~nova_snapshot_ext.image.glance.GlanceClient`
        (not imported here: it imports this module).

    :returns: :meth:`GlanceClient.usage`'s dict; None when Glance enforces
        no unified limits, has no usage API, or refuses to tell or answers
        something unreadable (logged: the snapshot is not refused for what
        cannot be read; see :func:`read_limits`).
    :raises GlanceUnavailable: Glance could not be reached at all.
    """
    return read_limits(glance)[0]


def read_limits(glance: ty.Any
                ) -> tuple[dict[str, dict[str, int]] | None, bool]:
    """:func:`read_usage`, and whether Glance enforces no limits at all.

    An empty usage document (Glance's ``[DEFAULT] use_keystone_limits``
    off: it then answers ``{}`` for every project) or no usage API (404,
    or a glanceclient without the call) is a fact of the Glance, not of
    the project: a caller may keep it with the Glance's capabilities.  A
    refusal to tell (403...) is not: it may be this identity's.

    The read is advisory: every failure of it is logged and the snapshot
    goes on unchecked -- a refusal, an unreadable or malformed document,
    and a transient fault of a Glance that answered (502/503/504 from it
    or a proxy in front, an answer cut mid-body or trickling past the
    deadline): the create that follows meets the same Glance and fails by
    its own cause if the fault persists.  Only a Glance that could not be
    reached at all (no answer: connection refused or reset before any
    answer, DNS, TLS, no connection before the deadline) is raised, as the
    snapshot cannot succeed (design rule 10: exit 3).

    :returns: ``(usage or None, enforces_none)``.
    :raises GlanceUnavailable: Glance could not be reached at all.
    """
    try:
        usage = glance.usage()
    except exception.GlanceError as err:
        if exception.unreachable(err) and err.status is None:
            raise
        LOG.warning('Glance quota usage (GET /v2/info/usage) cannot be '
                    'read; quotas are not checked before the snapshot: %s',
                    err.format_message())
        return None, False
    return usage or None, not usage


def headroom(usage: ty.Mapping[str, ty.Mapping[str, int]]
             ) -> dict[str, dict[str, int | None]]:
    """Usage, limit and what is left of each limit Glance reported.

    :returns: ``{resource: {'usage', 'limit', 'left'}}`` (``left`` may be
        negative when the project is already over; ``None`` when the
        limit is negative, Keystone's "unlimited").
    """
    return {name: {'usage': entry['usage'], 'limit': entry['limit'],
                   'left': None if unlimited(entry)
                   else entry['limit'] - entry['usage']}
            for name, entry in usage.items()
            if 'usage' in entry and 'limit' in entry}


def _over(usage: ty.Mapping[str, ty.Mapping[str, int]], name: str,
          delta: int) -> str | None:
    """Why ``name`` refuses ``delta`` more, or None when it fits.

    A negative limit is unlimited (oslo.limit skips it): it fits.
    """
    entry = usage.get(name)
    if (not entry or unlimited(entry) or
            entry['usage'] + delta <= entry['limit']):
        return None
    return ('%s: the project uses %d of %d %s and this needs %d more%s' % (
        name, entry['usage'], entry['limit'], UNITS[name], delta,
        PENDING_DELETE_NOTE if name in HELD_BY_PENDING_DELETE else ''))


def create_refusal(usage: ty.Mapping[str, ty.Mapping[str, int]]
                   ) -> str | None:
    """Why Glance would refuse to create the image, or None."""
    return _over(usage, COUNT_TOTAL, 1)


def attempt_refusal(usage: ty.Mapping[str, ty.Mapping[str, int]],
                    attempt: ty.Any) -> str | None:
    """Why Glance's quotas would refuse one activation attempt, or None.

    :param attempt: a :class:`~nova_snapshot_ext.snapshot.plan.
        PlannedAttempt` (``method``, ``size``).

    Uploads meet ``image_count_uploading`` (the image counts itself: one
    more than the uploads now running) and ``image_size_total`` (the
    payload's whole MiB); a location meets none.
    """
    if attempt.method != 'upload':
        return None
    return (_over(usage, COUNT_UPLOADING, 1) or
            _over(usage, SIZE_TOTAL, attempt.size // MIB))


def check_plan(usage: ty.Mapping[str, ty.Mapping[str, int]] | None,
               attempts: ty.Sequence[ty.Any],
               project: str | None = None) -> list[str]:
    """Refuse a snapshot that cannot fit the project's Glance quotas.

    :param usage: :func:`read_usage`'s answer (None: nothing to check).
    :param attempts: the activation plan.
    :param project: the project's id, for the message.
    :returns: notes for attempts the quotas will refuse while another
        attempt of the plan fits (e.g. the uploads, when a location
        attempt remains).
    :raises GlanceQuotaExceeded: the create, or every attempt, would be
        refused; the message names the limit, its usage and how to fix.
    """
    if not usage:
        return []
    why = create_refusal(usage)
    if why is None:
        refusals = [(a, attempt_refusal(usage, a)) for a in attempts]
        blocked = [(a, r) for a, r in refusals if r]
        if attempts and len(blocked) == len(attempts):
            why = blocked[0][1]
        else:
            return ['%s will be refused by Glance\'s quota %s' % (
                a.describe(), r) for a, r in blocked]
    assert why is not None
    raise exception.GlanceQuotaExceeded(
        project=project or "(the image's owner)", reason=why,
        resource=why.split(':', 1)[0])
