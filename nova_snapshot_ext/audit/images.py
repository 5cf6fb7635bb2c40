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


"""The image checks: the volume-backed snapshot images a Glance has.

Clouds that ran Nova 30 or older, or Nova without this plugin, hold
snapshot images made before activation was honest.  :func:`scan` pages
through ``GET /v2/images`` (``limit``/``marker``, hidden images included),
keeps the volume-backed snapshot images (those with ``bdm_v2`` or
``block_device_mapping``) and judges each; :func:`repair` fixes what can be
fixed without touching an image's data.

Problem kinds (:data:`KINDS`; the ``kind`` field of every finding):

``queued-leftover``
    still ``queued`` (never activated) and not updated for longer than the
    threshold: a failed activation left it.  *Fix*: delete it -- only when
    the plugin provably made it (:func:`authorship_refusal`: its
    ``snapshot_ext_fingerprint`` is the fingerprint of the volume
    snapshots its own ``block_device_mapping`` names) and it is not
    ``protected``, after re-reading it right before the delete (still
    ``queued``, no data, not updated since the scan, still provably the
    plugin's).  A queued image of the same shape the plugin did not make
    (Nova's own volume-backed snapshot path, which Nova may still be
    activating, or another tool) is reported, with ``made_by`` and
    ``not_deleted`` in its evidence, and never deleted.
``dishonest-payload``
    active, and its data is not what ``disk_format`` says, judged by
    ``oslo.utils``' format inspector as Glance 30+ judges uploads: zero
    bytes labelled anything but ``raw``, or a small payload the inspector
    reads as another format or refuses.  *Not fixed*: the label of an active
    image cannot change and its data must not; re-create the snapshot (or
    delete the image by hand once nothing boots from it).
``min-disk-above-root``
    ``min_disk`` (GiB) is larger than the root mapping's ``volume_size``:
    Nova refuses to boot it (``VolumeSmallerThanMinDisk``).  *Fix*: lower
    ``min_disk`` to the root volume's size (JSON-patch ``replace``).
``borrowed-property``
    a property that describes another image's identity, provenance or data
    (``image_type=backup``, ``backup_type``, ``instance_uuid``...), copied
    from the image the server was booted from; a backup rotation for that
    other server would act on this snapshot.  *Fix*: remove the property
    (JSON-patch ``remove``), except encryption-key and signature properties,
    which are reported only (removing them changes how Glance and Nova
    treat the image's secrets).
``malformed-mapping``
    ``block_device_mapping`` that is not a JSON list of objects, or
    missing while ``bdm_v2`` is set; an entry carrying database ids or
    ``connection_info``; with ``bdm_v2``: a value other than ``True``, a
    volume snapshot entry without ``snapshot_id``, no root entry
    (``boot_index`` 0).  Without ``bdm_v2`` the list is Nova's legacy
    format, which Nova still reads.  *Not fixed*: rebuilding mappings needs
    the server's record.

``unsafe-mapping``
    a ``block_device_mapping`` entry Nova never writes into a snapshot
    image (the request's own rule,
    :func:`nova_snapshot_ext.snapshot.mappings.mapping_refusal`, from
    Nova's ``snapshot_volume_backed``): a volume entry that is not
    ``source_type=snapshot`` with a ``snapshot_id`` (a ``volume`` entry
    gives a server booted from the image the source's in-use volume), an
    entry with no or another ``destination_type``, a local disk from a
    volume or snapshot or naming a Cinder id.  *Not fixed*: rebuilding
    mappings needs the server's record.
``deletion-hazard``
    a property that makes Glance destroy another resource when the image
    is deleted (:mod:`nova_snapshot_ext.snapshot.deletion`:
    ``cinder_encryption_key_deletion_policy=on_image_deletion`` deletes
    the key-manager secret ``cinder_encryption_key_id`` names).  *Not
    fixed*; ``--fix`` never deletes such an image (a ``queued-leftover``
    carrying it is reported, not deleted), nor does backup rotation or a
    failed attempt's cleanup.

Every finding is a :class:`Finding` (``image_id``, ``kind``, ``evidence``,
``fixable``, ``fix``); every repair an :class:`Action` (what was done, or
why not).
"""

