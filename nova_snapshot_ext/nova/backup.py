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

"""``createBackup`` of a volume-backed server, served by the paste filter.

Nova refuses it (``API.backup``: "Backup is not supported for
volume-backed instances.", 400).  With ``[snapshot_ext]
volume_backed_backups = true`` the filter answers it instead
(:func:`serve`), for a request Nova itself would take up to that refusal:

1. Nova's ``createBackup`` body schema (``name``, ``backup_type``,
   ``rotation``, ``metadata``) and microversion, the caller's project, a
   UUID server id, the server visible to the caller, Nova's
   ``os_compute_api:os-create-backup`` policy, a ``vm_state`` Nova backs up
   (active, stopped, paused, suspended) with no task; the server
   volume-backed; before 2.39, Nova's image metadata quota.  Anything else
   goes to Nova unchanged (which answers it as without the plugin).
2. The backup's preflight (:class:`~..backup.service.BackupService`),
   before any volume snapshot: a refusal is Nova's fault body.
3. The volume snapshots (:mod:`.volumes`), with the request's context
   targeted at the server's cell (:func:`.adapter.load_server`, as Nova's
   API targets it): quiesce, instance action ``createBackup``, volume
   snapshots, thaw (also after every failure); then the marked backup
   record with the real snapshot ids, preflighted and activated
   (:func:`.hook.register_prepared`).  A failure from here on is answered
   with its cause (:func:`_failure`), the volume snapshots taken deleted
   or named.
4. The rotation (:mod:`..backup.rotation`) with the user's context for
   Glance and Nova's own Cinder API
   (:class:`~nova_snapshot_ext.cinder.NovaCinder`).  With
   ``[snapshot_ext] backup_copies``, first one Cinder backup of each of
   the image's volume snapshots (:mod:`..backup.copies`), asked for in a
   thread of its own once the snapshots are available, never waited for
   by the answer (a copy not requested is a WARNING); the rotation then
   follows in that thread, waiting up to ``backup_copies_wait`` for an
   older backup whose snapshots are being copied.  A
   failure of the rotation is logged (WARNING, naming what was not
   deleted); the backup stands and the answer is Nova's success.  Before
   it, the volume snapshots of the active backup are recorded in Cinder
   (:func:`.volumes.record_image_snapshots`).
5. Nova's answer: 202; from 2.45 the body ``{"image_id": ...}``; before,
   no body and a ``Location`` header to the image when ``rotation > 0``.
"""

from __future__ import annotations

import dataclasses
import threading
import time
import typing as ty

from oslo_log import log as logging
from oslo_serialization import jsonutils
from oslo_utils import uuidutils
import webob
import webob.exc

from nova_snapshot_ext.backup import copy_retention
from nova_snapshot_ext.backup import rotation as rotation_mod
from nova_snapshot_ext.backup import service as backup_mod
from nova_snapshot_ext.cinder import nova_api
from nova_snapshot_ext.cinder import waits
from nova_snapshot_ext import exception
from nova_snapshot_ext.i18n import _
from nova_snapshot_ext.nova import adapter
from nova_snapshot_ext.nova import hook
from nova_snapshot_ext.nova import volumes as volumes_mod

if ty.TYPE_CHECKING:
    from nova_snapshot_ext.snapshot import service as service_mod

LOG = logging.getLogger(__name__)

#: Nova's policy for ``createBackup`` (``nova/policies/create_backup.py``).
CREATE_BACKUP_POLICY = 'os_compute_api:os-create-backup'

#: The ``vm_state`` values Nova's ``API.backup`` accepts.
BACKUP_VM_STATES = ('active', 'stopped', 'paused', 'suspended')

#: From this microversion Nova answers with the image id in the body.
IMAGE_ID_BODY_SINCE = '2.45'

#: Before this microversion Nova checks the image metadata quota.
NO_QUOTA_CHECK_SINCE = '2.39'
#: Seconds between two rotations while an older backup is being copied.
ROTATION_POLL_S = 2.0


@dataclasses.dataclass
class BackupAction:
    """A ``createBackup`` body Nova's schema accepts."""

    name: str
    backup_type: str
    rotation: int
    metadata: dict[str, str]


