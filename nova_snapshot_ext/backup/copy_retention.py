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

"""Retention of the copies off the primary storage, their own.

Independent of the images' rotation (:mod:`.rotation` never deletes a
copy): per server and backup type, the copy sets (:mod:`.copies`, one
per backup image) are kept while they are among the ``keep`` newest
(``[snapshot_ext] backup_copies_keep``, 0: every one) and younger than
``max_age_days`` (``backup_copies_max_age``, 0: any age).  The newest
restorable set is always kept.

An incremental copy needs every copy back to its chain's full copy.  A
copy a kept copy needs is kept (named, not deleted), so a chain goes only
once none of its sets is kept; ``backup_copies_chain`` bounds a chain
(:func:`~.copies.make_copies` makes a full copy after that many
incrementals) so that old chains can go at all.  Copies are deleted
newest first, each waited for until Cinder no longer shows it (Cinder
refuses to delete a copy while an incremental on it exists, even one
being deleted).  Only copies whose record proves them the plugin's
(:func:`~.copies.record_refusal`) are considered.
"""

from __future__ import annotations

import dataclasses
import datetime
import typing as ty

from oslo_log import log as logging
from oslo_utils import timeutils

from nova_snapshot_ext.backup import copies as copies_mod
from nova_snapshot_ext.backup import copy_sets as sets_mod
from nova_snapshot_ext import exception

LOG = logging.getLogger(__name__)

#: States Cinder deletes a backup in.
DELETABLE = ('available', 'error')
#: Why a copy past retention is left when a kept copy needs it.
NEEDED = 'a kept incremental copy needs it (its chain goes with it)'
#: Why one is left when Cinder shows an incremental made on it.
DEPENDED_ON = ('Cinder shows an incremental backup made on it (perhaps not '
               'the plugin\'s)')
#: Cinder's refusal to delete a backup an incremental is made on.
_HAS_DEPENDENTS = 'Incremental backups exist for this backup'


@dataclasses.dataclass(frozen=True)
class Policy:
    """The retention of one server's copies of one backup type.

    :ivar keep: copy sets kept, newest first (0: every one).
    :ivar max_age_days: older sets go (0: no age limit).
    """

    keep: int = 0
    max_age_days: int = 0

    @property
    def active(self) -> bool:
        """Whether it ever deletes anything."""
        return self.keep > 0 or self.max_age_days > 0


@dataclasses.dataclass
class RetentionResult:
    """What one retention kept and deleted.

    :ivar kept: backup image ids whose copy sets are kept, newest first.
    :ivar deleted: Cinder backup ids deleted (or found gone).
    :ivar left: backup id -> why a copy past retention was not deleted.
    :ivar error: why the retention could not even start (the backups
        could not be listed), or ``None``.
    """

    server: str
    backup_type: str
    kept: list[str] = dataclasses.field(default_factory=list)
    deleted: list[str] = dataclasses.field(default_factory=list)
    left: dict[str, str] = dataclasses.field(default_factory=dict)
    error: str | None = None
    #: The exception behind ``error`` (for exit codes; not in to_dict).
    failure: exception.CinderError | None = dataclasses.field(
        default=None, repr=False, compare=False)

    def to_dict(self) -> dict[str, ty.Any]:
        data = dataclasses.asdict(self)
        del data['failure']
        return data

    def describe(self) -> str:
        if self.error:
            return ('copy retention of server %s (%s) not done: %s'
                    % (self.server, self.backup_type or 'no type',
                       self.error))
        lines = ['copy retention of server %s (%s): kept the copies of %s; '
                 'deleted %s' % (self.server, self.backup_type or 'no type',
                                 ', '.join(self.kept) or '(none)',
                                 ', '.join(self.deleted) or '(none)')]
        for backup_id, why in sorted(self.left.items()):
            lines.append('  copy %s left: %s' % (backup_id, why))
        return '\n'.join(lines)


def _age_days(created_at: str, now: datetime.datetime) -> float | None:
    when = copies_mod.parse_time(created_at)
    return None if when is None else (now - when).total_seconds() / 86400.0


def kept_sets(sets: ty.Sequence[sets_mod.CopySet], policy: Policy,
              now: datetime.datetime) -> set[str]:
    """The backup image ids whose sets the policy keeps.

    :param sets: one server's sets of one backup type, newest first.
    """
    kept = set()
    for index, copy_set in enumerate(sets):
        if policy.keep > 0 and index >= policy.keep:
            continue
        age = _age_days(copy_set.taken_at, now)
        # An unreadable date is not proof of age: kept.
        if policy.max_age_days > 0 and age is not None and \
                age > policy.max_age_days:
            continue
        kept.add(copy_set.image_id)
    restorable = [s for s in sets if s.refusal() is None]
    if restorable:
        kept.add(restorable[0].image_id)
    return kept