from __future__ import annotations

import datetime
import json
import typing as ty
import urllib.parse

from glanceclient import exc as glance_exc
from keystoneauth1 import exceptions as ks_exc
from oslo_log import log as logging
from oslo_utils import timeutils

from nova_snapshot_ext.audit import references
from nova_snapshot_ext.audit import report as report_mod
from nova_snapshot_ext.backup import mark
from nova_snapshot_ext import exception
from nova_snapshot_ext.image import glance as glance_mod
from nova_snapshot_ext.image import locations
from nova_snapshot_ext.snapshot import deletion
from nova_snapshot_ext.snapshot import identity
from nova_snapshot_ext.snapshot import mappings
from nova_snapshot_ext.snapshot import metadata

LOG = logging.getLogger(__name__)

# The report's vocabulary, read here by its short names.
Finding = report_mod.Finding
Action = report_mod.Action
Report = report_mod.Report
record_actions = report_mod.record_actions
IMAGE = report_mod.IMAGE
QUEUED_LEFTOVER = report_mod.QUEUED_LEFTOVER
DISHONEST_PAYLOAD = report_mod.DISHONEST_PAYLOAD
MIN_DISK_ABOVE_ROOT = report_mod.MIN_DISK_ABOVE_ROOT
BORROWED_PROPERTY = report_mod.BORROWED_PROPERTY
MALFORMED_MAPPING = report_mod.MALFORMED_MAPPING
UNSAFE_MAPPING = report_mod.UNSAFE_MAPPING
DELETION_HAZARD = report_mod.DELETION_HAZARD


#: Default age (seconds) after which a ``queued`` snapshot image is a
#: leftover: a day, far beyond any activation.
DEFAULT_QUEUED_AGE = 24 * 3600
#: Default largest payload (bytes) downloaded to inspect.
DEFAULT_MAX_DOWNLOAD = 1024 * 1024
#: Default ``limit`` of one ``GET /v2/images`` page: Glance's own
#: ``api_limit_max`` default (a Glance set lower answers fewer per page,
#: and the audit follows ``next``).  Measured on 100,000 images: 81 s in
#: 102 pages, against 173 s in 502 pages at 200 (doc/source/benchmark.rst).
DEFAULT_PAGE_SIZE = 1000

#: Kinds (:func:`nova_snapshot_ext.snapshot.metadata.never_inherited_kind`)
#: never judged on an image: Glance writes its own state, Nova the mapping.
NOT_JUDGED_KINDS = ('glance-state', 'mapping')
#: Kinds reported but never removed by ``--fix``: removing a key-manager
#: reference or a signature changes how Glance and Nova treat secrets.
NOT_REMOVABLE_KINDS = ('secret',)
NOT_REMOVABLE_PREFIXES = ('img_signature',)
#: Identity a snapshot may carry as its own: a snapshot stamped
#: ``image_type=snapshot`` (Nova's image-backed path, or the plugin's own
#: self-description) owns its ``instance_uuid`` and ``user_id``; without
#: that stamp, a volume-backed snapshot only has them by inheritance (Nova's
#: volume-backed path never sets them).
OWN_IDENTITY_WITH_SNAPSHOT_TYPE = ('instance_uuid', 'user_id')

#: Glance's own image attributes (never judged as inherited properties).
GLANCE_ATTRIBUTES = frozenset([
    'id', 'name', 'status', 'visibility', 'protected', 'os_hidden',
    'checksum', 'os_hash_algo', 'os_hash_value', 'owner', 'size',
    'virtual_size', 'min_ram', 'min_disk', 'disk_format',
    'container_format', 'created_at', 'updated_at', 'tags', 'direct_url',
    'locations', 'self', 'file', 'schema', 'stores'])

