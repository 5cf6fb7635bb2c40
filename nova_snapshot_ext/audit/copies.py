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

"""Audit of the copies off the primary storage, with Cinder credentials.

Four findings (:data:`nova_snapshot_ext.audit.KINDS`), about the copies
:mod:`nova_snapshot_ext.backup.copies` records in Cinder's backup
metadata (only copies whose record proves them the plugin's, of the
Cinder identity's project, are judged):

``copy-in-error`` (a copy)
    Cinder shows it in ``error``: it holds nothing to restore.
    ``--fix --yes`` deletes it, after reading it again: still in error,
    still recorded, no incremental made on it.
``copy-chain-broken`` (a copy)
    an available incremental copy with no full copy of its volume of
    older data still there, available or being restored
    (:func:`~nova_snapshot_ext.backup.copies.base_of`): its chain lost
    its base, Cinder cannot restore it.  Not
    fixed; the next copy of that volume is made full.
``copy-past-retention`` (a copy)
    the retention (``[snapshot_ext] backup_copies_keep``,
    ``backup_copies_max_age``) deletes it, and no kept copy needs it: its
    retention did not run or failed.  ``--fix --yes`` runs the retention
    of its server and backup type
    (:func:`~nova_snapshot_ext.backup.copy_retention.retain`), which
    reads every backup again and names what it leaves.
``copies-incomplete`` (a backup image)
    with ``[snapshot_ext] backup_copies``, an active backup image of the
    project, older than twice ``backup_copies_wait`` (by then every copy
    nova-api owed was asked for) and not older than the first backup of
    its server and type with a copy (copies were on by then), a disk of
    which has no copy, or only copies in error.  ``--fix --yes`` makes
    the missing copies (:func:`~nova_snapshot_ext.backup.copies.
    make_copies`: a copy already made is reported, not made twice).

Cinder lists one project's backups to its caller: the copies of the
Cinder identity's project are judged (:func:`coverage`), and the backup
images of that project the Glance identity lists.
"""

from __future__ import annotations

import datetime
import typing as ty

from oslo_utils import timeutils

from nova_snapshot_ext.audit import images as images_mod
from nova_snapshot_ext.audit import report as report_mod
from nova_snapshot_ext.backup import copies as copies_mod
from nova_snapshot_ext.backup import copy_retention as retention_mod
from nova_snapshot_ext import exception
from nova_snapshot_ext.snapshot import tags

#: The kinds this module finds.
KINDS = (report_mod.COPY_IN_ERROR, report_mod.COPY_CHAIN_BROKEN,
         report_mod.COPY_PAST_RETENTION, report_mod.COPIES_INCOMPLETE)


def _copy_finding(backup: ty.Mapping[str, ty.Any], kind: str,
                  evidence: dict[str, ty.Any], project: str,
                  fix: dict[str, ty.Any] | None) -> report_mod.Finding:
    meta = backup['metadata']
    evidence = dict(evidence, recorded_image=meta.get(copies_mod.IMAGE_KEY),
                    server=meta.get(copies_mod.SERVER_KEY),
                    backup_type=meta.get(copies_mod.BACKUP_TYPE_KEY) or '',
                    device_name=meta.get(copies_mod.DEVICE_KEY),
                    volume_id=backup.get('volume_id'))
    return report_mod.Finding(
        image_id=str(backup['id']), kind=kind, evidence=evidence,
        fixable=fix is not None, fix=fix, owner=project,
        name=backup.get('name'), subject=report_mod.COPY)


def _by_volume(backups: list[dict[str, ty.Any]]
               ) -> dict[str, list[dict[str, ty.Any]]]:
    """The backups of each volume (chains never cross volumes)."""
    volumes: dict[str, list[dict[str, ty.Any]]] = {}
    for backup in backups:
        volumes.setdefault(str(backup.get('volume_id')), []).append(backup)
    return volumes


