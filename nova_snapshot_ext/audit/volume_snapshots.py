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

"""The Cinder checks: volume snapshots the plugin took for a gone image.

The decision (:func:`judge`; the table is in doc/source/backups.rst) reads
the record :mod:`nova_snapshot_ext.backup.leaks` writes on each volume
snapshot of an active image.  A volume snapshot is a
``leaked-volume-snapshot``, fixable, only when all hold:

1. its record is present and matches
   (:func:`~nova_snapshot_ext.backup.leaks.record_refusal`);
2. the project Cinder shows for the snapshot
   (``os-extended-snapshot-attributes:project_id``) is the record's
   project: a record written on another project's snapshot is never
   acted on (Cinder lets only the owner and admins write its metadata, so
   a member who forges a record can only get their own project's snapshot
   deleted, which they can do directly);
3. no image the audit's identity can list names it (mappings or tag);
4. ``GET /v2/images/{record image}`` answers 404 **to an identity that
   would see the image if it existed**: the record's own project (an
   owner sees its private and hidden images by id) or an identity with the
   ``admin`` role.  A 404 to another project only says "not visible to
   me": reported, never fixed;
5. the snapshot is ``available`` or ``error`` (Cinder's deletable states;
   ``creating``/``deleting`` are left).

Everything else is reported with why and never deleted: a snapshot
without a record (Nova's own or hand-made, whatever its name), a forged
or copied record, another project's, one a visible image names.
``--fix --yes`` (:func:`repair`) re-reads the snapshot, re-asks Glance
for the image and for images tagged with the snapshot right before the
delete, and deletes only if the verdict is unchanged.
"""

from __future__ import annotations

import dataclasses
import typing as ty

from oslo_log import log as logging

from nova_snapshot_ext.audit import images as images_mod
from nova_snapshot_ext.audit import report as report_mod
from nova_snapshot_ext.backup import leaks
from nova_snapshot_ext.backup import mark
from nova_snapshot_ext.backup import rotation
from nova_snapshot_ext.cinder import client as cinder_mod
from nova_snapshot_ext.cinder import waits
from nova_snapshot_ext import exception

LOG = logging.getLogger(__name__)

#: The finding kinds this module decides.
LEAKED = 'leaked-volume-snapshot'
UNNAMED = 'unnamed-volume-snapshot'

#: Cinder states a volume snapshot can be deleted in.
DELETABLE_STATES = ('available', 'error')

#: ``image_state`` values of :func:`judge`.
IMAGE_VISIBLE = 'visible'
IMAGE_NOT_FOUND = 'not found'
IMAGE_UNREAD = 'unread'


@dataclasses.dataclass(frozen=True)
class Scope:
    """What one of the audit's identities (Glance's, Cinder's) can see.

    :ivar project: its project id (``None``: unknown).
    :ivar admin: it has the ``admin`` role (Glance shows it every image;
        Cinder lists every project's volume snapshots when asked).
    """

    project: str | None
    admin: bool = False

    def sees_all_of(self, project: str) -> bool:
        """A 404 to this identity proves an image of ``project`` absent."""
        return self.admin or (self.project is not None and
                              self.project == project)


@dataclasses.dataclass(frozen=True)
class Verdict:
    """What the audit says of one volume snapshot.

    :ivar kind: :data:`LEAKED`, :data:`UNNAMED`, or ``None`` (no finding).
    :ivar fixable: ``--fix --yes`` deletes it.
    :ivar why: one sentence (why it is or is not deleted).
    """

    kind: str | None
    fixable: bool
    why: str


def judge(snap: ty.Mapping[str, ty.Any], named: bool, image_state: str,
          scope: Scope) -> Verdict:
    """The decision table for one volume snapshot.

    :param snap: the Cinder snapshot document.
    :param named: an image the identity can list names it (mappings or
        tag).
    :param image_state: :data:`IMAGE_VISIBLE`, :data:`IMAGE_NOT_FOUND`
        (404 to this identity) or :data:`IMAGE_UNREAD` (no record, or the
        read failed), for the image the record names.
    :param scope: the Glance identity's :class:`Scope`.
    """
    if named:
        return Verdict(None, False, 'an image the audit can see names it')
    name = str(snap.get('name') or snap.get('display_name') or '')
    nova_named = name.startswith(leaks.NOVA_SNAPSHOT_NAME_PREFIX)
    refused = leaks.record_refusal(snap)
    if refused is not None:
        if nova_named or (snap.get('metadata') or {}).get(leaks.IMAGE_KEY):
            return Verdict(UNNAMED, False, refused)
        return Verdict(None, False, refused)
    meta = snap['metadata']
    image_id, project = meta[leaks.IMAGE_KEY], meta[leaks.PROJECT_KEY]
    if image_state == IMAGE_VISIBLE:
        return Verdict(UNNAMED, False, 'its image %s exists but does not '
                       'name it' % image_id)
    if image_state != IMAGE_NOT_FOUND:
        return Verdict(UNNAMED, False, 'could not read its image %s'
                       % image_id)
    if not scope.sees_all_of(project):
        return Verdict(UNNAMED, False, 'its image %s is not visible to '
                       'this identity (project %s, not %s, no admin '
                       'role): not proof that it is gone'
                       % (image_id, scope.project, project))
    if snap.get('status') not in DELETABLE_STATES:
        return Verdict(LEAKED, False, 'status %s: not deletable now'
                       % snap.get('status'))
    return Verdict(LEAKED, True, 'the plugin took it for image %s, which '
                   'is gone' % image_id)