#: Mapping fields that must never be in an image's mapping entries
#: (database ids, attachment state).
FORBIDDEN_MAPPING_FIELDS = ('id', 'instance_uuid', 'attachment_id',
                            'connection_info')

#: Formats the inspector reports that Glance accepts as ``raw``.
RAW_LIKE = ('raw', 'gpt', 'mbr')


def borrowed_kind(key: str, image: ty.Mapping[str, ty.Any]) -> str | None:
    """Why property ``key`` of ``image`` is borrowed, or ``None``.

    The kinds are the snapshot path's own rule
    (:func:`nova_snapshot_ext.snapshot.metadata.never_inherited_kind`);
    ``image_type=snapshot`` and, next to it, ``instance_uuid``/``user_id``
    are the snapshot's own identity (see
    :data:`OWN_IDENTITY_WITH_SNAPSHOT_TYPE`); on an image that is provably
    the plugin's backup (:func:`nova_snapshot_ext.backup.mark.proof_refusal`)
    :data:`~nova_snapshot_ext.backup.mark.OWN_PROPERTIES` are its own.
    """
    if key in GLANCE_ATTRIBUTES:
        return None
    if key == identity.FINGERPRINT_PROPERTY:
        # The plugin's own bookkeeping: borrowed only when it does not
        # name the volume snapshots this image's own mappings point at.
        own = identity.fingerprint_of(
            str(m['snapshot_id']) for m in _mappings(image)[0]
            if m.get('snapshot_id'))
        return None if image.get(key) == own else 'borrowed-identity'
    kind = metadata.never_inherited_kind(key)
    if kind is None or kind in NOT_JUDGED_KINDS:
        return None
    if kind == 'borrowed-identity':
        if key in mark.OWN_PROPERTIES and mark.proof_refusal(image) is None:
            # Provably the plugin's backup (the rotation's own proof):
            # a backup must carry them, or no rotation can count it.
            return None
        stamped = image.get('image_type') == 'snapshot'
        if key == 'image_type' and stamped:
            return None
        if key in OWN_IDENTITY_WITH_SNAPSHOT_TYPE and stamped:
            return None
    return kind


def root_volume_limit(mappings: list[dict[str, ty.Any]]) -> int | None:
    """The largest ``min_disk`` (GiB) the image's root volume allows.

    :func:`nova_snapshot_ext.snapshot.metadata.max_min_disk`: the root
    mapping's (``boot_index`` 0) ``volume_size``; ``None`` without one.
    """
    return metadata.max_min_disk(mappings)


def is_volume_snapshot(image: ty.Mapping[str, ty.Any]) -> bool:
    """True for images of a volume-backed server's shape.

    ``bdm_v2`` or ``block_device_mapping``: Nova's, the plugin's, or any
    other tool's.  The shape decides what is judged, never what may be
    deleted (:func:`authorship_refusal`).
    """
    return 'bdm_v2' in image or 'block_device_mapping' in image


#: Who made a queued image, in a ``queued-leftover`` finding's evidence.
MADE_BY_PLUGIN = 'nova-snapshot-ext'
MADE_BY_OTHER = ("not provably nova-snapshot-ext: Nova's own volume-backed "
                 'snapshot path (which may still be activating it) or '
                 'another tool')


def authorship_refusal(image: ty.Mapping[str, ty.Any]) -> str | None:
    """Why ``image`` is not provably one the plugin made, or ``None``.

    The proof is the plugin's stamp: the property
    :data:`~nova_snapshot_ext.snapshot.identity.FINGERPRINT_PROPERTY`
    (every snapshot and backup the plugin creates carries it while its
    mappings name a volume snapshot) holding the fingerprint of the volume
    snapshots the image's own ``block_device_mapping`` names.  Nova's
    volume-backed path writes none; a value inherited or copied from
    another image names other volume snapshots.  A plugin image whose
    fingerprint gave way to a full property quota cannot be told from
    another tool's: it is refused too (the plugin deletes its own failed
    attempts itself).

    :param image: a Glance image (``GET /v2/images`` entry).
    :returns: one sentence, or ``None`` when the image is the plugin's.
    """
    held = image.get(identity.FINGERPRINT_PROPERTY)
    if not held:
        return 'it has no %s, the property the plugin stamps on every ' \
            'image it makes' % identity.FINGERPRINT_PROPERTY
    if held != identity.fingerprint_of(mark.mapped_snapshot_ids(image)):
        return ('its %s does not match the volume snapshots its '
                'block_device_mapping names (inherited or copied from '
                'another image)' % identity.FINGERPRINT_PROPERTY)
    return None


