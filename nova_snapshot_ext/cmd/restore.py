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

"""``nova-snapshot-ext restore``: a server back from its copies.

Reads only Cinder (``[snapshot_ext_cinder]``): the copies' metadata says
everything a restore needs (:mod:`nova_snapshot_ext.restore`), so it
works when the backup image and its volume snapshots are gone.  Nova's
compute API is reached with the same credentials.  ``--list`` shows the
sets of copies without restoring.

Exit status: 0 restored (or listed); 1 refused before anything was made
(the reason names the copy, quota or flavor) or failed midway (every
volume or server it made is named with its fate); 2 bad arguments or
configuration; 3 Cinder or Nova unreachable or the credentials refused.
"""

from __future__ import annotations

import json
import math
import sys
import typing as ty

from oslo_config import cfg

from nova_snapshot_ext.cmd import backup as backup_cmd
from nova_snapshot_ext.cmd import checks
from nova_snapshot_ext.cmd import progress as progress_mod
from nova_snapshot_ext import exception
from nova_snapshot_ext import opts
from nova_snapshot_ext import restore as restore_mod


def add_parser(subparsers: ty.Any) -> None:
    """Add the ``restore`` sub-command."""
    p = subparsers.add_parser(
        'restore', help='a server back from the copies of a backup',
        description='Restore every volume of a backup from its copies off '
        'the primary storage (Cinder backups made with [snapshot_ext] '
        'backup_copies) into new volumes, then boot a new server from '
        'them with the source\'s device names and boot order. Reads only '
        'Cinder, with the [snapshot_ext_cinder] credentials (also used for '
        'Nova): the backup image and its volume snapshots may be gone.')
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument('--image', metavar='IMAGE_ID',
                       help='the copies of this backup image')
    which.add_argument('--server', metavar='SERVER_ID',
                       help='the newest restorable copies of this server')
    p.add_argument('--backup-type', metavar='TYPE',
                   help='with --server: only backups of this type')
    p.add_argument('--list', action='store_true',
                   help='list the sets of copies (of --server, or of '
                   '--image) and restore nothing')
    # dest: oslo.config's sub-command answers .name with its own name.
    p.add_argument('--name', dest='server_name', metavar='NAME',
                   help='the new server\'s name; its volumes are '
                   '<NAME>-<device> (default: restore-<image id>)')
    p.add_argument('--flavor', metavar='FLAVOR',
                   help='the new server\'s flavor, id or name (required '
                   'unless --volumes-only)')
    p.add_argument('--volumes-only', action='store_true',
                   help='restore the volumes, boot no server')
    p.add_argument('--networks', metavar='auto|none|ID[,ID...]',
                   default='auto',
                   help='the new server\'s networks (Nova\'s "auto", '
                   '"none", or network ids; default: auto)')
    p.add_argument('--timeout', type=float, metavar='SECONDS',
                   default=600.0,
                   help='how long each wait (the volumes, the server) may '
                   'take (default: 600)')
    shown = p.add_mutually_exclusive_group()
    shown.add_argument('--progress', dest='progress', action='store_true',
                       default=None, help='show progress on stderr even '
                       'with --format json or when stderr is not a '
                       'terminal')
    shown.add_argument('--no-progress', dest='progress',
                       action='store_false', help='never show progress')


def check_args(args: ty.Any) -> None:
    """Refuse what cannot be right before anything is asked.

    :raises CLIError: exit 2, naming the argument.
    """
    for option, value in (('--image', args.image), ('--server', args.server),
                          ('--backup-type', args.backup_type),
                          ('--name', args.server_name),
                          ('--flavor', args.flavor),
                          ('--networks', args.networks)):
        if value is not None and not value.strip():
            raise checks.CLIError('%s must not be empty' % option)
    if args.backup_type is not None and not args.server:
        raise checks.CLIError('--backup-type needs --server')
    if args.list:
        return
    if not args.volumes_only and not args.flavor:
        raise checks.CLIError('--flavor is needed to boot the new server '
                              '(or --volumes-only)')
    if args.volumes_only and args.flavor:
        raise checks.CLIError('--flavor and --volumes-only exclude each '
                              'other')
    if not (args.timeout > 0 and math.isfinite(args.timeout)):
        raise checks.CLIError('--timeout must be a number of seconds more '
                              'than 0, got %s' % args.timeout)
    if not networks_of(args.networks):
        raise checks.CLIError('--networks must be auto, none or network '
                              'ids, got %r' % args.networks)