def judge_copies(backups: list[dict[str, ty.Any]], project: str,
                 policy: retention_mod.Policy,
                 now: datetime.datetime | None = None
                 ) -> list[report_mod.Finding]:
    """The findings about the copies themselves (no image read).

    A copy being deleted is not judged (in progress).  A copy whose
    delete failed (``error_deleting``) is a ``copy-in-error`` that
    ``--fix`` cannot repair (Cinder deletes only an available or error
    backup: an admin resets its state first).  Past retention are the
    copies no kept copy of any backup type needs (Cinder chains by
    volume, not by type).

    :param backups: every backup of the project, with metadata
        (:meth:`~nova_snapshot_ext.cinder.CinderClient.list_backups`).
    :param project: the project they are recorded for.
    :param policy: the retention (:func:`~.copy_retention.policy_of`).
    :param now: when ages are measured (default: now, UTC).
    :returns: ``copy-in-error``, ``copy-chain-broken`` and
        ``copy-past-retention`` findings, in Cinder's listing order.
    """
    recorded = [b for b in backups
                if copies_mod.record_refusal(b, project) is None]
    volumes = _by_volume(backups)
    findings = _state_findings(recorded, volumes, project)
    if policy.active:
        findings += _retention_findings(recorded, volumes, project,
                                        policy, now)
    return findings


def _state_findings(recorded: list[dict[str, ty.Any]],
                    volumes: dict[str, list[dict[str, ty.Any]]],
                    project: str) -> list[report_mod.Finding]:
    """``copy-in-error`` and ``copy-chain-broken`` (:func:`judge_copies`)."""
    findings = []
    for backup in recorded:
        status = backup.get('status')
        if status in ('error', 'error_deleting'):
            findings.append(_copy_finding(
                backup, report_mod.COPY_IN_ERROR,
                {'status': status,
                 'fail_reason': backup.get('fail_reason') or '',
                 'has_dependent_backups':
                     bool(backup.get('has_dependent_backups'))},
                project, {'op': 'delete-copy'} if status == 'error'
                else None))
        elif status == 'available' and copies_mod.base_of(
                volumes[str(backup.get('volume_id'))], backup) is None:
            findings.append(_copy_finding(
                backup, report_mod.COPY_CHAIN_BROKEN,
                {'why': 'Cinder shows no full backup of volume %s older '
                 'than it still there' % backup.get('volume_id')},
                project, None))
    return findings


def _retention_findings(recorded: list[dict[str, ty.Any]],
                        volumes: dict[str, list[dict[str, ty.Any]]],
                        project: str, policy: retention_mod.Policy,
                        now: datetime.datetime | None
                        ) -> list[report_mod.Finding]:
    """``copy-past-retention`` (:func:`judge_copies`)."""
    findings = []
    groups: dict[tuple[str, str], list[dict[str, ty.Any]]] = {}
    for backup in recorded:
        meta = backup['metadata']
        groups.setdefault((str(meta.get(copies_mod.SERVER_KEY)),
                           str(meta.get(copies_mod.BACKUP_TYPE_KEY) or '')),
                          []).append(backup)
    plans = {}
    needed: set[str] = set()
    for key, mine in sorted(groups.items()):
        # Only the backups of this group's volumes: what its chains are.
        theirs = [b for volume in {str(c.get('volume_id')) for c in mine}
                  for b in volumes[volume]]
        plans[key] = plan = retention_mod.plan_retention(
            theirs, project, key[0], key[1], policy, now)
        needed |= plan.needed
    for (server, backup_type), plan in sorted(plans.items()):
        for backup in plan.past:
            # A copy in error is reported (and fixed) as such; one being
            # deleted is on its way.
            if str(backup['id']) in needed or backup.get('status') not in (
                    'available',):
                continue
            findings.append(_copy_finding(
                backup, report_mod.COPY_PAST_RETENTION,
                {'status': backup.get('status'),
                 'kept_sets': plan.kept,
                 'policy': {'keep': policy.keep,
                            'max_age_days': policy.max_age_days}},
                project, {'op': 'retain', 'server': server,
                          'backup_type': backup_type}))
    return findings


def _copied_keys(backups: list[dict[str, ty.Any]], project: str
                 ) -> dict[str, set[str]]:
    """Image id -> snapshot keys with a copy that is, or will be, data."""
    have: dict[str, set[str]] = {}
    for backup in backups:
        if copies_mod.record_refusal(backup, project) is None and \
                backup.get('status') not in copies_mod.NOT_A_COPY:
            have.setdefault(str(backup['metadata'].get(copies_mod.IMAGE_KEY)),
                            set()).add(tags.snapshot_key(
                                str(backup.get('snapshot_id'))))
    return have