class AuditGlance:
    """The few raw Glance calls the audit needs, errors translated.

    Listing is done page by page with ``limit``/``marker`` so that any
    number of images is scanned in constant memory; repairs are explicit
    JSON-patch documents (no client-side schema validation of the whole
    image, which an image carrying odd legacy values could fail).

    :param glance: a :class:`~nova_snapshot_ext.image.glance.GlanceClient`.
    """

    PATCH_TYPE = 'application/openstack-images-v2.1-json-patch'

    def __init__(self, glance: glance_mod.GlanceClient):
        self.glance = glance
        self.http = glance._client.http_client

    def _call(self, operation: str, func: ty.Callable[..., ty.Any],
              *args: ty.Any, image_id: str | None = None,
              **kwargs: ty.Any) -> ty.Any:
        try:
            return func(*args, **kwargs)
        except (glance_exc.BaseException, glance_exc.HTTPException,
                ks_exc.ClientException) as err:
            raise glance_mod.translate(err, operation,
                                       image_id=image_id) from err

    def pages(self, page_size: int = DEFAULT_PAGE_SIZE,
              **filters: ty.Any) -> ty.Iterator[list[dict[str, ty.Any]]]:
        """Yield the images page by page (``GET /v2/images``).

        One page per request, every page Glance answered (the last one
        possibly empty); nothing is kept between pages, so memory does not
        grow with the number of images listed.

        :param page_size: ``limit`` of each request.
        :param filters: Glance list filters (``owner``, ``os_hidden``...).
        :raises GlanceError: a page could not be read.
        """
        marker = None
        while True:
            query = dict(filters, limit=page_size)
            if marker:
                query['marker'] = marker
            url = '/v2/images?%s' % urllib.parse.urlencode(
                {k: str(v).lower() if isinstance(v, bool) else v
                 for k, v in query.items()})
            _resp, body = self._call('list', self.http.get, url)
            if not isinstance(body, dict) or not isinstance(
                    body.get('images'), list):
                raise exception.GlanceError(
                    operation='list', reason='the answer to GET %s is not '
                    'a Glance image list' % url)
            images = [dict(i) for i in body['images']]
            yield images
            if not images or 'next' not in body:
                return
            marker = images[-1]['id']

    def get(self, image_id: str) -> dict[str, ty.Any]:
        return self.glance.get(image_id)

    def delete(self, image_id: str) -> None:
        self.glance.delete(image_id)

    def patch(self, image_id: str, ops: list[dict[str, ty.Any]]) -> None:
        """``PATCH /v2/images/{id}`` with a JSON-patch document."""
        self._call('update', self.http.patch, '/v2/images/%s' % image_id,
                   headers={'Content-Type': self.PATCH_TYPE},
                   data=json.dumps(ops), image_id=image_id)

    def head_of_data(self, image_id: str, limit: int) -> bytes:
        """At most ``limit`` + 1 bytes of the image's data."""
        body = self._call('download', self.glance._client.images.data,
                          image_id, image_id=image_id)
        data = bytearray()
        if body is None:
            return b''
        for chunk in body:
            data += chunk
            if len(data) > limit:
                break
        return bytes(data)


def _age(image: ty.Mapping[str, ty.Any],
         now: datetime.datetime) -> float | None:
    stamp = image.get('updated_at') or image.get('created_at')
    if not stamp:
        return None
    try:
        when = timeutils.parse_isotime(stamp)
    except ValueError:
        return None
    return (now - timeutils.normalize_time(when)).total_seconds()


