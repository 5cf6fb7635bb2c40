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

Three findings (:data:`nova_snapshot_ext.audit.KINDS`):

``backup-snapshot-gone``
    an image marked ``image_type=backup`` whose ``block_device_mapping``
    names a volume snapshot Cinder answers 404 for: the backup cannot be
    restored.  Reported, never fixed.
``leaked-volume-snapshot``
    a volume snapshot the plugin recorded taking for an image that is
    provably gone (:mod:`.volume_snapshots`); ``--fix --yes`` deletes it.
``unnamed-volume-snapshot``
    a volume snapshot no image the identity can list names, that Nova's
    name (``snapshot for <image name>``) or a plugin record says was taken
    for an image, without the proof :mod:`.volume_snapshots` needs:
    reported with why, never deleted.

Only what both identities can see is judged: images of projects the
Glance identity cannot list may still name a snapshot.  When both
identities have the ``admin`` role, every project's volume snapshots are
listed (``all_tenants``); else the Cinder identity's own project's.  The
report says which (:func:`coverage`), since Cinder's answer does not.
"""

from __future__ import annotations

import typing as ty

from nova_snapshot_ext.audit import images as images_mod
from nova_snapshot_ext.audit import report as report_mod
from nova_snapshot_ext.audit import volume_snapshots as snapshots_mod
from nova_snapshot_ext.backup import mark
from nova_snapshot_ext.cinder import client as cinder_mod
from nova_snapshot_ext.snapshot import tags


def _images(auditor: images_mod.AuditGlance, page_size: int,
            filters: ty.Mapping[str, ty.Any] | None,
            progress: ty.Callable[[int, int], None] | None
            ) -> ty.Iterator[dict[str, ty.Any]]:
    """Every image listed, each once, one page held at a time.

    :param progress: called after every page with the images and pages
        read so far.
    """
    images = pages = 0
    for page in images_mod.listed_pages(auditor, page_size, filters):
        yield from page
        images += len(page)
        pages += 1
        if progress is not None:
            progress(images, pages)


def coverage(cinder_scope: snapshots_mod.Scope,
             glance_scope: snapshots_mod.Scope,
             owner: str | None) -> dict[str, ty.Any]:
    """Which volume snapshots the Cinder checks list, for the report.

    Every project's only when both identities have the admin role: the
    Cinder one to list them (``all_tenants``), the Glance one to read the
    images that may name them (else each would be reported as not
    provably named, a finding about a healthy snapshot).

    :param cinder_scope: the Cinder identity's
        (:func:`.volume_snapshots.scope_of_session`).
    :param glance_scope: the Glance identity's
        (:func:`.volume_snapshots.scope_of`).
    :param owner: ``audit --owner`` (findings of that project only).
    :returns: ``{'all_projects': bool, 'project': the Cinder identity's
        project or None, 'owner': id or None, 'limited_by': None,
        'cinder' or 'glance'}`` (which identity lacks the admin role).
    """
    limited_by = (None if cinder_scope.admin and glance_scope.admin else
                  'glance' if cinder_scope.admin else 'cinder')
    return {'all_projects': limited_by is None,
            'project': cinder_scope.project, 'owner': owner,
            'limited_by': limited_by}


def describe_coverage(cover: ty.Mapping[str, ty.Any] | None) -> str:
    """One sentence of :func:`coverage` (``None``: the checks did not run)."""
    if cover is None:
        return ('Cinder checks: not run (no [snapshot_ext_cinder] '
                'credentials): volume snapshots were not audited.')
    project = cover['project'] or '(unknown)'
    if cover['all_projects']:
        seen = ("every project's volume snapshots (the Cinder and Glance "
                'identities have the admin role)')
    elif cover.get('limited_by') == 'glance':
        seen = ("project %s's volume snapshots only (the Glance identity "
                "has no admin role: other projects' images cannot be read "
                'to judge theirs)' % project)
    else:
        seen = ("project %s's volume snapshots only (the Cinder identity "
                "has no admin role: other projects' are not seen)"
                % project)
    owner = cover.get('owner')
    if owner:
        seen += ', findings of project %s (--owner)' % owner
        if not cover['all_projects'] and owner != cover['project']:
            seen += (": none of its volume snapshots were listed, so none "
                     'was judged')
    return 'Cinder checks: %s.' % seen


def scan(auditor: images_mod.AuditGlance, cinder: cinder_mod.CinderClient,
         page_size: int = images_mod.DEFAULT_PAGE_SIZE,
         filters: ty.Mapping[str, ty.Any] | None = None,
         progress: ty.Callable[[int, int], None] | None = None
         ) -> tuple[list[report_mod.Finding], dict[str, ty.Any]]:
    """The Cinder findings over every image and volume snapshot seen.

    Reads every image the identity can list again (one page at a time),
    whatever ``filters`` say: a volume snapshot is judged against every
    image that may name it, never against the filtered ones only.  What
    it keeps grows with the volume snapshots the images name, not with
    the images.

    :param filters: ``{'owner': project}`` (``audit --owner``) limits the
        *findings* to that project's backups and volume snapshots; other
        keys are refused.
    :param progress: called after every page of images with the images
        and pages read so far (``GET /v2/images`` requests).
    :returns: the findings, and which volume snapshots were listed
        (:func:`coverage`).
    :raises ValueError: a filter other than ``owner``.
    :raises GlanceError: an image page could not be listed.
    :raises CinderError: Cinder could not be read.
    """
    filters = dict(filters or {})
    owner = filters.pop('owner', None)
    if filters:
        raise ValueError('the Cinder checks filter by owner only, not %s'
                         % ', '.join(sorted(filters)))
    findings: list[report_mod.Finding] = []
    named: set[str] = set()
    for image in _images(auditor, page_size, None, progress):
        ids = mark.mapped_snapshot_ids(image)
        named.update(map(mark.snapshot_key, ids))
        named.update(tags.tagged_keys(image))
        if image.get('image_type') != 'backup' or (
                owner is not None and image.get('owner') != owner):
            continue
        gone = [snap_id for snap_id in ids
                if cinder.get_snapshot(snap_id) is None]
        if gone:
            findings.append(report_mod.Finding(
                image_id=image['id'], kind='backup-snapshot-gone',
                evidence={'volume_snapshots_gone': gone,
                          'instance_uuid': image.get('instance_uuid'),
                          'backup_type': image.get('backup_type')},
                owner=image.get('owner'), name=image.get('name')))
    scope = snapshots_mod.scope_of(getattr(auditor, 'glance', None))
    cover = coverage(snapshots_mod.scope_of_session(cinder.session,
                                                    cinder.auth),
                     scope, owner)
    snapshots = cinder.list_snapshots(all_projects=cover['all_projects'])
    if owner is not None:
        snapshots = (snap for snap in snapshots
                     if snap.get(cinder_mod.PROJECT_ATTRIBUTE) == owner)
    findings += snapshots_mod.judge_snapshots(auditor, snapshots, named,
                                              scope)
    return findings, cover


def repair(cinder: cinder_mod.CinderClient, auditor: images_mod.AuditGlance,
           report: report_mod.Report, act: bool) -> list[report_mod.Action]:
    """``--fix``: delete leaked volume snapshots.

    See :func:`.volume_snapshots.repair`.
    """
    return snapshots_mod.repair(cinder, auditor, report, act,
                                snapshots_mod.scope_of(auditor.glance))