def owed_disks(image: ty.Mapping[str, ty.Any],
               backups: list[dict[str, ty.Any]], project: str
               ) -> list[copies_mod.Disk]:
    """The disks of a backup image without a copy that is not in error.

    :param backups: every backup of the project, with metadata.
    :returns: in :func:`~.copies.disks_of`'s order.
    """
    have = _copied_keys(backups, project).get(str(image.get('id')), set())
    return [disk for disk in copies_mod.disks_of(image)
            if tags.snapshot_key(disk.snapshot_id) not in have]


def _copies_since(backups: list[dict[str, ty.Any]], project: str
                  ) -> dict[tuple[str, str], datetime.datetime]:
    """(server, backup type) -> the time of its oldest recorded copy's data.

    Read from Cinder's records, so the images of those copies may be gone
    (rotated): copies were on from then on.
    """
    since: dict[tuple[str, str], datetime.datetime] = {}
    for backup in backups:
        if copies_mod.record_refusal(backup, project) is not None:
            continue
        when = copies_mod.parse_time(copies_mod.data_time(backup))
        meta = backup['metadata']
        key = (str(meta.get(copies_mod.SERVER_KEY)),
               str(meta.get(copies_mod.BACKUP_TYPE_KEY) or ''))
        if when is not None and (key not in since or when < since[key]):
            since[key] = when
    return since


def judge_images(images: ty.Iterable[ty.Mapping[str, ty.Any]],
                 backups: list[dict[str, ty.Any]], project: str,
                 owed_after: float, now: datetime.datetime | None = None
                 ) -> list[report_mod.Finding]:
    """``copies-incomplete`` findings of the project's backup images.

    Copies are owed from the oldest recorded copy of a server and backup
    type on (copies were on by then; its image may be gone): a backup
    whose volume snapshots are older, made before ``backup_copies``, is
    not judged.

    :param images: Glance images (those not active, not marked
        ``image_type=backup``, of another owner, or younger than
        ``owed_after`` are passed over).
    :param owed_after: seconds after its creation by which every copy of
        an image was asked for.
    """
    now = now or timeutils.utcnow()
    since = _copies_since(backups, project)
    have = _copied_keys(backups, project)
    findings = []
    for image in images:
        if image.get('image_type') != 'backup' or \
                image.get('owner') != project or \
                image.get('status') != 'active':
            continue
        first = since.get((str(image.get('instance_uuid')),
                           str(image.get('backup_type') or '')))
        created = copies_mod.parse_time(image.get('created_at'))
        # Its snapshots are a few seconds older than the image.
        if first is None or created is None or \
                created < first - datetime.timedelta(minutes=1):
            continue
        age = (now - created).total_seconds()
        if age < owed_after:
            continue
        copied = have.get(str(image.get('id')), set())
        owed = [disk for disk in copies_mod.disks_of(image)
                if tags.snapshot_key(disk.snapshot_id) not in copied]
        if not owed:
            continue
        findings.append(report_mod.Finding(
            image_id=str(image['id']), kind=report_mod.COPIES_INCOMPLETE,
            evidence={'disks_without_copy': [
                {'device_name': d.device_name, 'snapshot_id': d.snapshot_id}
                for d in owed],
                'instance_uuid': image.get('instance_uuid'),
                'backup_type': image.get('backup_type')},
            fixable=True, fix={'op': 'copy'}, owner=project,
            name=image.get('name')))
    return findings


def coverage(project: str, backups: list[dict[str, ty.Any]],
             copies_on: bool,
             policy: retention_mod.Policy | None = None
             ) -> dict[str, ty.Any]:
    """What the copy checks read, for the report.

    :param policy: the retention judged against (the audit's own
        ``[snapshot_ext]`` options).
    :returns: ``{'project': id, 'copies': recorded copies seen,
        'images_judged': whether backup images were judged
        (``backup_copies`` on), 'retention': {'keep': n,
        'max_age_days': n}}``.
    """
    policy = policy or retention_mod.Policy()
    return {'project': project,
            'copies': sum(1 for b in backups
                          if copies_mod.record_refusal(b, project) is None),
            'images_judged': copies_on,
            'retention': {'keep': policy.keep,
                          'max_age_days': policy.max_age_days}}


