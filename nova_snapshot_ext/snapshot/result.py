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

"""What a snapshot produced: the image and every attempt made.

Nothing here holds a token, password or URL credential, so a result can
be logged or printed as it is: location URLs are kept only in their
redacted form (:func:`nova_snapshot_ext.image.locations.redact_url`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import typing as ty

from nova_snapshot_ext.snapshot.outcome import State


#: Statuses of an image whose payload is being stored: on its way to
#: ``active``, so never called undeletable.
IN_PROGRESS = ('saving', 'importing', 'uploading')


#: The steps of an attempt, in order: the create (or the 409's read
#: back), the member add, finishing an image an earlier try made
#: (``adopt``), then the activation itself.
STEPS = ('create', 'member add', 'adopt', 'upload', 'location add')
STEP_PREPOSITIONS = {'create': 'of', 'member add': 'to', 'adopt': 'of'}


@dataclasses.dataclass
class Attempt:
    """One activation attempt and its outcome.

    :ivar method: ``'upload'`` or ``'location'``.
    :ivar disk_format: declared disk_format.
    :ivar container_format: declared container_format.
    :ivar size: payload (or location object) bytes.
    :ivar image_id: the image this attempt created (or found).
    :ivar reason: why it failed; ``None`` when active.
    :ivar status: HTTP status of the failure, when there was one.
    :ivar cleaned_up: the attempt's image was deleted.
    :ivar state: the attempt's :class:`~.outcome.State`: where it stands,
        and where it stood when it ended (``active`` or ``failed``).  Only
        :func:`~.transitions.move` changes it, through :meth:`enter`.
    :ivar trail: every state the attempt entered, in order.
    :ivar location_api: for a location: ``'new'`` or ``'legacy'``.
    :ivar url: for a location: the redacted URL.
    :ivar step: the step of the attempt last begun (one of :data:`STEPS`):
        when the attempt failed, the step that failed -- ``'create'``
        when Glance refused or already held the image, so nothing was
        uploaded or added; ``None`` before the first.
    :ivar number: the attempt's position in the plan (1-based, as
        ``plan`` lists it): the planned attempt whose image it activated
        or tried -- after adopting an earlier try's image of a later
        planned format (that try's fallback), that format's position.
        ``None`` outside the engine.

    The end is recorded once, in ``state``; :attr:`outcome` and
    :attr:`created` are read from it.
    """

    method: str
    disk_format: str
    container_format: str
    size: int
    image_id: str | None = None
    reason: str | None = None
    status: int | None = None
    cleaned_up: bool = False
    state: State = dataclasses.field(default=State.PLANNED, repr=False)
    trail: list[State] = dataclasses.field(default_factory=list,
                                           repr=False)
    location_api: str | None = None
    url: str | None = None
    step: str | None = None
    number: int | None = None

    def enter(self, state: State) -> None:
        """Record ``state`` (called by :func:`~.transitions.move` only)."""
        self.state = state
        self.trail.append(state)

    @property
    def outcome(self) -> str:
        """``'active'``, ``'failed'``, or ``'pending'`` while it runs."""
        if self.state is State.ACTIVE:
            return 'active'
        if self.state is State.FAILED:
            return 'failed'
        return 'pending'

    @property
    def created(self) -> bool:
        """This attempt created its image (Glance answered 2xx to it).

        As opposed to finding one an earlier or concurrent try of the
        same snapshot made.
        """
        return State.CREATED in self.trail

    def to_dict(self) -> dict[str, ty.Any]:
        data = dataclasses.asdict(self)
        del data['trail']
        data['outcome'] = self.outcome
        data['created'] = self.created
        return data

    def begin(self, step: str) -> None:
        """Record that ``step`` (one of :data:`STEPS`) is being taken."""
        assert step in STEPS, step
        self.step = step

    def failed_step(self) -> str | None:
        """The step that failed when it is not the activation itself.

        :returns: ``'create'``, ``'member add'`` or ``'adopt'`` when the
            attempt failed before its payload or location was sent (so no
            message may speak of an upload or a location add), else
            ``None``.
        """
        if self.outcome != 'failed' or self.step in (None, 'upload',
                                                     'location add'):
            return None
        return self.step

    def label(self) -> str:
        """How a failure message names the attempt and its failed step.

        ``'upload raw'`` when the upload (or ``'location raw'`` when the
        location add) failed; ``'create of image ID (attempt upload
        raw)'`` (or ``member add to``, ``adopt of``) when an earlier step
        did.
        """
        planned = '%s %s' % (self.method, self.disk_format)
        step = self.failed_step()
        if step is None:
            return planned
        return '%s %s image %s (attempt %s)' % (
            step, STEP_PREPOSITIONS[step], self.image_id, planned)

    def describe(self) -> str:
        if self.step == 'adopt' and self.outcome == 'active':
            # Found active: an earlier try made it; nothing was sent now.
            return 'adopted image %s (%s/%s, made active by an earlier ' \
                'try; nothing sent) -> active' % (
                    self.image_id, self.disk_format, self.container_format)
        text = '%s %s/%s (%d B)' % (
            self.method, self.disk_format, self.container_format, self.size)
        if self.method == 'location':
            text += ' %s via the %s API' % (self.url, self.location_api)
        text += ' -> %s' % self.outcome
        step = self.failed_step()
        if step is not None:
            text += ' at the %s of image %s (nothing %s)' % (
                step, self.image_id, 'uploaded' if self.method == 'upload'
                else 'added')
        if self.reason:
            text += ': %s' % self.reason
        if self.cleaned_up:
            text += ' [image %s deleted]' % self.image_id
        return text


#: ``leftover_status`` of an image whose cleanup a second signal stopped
#: (its status is not known).
CUT_SHORT = 'cleanup cut short'


@dataclasses.dataclass
class SnapshotResult:
    """The outcome of :meth:`SnapshotService.snapshot`.

    :ivar image_id: the active image's id (``None`` if none).
    :ivar name: image name.
    :ivar status: Glance status of the image (``'active'``) or
        ``'failed'``.
    :ivar disk_format: disk_format of the active image.
    :ivar container_format: container_format of the active image.
    :ivar size: image size in bytes as Glance reports it.
    :ivar member: project id added as image member, if any.
    :ivar reused: the image existed already (an idempotent retry).
    :ivar plan: the activation plan, each step described
        (e.g. ``'upload qcow2 (1536 B, valid empty image)'``); the steps
        after the one that succeeded were not needed.
    :ivar attempts: every :class:`Attempt` made, in order.
    :ivar leftover: ids of images that could not be deleted (should be
        empty; an operator must look at any listed).
    :ivar leftover_status: leftover id -> its status when last read
        (``None``: it could not be read); never ``'active'`` (an active
        image is the success, not a leftover).
    :ivar unconfirmed: ids of images whose create got no answer and that
        Glance did not show afterwards: if one appears later it is this
        snapshot's, and a retry adopts it.
    :ivar left_in_place: the ids in ``leftover`` left on purpose after a
        transient fault or an interrupt (:attr:`~.outcome.Cleanup.LEFT`):
        another try of this snapshot may be finishing each; a retry of
        the snapshot adopts it, ``nova-snapshot-ext audit --fix --yes``
        deletes it once it stayed ``queued`` past ``--queued-older-than``.
    :ivar not_deletable: ids in ``leftover`` the plugin will not delete,
        and why (deleting would make Glance destroy another resource,
        :mod:`~nova_snapshot_ext.snapshot.deletion`).
    :ivar cleanup_cut_short: a second signal (or exit) stopped the
        cleanup after an interrupt; the attempt's image, unless seen
        deleted or active, is in ``leftover``.
    :ivar notes: plan steps dropped in preflight and why (e.g. a location
        this Glance cannot take in ``location-fallback`` mode).
    :ivar os_hash_algo: hash algorithm of the active image, when Glance
        computed or recorded one (location activation).
    :ivar os_hash_value: the matching hex digest.
    """

    image_id: str | None
    name: str
    status: str
    disk_format: str | None = None
    container_format: str | None = None
    size: int | None = None
    member: str | None = None
    reused: bool = False
    plan: list[str] = dataclasses.field(default_factory=list)
    attempts: list[Attempt] = dataclasses.field(default_factory=list)
    leftover: list[str] = dataclasses.field(default_factory=list)
    leftover_status: dict[str, str | None] = dataclasses.field(
        default_factory=dict)
    unconfirmed: list[str] = dataclasses.field(default_factory=list)
    left_in_place: list[str] = dataclasses.field(default_factory=list)
    not_deletable: dict[str, str] = dataclasses.field(default_factory=dict)
    cleanup_cut_short: bool = False
    notes: list[str] = dataclasses.field(default_factory=list)
    os_hash_algo: str | None = None
    os_hash_value: str | None = None

    def leave(self, image_id: str, status: str | None) -> None:
        """Name ``image_id`` as left in place on purpose.

        :param status: its status when last read (``None``: it could not
            be read).
        """
        if image_id not in self.leftover:
            self.leftover.append(image_id)
        self.leftover_status[image_id] = status
        if image_id not in self.left_in_place:
            self.left_in_place.append(image_id)
        with contextlib.suppress(ValueError):
            self.unconfirmed.remove(image_id)

    def leftover_text(self) -> str:
        """The images left behind, each named by what was read of it.

        ``COULD NOT DELETE`` lists an image read as deletable (e.g.
        ``queued``) or one that could not be read (said so); an image on
        its way to active (``saving``, ``importing``) is never called
        undeletable; an image left on purpose (``left_in_place``) is said
        to be, with why and what removes it.  ``''`` when nothing was
        left.
        """
        stuck, moving, cut, kept, refused = [], [], [], [], []
        for image_id in dict.fromkeys(self.leftover):
            status = self.leftover_status.get(image_id)
            if image_id in self.not_deletable:
                refused.append('%s %s' % (image_id,
                                          self.not_deletable[image_id]))
            elif image_id in self.left_in_place:
                kept.append('%s (%s)' % (
                    image_id, 'status %s' % status if status else
                    'status unknown: it could not be read'))
            elif status == CUT_SHORT:
                cut.append(image_id)
            elif status in IN_PROGRESS:
                moving.append('%s (%s)' % (image_id, status))
            elif status is None:
                stuck.append('%s (status unknown: it could not be read)'
                             % image_id)
            else:
                stuck.append('%s (status %s)' % (image_id, status))
        texts = []
        if kept:
            texts.append(
                'image(s) %s left in place, not deleted: another try of '
                'this snapshot may be finishing it, or this run\'s own '
                'request still in flight (a transient fault or an '
                'interrupt says nothing about either, and Glance has no '
                'conditional delete); a retry of this '
                'snapshot adopts it, and `nova-snapshot-ext audit --fix '
                '--yes` deletes it if nothing claims it (once it stayed '
                'queued longer than --queued-older-than, a day by default)'
                % ', '.join(kept))
        if refused:
            texts.append('image(s) %s' % '; '.join(refused))
        if stuck:
            texts.append('COULD NOT DELETE image(s) %s' % ', '.join(stuck))
        if moving:
            texts.append('image(s) %s not deleted: a payload is being '
                         'stored, they may still become active; a retry of '
                         'this snapshot adopts them' % ', '.join(moving))
        if cut:
            texts.append('image(s) %s NOT CONFIRMED DELETED: a second signal '
                         'cut the cleanup short; delete what Glance still '
                         'lists, or retry this snapshot (it adopts them)'
                         % ', '.join(cut))
        return '; '.join(texts)

    @property
    def cleaned_up(self) -> list[str]:
        return [a.image_id for a in self.attempts
                if a.cleaned_up and a.image_id]

    def to_dict(self) -> dict[str, ty.Any]:
        data = dataclasses.asdict(self)
        data['attempts'] = [a.to_dict() for a in self.attempts]
        data['cleaned_up'] = self.cleaned_up
        return data

    def describe(self) -> str:
        """Multi-line human summary."""
        lines = ['image %s "%s": %s' % (
            self.image_id, self.name, self.status)]
        if self.status == 'active':
            lines.append('  disk_format=%s container_format=%s size=%s'
                         % (self.disk_format, self.container_format,
                            self.size))
        if self.member:
            lines.append('  shared with project %s' % self.member)
        if self.reused:
            lines.append('  (existing image reused: retried request)')
        if self.os_hash_value:
            lines.append('  %s %s' % (self.os_hash_algo, self.os_hash_value))
        if self.plan:
            lines.append('  plan: %s' % ' -> '.join(self.plan))
        for note in self.notes:
            lines.append('  note: %s' % note)
        for i, attempt in enumerate(self.attempts, 1):
            # Numbered as the plan above lists it (a skipped or adopted
            # position shows), else in order.
            lines.append('  attempt %d: %s' % (attempt.number or i,
                                               attempt.describe()))
        if self.leftover:
            lines.append('  LEFT BEHIND: %s' % self.leftover_text())
        for image_id in self.unconfirmed:
            lines.append('  UNCONFIRMED: the create of image %s got no '
                         'answer; a retry adopts it if it appears'
                         % image_id)
        return '\n'.join(lines)