def parse(req: webob.Request, nova_req: ty.Any) -> BackupAction | None:
    """The ``createBackup`` action if Nova's schema takes it, else ``None``.

    :param nova_req: ``nova.api.openstack.wsgi.Request`` with its API
        version set (the legacy v2.0 schema allows padded names).
    """
    from nova.api.openstack import common
    from nova.api.openstack.compute.schemas import create_backup as schemas
    from nova.api.validation import validators
    from nova import exception as nova_exc

    try:
        body = jsonutils.loads(req.body)
    except (ValueError, TypeError):
        return None
    if not isinstance(body, dict) or 'createBackup' not in body:
        return None
    schema = (schemas.create_backup_v20 if nova_req.is_legacy_v2()
              else schemas.create_backup)
    try:
        validators._SchemaValidator(schema).validate(body)
    except nova_exc.ValidationError:
        return None
    entity = body['createBackup']
    return BackupAction(name=common.normalize_name(entity['name']),
                        backup_type=entity['backup_type'],
                        rotation=int(entity['rotation']),
                        metadata=dict(entity.get('metadata') or {}))


def _nova_request(req: webob.Request) -> ty.Any:
    """Nova's request with its API version set.

    :returns: ``None`` when Nova refuses the version itself.
    """
    from nova.api.openstack import wsgi as nova_wsgi
    from nova import exception as nova_exc

    nova_req = nova_wsgi.Request(req.environ)
    try:
        nova_req.set_api_version_request()
    except (nova_exc.InvalidAPIVersionString,
            nova_exc.InvalidGlobalAPIVersion):
        return None
    return nova_req


def _load(context: ty.Any, server_id: str) -> tuple[ty.Any, ty.Any] | None:
    """The server and its BDMs, or ``None`` (Nova answers).

    ``None`` unless Nova would back the server up but for its
    volume-backed root.
    """
    from nova.compute import utils as compute_utils

    loaded = adapter.load_server(context, server_id,
                                 policies=(CREATE_BACKUP_POLICY,))
    if loaded is None:
        return None
    instance, bdms = loaded
    if instance.vm_state not in BACKUP_VM_STATES or instance.task_state:
        return None
    if not compute_utils.is_volume_backed_instance(context, instance, bdms):
        return None
    return instance, bdms


def serve(req: webob.Request, project_id: str | None, server_id: str,
          service: service_mod.SnapshotService, conf: ty.Any,
          fault: ty.Callable[[int, str], ty.Any]) -> ty.Any:
    """Answer a ``createBackup``, or ``None`` to let Nova answer it.

    ``None`` only while nothing was done for the request: Nova would
    refuse it on its own (see the module docstring), or the plugin cannot
    form a snapshot request from the server.  Once the preflight ran,
    every outcome is the plugin's answer: a failure is answered with its
    cause and status (:func:`_failure`), never with Nova's "not
    supported for volume-backed instances".

    :param fault: builds Nova's fault response (``filter._fault``).
    :returns: a WSGI response, or ``None``.
    """
    context = req.environ.get('nova.context')
    if context is None or (project_id is not None and
                           project_id != context.project_id):
        return None
    if not uuidutils.is_uuid_like(server_id):
        return None
    nova_req = _nova_request(req)
    if nova_req is None:
        return None
    action = parse(req, nova_req)
    if action is None:
        return None
    # The request's context is now targeted at the server's cell, as
    # Nova's API targets it when it loads a server.
    loaded = _load(context, server_id)
    if loaded is None:
        return None
    instance, bdms = loaded
    if nova_req.api_version_request < _version(NO_QUOTA_CHECK_SINCE):
        from nova.api.openstack import common

        try:
            common.check_img_metadata_properties_quota(context,
                                                       action.metadata)
        except webob.exc.HTTPException as err:
            return fault(err.code, err.explanation)
    backups = backup_mod.BackupService(service)
    try:
        glance = hook.client_for_context(context, conf)
        request = adapter.request_from_nova(context, instance, bdms,
                                            action.name, action.metadata)
        backups.preflight(dataclasses.replace(
            request, backup_type=action.backup_type), glance)
    except (exception.InvalidRequest, exception.InvalidServerState) as err:
        LOG.debug('nova-snapshot-ext: createBackup of %s left to Nova: %s',
                  server_id, err.format_message())
        return None
    except exception.PreflightError as err:
        LOG.info('nova-snapshot-ext: refused createBackup of server '
                 '%(server)s before any volume snapshot: %(reason)s',
                 {'server': server_id, 'reason': err.format_message()})
        return fault(err.code, err.format_message())
    except exception.SnapshotExtException as err:
        # E.g. Glance unreachable: the backup cannot be made, and Nova's
        # "not supported" would hide why.
        return _failure(fault, instance, err, 'before any volume snapshot')
    image_id = _backup(context, instance, bdms, action, backups, glance,
                       fault)
    if not isinstance(image_id, str):
        return image_id  # the failure, answered
    backup = _read_backup(glance, image_id)
    if backup is not None:
        if not conf.snapshot_ext.backup_copies:
            _rotate(context, glance, backup, action,
                    conf.snapshot_ext.rotation_full_scan)
        # The thread takes this request's Glance client: nothing here
        # uses it after the hand-over.
        elif _copy_later(context, glance, backup, action,
                         conf.snapshot_ext) is None:
            # No thread: no copies, but the rotation as without them.
            _rotate(context, glance, backup, action,
                    conf.snapshot_ext.rotation_full_scan)
    return _answer(req, nova_req, image_id, action.rotation)