def networks_of(text: str) -> ty.Any:
    """``auto``/``none`` as Nova takes them, else a list of network ids.

    :returns: ``'auto'``, ``'none'``, or a list of distinct ids; an empty
        list when ``text`` names no network or mixes ``auto``/``none``
        with anything (the caller refuses it).
    """
    words = [net.strip() for net in text.split(',') if net.strip()]
    if len(words) == 1 and words[0].lower() in ('auto', 'none'):
        return words[0].lower()
    if any(word.lower() in ('auto', 'none') for word in words):
        return []
    return list(dict.fromkeys(words))


def _say(conf: cfg.ConfigOpts) -> ty.Callable[[str], None] | None:
    if not progress_mod.wanted(conf.command.progress, conf.format,
                               sys.stderr):
        return None

    def say(text: str) -> None:
        print('restore: %s' % text, file=sys.stderr, flush=True)
    return say


def _print(conf: cfg.ConfigOpts, document: ty.Any, text: str) -> None:
    if conf.format == 'json':
        print(json.dumps(document, indent=2, sort_keys=True, default=str))
    else:
        print(text)


def run(conf: cfg.ConfigOpts) -> int:
    """List or restore; print the report; return the exit status."""
    args = conf.command
    check_args(args)
    cinder = backup_cmd.cinder_client(conf)
    if cinder is None:
        raise exception.ConfigurationError(
            group=opts.CINDER_GROUP, option='auth_type',
            reason='restore reads the copies in Cinder: set auth_type and '
            'its options')
    project = cinder.project_id
    sets = restore_mod.find_sets(cinder.list_backups(), project)
    if args.list:
        shown = [s for s in sets if (not args.server or s.server ==
                                     args.server) and
                 (not args.image or s.image_id == args.image) and
                 (not args.backup_type or s.backup_type == args.backup_type)]
        _print(conf, {'sets': [s.to_dict() for s in shown]},
               '\n'.join(_describe_set(s) for s in shown) or
               'no copies found')
        return checks.EXIT_OK
    chosen = restore_mod.choose(sets, image_id=args.image,
                                server=args.server,
                                backup_type=args.backup_type)
    compute = None
    if not args.volumes_only:
        compute = restore_mod.Compute(cinder.sibling('compute'))
    runner = restore_mod.Restore(cinder, compute, say=_say(conf),
                                 timeout=args.timeout)
    name = args.server_name or 'restore-%s' % chosen.image_id
    try:
        result = runner.run(chosen, project, name, flavor=args.flavor,
                            networks=networks_of(args.networks))
    except exception.RestoreFailed as err:
        raise checks.CLIError(err.format_message(), checks.EXIT_FAILED,
                              made=err.made) from err
    _print(conf, result.to_dict(), result.describe())
    return checks.EXIT_OK


def _describe_set(copy_set: restore_mod.CopySet) -> str:
    why = copy_set.refusal()
    lines = ['backup image %s of server %s (%s), %s: %s' % (
        copy_set.image_id, copy_set.server, copy_set.backup_type or
        'no type', copy_set.created_at, why or 'restorable')]
    for member in copy_set.members:
        lines.append('  %s: backup %s, %d GiB, %s%s' % (
            member.device_name or '(no device)', member.backup_id,
            member.size, member.status,
            ', incremental' if member.incremental else ''))
    return '\n'.join(lines)