def _mappings(image: ty.Mapping[str, ty.Any]
              ) -> tuple[list[dict[str, ty.Any]], list[str]]:
    """The decoded mapping entries and what is wrong with them."""
    problems: list[str] = []
    raw = image.get('block_device_mapping')
    if raw is None:
        return [], ['block_device_mapping is missing (bdm_v2 is set)']
    try:
        entries = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError as err:
        return [], ['block_device_mapping is not JSON: %s' % err]
    except RecursionError:
        # Anyone who can create an image can write this property.
        return [], ['block_device_mapping is nested too deeply to read']
    if not isinstance(entries, list):
        return [], ['block_device_mapping is a JSON %s, not a list'
                    % type(entries).__name__]
    # Without bdm_v2 the list is Nova's legacy (v1) format, which Nova still
    # reads: only the v2 rules below are skipped.
    v2 = 'bdm_v2' in image
    good = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            problems.append('entry %d is not an object' % i)
            continue
        good.append(entry)
        bad = [f for f in FORBIDDEN_MAPPING_FIELDS if f in entry]
        if bad:
            problems.append('entry %d carries %s' % (i, ', '.join(bad)))
        if (v2 and entry.get('destination_type') == 'volume' and
                entry.get('source_type') == 'snapshot' and
                not entry.get('snapshot_id')):
            problems.append('entry %d is a volume snapshot entry without '
                            'snapshot_id' % i)
    if v2 and str(image.get('bdm_v2')) != 'True':
        # Nova tests the property's truth: any non-empty string, 'False'
        # too, makes it read the entries as v2.
        problems.append('bdm_v2 is %r, not \'True\'' % image.get('bdm_v2'))
    if v2 and good and metadata.root_mapping(good) is None:
        problems.append('no entry has boot_index 0 (the root disk)')
    return good, problems


def unsafe_entries(entries: list[dict[str, ty.Any]], v2: bool) -> list[str]:
    """The entries Nova never writes into a snapshot image, described.

    The request's rule (:func:`nova_snapshot_ext.snapshot.mappings.
    mapping_refusal`, from Nova's ``snapshot_volume_backed``) on entries
    as written.  Without ``bdm_v2`` the list is Nova's legacy format
    (``from_legacy``: an entry with a ``snapshot_id`` is a snapshot, one
    with only a ``volume_id`` is that volume itself, and any entry keeps
    its ``volume_id``, which a boot attaches): an entry naming a volume
    is judged unsafe.
    """
    found = []
    for i, entry in enumerate(entries):
        if v2:
            refusal = mappings.mapping_refusal(entry, written=True)
            if refusal is not None and refusal[2]:
                found.append('entry %d %s: %s' % (i, refusal[0],
                                                  refusal[1]))
        elif entry.get('volume_id'):
            # from_legacy copies volume_id whichever branch it takes (a
            # snapshot_id, a swap/ephemeral virtual_name, or no_device
            # does not drop it), and a boot attaches any volume_id
            # (compute API _validate_bdm); Nova never wrote one into a
            # snapshot image (it is replaced by the snapshot's id).
            found.append('entry %d (legacy format) names volume %s: a '
                         'server booted from the image would be given that '
                         'in-use volume' % (i, entry.get('volume_id')))
    return found


def json_pointer(key: str) -> str:
    """The JSON-patch path of top-level property ``key`` (RFC 6901).

    ``~`` and ``/`` are escaped (``~0``, ``~1``), as Glance decodes them:
    unescaped, ``instance_type_a/b`` would name another (nested) path.
    """
    return '/' + key.replace('~', '~0').replace('/', '~1')


