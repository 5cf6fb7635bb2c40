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

"""The audit's vocabulary and its report: kinds, findings, actions.

:data:`KINDS` names every problem the audit reports (the image checks,
:mod:`.images`; the Cinder checks, :mod:`.volume_snapshots` and
:mod:`.backups`); a :class:`Finding` is one problem of one image or
volume snapshot, an :class:`Action` what ``--fix`` did for it, a
:class:`Report` the whole run.
"""

from __future__ import annotations

import dataclasses
import json
import typing as ty

from oslo_log import log as logging

from nova_snapshot_ext.audit import references

LOG = logging.getLogger(__name__)

QUEUED_LEFTOVER = 'queued-leftover'
DISHONEST_PAYLOAD = 'dishonest-payload'
MIN_DISK_ABOVE_ROOT = 'min-disk-above-root'
BORROWED_PROPERTY = 'borrowed-property'
MALFORMED_MAPPING = 'malformed-mapping'
UNSAFE_MAPPING = 'unsafe-mapping'
DELETION_HAZARD = 'deletion-hazard'
# The copies off the primary storage (nova_snapshot_ext.audit.copies):
COPY_IN_ERROR = 'copy-in-error'
COPY_CHAIN_BROKEN = 'copy-chain-broken'
COPY_PAST_RETENTION = 'copy-past-retention'
COPIES_INCOMPLETE = 'copies-incomplete'

#: The documented problem vocabulary: kind -> (what it means, fixable).
KINDS: dict[str, tuple[str, bool]] = {
    QUEUED_LEFTOVER: ('never activated and older than the threshold; '
                      'fix: delete, only an image the plugin provably made '
                      '(snapshot_ext_fingerprint matching its '
                      'block_device_mapping) and not protected; others '
                      'are reported, never deleted', True),
    DISHONEST_PAYLOAD: ('the data is not what disk_format says (oslo.utils '
                        'format inspector); not fixed', False),
    MIN_DISK_ABOVE_ROOT: ('min_disk above the root volume size; fix: lower '
                          'min_disk', True),
    BORROWED_PROPERTY: ("a property describing another image's identity; "
                        'fix: remove it (key-manager references and '
                        'img_signature* are reported, never removed)', True),
    MALFORMED_MAPPING: ('block_device_mapping/bdm_v2 not as Nova writes '
                        'them; not fixed', False),
    UNSAFE_MAPPING: ('a block_device_mapping entry Nova never writes into '
                     'a snapshot image (e.g. a volume entry that is not '
                     'the snapshot taken of the volume: a server booted '
                     "from the image would be given the source's in-use "
                     'volume); not fixed', False),
    DELETION_HAZARD: ('a property that makes Glance destroy another '
                      'resource when the image is deleted '
                      '(cinder_encryption_key_deletion_policy = '
                      'on_image_deletion deletes the key-manager secret); '
                      'not fixed, and the plugin never deletes the image',
                      False),
    # With Cinder credentials (nova_snapshot_ext.audit.backups):
    'backup-snapshot-gone': ('a backup whose block_device_mapping names a '
                             'Cinder volume snapshot that is gone: it '
                             'cannot be restored; not fixed', False),
    'unnamed-volume-snapshot': ("a volume snapshot Nova's name ('snapshot "
                                "for ...') or a plugin record says was "
                                'taken for an image, that no image names, '
                                'without the proof a fix needs (the '
                                "evidence's why); not fixed", False),
    'leaked-volume-snapshot': ('a volume snapshot the plugin recorded '
                               'taking for an image that is provably gone; '
                               'fix: delete it in Cinder (re-read first)',
                               True),
    references.KIND: (references.MEANING, False),
    # With Cinder credentials, the copies (nova_snapshot_ext.audit.copies):
    COPY_IN_ERROR: ('a copy off the primary storage (a Cinder backup the '
                    'plugin recorded) in error: it holds nothing to '
                    "restore (Cinder's fail_reason says why); fix: delete "
                    'it in Cinder (re-read first: still in error, still '
                    'recorded, no incremental made on it)', True),
    COPY_CHAIN_BROKEN: ('an incremental copy with no available full copy '
                        'of its volume before it: its chain lost its base, '
                        'Cinder cannot restore it; not fixed (the next '
                        'copy of the volume is made full)', False),
    COPY_PAST_RETENTION: ('a copy the retention ([snapshot_ext] '
                          'backup_copies_keep, backup_copies_max_age) '
                          'deletes, still there (no copy a kept one needs); '
                          'fix: the retention of its server and backup '
                          'type, which re-reads every backup first', True),
    COPIES_INCOMPLETE: ('with [snapshot_ext] backup_copies, an active '
                        'backup image older than twice backup_copies_wait '
                        'with a disk that has no copy, or only copies in '
                        'error; fix: make the missing copies (a copy '
                        'already made is not made twice)', True),
}


#: What a finding (and its fix) is about: a Glance image, or a Cinder
#: volume snapshot (the Cinder checks, :mod:`nova_snapshot_ext.backup`).
IMAGE = 'image'
VOLUME_SNAPSHOT = 'volume snapshot'
#: A copy off the primary storage: a Cinder backup.
COPY = 'copy'
#: The key each subject's id has in :meth:`Finding.to_dict`.
_ID_KEYS = {VOLUME_SNAPSHOT: 'volume_snapshot_id', COPY: 'backup_id'}


def _subject_dict(data: dict[str, ty.Any], recorded_image: ty.Any
                  ) -> dict[str, ty.Any]:
    """A finding's or action's dict with its id under its subject's name.

    An image's id stays ``image_id``; a volume snapshot's is
    ``volume_snapshot_id`` and a copy's ``backup_id``, and ``image_id`` is
    then the image it was recorded for (``None``: none).
    """
    data.pop('recorded_image', None)
    key = _ID_KEYS.get(str(data.get('subject')))
    if key is not None:
        data[key] = data.pop('image_id')
        data['image_id'] = recorded_image
    return data