def scope_of(glance: ty.Any) -> Scope:
    """The :class:`Scope` of a :class:`~..image.glance.GlanceClient`.

    See :func:`scope_of_session`; unknown without a session.
    """
    session: ty.Any = getattr(glance, 'session', None)
    if session is None:
        return Scope(None)
    return scope_of_session(session)


def scope_of_session(session: ty.Any, auth: ty.Any = None) -> Scope:
    """The :class:`Scope` of an identity on a keystoneauth1 session.

    From its token: the project and the role names.  Unknown (no
    project, no admin) when the auth plugin does not say: nothing is then
    fixable, and no listing asks for every project.

    :param auth: the identity, when it is not the session's own (a
        keystoneauth1 adapter's ``auth``).
    """
    auth = auth if auth is not None else getattr(session, 'auth', None)
    try:
        project = session.get_project_id(auth=auth)
    except Exception:  # any auth plugin failure: scope unknown
        return Scope(None)
    admin = False
    try:
        access = auth.get_access(session)
        admin = 'admin' in (getattr(access, 'role_names', None) or ())
    except Exception:
        admin = False
    return Scope(project, admin)


def _image_state(auditor: images_mod.AuditGlance,
                 snap: ty.Mapping[str, ty.Any]) -> str:
    meta = snap.get('metadata')
    image_id = meta.get(leaks.IMAGE_KEY) if isinstance(meta, dict) else None
    if not image_id:
        return IMAGE_UNREAD
    try:
        auditor.get(str(image_id))
    except exception.GlanceNotFound:
        return IMAGE_NOT_FOUND
    except exception.GlanceError:
        return IMAGE_UNREAD
    return IMAGE_VISIBLE


def finding_for(snap: ty.Mapping[str, ty.Any], verdict: Verdict
                ) -> report_mod.Finding:
    """The audit finding of a volume snapshot (a Cinder subject)."""
    meta = snap.get('metadata')
    meta = meta if isinstance(meta, dict) else {}
    return report_mod.Finding(
        image_id=str(snap.get('id')), kind=str(verdict.kind),
        evidence={'volume_snapshot': snap.get('id'),
                  'snapshot_name': snap.get('name'),
                  'volume_id': snap.get('volume_id'),
                  'recorded_image': meta.get(leaks.IMAGE_KEY),
                  'why': verdict.why},
        fixable=verdict.fixable,
        fix={'op': 'delete-volume-snapshot'} if verdict.fixable else None,
        owner=snap.get(cinder_mod.PROJECT_ATTRIBUTE),
        subject=report_mod.VOLUME_SNAPSHOT)


def judge_snapshots(auditor: images_mod.AuditGlance,
                    snapshots: ty.Iterable[dict[str, ty.Any]],
                    named: set[str], scope: Scope
                    ) -> list[report_mod.Finding]:
    """Findings for the volume snapshots no listed image names.

    :param named: snapshot keys the scanned images name (mappings, tags).
    """
    findings = []
    for snap in snapshots:
        is_named = mark.snapshot_key(str(snap.get('id'))) in named
        state = IMAGE_UNREAD if is_named else _image_state(auditor, snap)
        verdict = judge(snap, is_named, state, scope)
        if verdict.kind is not None:
            findings.append(finding_for(snap, verdict))
    return findings


def repair(cinder: cinder_mod.CinderClient, auditor: images_mod.AuditGlance,
           report: report_mod.Report, act: bool,
           scope: Scope) -> list[report_mod.Action]:
    """Delete the fixable :data:`LEAKED` volume snapshots of ``report``.

    Each is re-read in Cinder, its image re-read in Glance and the images
    tagged with it re-listed (hidden too) right before its delete; the
    delete runs only if :func:`judge` still says fixable.

    :param act: ``False`` (dry run): record what would be done.
    :returns: the actions, also appended to ``report.actions``.
    """
    actions: list[report_mod.Action] = []
    for finding in report.findings:
        if finding.kind != LEAKED or not finding.fixable:
            continue

        def action(outcome: str, reason: str = '') -> None:
            actions.append(report_mod.Action(
                finding.image_id, finding.kind, finding.fix, outcome,
                reason, subject=finding.subject,
                recorded_image=finding.evidence.get('recorded_image')))

        if not act:
            action('dry-run')
            continue
        snap_id = finding.image_id
        try:
            snap = cinder.get_snapshot(snap_id)
            if snap is None:
                action('skipped', 'the volume snapshot is gone')
                continue
            tagged = rotation.images_tagged(auditor.glance, snap_id)
        except (exception.CinderError, exception.GlanceError) as err:
            action('failed', err.format_message())
            continue
        verdict = judge(snap, bool(tagged), _image_state(auditor, snap),
                        scope)
        if not verdict.fixable:
            action('skipped', 'no longer applies: %s' % verdict.why)
            continue
        try:
            cinder.delete_snapshot(snap_id,
                                   str(snap['metadata'][leaks.PROJECT_KEY]))
        except exception.CinderError as err:
            action('failed', err.format_message())
            continue
        # Done only once Cinder no longer shows it.
        deletes = waits.wait_gone(cinder, [snap_id])
        if deletes.gone:
            action('done')
        else:
            action('failed', deletes.why_not_gone()[snap_id])
    return report_mod.record_actions(report, actions)
