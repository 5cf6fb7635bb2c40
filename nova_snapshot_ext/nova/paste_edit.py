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

"""The one edit of nova-api's ``api-paste.ini``: add or take out the filter.

:func:`add_filter` writes what :mod:`nova_snapshot_ext.nova.paste` judges
right (``doc/source/nova.rst``): ``snapshot_ext`` right after
``keystonecontext`` in the ``keystone`` pipeline of every composite built
by ``call:nova.api.auth:pipeline_factory_v21``, and a
``[filter:snapshot_ext]`` section at the end.  :func:`remove_filter` undoes
exactly that.  Every deployment recipe (the ``nova-snapshot-ext paste``
command, the devstack plugin, OpenStack-Ansible's
``nova_api_paste_ini_overrides``, kolla's complete paste file) and the
cloud in a box go through these two functions.

The edit is textual: every other byte of the file (comments, order,
blank lines) is kept, so a second run gives the same bytes and
add-then-remove gives the file back.  The composites are found as
PasteDeploy finds them (:class:`nova_snapshot_ext.nova.paste.Paste`);
the stock files of Nova 29 to 34 (``etc/nova/api-paste.ini`` in their
wheels, copies in ``tests/unit/paste_files``) have two such
composites, ``openstack_compute_api_v21`` and
``openstack_compute_api_v21_legacy_v2_compatible``.
"""

from __future__ import annotations

import dataclasses
import re

from nova_snapshot_ext.nova import paste

#: The filter's section name the edit adds.
FILTER_NAME = 'snapshot_ext'
#: The section the edit appends (preceded by one blank line).
FILTER_SECTION = '[filter:%s]\n%s = %s\n' % (
    FILTER_NAME, paste.FACTORY_KEY, paste.FILTER_FACTORY)

_SECTION = re.compile(r'^\[(?P<name>[^\]]+)\]\s*$')
_KEY = re.compile(r'^(?P<key>[^=:\s][^=:]*?)\s*[=:]')


class LayoutError(ValueError):
    """The file's layout is not one the edit understands.

    :ivar composite: the composite section at fault (``None`` when the
        file has no Nova compute composite at all).
    """

    def __init__(self, message: str, composite: str | None = None) -> None:
        super().__init__(message)
        self.composite = composite


@dataclasses.dataclass
class Edit:
    """What an edit did.

    :ivar text: the new file text.
    :ivar changed: ``False`` when ``text`` is the input, byte for byte.
    :ivar composites: the compute composite sections, file order.
    :ivar sections: ``{section: {key: value}}`` of every key the edit
        wrote (the add's result): the shape of OpenStack-Ansible's
        ``nova_api_paste_ini_overrides``; ``{}`` for a removal.
    """

    text: str
    changed: bool
    composites: list[str]
    sections: dict[str, dict[str, str]]


def _compute_composites(parsed: paste.Paste) -> list[str]:
    return [section for section in parsed.sections(paste.COMPOSITE_PREFIXES)
            if parsed.resolve(section, paste.COMPOSITE_PREFIXES)[0] ==
            paste.NOVA_PIPELINE_FACTORY]


def _parse(text: str) -> tuple[paste.Paste, list[str]]:
    """The parsed file and its compute composites.

    :raises LayoutError: not an ini file, or no compute composite.
    """
    try:
        parsed = paste.Paste(text)
    except ValueError as err:
        raise LayoutError('not an ini file PasteDeploy can read: %s' % err)
    composites = _compute_composites(parsed)
    if not composites:
        raise LayoutError("no [composite:...] section with use = %s: this "
                          "is not nova-api's paste file"
                          % paste.NOVA_PIPELINE_FACTORY)
    return parsed, composites


def _pipeline_line(lines: list[str], section: str) -> int:
    """Index of the ``keystone =`` line of ``[section]`` (-1: none).

    :raises LayoutError: the value continues on further lines.
    """
    inside = False
    for i, line in enumerate(lines):
        match = _SECTION.match(line.strip())
        if match:
            inside = match.group('name').strip() == section
            continue
        key = _KEY.match(line)
        if inside and key and key.group('key').strip() == paste.PIPELINE_KEY:
            following = lines[i + 1] if i + 1 < len(lines) else ''
            if following[:1] in (' ', '\t') and following.strip():
                raise LayoutError(
                    '[%s] %s pipeline continues over several lines: put it '
                    'on one line, or edit it by hand as doc/source/nova.rst '
                    'says' % (section, paste.PIPELINE_KEY), section)
            return i
    return -1


def _filter_names(parsed: paste.Paste) -> set[str]:
    return {parsed.name(section)
            for section in parsed.sections(paste.FILTER_PREFIXES)
            if parsed.filter_factory(section)[0] == paste.FILTER_FACTORY}