def needed(backups: ty.Iterable[ty.Mapping[str, ty.Any]],
           keep: ty.Iterable[str]) -> set[str]:
    """Every backup id a kept copy needs: its chain back to a full copy.

    Cinder makes an incremental on the newest ``available`` backup of the
    volume older than it, so a volume's backups in time order are its
    chains.

    :param backups: every backup of the project (any owner of the chain).
    :param keep: the ids of the kept copies.
    """
    by_volume: dict[str, list[ty.Mapping[str, ty.Any]]] = {}
    for backup in backups:
        by_volume.setdefault(str(backup.get('volume_id')), []).append(backup)
    index = {}
    for chain in by_volume.values():
        # Cinder orders a volume's backups by their data's time.
        chain.sort(key=lambda b: (copies_mod.data_time(b),
                                  str(b.get('id'))))
        for position, backup in enumerate(chain):
            index[str(backup.get('id'))] = (chain, position)
    wanted: set[str] = set()
    for backup_id in keep:
        if backup_id not in index:
            continue
        chain, position = index[backup_id]
        wanted.add(backup_id)
        if not chain[position].get('is_incremental'):
            continue
        # Its parent, and theirs: the available backups before it (one
        # that is not available was never a parent), to a full one.
        for backup in reversed(chain[:position]):
            if backup.get('status') not in copies_mod.PRESENT:
                continue
            wanted.add(str(backup.get('id')))
            if not backup.get('is_incremental'):
                break
    return wanted


@dataclasses.dataclass
class RetentionPlan:
    """What a policy keeps of one server's copies of one backup type.

    :ivar kept: backup image ids whose sets are kept, newest first.
    :ivar past: the copies of the other sets (Cinder backup documents),
        newest data first: the order they are deleted in.
    :ivar needed: backup ids the kept copies need (their chains back to
        a full copy): those of ``past`` among them stay.
    """

    kept: list[str]
    past: list[dict[str, ty.Any]]
    needed: set[str]


def plan_retention(backups: list[dict[str, ty.Any]], project: str,
                   server: str, backup_type: str, policy: Policy,
                   now: datetime.datetime | None = None) -> RetentionPlan:
    """Which copies of ``server`` and ``backup_type`` are past retention.

    The one reading of the policy, for :func:`retain` and the audit
    (:mod:`nova_snapshot_ext.audit.copies`).

    :param backups: every backup of the project, with metadata.
    :param now: the time ages are measured at (default: now, UTC).
    """
    now = now or timeutils.utcnow()
    mine = [s for s in sets_mod.find_sets(backups, project)
            if s.server == server and s.backup_type == backup_type]
    kept = kept_sets(mine, policy, now)
    copies = [b for b in backups if _copy_of(b, project, server,
                                             backup_type)]
    keep_ids = [str(b['id']) for b in copies
                if b['metadata'][copies_mod.IMAGE_KEY] in kept]
    past = sorted((b for b in copies
                   if b['metadata'][copies_mod.IMAGE_KEY] not in kept),
                  key=lambda b: (copies_mod.data_time(b), str(b['id'])),
                  reverse=True)
    return RetentionPlan([s.image_id for s in mine if s.image_id in kept],
                         past, needed(backups, keep_ids))


def retain(cinder: ty.Any, backups: list[dict[str, ty.Any]],
           project: str, server: str, backup_type: str, policy: Policy,
           wait: copies_mod.Wait | None = None,
           now: datetime.datetime | None = None,
           only: ty.Collection[str] | None = None) -> RetentionResult:
    """Delete the copies of ``server`` and ``backup_type`` past retention.

    :param cinder: deletes and reads backups (``delete_backup``,
        ``get_backup``), acting for ``project``.
    :param backups: every backup of the project, with metadata.
    :param only: delete none but these backup ids (the audit's findings);
        the others past retention stay, untouched and unnamed, with what
        they need.
    :returns: a :class:`RetentionResult`; never raises a Cinder error
        (a copy not deleted is in ``left`` with the reason).
    """
    wait = wait or copies_mod.Wait()
    result = RetentionResult(server, backup_type)
    if not policy.active:
        return result
    plan = plan_retention(backups, project, server, backup_type, policy,
                          now)
    result.kept = plan.kept
    wanted = set(plan.needed)
    past = plan.past
    deadline = wait.clock() + wait.seconds
    for backup in past:
        backup_id = str(backup['id'])
        if only is not None and backup_id not in only:
            wanted |= needed(backups, [backup_id])
            continue
        if backup_id in wanted:
            result.left[backup_id] = NEEDED
        elif backup.get('has_dependent_backups'):
            result.left[backup_id] = DEPENDED_ON
        elif backup.get('status') not in DELETABLE:
            result.left[backup_id] = ('status %s: Cinder deletes only an '
                                      'available or error backup'
                                      % backup.get('status'))
        else:
            why = delete_copy(cinder, backup_id, wait, deadline)
            if why is None:
                result.deleted.append(backup_id)
                continue
            result.left[backup_id] = why
        # A copy left keeps what it needs.
        wanted |= needed(backups, [backup_id])
    return result