def _queued_leftover(image: ty.Mapping[str, ty.Any],
                     now: datetime.datetime, queued_age: float
                     ) -> dict[str, ty.Any] | None:
    """The evidence that a queued image is a leftover, or None (too young).

    ``not_deleted`` says why ``--fix`` leaves it: not provably the
    plugin's, protected, or deleting it would destroy something else.
    """
    age = _age(image, now)
    if age is None or age < queued_age:
        return None
    evidence = {'status': image.get('status'),
                'updated_at': image.get('updated_at'),
                'age_seconds': int(age),
                'threshold_seconds': int(queued_age)}
    not_ours = authorship_refusal(image)
    evidence['made_by'] = (MADE_BY_PLUGIN if not_ours is None
                           else MADE_BY_OTHER)
    if not_ours is not None:
        evidence['not_deleted'] = (
            'audit deletes only images nova-snapshot-ext provably made, '
            'and %s; delete it by hand once nothing (Nova) is activating '
            'it' % not_ours)
    elif image.get('protected'):
        evidence['not_deleted'] = 'the image is protected'
    armed = deletion.refusal_to_delete(image)
    if armed is not None and 'not_deleted' not in evidence:
        evidence['not_deleted'] = armed
    return evidence


def judge(image: dict[str, ty.Any], auditor: AuditGlance | None = None,
          queued_age: float = DEFAULT_QUEUED_AGE,
          max_download: int = DEFAULT_MAX_DOWNLOAD,
          now: datetime.datetime | None = None,
          not_inspected: list[dict[str, ty.Any]] | None = None
          ) -> list[Finding]:
    """Every problem of one volume-backed snapshot image.

    :param image: the image as ``GET /v2/images`` lists it.
    :param auditor: used to download small payloads; ``None`` judges
        metadata and sizes only.
    :param queued_age: seconds after which a queued image is a leftover.
    :param max_download: largest payload (bytes) downloaded to inspect.
    :param now: the current UTC time (naive), for tests.
    :param not_inspected: receives ``{'image_id', 'size'}`` of payloads too
        large to download.
    :returns: the findings, possibly empty.
    """
    now = now or timeutils.utcnow()
    image_id = image['id']
    found: list[Finding] = []

    def add(kind: str, evidence: dict[str, ty.Any],
            fix: dict[str, ty.Any] | None = None) -> None:
        found.append(Finding(image_id=image_id, kind=kind, evidence=evidence,
                             fixable=fix is not None, fix=fix,
                             owner=image.get('owner'),
                             name=image.get('name')))

    status = image.get('status')
    if status == 'queued':
        leftover = _queued_leftover(image, now, queued_age)
        if leftover is not None:
            add(QUEUED_LEFTOVER, leftover,
                None if 'not_deleted' in leftover else {'op': 'delete'})
    elif status == 'active':
        _judge_payload(image, auditor, max_download, add, not_inspected)

    mappings, problems = _mappings(image)
    if problems:
        add(MALFORMED_MAPPING, {'problems': problems})
    unsafe = unsafe_entries(mappings, 'bdm_v2' in image)
    if unsafe:
        add(UNSAFE_MAPPING, {'problems': unsafe})
    hazard = deletion.hazard(image)
    if hazard is not None:
        add(DELETION_HAZARD, {'property': hazard[0],
                              'value': image[hazard[0]],
                              'why': hazard[1],
                              'cinder_encryption_key_id':
                              image.get('cinder_encryption_key_id')})
    limit = root_volume_limit(mappings)
    min_disk = image.get('min_disk') or 0
    if limit is not None and int(min_disk) > limit:
        add(MIN_DISK_ABOVE_ROOT, {'min_disk': min_disk,
                                  'root_volume_size': limit,
                                  'root_device_name':
                                  image.get('root_device_name')},
            {'op': 'replace', 'path': '/min_disk', 'value': limit})
    for key in sorted(image):
        why = borrowed_kind(key, image)
        if why is None:
            continue
        removable = (why not in NOT_REMOVABLE_KINDS and
                     not key.startswith(NOT_REMOVABLE_PREFIXES))
        add(BORROWED_PROPERTY, {'property': key, 'value': image[key],
                                'why': why},
            {'op': 'remove', 'path': json_pointer(key)} if removable
            else None)
    return found