def describe_coverage(cover: ty.Mapping[str, ty.Any] | None) -> str:
    """One sentence of :func:`coverage` (``None``: the checks did not run)."""
    if cover is None:
        return ('Copy checks: not run (no [snapshot_ext_cinder] '
                'credentials).')
    if cover.get('error'):
        return 'Copy checks: not done: %s' % cover['error']
    if cover.get('skipped'):
        return 'Copy checks: %s' % cover['skipped']
    images = ('its backup images judged for missing copies'
              if cover['images_judged'] else
              'backup images not judged for missing copies ([snapshot_ext] '
              'backup_copies is off)')
    kept = cover.get('retention') or {}
    if kept.get('keep') or kept.get('max_age_days'):
        retention = ('retention of this configuration: keep %s, max age %s '
                     'days (0: no limit)' % (kept.get('keep'),
                                             kept.get('max_age_days')))
    else:
        retention = ('no retention in this configuration ([snapshot_ext] '
                     'backup_copies_keep and backup_copies_max_age are 0)')
    return ("Copy checks: project %s's copies off the primary storage "
            '(%d recorded), %s; %s.' % (cover['project'], cover['copies'],
                                        images, retention))


#: Why the copy checks could not run: the configuration (the
#: credentials act in no project), Cinder unreachable or refusing these
#: credentials, or another failure of Cinder's.
CAUSES = ('configuration', 'unreachable', 'failed')


def cause_of(err: Exception) -> str:
    """The :data:`CAUSES` entry of an error that stopped the copy checks."""
    if isinstance(err, exception.ConfigurationError):
        return 'configuration'
    if isinstance(err, (exception.CinderUnavailable,
                        exception.CinderForbidden)):
        return 'unreachable'
    return 'failed'


def scan(auditor: images_mod.AuditGlance, cinder: ty.Any, group: ty.Any,
         owner: str | None = None,
         page_size: int = images_mod.DEFAULT_PAGE_SIZE,
         now: datetime.datetime | None = None
         ) -> tuple[list[report_mod.Finding], dict[str, ty.Any]]:
    """Every copy finding of the Cinder identity's project.

    :param cinder: a :class:`~nova_snapshot_ext.cinder.CinderClient`.
    :param group: ``conf.snapshot_ext`` (``backup_copies``,
        ``backup_copies_wait`` and the retention options).
    :param owner: ``audit --owner``: no finding unless it is that project.
    :returns: the findings and :func:`coverage`; when the backups could
        not be listed, or the credentials act in no project, no finding
        and a coverage whose ``error`` says why and ``cause`` its kind
        (:data:`CAUSES`; the audit's other checks stand); with ``owner``
        another project, ``skipped`` says so.
    :raises GlanceError: a page of backup images could not be listed.
    """
    copies_on = bool(group.backup_copies)
    try:
        project = cinder.project_id
        backups = list(cinder.list_backups())
    except (exception.CinderError, exception.ConfigurationError) as err:
        # The other checks' findings stand; this one says why it has none
        # and what kind of cause it was (the audit's exit status).
        return [], {'project': None, 'copies': 0,
                    'images_judged': False, 'error': err.format_message(),
                    'cause': cause_of(err)}
    policy = retention_mod.policy_of(group)
    cover = coverage(project, backups, copies_on, policy)
    if owner is not None and owner != project:
        cover['skipped'] = ('--owner names project %s; Cinder lists the '
                            "copies of the Cinder identity's project (%s) "
                            'only: none was judged' % (owner, project))
        return [], cover
    findings = judge_copies(backups, project, policy, now)
    if copies_on:
        images = (image for page in images_mod.listed_pages(
            auditor, page_size, {'image_type': 'backup', 'owner': project})
            for image in page)
        findings += judge_images(images, backups, project,
                                 2.0 * float(group.backup_copies_wait), now)
    return findings, cover