def _subject_label(subject: str, ident: str) -> str:
    return ident if subject == IMAGE else '%s %s' % (subject, ident)


@dataclasses.dataclass
class Finding:
    """One problem of one image (or of one volume snapshot).

    :ivar image_id: the Glance image id; with ``subject``
        :data:`VOLUME_SNAPSHOT`, the Cinder volume snapshot's id (named
        ``volume_snapshot_id`` in :meth:`to_dict`); with :data:`COPY`,
        the Cinder backup's (``backup_id``).
    :ivar kind: one of :data:`KINDS`.
    :ivar evidence: what was seen (JSON-able dict).
    :ivar fixable: whether ``--fix`` repairs it.
    :ivar fix: the repair, e.g. ``{'op': 'delete'}``,
        ``{'op': 'replace', 'path': '/min_disk', 'value': 8}``,
        ``{'op': 'remove', 'path': '/instance_uuid'}``; or ``None``.
    :ivar owner: the image's project, for the report.
    :ivar name: the image's name, for the report.
    :ivar subject: :data:`IMAGE`, :data:`VOLUME_SNAPSHOT` or :data:`COPY`.
    """

    image_id: str
    kind: str
    evidence: dict[str, ty.Any]
    fixable: bool = False
    fix: dict[str, ty.Any] | None = None
    owner: str | None = None
    name: str | None = None
    subject: str = IMAGE

    def to_dict(self) -> dict[str, ty.Any]:
        return _subject_dict(dataclasses.asdict(self),
                             self.evidence.get('recorded_image'))

    def describe(self) -> str:
        ev = ', '.join('%s=%s' % (k, v) for k, v in
                       sorted(self.evidence.items()))
        return '%s %s: %s%s' % (
            _subject_label(self.subject, self.image_id), self.kind, ev,
            '' if self.fixable else ' (not fixable)')


@dataclasses.dataclass
class Action:
    """What ``--fix`` did (or would do) for one finding.

    :ivar image_id: the finding's id (see :class:`Finding`).
    :ivar outcome: ``'done'``, ``'dry-run'`` (would be done), ``'skipped'``
        (the image changed since the scan, or the fix is not safe) or
        ``'failed'`` (Glance or Cinder refused; ``reason`` says why).
    :ivar subject: the finding's.
    :ivar recorded_image: a volume snapshot's recorded image (the
        finding's ``image_id`` in :meth:`to_dict`).
    """

    image_id: str
    kind: str
    fix: dict[str, ty.Any] | None
    outcome: str
    reason: str = ''
    subject: str = IMAGE
    recorded_image: str | None = None

    def to_dict(self) -> dict[str, ty.Any]:
        return _subject_dict(dataclasses.asdict(self), self.recorded_image)

    def describe(self) -> str:
        op = (self.fix or {}).get('op', 'none')
        target = (self.fix or {}).get('path', '')
        value = (' = %s' % self.fix['value']
                 if self.fix and 'value' in self.fix else '')
        return '%s %s: %s%s%s: %s%s' % (
            _subject_label(self.subject, self.image_id), self.kind, op,
            ' ' + target if target else '', value, self.outcome,
            ' (%s)' % self.reason if self.reason else '')


@dataclasses.dataclass
class Report:
    """The result of one audit.

    :ivar scanned: images listed.
    :ivar pages: ``GET /v2/images`` pages read (requests), both passes
        (not hidden, hidden), an empty last page included.
    :ivar snapshots: volume-backed snapshot images among them.
    :ivar findings: every problem found.
    :ivar not_inspected: ids of images too large to download (their
        payload was not judged), with their size.
    :ivar actions: what ``repair`` did, in order.
    :ivar cinder_coverage: which volume snapshots the Cinder checks
        listed (:func:`nova_snapshot_ext.audit.backups.coverage`), or
        ``None`` when they did not run (no Cinder credentials).
    """

    scanned: int = 0
    pages: int = 0
    snapshots: int = 0
    findings: list[Finding] = dataclasses.field(default_factory=list)
    not_inspected: list[dict[str, ty.Any]] = dataclasses.field(
        default_factory=list)
    actions: list[Action] = dataclasses.field(default_factory=list)
    cinder_coverage: dict[str, ty.Any] | None = None

    @property
    def unrepaired(self) -> list[Finding]:
        done = {(a.image_id, a.kind, json.dumps(a.fix, sort_keys=True))
                for a in self.actions if a.outcome == 'done'}
        return [f for f in self.findings
                if (f.image_id, f.kind, json.dumps(f.fix, sort_keys=True))
                not in done]

    def to_dict(self) -> dict[str, ty.Any]:
        return {
            'scanned': self.scanned,
            'pages': self.pages,
            'snapshots': self.snapshots,
            'findings': [f.to_dict() for f in self.findings],
            'not_inspected': self.not_inspected,
            'actions': [a.to_dict() for a in self.actions],
            'cinder_coverage': self.cinder_coverage,
            'unrepaired': len(self.unrepaired),
            'kinds': {k: {'meaning': v[0], 'fixable': v[1]}
                      for k, v in KINDS.items()},
        }


def record_actions(report: Report, actions: list[Action]) -> list[Action]:
    """Log each fix and append it to ``report.actions``.

    INFO when done or dry-run, else WARNING.

    :returns: ``actions``.
    """
    for action in actions:
        log = LOG.info if action.outcome in ('done', 'dry-run') else \
            LOG.warning
        log('audit fix %s', action.describe())
    report.actions += actions
    return actions