def add_filter(text: str) -> Edit:
    """Put the plugin's filter into every compute API pipeline.

    :param text: an ``api-paste.ini`` (e.g. Nova's stock file).
    :returns: an :class:`Edit`; ``changed`` is ``False`` when the file
        already passes :func:`nova_snapshot_ext.nova.paste.filter_problems`
        (idempotent: its text is returned unchanged).
    :raises LayoutError: the file is not nova-api's paste file, or a
        compute composite has no ``keystone`` pipeline, no
        ``keystonecontext`` in it, a pipeline over several lines, or a
        filter named for the plugin in a way the edit cannot repair (the
        message names the composite or section and the problem).
    """
    parsed, composites = _parse(text)
    if not paste.filter_problems(text):
        return Edit(text, False, composites, {})
    if any(parsed.name(s) == FILTER_NAME
           for s in parsed.sections(paste.FILTER_PREFIXES + ('app',))):
        if FILTER_NAME not in _filter_names(parsed):
            raise LayoutError(
                'a section named %s exists and is not the plugin\'s filter: '
                '%s' % (FILTER_NAME, '; '.join(paste.filter_problems(text))))
    lines = text.splitlines(True)
    sections: dict[str, dict[str, str]] = {}
    for section in composites:
        i = _pipeline_line(lines, section)
        if i < 0:
            raise LayoutError('[%s] has no %s pipeline of its own' % (
                section, paste.PIPELINE_KEY), section)
        key, _sep, value = lines[i].partition(
            '=' if '=' in lines[i] else ':')
        words = value.split()
        if FILTER_NAME in words:
            raise LayoutError('[%s] %s pipeline already names %s but not '
                              'where it belongs: %s' % (
                                  section, paste.PIPELINE_KEY, FILTER_NAME,
                                  '; '.join(paste.filter_problems(text))),
                              section)
        if paste.CONTEXT_FILTER not in words:
            raise LayoutError('[%s] %s pipeline has no %s (the filter goes '
                              'right after it)' % (
                                  section, paste.PIPELINE_KEY,
                                  paste.CONTEXT_FILTER), section)
        if words[-1] == paste.CONTEXT_FILTER:
            raise LayoutError('[%s] %s pipeline ends with %s, not with the '
                              'application' % (section, paste.PIPELINE_KEY,
                                               paste.CONTEXT_FILTER),
                              section)
        words.insert(words.index(paste.CONTEXT_FILTER) + 1, FILTER_NAME)
        ending = lines[i][len(lines[i].rstrip('\r\n')):]
        lines[i] = '%s%s %s%s' % (key, _sep, ' '.join(words), ending or '')
        sections[section] = {paste.PIPELINE_KEY: ' '.join(words)}
    new = ''.join(lines)
    if FILTER_NAME not in _filter_names(parsed):
        if new and not new.endswith('\n'):
            new += '\n'
        new += '\n' + FILTER_SECTION
        sections['filter:%s' % FILTER_NAME] = {
            paste.FACTORY_KEY: paste.FILTER_FACTORY}
    problems = paste.filter_problems(new)
    if problems:
        raise LayoutError('the edited file would still be wrong: %s'
                          % '; '.join(problems))
    return Edit(new, True, composites, sections)


def remove_filter(text: str) -> Edit:
    """Take the plugin's filter out: the inverse of :func:`add_filter`.

    Drops the plugin's filter names from the ``keystone`` pipeline of
    every compute composite and the plugin's ``[filter:...]`` sections
    (with the blank line before them); nothing else changes.

    :param text: an ``api-paste.ini``.
    :returns: an :class:`Edit` (``changed`` ``False`` when nothing of the
        plugin was there).
    :raises LayoutError: as :func:`add_filter` for a file that is not
        nova-api's paste file or has a multi-line pipeline.
    """
    parsed, composites = _parse(text)
    names = _filter_names(parsed) | {FILTER_NAME}
    lines = text.splitlines(True)
    for section in composites:
        i = _pipeline_line(lines, section)
        if i < 0:
            continue
        key, _sep, value = lines[i].partition(
            '=' if '=' in lines[i] else ':')
        words = value.split()
        kept = [word for word in words if word not in names]
        if kept != words:
            ending = lines[i][len(lines[i].rstrip('\r\n')):]
            lines[i] = '%s%s %s%s' % (key, _sep, ' '.join(kept), ending)
    out: list[str] = []
    skipping = False
    for line in lines:
        match = _SECTION.match(line.strip())
        if match:
            kind, _c, name = match.group('name').partition(':')
            skipping = (kind.strip() in paste.FILTER_PREFIXES and
                        name.strip() in names)
            if skipping and out and not out[-1].strip():
                out.pop()
        if not skipping:
            out.append(line)
    new = ''.join(out)
    return Edit(new, new != text, composites, {})