def repair(cinder: ty.Any, auditor: images_mod.AuditGlance,
           report: report_mod.Report, group: ty.Any, act: bool
           ) -> list[report_mod.Action]:
    """``--fix``: delete copies in error, retain, make missing copies.

    Each fix reads again what it acts on and acts only if its finding
    still holds.

    :param act: ``False`` (dry run): record what would be done.
    :returns: the actions, also appended to ``report.actions``.
    """
    actions: list[report_mod.Action] = []
    retained: dict[tuple[str, str], retention_mod.RetentionResult] = {}
    reported = {f.image_id for f in report.findings
                if f.kind == report_mod.COPY_PAST_RETENTION}
    for finding in report.findings:
        if finding.kind not in KINDS or not finding.fixable:
            continue
        if not act:
            outcome: tuple[str, str] = ('dry-run', '')
        elif finding.kind == report_mod.COPY_IN_ERROR:
            outcome = _delete_in_error(cinder, finding.image_id, group)
        elif finding.kind == report_mod.COPY_PAST_RETENTION:
            outcome = _retained(cinder, finding, group, retained,
                                reported)
        else:
            outcome = _copied(cinder, auditor, finding.image_id, group)
        actions.append(report_mod.Action(
            finding.image_id, finding.kind, finding.fix, outcome[0],
            outcome[1], subject=finding.subject,
            recorded_image=finding.evidence.get('recorded_image')))
    return report_mod.record_actions(report, actions)


def _delete_in_error(cinder: ty.Any, backup_id: str,
                     group: ty.Any) -> tuple[str, str]:
    """Delete a copy still in error, recorded, with no incremental on it.

    Seen through until Cinder no longer shows it (``backup_copies_wait``).
    """
    try:
        project = cinder.project_id
        backup = cinder.get_backup(backup_id)
        if backup is None:
            return 'skipped', 'the copy is gone'
        why = copies_mod.record_refusal(backup, project)
        if why is not None:
            return 'skipped', why
        if backup.get('status') != 'error':
            return 'skipped', 'no longer in error (status %s)' % (
                backup.get('status'))
        if backup.get('has_dependent_backups'):
            return 'skipped', retention_mod.DEPENDED_ON
    except (exception.CinderError, exception.ConfigurationError) as err:
        return 'failed', err.format_message()
    wait = copies_mod.Wait(float(group.backup_copies_wait))
    why = retention_mod.delete_copy(cinder, backup_id, wait,
                                    wait.clock() + wait.seconds)
    return ('failed', why) if why else ('done', '')


def _retained(cinder: ty.Any, finding: report_mod.Finding, group: ty.Any,
              retained: dict[tuple[str, str],
                             retention_mod.RetentionResult],
              reported: set[str]) -> tuple[str, str]:
    """The retention of the copy's server and type (once per pair).

    It deletes only ``reported`` copies: one past retention since the
    scan is left for the next audit or backup, never deleted unnamed.
    """
    fix = finding.fix or {}
    key = (str(fix.get('server')), str(fix.get('backup_type') or ''))
    if key not in retained:
        try:
            project = cinder.project_id
            backups = list(cinder.list_backups())
        except (exception.CinderError, exception.ConfigurationError) as err:
            retained[key] = retention_mod.RetentionResult(
                key[0], key[1], error=err.format_message())
        else:
            retained[key] = retention_mod.retain(
                cinder, backups, project, key[0], key[1],
                retention_mod.policy_of(group),
                copies_mod.Wait(float(group.backup_copies_wait)),
                only=reported)
    result = retained[key]
    if result.error:
        return 'failed', result.error
    if finding.image_id in result.deleted:
        return 'done', ''
    if finding.image_id in result.left:
        return 'skipped', result.left[finding.image_id]
    return 'skipped', 'no longer past retention'


def _copied(cinder: ty.Any, auditor: images_mod.AuditGlance,
            image_id: str, group: ty.Any) -> tuple[str, str]:
    """Make the copies an active backup image still lacks."""
    try:
        image = auditor.get(image_id)
        project = cinder.project_id
    except exception.GlanceNotFound:
        return 'skipped', 'the image is gone'
    except (exception.GlanceError, exception.CinderError,
            exception.ConfigurationError) as err:
        return 'failed', err.format_message()
    if image.get('status') != 'active' or \
            image.get('image_type') != 'backup' or \
            image.get('owner') != project:
        return 'skipped', ('no longer an active backup image of project %s'
                           % project)
    result = copies_mod.make_copies(
        cinder, image, project,
        copies_mod.Wait(float(group.backup_copies_wait)),
        int(group.backup_copies_chain))
    if result.failed:
        return 'failed', '; '.join(
            '%s: %s' % (f['device_name'] or f['snapshot_id'], f['reason'])
            for f in result.failed)
    if not result.started:
        return 'skipped', 'the image names no volume snapshot any more'
    return 'done', ''