def _version(text: str) -> ty.Any:
    from nova.api.openstack import api_version_request

    return api_version_request.APIVersionRequest(text)


def _backup(context: ty.Any, instance: ty.Any, bdms: ty.Any,
            action: BackupAction, backups: backup_mod.BackupService,
            glance: ty.Any, fault: ty.Callable[[int, str], ty.Any]
            ) -> ty.Any:
    """Volume snapshots (:mod:`.volumes`), then the marked backup image.

    The instance action is ``createBackup``.  On a failure the volume
    snapshots this request took are deleted, unless an image that may
    still become active names them (then they are left and named).

    :returns: the active backup's image id, or the failure's response.
    """
    from nova.compute import instance_actions

    volumes = volumes_mod.VolumeSnapshots(context, instance, bdms,
                                          instance_actions.BACKUP)
    try:
        snapshot_ids = volumes.take(action.name)
    except Exception as err:
        return _failure(fault, instance, err, 'taking the volume snapshots',
                        volumes=volumes, why_left=None)
    try:
        request = dataclasses.replace(adapter.request_from_nova(
            context, instance, bdms, action.name, action.metadata,
            snapshot_ids=snapshot_ids,
            snapshot_sizes=volumes.snapshot_sizes),
            backup_type=action.backup_type)
        prepared = backups.preflight(request, glance)
    except Exception as err:
        # Refused before any image was created.
        return _failure(fault, instance, err, 'building the backup image',
                        volumes=volumes, why_left=None)
    try:
        result = hook.register_prepared(prepared, glance, backups.snapshots)
    except Exception as err:
        # An image left in place (or whose create got no answer) may still
        # become active and names these snapshots: they stay with it.
        return _failure(fault, instance, err, 'activating the backup image',
                        volumes=volumes, why_left=volumes_mod.why_kept(err))
    volumes_mod.record_image_snapshots(context, str(result.image_id),
                                       snapshot_ids)
    return str(result.image_id)


def status_for(err: BaseException) -> int:
    """The HTTP status Nova's ``createImage`` answers for this failure.

    A plugin exception is first mapped as the activation hook maps it
    (:func:`.adapter.to_nova_exception`); then, as Nova's API does: an
    instance in the wrong state or a failed quiesce 409, a quota or a
    refusal 403, invalid input 400, anything else 500.
    """
    from nova import exception as nova_exc

    if isinstance(err, exception.SnapshotExtException):
        err = adapter.to_nova_exception(err)
    if isinstance(err, (nova_exc.InstanceInvalidState,
                        nova_exc.InstanceQuiesceFailed)):
        return 409
    if isinstance(err, (nova_exc.OverQuota, nova_exc.Forbidden)):
        return 403
    if isinstance(err, nova_exc.Invalid):
        return 400
    return 500


