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

"""``nova-snapshot-ext audit [--fix [--yes]]``.

Progress goes to stderr while the images are read
(:mod:`nova_snapshot_ext.cmd.progress`: on a terminal with text output, or
with ``--progress``; never with ``--no-progress``); the report to stdout,
as text or one JSON object (``--format json``, the shape of
:meth:`nova_snapshot_ext.audit.Report.to_dict`).  Exit status 0 when
nothing is left unrepaired, 1 otherwise; when the copy checks could not
run, their cause's (2 configuration, 3 Cinder unreachable or refusing,
1 another failure), the report printed all the same.
"""

from __future__ import annotations

import json
import sys
import typing as ty

from oslo_config import cfg

from nova_snapshot_ext import audit
from nova_snapshot_ext.audit import backups as backup_audit
from nova_snapshot_ext.audit import copies as copies_audit
from nova_snapshot_ext.cmd import backup as backup_cmd
from nova_snapshot_ext.cmd import checks
from nova_snapshot_ext.cmd import progress as progress_mod


#: The exit status of an audit whose copy checks could not run, by cause
#: (:data:`nova_snapshot_ext.audit.copies.CAUSES`).
_COPY_CHECK_EXIT = {'configuration': checks.EXIT_INPUT,
                    'unreachable': checks.EXIT_UNREACHABLE,
                    'failed': checks.EXIT_FAILED}


def counted(number: int, singular: str, plural: str | None = None) -> str:
    """``1 image``, ``2 images``, ``0 images``."""
    return '%d %s' % (number, singular if number == 1 else
                      plural or singular + 's')


def summary(report: audit.Report) -> str:
    """What was scanned and found, in words (one home, every count)."""
    return '%s scanned: %s, %s' % (
        counted(report.scanned, 'image'),
        counted(report.snapshots, 'volume-backed snapshot image'),
        counted(len(report.findings), 'problem'))


def _text(report: audit.Report, fix: bool, act: bool) -> str:
    lines = [summary(report) + '.',
             backup_audit.describe_coverage(report.cinder_coverage)]
    if report.cinder_coverage is not None:
        lines.append(copies_audit.describe_coverage(
            report.cinder_coverage.get('copies')))
    for finding in report.findings:
        lines.append('  %s' % finding.describe())
    for item in report.not_inspected:
        lines.append('  %s: payload not inspected (%d B, above '
                     '--max-download)' % (item['image_id'], item['size']))
    if fix:
        lines.append('Repairs (%s):' % ('done' if act else
                                        'dry run; add --yes to act'))
        if not report.actions:
            lines.append('  (nothing to repair)')
        for action in report.actions:
            lines.append('  %s' % action.describe())
    elif any(f.fixable for f in report.findings):
        lines.append('Run with --fix to see the repairs, --fix --yes to '
                     'make them.')
    return '\n'.join(lines)


def _cinder_checks(cinder: ty.Any, auditor: audit.AuditGlance,
                   conf: cfg.ConfigOpts, report: audit.Report,
                   shown: bool) -> None:
    """Backups, volume snapshots and copies judged with Cinder.

    Only with ``[snapshot_ext_cinder]`` credentials (else none, and the
    report's ``cinder_coverage`` stays ``None``).  They read the images a
    second time: with ``shown``, that read has its own progress (label
    ``audit (Cinder checks)``).  The copies' coverage is
    ``cinder_coverage['copies']``
    (:func:`nova_snapshot_ext.audit.copies.coverage`).
    """
    args = conf.command
    if cinder is None:
        return
    second = (progress_mod.Progress(sys.stderr, 'audit (Cinder checks)')
              if shown else None)
    findings, report.cinder_coverage = backup_audit.scan(
        auditor, cinder, page_size=args.page_size or audit.DEFAULT_PAGE_SIZE,
        filters={'owner': args.owner} if args.owner else None,
        progress=second.update if second is not None else None)
    report.findings += findings
    if second is not None:
        second.done(second.images, second.pages)
    findings, report.cinder_coverage['copies'] = copies_audit.scan(
        auditor, cinder, conf.snapshot_ext, owner=args.owner,
        page_size=args.page_size or audit.DEFAULT_PAGE_SIZE)
    report.findings += findings


def check_args(conf: cfg.ConfigOpts) -> None:
    """Refuse bad arguments before anything reaches the network.

    :raises CLIError: exit 2 (``--yes`` without ``--fix``, a negative
        limit).
    """
    args = conf.command
    if args.yes and not args.fix:
        raise checks.CLIError('--yes only goes with --fix')
    for name in ('queued_older_than', 'max_download', 'page_size'):
        value = getattr(args, name)
        if value is not None and (value < 0 or (
                name == 'page_size' and value < 1)):
            raise checks.CLIError('--%s must be %s, got %s' % (
                name.replace('_', '-'), 'at least 1' if name == 'page_size'
                else '0 or more', value))


def run(conf: cfg.ConfigOpts, glance: ty.Any) -> int:
    """Scan (and repair); print the report; return the exit status."""
    check_args(conf)
    args = conf.command
    queued_age = (audit.DEFAULT_QUEUED_AGE if args.queued_older_than is None
                  else args.queued_older_than)
    auditor = audit.AuditGlance(glance)

    shown = None
    if progress_mod.wanted(args.progress, conf.format, sys.stderr):
        shown = progress_mod.Progress(sys.stderr, 'audit')

    def progress(report: audit.Report) -> None:
        if shown is not None:
            shown.update(report.scanned, report.pages, '%s so far' % counted(
                len(report.findings), 'problem'))

    report = audit.scan(
        auditor, queued_age=queued_age,
        max_download=(audit.DEFAULT_MAX_DOWNLOAD if args.max_download is None
                      else args.max_download),
        page_size=args.page_size or audit.DEFAULT_PAGE_SIZE,
        filters={'owner': args.owner} if args.owner else None,
        progress=progress)
    if shown is not None:
        shown.done(report.scanned, report.pages)

    cinder = backup_cmd.cinder_client(conf)
    _cinder_checks(cinder, auditor, conf, report, shown is not None)
    if args.fix:
        audit.repair(auditor, report, act=args.yes, queued_age=queued_age)
        if cinder is not None:
            backup_audit.repair(cinder, auditor, report, act=args.yes)
            copies_audit.repair(cinder, auditor, report, conf.snapshot_ext,
                                act=args.yes)
    if conf.format == 'json':
        data = report.to_dict()
        data['fix'] = 'act' if args.fix and args.yes else (
            'dry-run' if args.fix else 'none')
        print(json.dumps(data, indent=2, sort_keys=True, default=str))
    else:
        print(_text(report, args.fix, args.yes))
    copies = (report.cinder_coverage or {}).get('copies') or {}
    if copies.get('cause'):
        # Printed above; the exit status is the cause's.
        return _COPY_CHECK_EXIT[copies['cause']]
    left = report.unrepaired
    return checks.EXIT_FAILED if left else checks.EXIT_OK