def _copy_of(backup: ty.Mapping[str, ty.Any], project: str, server: str,
             backup_type: str) -> bool:
    """Whether ``backup`` is a recorded copy of this server and type."""
    if copies_mod.record_refusal(backup, project) is not None:
        return False
    meta = backup['metadata']
    return (meta.get(copies_mod.SERVER_KEY) == server and
            (meta.get(copies_mod.BACKUP_TYPE_KEY) or '') == backup_type)


def delete_copy(cinder: ty.Any, backup_id: str, wait: copies_mod.Wait,
                deadline: float) -> str | None:
    """Delete one copy and wait until it is gone; why not, or ``None``.

    The one delete of a copy: the retention's and the audit's.

    :param deadline: on ``wait``'s clock, for the whole retention.
    """
    try:
        cinder.delete_backup(backup_id)
        while True:
            backup = cinder.get_backup(backup_id)
            if backup is None:
                break
            if backup.get('status') != 'deleting':
                # Cinder's delete failed: the backup is back in error.
                return 'delete failed (status %s): %s' % (
                    backup.get('status'),
                    backup.get('fail_reason') or 'no reason given')
            if wait.clock() >= deadline:
                return ('still being deleted after %.0f s ([snapshot_ext] '
                        'backup_copies_wait)' % wait.seconds)
            wait.sleep(copies_mod.POLL_S)
    except exception.CinderError as err:
        if _HAS_DEPENDENTS in str(err.reason):
            return DEPENDED_ON
        return err.format_message()
    LOG.info('nova-snapshot-ext: copy %s past retention deleted', backup_id)
    return None


def copy_and_retain(cinder: ty.Any, image: ty.Mapping[str, ty.Any],
                    project: str, group: ty.Any
                    ) -> tuple[copies_mod.CopyResult,
                               RetentionResult | None]:
    """A backup's copies (:func:`~.copies.make_copies`), then retention.

    The one sequence nova-api's ``createBackup`` and the ``backup``
    command run once the backup is active.

    :param cinder: acts for ``project`` (copies, listings, deletes).
    :param image: the active backup image.
    :param project: its owner project.
    :param group: ``conf.snapshot_ext`` (``backup_copies_wait``,
        ``backup_copies_chain``, the retention options).
    :returns: ``(copies, retention)``; each names what failed, neither
        raises a Cinder error (the backup is active).
    """
    copies = copies_mod.make_copies(
        cinder, image, project,
        copies_mod.Wait(float(group.backup_copies_wait)),
        int(group.backup_copies_chain))
    return copies, after_copies(cinder, image, project, group)


def policy_of(group: ty.Any) -> Policy:
    """The policy ``keep`` and ``max_age`` options of a group set.

    :param group: ``conf.snapshot_ext`` (``backup_copies_keep``,
        ``backup_copies_max_age``).
    """
    return Policy(int(group.backup_copies_keep),
                  int(group.backup_copies_max_age))


def after_copies(cinder: ty.Any, image: ty.Mapping[str, ty.Any],
                 project: str, group: ty.Any
                 ) -> RetentionResult | None:
    """The retention that follows a backup's copies, or ``None`` (off).

    :param image: the backup image just copied (its server and type).
    :param group: ``conf.snapshot_ext``.
    :returns: its :class:`RetentionResult` (``error`` set when the
        project's backups could not be listed).
    """
    policy = policy_of(group)
    if not policy.active:
        return None
    server = str(image.get('instance_uuid'))
    backup_type = str(image.get('backup_type') or '')
    try:
        backups = list(cinder.list_backups())
    except exception.CinderError as err:
        return RetentionResult(server, backup_type,
                               error=err.format_message(), failure=err)
    return retain(cinder, backups, project, server, backup_type, policy,
                  copies_mod.Wait(float(group.backup_copies_wait)))
