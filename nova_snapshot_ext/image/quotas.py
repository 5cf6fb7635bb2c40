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
in Glance's database (no image list shows it).  So a refusal of those two
limits names ``pending_delete`` images only when this Glance shows it: the
usage is above what the project's listed images add up to
(:func:`held_by_deleted`); on a Glance where deleted images no longer
count (31 and later) the two agree and nothing is said about them.

Whether a retry can succeed depends on the limit: ``image_count_total``
and ``image_size_total`` refuse the same request until the project frees
images or the limit is raised; ``image_count_uploading`` above 0 frees
itself as soon as the project's other uploads end (:func:`describe`).
"""

from __future__ import annotations

import re
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


_LIMIT_RE = re.compile(r'over limit of (-?\d+)')


def describe(resource: str, answer: str = '') -> str:
    """What a quota refusal means and what to change, for a message.

    True for the limit at hand: ``image_count_uploading`` counts only
    uploads in progress, so above 0 a retry succeeds once the project's
    other uploads end; a limit of 0 refuses every upload.  The totals
    refuse a retry until the project frees images or the limit is raised.

    :param answer: Glance's 413 text (``... is over limit of N ...``),
        read for the limit when it says it.
    """
    head = ("Glance's quota %s, a Keystone unified limit of the image "
            "service for the image's project, was reached" % resource)
    if resource == COUNT_UPLOADING:
        match = _LIMIT_RE.search(answer or '')
        limit = int(match.group(1)) if match else None
        if limit == 0:
            return ('%s (the image being uploaded counts itself, and the '
                    'limit is 0: no upload of the project can pass): raise '
                    "the project's limit, or activate through a location "
                    '(not counted); retrying unchanged fails the same way'
                    % head)
        return ('%s (the image being uploaded counts itself): other uploads '
                'of the project were in progress; a retry succeeds once '
                "they end, or raise the project's limit" % head)
    return ("%s: raise the project's limit or free some of it (delete "
            'images of the project); until then a retry fails the same way'
            % head)


def held_by_deleted(glance: ty.Any, usage: ty.Mapping[str, ty.Mapping[
        str, int]], resource: str, project: str | None) -> str | None:
    """Why part of a total's usage may be held by deleted images, or None.

    Said only when this Glance shows it: the usage Glance reports is above
    what the project's listed images add up to (a ``pending_delete``
    image is marked deleted, so no list shows it, yet Glance before 31
    with ``[DEFAULT] delayed_delete`` still counts it).  On a Glance where
    deleted images no longer count the two agree: None.  None too when
    the project is unknown or its images cannot be listed (nothing is
    claimed without evidence).

    :returns: a clause to append to the refusal (starts with ``'; '``).
    """
    entry = usage.get(resource)
    if resource not in HELD_BY_PENDING_DELETE or not entry or not project:
        return None
    try:
        images = (glance.list_images(owner=project) +
                  glance.list_images(owner=project, os_hidden=True))
    except (exception.GlanceError, AttributeError, TypeError) as err:
        LOG.debug('Images of project %s not listed: %s', project, err)
        return None
    if resource == COUNT_TOTAL:
        listed = len({i.get('id') for i in images})
    else:
        sizes = {i.get('id'): i.get('size') or 0 for i in images}
        listed = sum(s for s in sizes.values() if isinstance(s, int)) // MIB
    hidden = entry['usage'] - listed
    if hidden <= 0:
        return None
    return ('; %d %s of that usage belong to no image project %s lists: '
            'images deleted but still pending_delete count there (Glance '
            'before 31 with [DEFAULT] delayed_delete); running '
            'glance-scrubber frees them' % (hidden, UNITS[resource],
                                            project))


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
    return ('%s: the project uses %d of %d %s and this needs %d more' % (
        name, entry['usage'], entry['limit'], UNITS[name], delta))


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
               project: str | None = None,
               glance: ty.Any = None) -> list[str]:
    """Refuse a snapshot that cannot fit the project's Glance quotas.

    :param usage: :func:`read_usage`'s answer (None: nothing to check).
    :param attempts: the activation plan.
    :param project: the project's id, for the message.
    :param glance: the client, to tell whether deleted images hold part of
        a total that refuses (:func:`held_by_deleted`; only then).
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
    resource = why.split(':', 1)[0]
    if glance is not None:
        why += held_by_deleted(glance, usage, resource, project) or ''
    if resource == COUNT_UPLOADING and usage[resource]['limit'] > 0:
        why += ('; the uploads counted are in progress: the snapshot fits '
                'once they end')
    raise exception.GlanceQuotaExceeded(
        project=project or "(the image's owner)", reason=why,
        resource=why.split(':', 1)[0])
