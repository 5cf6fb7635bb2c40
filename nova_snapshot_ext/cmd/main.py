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

"""The ``nova-snapshot-ext`` console script.

Options and configuration follow oslo.config as ``nova-manage`` does: one
parser (``cfg.SubCommandOpt`` for the sub-commands), global options
accepted before or after the sub-command (``--config-file``,
``--config-dir``, ``--format``, oslo.log's ``--debug``, ``--log-file``...),
``--version``, and the default configuration oslo.config looks for
(``/etc/nova-snapshot-ext/nova-snapshot-ext.conf``,
``~/.nova-snapshot-ext/nova-snapshot-ext.conf``, their ``.conf.d``
directories).

Sub-commands:

``snapshot REQUEST.json``
    register and activate the snapshot image described by REQUEST.json
    (see :mod:`nova_snapshot_ext.snapshot.request`) in the Glance that
    ``[snapshot_ext_glance]`` reaches.
``probe``
    what that Glance allows, the activation plan, where the driver choice
    came from, and whether the identity can create, upload and share.
``audit [--fix [--yes]]``
    find (and repair) broken volume-backed snapshot images
    (:mod:`nova_snapshot_ext.audit`).
``demo``
    all of the above against an embedded real Glance.
``paste --output FILE [--from FILE] [--remove]``
    write nova-api's ``api-paste.ini`` with (or without) the plugin's
    filter (:mod:`nova_snapshot_ext.cmd.paste`).

Exit status: :data:`~nova_snapshot_ext.cmd.checks.EXIT_CODES`.  Every
error goes to stderr as ``error: ...``; with ``--format json`` stdout also
carries one JSON object ``{"error", "exit_code", ...}``.
"""

from __future__ import annotations

import contextlib
import difflib
import io
import json
import os
import signal
import sys
import typing as ty

from oslo_config import cfg
from oslo_log import log as logging

from nova_snapshot_ext.cmd import backup as backup_cmd
from nova_snapshot_ext.cmd import checks
from nova_snapshot_ext.cmd import config
from nova_snapshot_ext.cmd import logs
from nova_snapshot_ext.cmd import paste as paste_cmd
from nova_snapshot_ext.cmd import restore as restore_cmd
from nova_snapshot_ext.cmd import snapshot as snapshot_cmd
from nova_snapshot_ext.cmd import streams
from nova_snapshot_ext import driver as driver_mod
from nova_snapshot_ext import exception
from nova_snapshot_ext.snapshot import request as request_mod

LOG = logging.getLogger(__name__)

PROJECT = config.PROJECT
PROG = 'nova-snapshot-ext'
#: The configuration file operators are told to write.
DEFAULT_CONFIG_FILE = '/etc/nova-snapshot-ext/nova-snapshot-ext.conf'

#: The request's JSON Schema (see
#: :mod:`nova_snapshot_ext.snapshot.request_schema`).
REQUEST_SCHEMA = os.path.join(os.path.dirname(request_mod.SAMPLE_REQUEST),
                              'snapshot-request.schema.json')

COMMANDS = ('snapshot', 'probe', 'audit', 'demo', 'serve', 'backup',
            'restore', 'paste')

#: ``--format`` values.
FORMATS = ('text', 'json')

CLI_OPTS = [
    cfg.StrOpt('format', default='text',
               choices=[('text', 'for people'),
                        ('json', 'one JSON object on stdout, also for '
                         'errors')],
               help='Output format.'),
]