def _judge_payload(image: dict[str, ty.Any], auditor: AuditGlance | None,
                   max_download: int,
                   add: ty.Callable[..., None],
                   not_inspected: list[dict[str, ty.Any]] | None) -> None:
    size = image.get('size')
    disk_format = image.get('disk_format')
    if size is None or disk_format is None:
        return
    if size == 0:
        if disk_format != 'raw':
            add(DISHONEST_PAYLOAD, {
                'disk_format': disk_format, 'size': 0,
                'inspector': 'zero bytes are only raw; no %s image is '
                'empty' % disk_format})
        return
    if auditor is None:
        return
    if size > max_download:
        if not_inspected is not None:
            not_inspected.append({'image_id': image['id'], 'size': size})
        return
    data = auditor.head_of_data(image['id'], max_download)
    if len(data) > max_download:  # pragma: no cover - Glance lied on size
        if not_inspected is not None:
            not_inspected.append({'image_id': image['id'], 'size': size})
        return
    try:
        detected = locations.detect_format(data)
    except ValueError as err:
        add(DISHONEST_PAYLOAD, {'disk_format': disk_format,
                                'size': len(data), 'inspector': str(err)})
        return
    seen = 'raw' if detected in RAW_LIKE else detected
    if seen != disk_format:
        add(DISHONEST_PAYLOAD, {
            'disk_format': disk_format, 'size': len(data),
            'inspector': 'the data is %s' % detected})


def listed_pages(auditor: AuditGlance, page_size: int = DEFAULT_PAGE_SIZE,
                 filters: ty.Mapping[str, ty.Any] | None = None
                 ) -> ty.Iterator[list[dict[str, ty.Any]]]:
    """Every page of every image the identity can list, each image once.

    Two passes, ``os_hidden=false`` then ``os_hidden=true`` (Glance lists
    hidden images only when asked: glance/api/v2/images.py, the
    ``os_hidden`` filter).  Each image is kept by the pass its own
    ``os_hidden`` names (absent: not hidden), so no image is yielded twice
    even by a Glance that ignored the filter, and no set of the ids seen is
    kept: memory is one page, whatever the number of images.  An image
    hidden or unhidden between the two passes may be missed or seen twice.

    :param page_size: ``limit`` of each request.
    :param filters: more Glance list filters (``owner``...).
    :returns: an iterator of pages (lists of image dicts, as Glance lists
        them), one per ``GET /v2/images`` request, possibly empty.
    :raises GlanceError: a page could not be listed.
    """
    for hidden in (False, True):
        query = dict(filters or {}, os_hidden=hidden)
        for page in auditor.pages(page_size, **query):
            yield [image for image in page
                   if bool(image.get('os_hidden', False)) is hidden]


def scan(auditor: AuditGlance, queued_age: float = DEFAULT_QUEUED_AGE,
         max_download: int = DEFAULT_MAX_DOWNLOAD,
         page_size: int = DEFAULT_PAGE_SIZE,
         filters: ty.Mapping[str, ty.Any] | None = None,
         progress: ty.Callable[[Report], None] | None = None) -> Report:
    """Scan every image the identity can list, hidden ones included.

    Streams (:func:`listed_pages`): one page of images is held at a time.
    What else is held grows with the findings, the payloads not inspected
    and, for ``untagged-snapshot-reference``
    (:class:`~nova_snapshot_ext.audit.references.UntaggedReferences`),
    the volume snapshots the volume-backed snapshot images name (a key per
    tagged snapshot, an entry per untagged reference until the scan ends),
    never with the other images read.

    :param progress: called after every page with the report so far
        (``scanned``, ``pages``, ``findings`` up to date).
    :raises GlanceError: a page could not be listed.
    """
    report = Report()
    refs = references.UntaggedReferences()
    for page in listed_pages(auditor, page_size, filters):
        report.pages += 1
        for image in page:
            report.scanned += 1
            if not is_volume_snapshot(image):
                continue
            report.snapshots += 1
            refs.add(image)
            report.findings += judge(
                image, auditor, queued_age=queued_age,
                max_download=max_download,
                not_inspected=report.not_inspected)
        if progress is not None:
            progress(report)
    report.findings += [
        Finding(image_id=ref['image_id'], kind=references.KIND,
                evidence={'volume_snapshot': ref['snapshot_id'],
                          'missing_tag': ref['tag']},
                owner=ref['owner'], name=ref['name'])
        for ref in refs.findings()]
    return report


