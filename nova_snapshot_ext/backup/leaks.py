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

"""Volume snapshots the plugin took for an image that is gone (leaks).

Glance and Nova never delete the Cinder volume snapshots a volume-backed
snapshot image names: when such an image is deleted by anyone but the
rotation, its snapshots leak.  Nova names them ``snapshot for <image
name>``, which anyone can write, so that name proves nothing.  What the
plugin writes is the proof:

**The record.**  Once an image the plugin made is active, the plugin
writes Cinder snapshot metadata (``POST /snapshots/{id}/metadata``,
Cinder's snapshot metadata API) on each volume snapshot the image names:

``snapshot_ext_image``
    the image id;
``snapshot_ext_project``
    the image's owner project;
``snapshot_ext_record``
    ``uuid5(RECORD_NAMESPACE, "<snapshot id>|<image id>|<project>")``
    (:func:`record_of`): not a secret, it binds the record to this very
    snapshot (metadata copied onto another snapshot, or an edited image
    id, no longer matches), as the backup marker binds a backup to its
    image (:mod:`.mark`).

**The decision** (:func:`judge`; the table is in doc/source/backups.rst).
A volume snapshot is a ``leaked-volume-snapshot``, fixable, only when all
hold:

1. its record is present and matches (:func:`record_refusal`);
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
import uuid

from oslo_log import log as logging

from nova_snapshot_ext import audit as audit_mod
from nova_snapshot_ext.backup import cinder as cinder_mod
from nova_snapshot_ext.backup import mark
from nova_snapshot_ext.backup import rotation
from nova_snapshot_ext import exception
from nova_snapshot_ext.snapshot import tags

LOG = logging.getLogger(__name__)

IMAGE_KEY = 'snapshot_ext_image'
PROJECT_KEY = 'snapshot_ext_project'
RECORD_KEY = 'snapshot_ext_record'

#: uuid5 namespace of the record (fixed forever).
RECORD_NAMESPACE = uuid.UUID('a7c3e91d-4b2f-5d60-8e1a-3f9b0c6d2e75')

#: The finding kinds this module decides.
LEAKED = 'leaked-volume-snapshot'
UNNAMED = 'unnamed-volume-snapshot'

#: Cinder states a volume snapshot can be deleted in.
DELETABLE_STATES = ('available', 'error')

#: The name prefix Nova gives the volume snapshots of an image
#: (``compute.api.API.snapshot_volume_backed``): reported, never proof.
NOVA_SNAPSHOT_NAME_PREFIX = 'snapshot for '

#: ``image_state`` values of :func:`judge`.
IMAGE_VISIBLE = 'visible'
IMAGE_NOT_FOUND = 'not found'
IMAGE_UNREAD = 'unread'


def record_of(snapshot_id: str, image_id: str, project: str
              ) -> dict[str, str]:
    """The Cinder snapshot metadata recording that ``image_id`` names it.

    :param snapshot_id: the volume snapshot (any spelling).
    :param image_id: the active image the plugin made.
    :param project: the image's owner project.
    """
    key = tags.snapshot_key(snapshot_id)
    proof = uuid.uuid5(RECORD_NAMESPACE, '|'.join((key, image_id, project)))
    return {IMAGE_KEY: image_id, PROJECT_KEY: project,
            RECORD_KEY: str(proof)}


def record_refusal(snap: ty.Mapping[str, ty.Any]) -> str | None:
    """Why ``snap`` carries no valid plugin record, or ``None``.

    :param snap: a Cinder snapshot document (``metadata`` a dict).
    """
    meta = snap.get('metadata')
    meta = meta if isinstance(meta, dict) else {}
    if not meta.get(IMAGE_KEY):
        return 'no %s record: not provably taken by the plugin' % IMAGE_KEY
    image_id, project = str(meta[IMAGE_KEY]), str(meta.get(PROJECT_KEY))
    wanted = record_of(str(snap.get('id')), image_id, project)
    if meta.get(RECORD_KEY) != wanted[RECORD_KEY]:
        return ('%s does not match the snapshot id, %s and %s (copied from '
                'another snapshot, edited, or not written by the plugin)'
                % (RECORD_KEY, IMAGE_KEY, PROJECT_KEY))
    held = snap.get(cinder_mod.PROJECT_ATTRIBUTE)
    if held is None:
        return ('Cinder does not show the snapshot\'s project (%s): the '
                'record cannot be proved to be its own'
                % cinder_mod.PROJECT_ATTRIBUTE)
    if held != project:
        return ('the record names project %s, the snapshot belongs to %s'
                % (project, held))
    return None


class SnapshotRecorder(ty.Protocol):
    """Writes Cinder snapshot metadata.

    :class:`~.cinder.CinderClient`, or inside Nova
    :class:`~nova_snapshot_ext.nova.cinder.NovaCinder`.
    """

    def set_snapshot_metadata(self, snapshot_id: str,
                              metadata: ty.Mapping[str, str]) -> None:
        """:raises CinderError: it could not."""


def record_taken(recorder: SnapshotRecorder, image_id: str, project: str,
                 snapshot_ids: ty.Iterable[str]) -> dict[str, str]:
    """Write the record on each volume snapshot an active image names.

    Called once the image is active: a failure here never fails the
    snapshot (it succeeded); it is logged (WARNING) and returned, and the
    audit then reports the snapshot without a record, never deletes it.

    :param image_id: the active image the plugin made.
    :param project: the image's owner project.
    :returns: snapshot id -> why its record was not written.
    """
    failed: dict[str, str] = {}
    for snap_id in sorted(set(snapshot_ids)):
        try:
            recorder.set_snapshot_metadata(
                snap_id, record_of(snap_id, image_id, project))
        except exception.CinderError as err:
            failed[snap_id] = err.format_message()
            LOG.warning('nova-snapshot-ext: image %(image)s is active; the '
                        'record on its volume snapshot %(snap)s was not '
                        'written (audit will not delete it if it leaks): '
                        '%(why)s', {'image': image_id, 'snap': snap_id,
                                    'why': failed[snap_id]})
    return failed


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
    nova_named = name.startswith(NOVA_SNAPSHOT_NAME_PREFIX)
    refused = record_refusal(snap)
    if refused is not None:
        if nova_named or (snap.get('metadata') or {}).get(IMAGE_KEY):
            return Verdict(UNNAMED, False, refused)
        return Verdict(None, False, refused)
    meta = snap['metadata']
    image_id, project = meta[IMAGE_KEY], meta[PROJECT_KEY]
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


def _image_state(auditor: audit_mod.AuditGlance,
                 snap: ty.Mapping[str, ty.Any]) -> str:
    meta = snap.get('metadata')
    image_id = meta.get(IMAGE_KEY) if isinstance(meta, dict) else None
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
                ) -> audit_mod.Finding:
    """The audit finding of a volume snapshot (a Cinder subject)."""
    meta = snap.get('metadata')
    meta = meta if isinstance(meta, dict) else {}
    return audit_mod.Finding(
        image_id=str(snap.get('id')), kind=str(verdict.kind),
        evidence={'volume_snapshot': snap.get('id'),
                  'snapshot_name': snap.get('name'),
                  'volume_id': snap.get('volume_id'),
                  'recorded_image': meta.get(IMAGE_KEY),
                  'why': verdict.why},
        fixable=verdict.fixable,
        fix={'op': 'delete-volume-snapshot'} if verdict.fixable else None,
        owner=snap.get(cinder_mod.PROJECT_ATTRIBUTE),
        subject=audit_mod.VOLUME_SNAPSHOT)


def judge_snapshots(auditor: audit_mod.AuditGlance,
                    snapshots: ty.Iterable[dict[str, ty.Any]],
                    named: set[str], scope: Scope
                    ) -> list[audit_mod.Finding]:
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


def repair(cinder: cinder_mod.CinderClient, auditor: audit_mod.AuditGlance,
           report: audit_mod.Report, act: bool,
           scope: Scope) -> list[audit_mod.Action]:
    """Delete the fixable :data:`LEAKED` volume snapshots of ``report``.

    Each is re-read in Cinder, its image re-read in Glance and the images
    tagged with it re-listed (hidden too) right before its delete; the
    delete runs only if :func:`judge` still says fixable.

    :param act: ``False`` (dry run): record what would be done.
    :returns: the actions, also appended to ``report.actions``.
    """
    actions: list[audit_mod.Action] = []
    for finding in report.findings:
        if finding.kind != LEAKED or not finding.fixable:
            continue

        def action(outcome: str, reason: str = '') -> None:
            actions.append(audit_mod.Action(
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
                                   str(snap['metadata'][PROJECT_KEY]))
        except exception.CinderError as err:
            action('failed', err.format_message())
            continue
        action('done')
    return audit_mod.record_actions(report, actions)