#: oslo.log's ``debug`` with this program's true default in its help
#: (oslo.log's says "instead of the default INFO level"; the console
#: script logs at WARNING, see :func:`.logs.setup_logging`).
DEBUG_OPT = cfg.BoolOpt(
    'debug', short='d', default=False, mutable=True,
    help='Log at DEBUG, every request included (tokens hashed), also '
    "from keystoneauth, glanceclient and stevedore. Without it only this "
    "program's warnings and errors reach stderr (level WARNING) and none "
    'of those libraries.')


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where Ctrl-C would be so cleanup runs the same."""


def _on_sigterm(signum: int, frame: ty.Any) -> None:
    raise Terminated()


def version() -> str:
    """The installed package's version (pbr's release string).

    A development build says so (``0.0.1.dev152``): the bare version
    string would claim a release that was never made.
    """
    try:
        import pbr.version
        return str(pbr.version.VersionInfo(PROJECT).release_string())
    except Exception:  # noqa: B902 - not installed: no metadata
        return 'unknown'


def exit_code_text() -> str:
    return 'exit status: ' + '; '.join(
        '%d %s' % (code, text) for code, text in checks.EXIT_CODES)


def _project_id(value: str) -> str:
    """argparse type of ``--owner``: a Keystone project id as given.

    A project id holds no white space and nothing invisible; one with
    them (``' abc '`` pasted with its spaces, a zero-width space) would
    match no image and the audit would report a clean cloud.

    :raises argparse.ArgumentTypeError: the value holds white space or a
        character that does not print.
    """
    import argparse

    if value.strip() and not (value.isprintable() and
                              not any(c.isspace() for c in value)):
        raise argparse.ArgumentTypeError(
            '%r is not a project id: it holds white space or an invisible '
            'character' % value)
    return value


def _package_path(path: str) -> str:
    """``path`` relative to the package's parent (no build-machine path).

    ``/usr/lib/python3/dist-packages/nova_snapshot_ext/data/x.json`` ->
    ``nova_snapshot_ext/data/x.json``: help text is also rendered into the
    docs.
    """
    root = os.path.dirname(os.path.dirname(request_mod.SAMPLE_REQUEST))
    return os.path.relpath(path, os.path.dirname(root))


def _audit_kinds() -> list[str]:
    """Every problem kind audit reports (its one vocabulary)."""
    from nova_snapshot_ext import audit

    return list(audit.KINDS)


def add_commands(subparsers: ty.Any) -> None:
    """The sub-commands and their own arguments (``cfg.SubCommandOpt``)."""
    from nova_snapshot_ext.cmd import serve

    _add_snapshot(subparsers)
    backup_cmd.add_parser(subparsers)
    restore_cmd.add_parser(subparsers)
    _add_probe(subparsers)
    _add_audit(subparsers)
    _add_demo(subparsers)
    paste_cmd.add_parser(subparsers)
    serve.add_parser(subparsers)


def _add_snapshot(subparsers: ty.Any) -> None:
    p = subparsers.add_parser(
        'snapshot', help='register and activate one snapshot image',
        description='Register and activate the volume-backed snapshot '
        'image REQUEST.json describes, in the Glance [snapshot_ext_glance] '
        'reaches, owned where Nova would own it. The request format: '
        'doc/source/request.rst and its JSON Schema, %s in the installed '
        'package; an example: %s.' % (
            _package_path(REQUEST_SCHEMA),
            _package_path(request_mod.SAMPLE_REQUEST)))
    p.add_argument('request', metavar='REQUEST.json',
                   help='the snapshot request (JSON; format: %s)'
                   % _package_path(REQUEST_SCHEMA))


def _add_probe(subparsers: ty.Any) -> None:
    p = subparsers.add_parser(
        'probe', help='what this Glance allows, the plan, the permissions',
        description='Show what the configured Glance allows, the activation '
        'plan, where the driver choice came from, and check with a '
        'throwaway image (deleted at once) that the identity can create, '
        'upload and share images.')
    p.add_argument('--no-write-check', action='store_true',
                   help='skip the throwaway-image permission check')


def _add_audit(subparsers: ty.Any) -> None:
    p = subparsers.add_parser(
        'audit', help='find and repair broken snapshot images',
        description='Scan the images this identity can list (an admin sees '
        'every project) for volume-backed snapshot images with problems '
        '(and, with [snapshot_ext_cinder] credentials, backups and volume '
        'snapshots): %s.' % ', '.join(_audit_kinds()))
    p.add_argument('--fix', action='store_true',
                   help='repair what is safely repairable (a dry run '
                   'unless --yes is given)')
    p.add_argument('--yes', action='store_true',
                   help='with --fix: act (default: only say what would be '
                   'done)')
    p.add_argument('--queued-older-than', type=float, metavar='SECONDS',
                   default=None, help='age after which a queued snapshot '
                   'image is a leftover (default: 86400, a day)')
    p.add_argument('--max-download', type=int, metavar='BYTES',
                   default=None, help='largest payload downloaded to '
                   'inspect (default: 1048576)')
    p.add_argument('--page-size', type=int, metavar='N', default=None,
                   help='images per GET /v2/images page (default: 1000, '
                   "Glance's own api_limit_max; a Glance set lower "
                   'answers fewer)')
    p.add_argument('--owner', metavar='PROJECT_ID', type=_project_id,
                   help='only images owned by this project')
    shown = p.add_mutually_exclusive_group()
    shown.add_argument('--progress', dest='progress', action='store_true',
                       default=None,
                       help='show progress on stderr (images read, pages, '
                       'rate; at most once a second, then a final line) '
                       'even with --format json or when stderr is not a '
                       'terminal (default: only on a terminal with text '
                       'output)')
    shown.add_argument('--no-progress', dest='progress',
                       action='store_false',
                       help='never show progress')


def _add_demo(subparsers: ty.Any) -> None:
    p = subparsers.add_parser(
        'demo', help='run against an embedded real Glance',
        description='Start a real glance-api on 127.0.0.1 in a temp dir, '
        'snapshot a request, print the image, stop Glance. Needs the '
        'embedded requirements (glance, gunicorn: pip install -r '
        'embedded-requirements.txt).')
    p.add_argument('--profile', default='default',
                   help='embedded Glance profile: default, no-raw, '
                   'vhd-only (vhd,vhdx), vmdk-only, iso-only, qcow2-only, '
                   'vdi-only, vhdx-only, ploop-only, vmdk-iso, '
                   'no-enforcement, http-store, legacy-locations; with '
                   '--location, default means http-store')
    p.add_argument('--driver', default=driver_mod.DEFAULT_DRIVER,
                   help='hypervisor driver: %s (default: %s)' % (
                       ', '.join(driver_mod.driver_names()),
                       driver_mod.DEFAULT_DRIVER))
    p.add_argument('--request', metavar='REQUEST.json',
                   help='request to snapshot (default: the shipped sample)')
    p.add_argument('--location', action='store_true',
                   help='activate through a location: Glance with the http '
                   'store reads a valid empty image from a local web '
                   'server the demo starts')


def new_conf(cli: bool = True) -> cfg.ConfigOpts:
    """A ConfigOpts with every option the console script reads."""
    conf = config.base_conf()
    conf.unregister_opt(DEBUG_OPT)
    conf.register_cli_opt(DEBUG_OPT)
    if cli:
        conf.register_cli_opts(CLI_OPTS)
        conf.register_cli_opt(cfg.SubCommandOpt(
            'command', title='commands', handler=add_commands,
            help='run "%s COMMAND --help" for its arguments' % PROG))
    return conf


def _global_option_names(conf: cfg.ConfigOpts) -> tuple[set[str], set[str]]:
    """(options taking a value, flags) of the global parser."""
    valued = {'--config-file', '--config-dir'}
    flags = {'-h', '--help', '--version'}
    for opt, group in conf._all_cli_opts():
        if isinstance(opt, cfg.SubCommandOpt):
            continue
        prefix = '--' + (group.name + '-' if group else '')
        names = {prefix + opt.name}
        if opt.short:
            names.add('-' + opt.short)
        # The deprecated names oslo.config also accepts (and --help shows:
        # --logfile, --log-config, --log_config...).
        for old in opt.deprecated_opts:
            for no in ('', 'no') if isinstance(opt, cfg.BoolOpt) else ('',):
                name = opt._get_deprecated_cli_name(old.name, old.group,
                                                    prefix=no)
                if name is not None:
                    names.add('--' + name)
        if isinstance(opt, cfg.BoolOpt):
            flags |= names | {prefix + 'no' + opt.name}
        else:
            valued |= names
    return valued, flags


def _unknown_global_option(arg: str, known: set[str],
                           prog: str = PROG) -> ty.NoReturn:
    """Name a mistyped option before the command, not its argument.

    argparse would take the option's value for the command and answer
    "invalid choice"; this names the option and the closest known one.

    :raises CLIError: exit 2.
    """
    name = arg.split('=', 1)[0]
    close = difflib.get_close_matches(name, sorted(known), n=1)
    raise checks.CLIError(
        'unknown option %s%s (options before the command: %s --help)' % (
            name, ' (did you mean %s?)' % close[0] if close else '', prog),
        checks.EXIT_INPUT)


def refuse_unknown_globals(conf: cfg.ConfigOpts, argv: list[str],
                           commands: ty.Collection[str],
                           prog: str = PROG) -> int | None:
    """Refuse an unknown or abbreviated option before the command.

    argparse reads ``--config-f`` as ``--config-file`` (and ``--api-p`` as
    ``--api-paste``), past the checks made on the full name (an empty
    value, a missing file).

    :returns: the index in ``argv`` of the command (an option's value
        that spells a command is not one), or None.
    :raises CLIError: exit 2, naming the option and the closest known one.
    """
    valued, flags = _global_option_names(conf)
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == '--':
            return None
        if arg in commands:
            return i
        if arg in valued:
            i += 2
            continue
        if arg.startswith('-') and arg.split('=', 1)[0] not in (
                valued | flags):
            _unknown_global_option(arg, valued | flags, prog)
        i += 1
    return None


def hoist_global_options(conf: cfg.ConfigOpts,
                         argv: list[str]) -> list[str]:
    """Move global options given after the sub-command before it.

    argparse only accepts a parser's options before its sub-command; an
    operator types ``nova-snapshot-ext probe --config-file x``.
    """
    valued, flags = _global_option_names(conf)
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == '--':
            return argv
        if arg in valued:
            i += 2
            continue
        if arg in COMMANDS:
            break
        if arg.startswith('-') and arg.split('=', 1)[0] not in (
                valued | flags):
            _unknown_global_option(arg, valued | flags)
        i += 1
    else:
        return argv
    moved: list[str] = []
    rest: list[str] = []
    tail = argv[i + 1:]
    k = 0
    while k < len(tail):
        arg = tail[k]
        if arg == '--':
            rest += tail[k:]
            break
        name = arg.split('=', 1)[0]
        if arg in flags and arg not in ('-h', '--help'):
            moved.append(arg)
        elif name in valued and '=' in arg:
            moved.append(arg)
        elif arg in valued and k + 1 < len(tail):
            moved += tail[k:k + 2]
            k += 1
        else:
            rest.append(arg)
        k += 1
    return argv[:i] + moved + [argv[i]] + rest


def _option_values(argv: list[str], name: str) -> ty.Iterator[str]:
    """The values given to option ``name`` (``--x v`` or ``--x=v``)."""
    for i, arg in enumerate(argv):
        if arg == name and i + 1 < len(argv):
            yield argv[i + 1]
        elif arg.startswith(name + '='):
            yield arg.split('=', 1)[1]


def refuse_blank_options(conf: cfg.ConfigOpts, argv: list[str]) -> None:
    """Refuse an empty or blank value given to any option (exit 2).

    An empty ``--log-file ''`` or ``--owner ''`` would otherwise read as
    "not given" (a default silently used, a filter silently dropped).
    Global options are judged on the command line; the sub-command's
    arguments once parsed (no default of theirs is blank).

    :raises CLIError: exit 2, naming the option.
    """
    refuse_blank_globals(conf, argv)
    name = conf.command.name
    for action in _command_actions(name):
        value = getattr(conf.command, action.dest, None)
        if not isinstance(value, str) or value.strip():
            continue
        raise checks.CLIError('%s must not be empty' % (
            max(action.option_strings, key=len) if action.option_strings
            else action.metavar or action.dest), checks.EXIT_INPUT)


def refuse_blank_globals(conf: cfg.ConfigOpts, argv: list[str]) -> None:
    """:func:`refuse_blank_options` for the options before the command."""
    valued, _flags = _global_option_names(conf)
    for name in sorted(valued):
        for value in _option_values(argv, name):
            if not value.strip():
                raise checks.CLIError('%s must not be empty' % name,
                                      checks.EXIT_INPUT)


def _command_actions(command: str) -> list[ty.Any]:
    """The argparse actions (options, positionals) of one sub-command."""
    import argparse

    parser = argparse.ArgumentParser(add_help=False)
    add_commands(parser.add_subparsers(dest='command'))
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            sub = action.choices.get(command)
            if sub is not None:
                return [a for a in sub._actions if a.dest != 'help']
    return []


def _wants_json(argv: list[str]) -> bool:
    return 'json' in _option_values(argv, '--format')


def _check_format_arg(argv: list[str]) -> None:
    # oslo.config would print its type's repr ("Invalid String(choices=
    # ['text', 'json']) value: xml") and exit 1 without "error:".
    for value in _option_values(argv, '--format'):
        if value not in FORMATS:
            raise checks.CLIError('--format must be %s, got %r' % (
                ' or '.join(FORMATS), value), checks.EXIT_INPUT)


def check_config_args(argv: list[str]) -> None:
    """Each ``--config-file`` exists and is UTF-8 text (exit 2).

    A ``--config-dir`` that names a file is refused too: oslo.config would
    read nothing from it (``<file>/*.conf``), silently.  One that does not
    exist is oslo.config's error.
    """
    for path in _option_values(argv, '--config-dir'):
        if os.path.exists(path) and not os.path.isdir(path):
            raise checks.CLIError('--config-dir %s is not a directory'
                                  % path, checks.EXIT_INPUT)
    for path in _option_values(argv, '--config-file'):
        if not os.path.isfile(path):
            raise checks.CLIError('--config-file %s %s' % (
                path, 'is not a file' if os.path.exists(path) else
                'does not exist'), checks.EXIT_INPUT)
        _check_utf8(path, '--config-file %s' % path)


def _check_utf8(path: str, what: str) -> None:
    try:
        with open(path, 'rb') as f:
            f.read().decode('utf-8')
    except UnicodeDecodeError as err:
        raise checks.CLIError(
            '%s is not UTF-8 text (byte 0x%02x at offset %d): '
            'oslo.config reads configuration files as UTF-8'
            % (what, err.object[err.start], err.start), checks.EXIT_INPUT)
    except OSError as err:
        raise checks.CLIError('%s cannot be read: %s' % (
            what, err.strerror or err), checks.EXIT_INPUT)


def parse(argv: list[str]) -> cfg.ConfigOpts:
    """Parse the command line and read the configuration files.

    :raises CLIError: exit 2 for a missing or unreadable file.
    :raises SystemExit: ``--help``, ``--version`` (0) or a usage error (2).
    """
    conf = new_conf()
    argv = hoist_global_options(conf, argv)
    refuse_blank_globals(conf, argv)
    _check_format_arg(argv)
    check_config_args(argv)
    try:
        conf(argv, project=PROJECT, prog=PROG, version=version(),
             description='Register honest, active metadata-only Glance '
             'images for volume-backed server snapshots; audit and repair '
             'the ones a cloud already has.', epilog=exit_code_text())
    except (cfg.ConfigFilesNotFoundError, cfg.ConfigDirNotFoundError,
            cfg.ConfigFileParseError) as err:
        raise checks.CLIError(checks.clean_message(str(err)),
                              checks.EXIT_INPUT)
    except UnicodeDecodeError:
        # A file oslo.config found itself (a default file or one in a
        # --config-dir): name it.
        for path in _config_files_read(conf, argv):
            _check_utf8(path, 'configuration file %s' % path)
        raise checks.CLIError('a configuration file is not UTF-8 text',
                              checks.EXIT_INPUT)
    return conf


def _config_files_read(conf: cfg.ConfigOpts, argv: list[str]) -> list[str]:
    files = list(getattr(conf, 'default_config_files', None) or [])
    dirs = list(getattr(conf, 'default_config_dirs', None) or [])
    for i, arg in enumerate(argv):
        if arg == '--config-dir' and i + 1 < len(argv):
            dirs.append(argv[i + 1])
        elif arg.startswith('--config-dir='):
            dirs.append(arg.split('=', 1)[1])
    for directory in dirs:
        with contextlib.suppress(OSError):
            files += sorted(os.path.join(directory, name)
                            for name in os.listdir(directory)
                            if name.endswith('.conf'))
    return [f for f in files if os.path.isfile(f)]


def warn_configuration(conf: cfg.ConfigOpts) -> list[str]:
    """Warnings about the configuration, printed on stderr."""
    warnings = []
    if not checks.config_files(conf):
        warnings.append(
            'no configuration file found or given: pass --config-file FILE '
            '(or write %s); only defaults are used' % DEFAULT_CONFIG_FILE)
    warnings += checks.section_hints(conf)
    for text in warnings:
        checks.warn(text)
    return warnings


def cmd_audit(conf: cfg.ConfigOpts) -> int:
    from nova_snapshot_ext.cmd import audit as audit_cmd

    audit_cmd.check_args(conf)
    checks.check_configuration(conf)
    return audit_cmd.run(conf, checks.connect(conf))


def cmd_demo(conf: cfg.ConfigOpts) -> int:
    # Imported when run: the demo pulls in the embedded Glance launcher.
    from nova_snapshot_ext.cmd import demo

    return demo.cmd_demo(conf)


def cmd_serve(conf: cfg.ConfigOpts) -> int:
    # Imported when run: serve pulls in the embedded Glance launcher.
    from nova_snapshot_ext.cmd import serve

    return serve.run(conf)


HANDLERS: dict[str, ty.Callable[[cfg.ConfigOpts], int]] = {
    'snapshot': snapshot_cmd.cmd_snapshot, 'probe': snapshot_cmd.cmd_probe,
    'audit': cmd_audit,
    'demo': cmd_demo, 'serve': cmd_serve, 'backup': backup_cmd.run,
    'restore': restore_cmd.run, 'paste': paste_cmd.run}


def _fail(message: str, code: int, fmt: str, **details: ty.Any) -> int:
    """Report an error: stderr, and a JSON object on stdout for scripts."""
    message = checks.clean_message(message)
    print('error: %s' % message, file=sys.stderr)
    if fmt == 'json':
        print(json.dumps(dict(details, error=message, exit_code=code),
                         indent=2, sort_keys=True, default=str))
    return code


def _interrupted(err: KeyboardInterrupt, fmt: str) -> int:
    # The command ends here: a further signal would only cut the report
    # short (the engine has already stopped or finished its cleanup).
    saved = _ignore_signals()
    try:
        return _report_interrupt(err, fmt)
    finally:
        for signum, handler in saved.items():
            with contextlib.suppress(ValueError, OSError, TypeError):
                signal.signal(signum, handler)


def _listed(result: ty.Any, name: str) -> list[str]:
    value = getattr(result, name, None)
    return list(value) if isinstance(value, (list, tuple)) else []


def _report_interrupt(err: KeyboardInterrupt, fmt: str) -> int:
    # The engine re-raises an interrupt mid-snapshot as
    # exception.SnapshotInterrupted (the original as ``interrupt``),
    # carrying what the snapshot left as ``snapshot_result``.
    original: BaseException = err
    result: ty.Any = None
    if isinstance(err, exception.SnapshotInterrupted):
        original, result = err.interrupt, err.snapshot_result
    code = (checks.EXIT_SIGTERM if isinstance(original, Terminated)
            else checks.EXIT_SIGINT)
    cut_short = getattr(result, 'cleanup_cut_short', False) is True
    left = list(getattr(result, 'leftover', None) or [])
    unconfirmed = list(getattr(result, 'unconfirmed', None) or [])
    active = (getattr(result, 'image_id', None)
              if getattr(result, 'status', None) == 'active' else None)
    message = ('terminated (SIGTERM)' if code == checks.EXIT_SIGTERM
               else 'interrupted')
    if active:
        # Read before this is said (the engine's cleanup re-read, or the
        # success itself): never "cleaned up".
        message += ('; image %s was already active (the snapshot is done)'
                    % active)
    elif cut_short:
        # A second signal stopped the cleanup: never "cleaned up".
        message += '; a second signal cut the cleanup short'
    elif getattr(original, 'restore_made', None) is not None:
        # A restore, undone (restore.service.Restore.run): each fate.
        made = original.restore_made  # type: ignore[attr-defined]
        message += '; the restore was undone' + ''.join(
            '; %s %s %s' % (m['kind'], m['id'], m['fate']) for m in made)
        with contextlib.suppress(Exception):
            return _fail(message, code, fmt, made=made)
        return code
    elif result is None:
        # No snapshot result: nothing is known to have been made.
        message += '; no image of this run is known'
    elif left and set(left) <= set(_listed(result, 'left_in_place')):
        # Left on purpose (another try may be finishing it): nothing
        # was deleted, and the text below says why.
        message += '; nothing was deleted'
    else:
        message += '; what this run created and did not activate was ' + (
            'cleaned up' if not left else 'cleaned up, except')
    if left:
        describe = getattr(result, 'leftover_text', None)
        text = describe() if callable(describe) else None
        message += '; ' + (text if isinstance(text, str) and text else
                           'COULD NOT DELETE image(s) %s' % ', '.join(left))
    if unconfirmed:
        # A create in flight may still land: name it (issue 9 rule).
        message += ('; the create of image(s) %s got no answer: a retry of '
                    'this snapshot adopts it if it appears' %
                    ', '.join(unconfirmed))
    with contextlib.suppress(Exception):
        return _fail(message, code, fmt, left=left, unconfirmed=unconfirmed,
                     image_id=active)
    return code


def run(argv: list[str]) -> int:
    """Parse, check and run one command; errors are raised."""
    checks.WARNED.clear()  # each warning once per command
    captured = io.StringIO()
    try:
        with contextlib.redirect_stderr(streams.Tee(sys.stderr, captured)):
            conf = parse(argv)
    except SystemExit as err:
        # --help/--version: 0. argparse usage errors exit 2, oslo.config's
        # own CLI value checks 1: both are bad input.
        code = checks.EXIT_OK if err.code in (None, 0) else checks.EXIT_INPUT
        _parse_error_json(argv, code, captured.getvalue())
        return code
    refuse_blank_options(conf, argv)
    logs.setup_logging(conf)
    if conf.command.name not in ('demo', 'serve', 'paste'):
        # paste reads no option of the configuration files.
        warn_configuration(conf)
    return int(HANDLERS[conf.command.name](conf))


def _parse_error_json(argv: list[str], code: int, text: str) -> None:
    if code and _wants_json(argv):
        lines = text.strip().splitlines()
        message = lines[-1] if lines else 'usage error'
        print(json.dumps({'error': message, 'exit_code': code}, indent=2))


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    fmt = 'json' if _wants_json(argv) else 'text'
    previous = None
    with contextlib.suppress(ValueError):  # not the main thread
        previous = signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        return run(argv)
    except checks.CLIError as err:
        return _fail(err.message, err.code, fmt, **err.details)
    except exception.ActivationFailed as err:
        failed = getattr(err, 'result', None)
        return _fail(*checks.activation_failure(err), fmt,
                     result=failed.to_dict() if failed else None,
                     left=list(getattr(failed, 'leftover', []) or []))
    except exception.GlanceQuotaExceeded as err:
        # Over the project's Glance quota: the request and configuration
        # are good (2 would say change them), Glance was reached (not 3);
        # the snapshot was not made, as when Glance's own 413 says so at
        # the create or upload: exit 1 on both paths
        # (checks.QUOTA_EXIT, doc/source/cli.rst).
        return _fail(err.format_message(), checks.QUOTA_EXIT, fmt)
    except (exception.InvalidRequest, exception.InvalidServerState,
            exception.ConfigurationError, exception.DriverNotFound,
            exception.DriverLoadError, exception.PreflightError,
            cfg.Error) as err:
        message = (err.format_message() if isinstance(
            err, exception.SnapshotExtException) else str(err))
        return _fail(message, checks.EXIT_INPUT, fmt)
    except exception.GlanceError as err:
        return _fail(*checks.glance_error(err), fmt)
    except (exception.CinderForbidden, exception.CinderUnavailable,
            exception.ComputeForbidden, exception.ComputeUnavailable) as err:
        # Cinder (or Nova, for restore) unreachable or its credentials
        # refused: exit 3, as for Glance (the message names
        # [snapshot_ext_cinder]).
        return _fail(err.format_message(), checks.EXIT_UNREACHABLE, fmt)
    except exception.SnapshotExtException as err:
        return _fail(err.format_message(), checks.EXIT_FAILED, fmt)
    except KeyboardInterrupt as err:
        return _interrupted(err, fmt)
    finally:
        if previous is not None:
            with contextlib.suppress(ValueError, TypeError):
                signal.signal(signal.SIGTERM, previous)


def console_main() -> int:
    """The console script: :func:`main`, then no late interrupt.

    Standard output is a :class:`~.streams.ReaderGone`: a reader that
    stops reading changes nothing.  Once the command has reported, a
    Ctrl-C or SIGTERM that arrives while the interpreter shuts down has
    nothing left to stop; ignoring it keeps Python from printing a
    shutdown traceback after the report.
    """
    sys.stdout = streams.ReaderGone(sys.stdout)
    code = main()
    _ignore_signals()
    return code


def _ignore_signals() -> dict[int, ty.Any]:
    """Ignore SIGINT and SIGTERM (the command has ended or is reporting).

    :returns: signal number -> the handler it had (only those replaced;
        none outside the main thread).
    """
    saved: dict[int, ty.Any] = {}
    for signum in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(ValueError, OSError):
            saved[signum] = signal.signal(signum, signal.SIG_IGN)
    return saved


if __name__ == '__main__':
    sys.exit(console_main())