def _still_same(finding: Finding, image: dict[str, ty.Any],
                scanned_at: str | None) -> str:
    """Why the fix must not run now ('' when it may)."""
    if finding.kind == QUEUED_LEFTOVER:
        not_ours = authorship_refusal(image)
        if not_ours is not None:
            return 'not provably made by nova-snapshot-ext: %s' % not_ours
        if image.get('status') != 'queued':
            return 'status is now %s' % image.get('status')
        if image.get('size') not in (None, 0):
            return 'the image now has data'
        if image.get('updated_at') != scanned_at:
            return 'the image was updated since the scan'
        armed = deletion.refusal_to_delete(image)
        if armed is not None:
            return armed
    return ''


def repair(auditor: AuditGlance, report: Report, act: bool,
           queued_age: float = DEFAULT_QUEUED_AGE) -> list[Action]:
    """Repair every fixable finding of ``report``.

    Images only (a volume snapshot's finding is repaired by
    :func:`nova_snapshot_ext.audit.backups.repair`).  Nothing that holds
    the image's data changes: a queued leftover (no data) is deleted,
    ``min_disk`` lowered, borrowed properties removed.  Each image is
    re-read right before it is changed and re-judged; a fix that no
    longer applies is skipped.

    :param act: ``False`` (dry run): record what would be done.
    :returns: the actions, also appended to ``report.actions``.
    """
    by_image: dict[str, list[Finding]] = {}
    for finding in report.findings:
        if finding.fixable and finding.fix and finding.subject == IMAGE:
            by_image.setdefault(finding.image_id, []).append(finding)
    actions: list[Action] = []
    for image_id, findings in by_image.items():
        if not act:
            actions += [Action(f.image_id, f.kind, f.fix, 'dry-run')
                        for f in findings]
            continue
        try:
            current = auditor.get(image_id)
        except exception.GlanceNotFound:
            actions += [Action(f.image_id, f.kind, f.fix, 'skipped',
                               'the image is gone') for f in findings]
            continue
        still = {(f.kind, json.dumps(f.fix, sort_keys=True))
                 for f in judge(current, None, queued_age=queued_age)}
        patch: list[Finding] = []
        for finding in findings:
            key = (finding.kind, json.dumps(finding.fix, sort_keys=True))
            if key not in still:
                actions.append(Action(image_id, finding.kind, finding.fix,
                                      'skipped', 'no longer applies'))
                continue
            if finding.kind == QUEUED_LEFTOVER:
                why = _still_same(finding, current,
                                  finding.evidence.get('updated_at'))
                if why:
                    actions.append(Action(image_id, finding.kind,
                                          finding.fix, 'skipped', why))
                    continue
                try:
                    auditor.delete(image_id)
                except exception.GlanceError as err:
                    actions.append(Action(image_id, finding.kind,
                                          finding.fix, 'failed',
                                          err.format_message()))
                else:
                    actions.append(Action(image_id, finding.kind,
                                          finding.fix, 'done'))
                continue
            patch.append(finding)
        if patch:
            ops = [dict(f.fix or {}) for f in patch]
            try:
                auditor.patch(image_id, ops)
            except exception.GlanceError as err:
                actions += [Action(image_id, f.kind, f.fix, 'failed',
                                   err.format_message()) for f in patch]
            else:
                actions += [Action(image_id, f.kind, f.fix, 'done')
                            for f in patch]
    return record_actions(report, actions)