def _failure(fault: ty.Callable[[int, str], ty.Any], instance: ty.Any,
             err: BaseException, step: str,
             volumes: volumes_mod.VolumeSnapshots | None = None,
             why_left: str | None = None) -> ty.Any:
    """Answer a failed backup with its cause; one log line says it all.

    :param step: what failed, for the log line.
    :param volumes: the :class:`~.volumes.VolumeSnapshots` of the request,
        once it may have taken some.
    :param why_left: why the volume snapshots taken must stay
        (:func:`.volumes.why_kept`), or ``None`` to delete them
        (:func:`.volumes.settle`).
    """
    from nova import exception as nova_exc
    import oslo_messaging

    expected = isinstance(err, (exception.SnapshotExtException,
                                nova_exc.NovaException,
                                oslo_messaging.MessagingException))
    if expected:
        # A Nova or plugin message, or the RPC failure (e.g. the compute
        # host did not answer the quiesce call).
        cause = volumes_mod.describe(err)
    else:
        # No internals (SQL, paths) in the answer; the log has the rest.
        cause = ('unexpected %s in nova-snapshot-ext (see nova-api\'s log)'
                 % type(err).__name__)
    settled = volumes_mod.Settlement([], {})
    if volumes is not None:
        settled = volumes_mod.settle(volumes.context, volumes.snapshot_ids,
                                     why_left, volumes.volume_ids(),
                                     volumes.cinder)
    message = _('Backup of server %(server)s failed: %(cause)s') % {
        'server': instance.uuid, 'cause': cause} + settled.suffix()
    log = LOG.warning if expected else LOG.exception
    log('nova-snapshot-ext: createBackup of server %(server)s failed '
        '%(step)s: %(message)s', {'server': instance.uuid, 'step': step,
                                  'message': message})
    return fault(status_for(err), message)


def _read_backup(glance: ty.Any, image_id: str) -> ty.Any:
    """The active backup image, or ``None`` (logged: nothing follows)."""
    try:
        return glance.get(image_id)
    except exception.GlanceError as err:
        LOG.warning('nova-snapshot-ext: backup %(id)s is active; it could '
                    'not be read back, so it was neither copied nor '
                    'rotated: %(reason)s',
                    {'id': image_id, 'reason': err.format_message()})
        return None


def _copy_later(context: ty.Any, glance: ty.Any, backup: ty.Any,
                action: BackupAction, group: ty.Any
                ) -> threading.Thread | None:
    """:func:`_copy` in a thread of its own: Nova answers meanwhile.

    The volume snapshots are made by Cinder after Nova's answer (a
    quiesced server is thawed once they are), and a copy needs them
    ``available``.  The rotation follows the copies in the same thread:
    an older backup's snapshots cannot be deleted while cinder-backup
    copies them, so it waits for them (:func:`_rotate`'s ``patience``).
    A nova-api stopped before the copies are asked for leaves the backup
    without them until ``audit --fix --yes`` makes them
    (``copies-incomplete``, doc/source/backups.rst).

    :param group: ``conf.snapshot_ext``.
    :returns: the thread, or ``None`` when none could start (logged).
    """
    thread = threading.Thread(
        target=_copy, args=(context, glance, backup, action, group),
        daemon=True, name='nova-snapshot-ext-copies-%s' % backup.get('id'))
    try:
        thread.start()
    except Exception:  # noqa: B902 - the backup stands, Nova's answer too
        LOG.exception('nova-snapshot-ext: backup %s is active; its copies '
                      'off the primary storage were not asked for (no '
                      'thread)', backup.get('id'))
        return None
    return thread


def _copy(context: ty.Any, glance: ty.Any, backup: ty.Any,
          action: BackupAction, group: ty.Any) -> None:
    """The backup's copies off the primary storage, retention, rotation.

    ``[snapshot_ext] backup_copies`` (:mod:`..backup.copies`), with Nova's
    Cinder for the user's context, once the snapshots are available (at
    most ``backup_copies_wait`` seconds); then ``backup_copies_keep`` and
    ``backup_copies_max_age`` (:mod:`..backup.copy_retention`); then the
    images' rotation, waiting up to ``backup_copies_wait`` for the older
    backups' copies to end.  Nothing raised: a copy not requested, or one
    past retention not deleted, is a WARNING naming it and why; the
    backup stands.
    """
    try:
        _copies(context, backup, group)
    finally:
        _rotate(context, glance, backup, action, group.rotation_full_scan,
                patience=float(group.backup_copies_wait),
                delete_wait=waits.DELETING_WAIT)


