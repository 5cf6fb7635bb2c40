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

"""``nova-snapshot-ext backup --rotation N --backup-type T REQUEST.json``.

The snapshot request's image, marked as a backup of ``backup_type``, then
the rotation of the server's older backups (doc/source/backups.rst).  The
volume snapshots of rotated backups are deleted only with Cinder
credentials (``[snapshot_ext_cinder]``); without them they are named.
With ``[snapshot_ext] backup_copies``, the copies off the primary storage
and their retention come before the rotation (they need those
credentials: refused, nothing created, without them).

Exit status (design.md rule 10): 0 backup active, copies asked for and
rotation complete; 2 bad input or configuration (nothing created); 3
Glance or Cinder unreachable or credentials refused; 1 the backup failed,
or it is active and a copy was not asked for, the copies' retention could
not list the backups, or the rotation could not delete an image or a
volume snapshot it selected (the report names each).
"""

from __future__ import annotations

import dataclasses
import json
import sys
import typing as ty

from oslo_config import cfg

from nova_snapshot_ext.backup import service as backup_mod
from nova_snapshot_ext.cinder import client as cinder_mod
from nova_snapshot_ext.cmd import checks
from nova_snapshot_ext import exception
from nova_snapshot_ext import opts
from nova_snapshot_ext.snapshot import request as request_mod
from nova_snapshot_ext.snapshot import service as service_mod


def add_parser(subparsers: ty.Any) -> None:
    """Add the ``backup`` sub-command."""
    p = subparsers.add_parser(
        'backup', help='a backup image of a volume-backed server, rotated',
        description='Register and activate the image REQUEST.json '
        'describes as a backup (image_type=backup, the backup type, the '
        'server\'s instance_uuid), then delete the server\'s older backups '
        'of that type beyond --rotation, and, with [snapshot_ext_cinder] '
        'credentials, the Cinder volume snapshots only they named.')
    p.add_argument('request', metavar='REQUEST.json',
                   help='the snapshot request (JSON)')
    p.add_argument('--rotation', type=int, required=True, metavar='N',
                   help='backups of this server and type to keep, the new '
                   'one included (0 keeps only the new one)')
    p.add_argument('--backup-type', required=True, metavar='TYPE',
                   help='the backup type, e.g. daily or weekly')


def _exit_code(failures: list[exception.SnapshotExtException]) -> int:
    if not failures:
        return checks.EXIT_OK
    if all(exception.unreachable(err) or
           isinstance(err, (exception.CinderUnavailable,
                            exception.CinderForbidden))
           or (isinstance(err, exception.GlanceError) and err.status == 401)
           for err in failures):
        return checks.EXIT_UNREACHABLE
    return checks.EXIT_FAILED


def cinder_client(conf: cfg.ConfigOpts) -> cinder_mod.CinderClient | None:
    """The Cinder client of ``[snapshot_ext_cinder]``, or ``None``.

    ``None`` when the group names no auth plugin, itself or through
    ``auth_section`` (no Cinder credentials).

    :raises ConfigurationError: the group says where Cinder is
        (``endpoint_override``) but gives no credentials: the rotation
        would go on without deleting a volume snapshot.
    """
    group = conf[opts.CINDER_GROUP]
    if not (group.auth_type or group.auth_section):
        if group.endpoint_override:
            raise exception.ConfigurationError(
                group=opts.CINDER_GROUP, option='auth_type',
                reason='endpoint_override says where Cinder is, not who '
                'asks: set auth_type and its options too')
        return None
    return cinder_mod.CinderClient.from_conf(conf)


def _copy_failures(result: backup_mod.BackupResult, backup_id: str
                   ) -> list[exception.SnapshotExtException]:
    """What the copies and their retention failed at, said on stderr.

    :returns: the errors (their kinds choose the exit status).
    """
    failures: list[exception.SnapshotExtException] = []
    if result.copies is not None and result.copies.failed:
        print('error: backup %s is active, but %d of its volume snapshots '
              'were not copied off the primary storage (named above); the '
              'same command run again copies what is missing'
              % (backup_id, len(result.copies.failed)), file=sys.stderr)
        failures.extend(result.copies.errors)
    if result.retention is not None and result.retention.error:
        print('error: backup %s is active, but the retention of its copies '
              'was not done: %s' % (backup_id, result.retention.error),
              file=sys.stderr)
        failures.append(result.retention.failure or exception.CinderError(
            operation='list', resource='backups',
            reason=result.retention.error))
    return failures


def run(conf: cfg.ConfigOpts) -> int:
    """Back up, rotate, print the report; return the exit status."""
    args = conf.command
    rotation = args.rotation
    if rotation < 0:
        raise checks.CLIError('--rotation must be 0 or more, got %d'
                              % rotation)
    backup_type = args.backup_type
    if not backup_type.strip():
        raise checks.CLIError('--backup-type must not be empty')
    request = request_mod.SnapshotRequest.from_file(args.request)
    if request.backup_type and request.backup_type != backup_type:
        raise checks.CLIError(
            'the request says backup_type %r, --backup-type %r'
            % (request.backup_type, backup_type))
    request = dataclasses.replace(request, backup_type=backup_type)
    service_mod.check_options(conf)
    cinder = cinder_client(conf)
    # Refused before Glance is asked anything; the project the copies
    # are made in (and recorded for) is read now.
    copier = backup_mod.copier_for(conf.snapshot_ext, cinder)
    if copier is not None:
        getattr(copier, 'project_id', None)
    glance = checks.connect(conf)
    service = backup_mod.BackupService(
        service_mod.SnapshotService(conf, glance=glance))
    result = service.backup(request, rotation, glance=glance, cinder=cinder)
    report = result.rotation
    if conf.format == 'json':
        print(json.dumps(result.to_dict(), indent=2, sort_keys=True,
                         default=str))
    else:
        print(result.describe())
    if report.snapshots_left and cinder is None:
        checks.warn('the volume snapshots of the rotated backups were '
                    'left (no [%s] credentials); delete them in Cinder once '
                    'no image names them' % opts.CINDER_GROUP)
    code = _exit_code(list(report.failures) +
                      _copy_failures(result, report.backup_id))
    if code and report.failures:
        print('error: backup %s is active, but the rotation is incomplete: '
              'see the images and volume snapshots named above; a later '
              'backup of this type rotates the images again, not the '
              'volume snapshots of images already deleted'
              % report.backup_id, file=sys.stderr)
    return code