def _copies(context: ty.Any, backup: ty.Any, group: ty.Any) -> None:
    """The copies and their retention; every failure logged, none raised."""
    try:
        cinder = nova_api.NovaCinder(context)
        project = str(context.project_id)
        result, kept = copy_retention.copy_and_retain(cinder, backup,
                                                      project, group)
        level = LOG.warning if result.failed else LOG.info
        level('nova-snapshot-ext: createBackup %s', result.describe())
        if kept is not None:
            level = LOG.warning if kept.left or kept.error else LOG.info
            level('nova-snapshot-ext: createBackup %s', kept.describe())
    except Exception:
        LOG.exception('nova-snapshot-ext: backup %s is active; its copies '
                      'off the primary storage failed', backup.get('id'))


def _rotate(context: ty.Any, glance: ty.Any, backup: ty.Any,
            action: BackupAction, full_scan: bool, patience: float = 0.0,
            delete_wait: float | None = None
            ) -> rotation_mod.RotationResult | None:
    """Rotate around the new backup; every failure logged, none raised.

    :param backup: the active backup image (a Glance document).
    :param full_scan: ``[snapshot_ext] rotation_full_scan``.
    :param patience: seconds a backup left because cinder-backup copies
        its volume snapshots (``RotationResult.copying``) is waited for
        (:func:`_wait_copied`), then the rotation is run again (0: once).
    :param delete_wait: seconds the deleted volume snapshots are watched
        until gone (``None``, in Nova's answer: not watched; each is
        named as being deleted).
    """
    image_id = backup.get('id')
    deadline = time.monotonic() + patience
    try:
        cinder = nova_api.NovaCinder(context)
        while True:
            result = rotation_mod.rotate(
                glance, backup, action.rotation, action.backup_type,
                cinder, full_scan=full_scan, delete_wait=delete_wait)
            if not result.copying or time.monotonic() >= deadline:
                break
            _wait_copied(glance, cinder, result.copying, deadline)
    except Exception:
        # The backup exists: an unexpected error of the rotation must not
        # turn Nova's answer into a failure (or hand it back to Nova).
        LOG.exception('nova-snapshot-ext: backup %s is active; its rotation '
                      'failed', image_id)
        return None
    # Anything this rotation failed to delete (an image, or a volume
    # snapshot Cinder refused to delete), or a backup still being copied
    # when the patience ran out, is a WARNING; a look-alike left on
    # purpose is not a failure.
    level = LOG.warning if (result.failures or not result.complete or
                            result.copying) else LOG.info
    level('nova-snapshot-ext: createBackup rotation: %s', result.describe())
    return result


def _wait_copied(glance: ty.Any, cinder: ty.Any, image_ids: list[str],
                 deadline: float) -> None:
    """Until cinder-backup copies none of these backups' snapshots.

    Polls only those images (gone counts as done), every
    :data:`ROTATION_POLL_S`, until ``deadline`` (``time.monotonic``).
    """
    def copying(image_id: str) -> bool:
        try:
            image = glance.get(image_id)
        except exception.GlanceNotFound:
            return False
        return bool(rotation_mod.being_copied(cinder, image))

    while time.monotonic() < deadline:
        if not any(copying(image_id) for image_id in image_ids):
            return
        time.sleep(ROTATION_POLL_S)


def _answer(req: webob.Request, nova_req: ty.Any, image_id: str,
            rotation: int) -> ty.Any:
    """Nova's ``createBackup`` success response for this microversion."""
    version = nova_req.api_version_request
    resp = webob.Response(status_int=202)
    if version >= _version(IMAGE_ID_BODY_SINCE):
        resp.content_type = 'application/json'
        resp.body = jsonutils.dump_as_bytes({'image_id': image_id})
    else:
        resp.body = b''
        if rotation > 0:
            resp.headers['Location'] = '%s/images/%s' % (
                req.application_url.rstrip('/'), image_id)
    if not version.is_null():
        text = version.get_string()
        resp.headers['OpenStack-API-Version'] = 'compute %s' % text
        resp.headers['X-OpenStack-Nova-API-Version'] = text
        resp.headers['Vary'] = ('OpenStack-API-Version, '
                                'X-OpenStack-Nova-API-Version')
    return resp
