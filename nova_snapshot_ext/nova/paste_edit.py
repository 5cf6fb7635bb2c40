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

#: A section header as :mod:`configparser` (so PasteDeploy's loader)
#: reads it: matched, not fully matched, on the stripped line, so
#: ``[app:x]  # note`` is section ``app:x`` and ``[composite: x ]`` is
#: ``composite: x `` (``RawConfigParser._SECT_TMPL``, CPython
#: ``Lib/configparser.py``).
_HEADER = re.compile(r'\[(?P<header>.+)\]')
#: Full-line comment prefixes (``RawConfigParser`` defaults; no inline
#: comments).
_COMMENT_PREFIXES = ('#', ';')
#: Option keys that are not pipelines in a compute composite.
_NOT_PIPELINES = ('use',)
#: The key of a ``[pipeline:...]`` section.
_PIPELINE_SECTION_KEY = 'pipeline'


@dataclasses.dataclass
class _Option:
    """One option as configparser reads it: its key and its lines.

    :ivar lines: indexes of the option line, then of each continuation
        line (comment and blank lines between them left out).
    """

    key: str
    lines: list[int]


@dataclasses.dataclass
class _Section:
    """One section header and the lines up to the next one.

    :ivar header: the section name configparser gives it.
    :ivar start: index of its header line; ``end`` of the next one (or
        the number of lines).
    """

    header: str
    start: int
    end: int
    options: list[_Option]


def _scan(lines: list[str]) -> list[_Section]:
    """The sections and options of ``lines`` as configparser splits them.

    As ``RawConfigParser._read`` (CPython ``Lib/configparser.py``): a
    comment line or a blank line does not end a value; a line indented
    deeper than its option line continues the value; otherwise a header
    match starts a section and anything else is ``key = value`` (or
    ``key: value``), the key ending at the first ``=`` or ``:``.
    """
    sections: list[_Section] = []
    option: _Option | None = None
    indent = 0
    for i, line in enumerate(lines):
        stripped = line.strip()
        if not stripped or stripped.startswith(_COMMENT_PREFIXES):
            continue
        level = len(line) - len(line.lstrip())
        if option is not None and level > indent:
            option.lines.append(i)
            continue
        indent = level
        header = _HEADER.match(stripped)
        if header:
            if sections:
                sections[-1].end = i
            sections.append(_Section(header.group('header'), i, len(lines),
                                     []))
            option = None
        elif sections:
            option = _Option(re.split('[=:]', stripped, 1)[0].rstrip(), [i])
            sections[-1].options.append(option)
    return sections


def _option(sections: list[_Section], header: str,
            key: str) -> _Option | None:
    """The option configparser keeps for ``[header] key`` (the last)."""
    found = None
    for section in sections:
        if section.header == header:
            for option in section.options:
                if option.key == key:
                    found = option
    return found


def _words(lines: list[str], option: _Option) -> list[tuple[int, int, int]]:
    """``(line index, start, end)`` of each word of the option's value."""
    words: list[tuple[int, int, int]] = []
    for n, i in enumerate(option.lines):
        body = lines[i].rstrip('\r\n')
        offset = (min(body.index(c) for c in '=:' if c in body) + 1
                  if n == 0 else 0)
        words.extend((i, offset + m.start(), offset + m.end())
                     for m in re.finditer(r'\S+', body[offset:]))
    return words


def _newline(text: str) -> str:
    """The file's line ending (its first line's; ``\\n`` for none)."""
    first = text.find('\n')
    return '\r\n' if first > 0 and text[first - 1] == '\r' else '\n'


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
        wrote (an add's filter and pipelines, a removal's pipelines): the
        shape of OpenStack-Ansible's ``nova_api_paste_ini_overrides``.
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
    except paste.UnclosedHeader as err:
        raise LayoutError(str(err))
    except ValueError as err:
        raise LayoutError('not an ini file PasteDeploy can read: %s' % err)
    composites = _compute_composites(parsed)
    if not composites:
        raise LayoutError("no [composite:...] section with use = %s: this "
                          "is not nova-api's paste file"
                          % paste.NOVA_PIPELINE_FACTORY)
    return parsed, composites


def _filter_names(parsed: paste.Paste) -> set[str]:
    return {parsed.name(section)
            for section in parsed.sections(paste.FILTER_PREFIXES)
            if parsed.filter_factory(section)[0] == paste.FILTER_FACTORY}


def _refuse_foreign(parsed: paste.Paste) -> None:
    """Refuse a section named :data:`FILTER_NAME` that is not the plugin's.

    :raises LayoutError: naming it (an operator's own filter or app of
        that name is neither overwritten nor deleted).
    """
    foreign = [section for section in parsed.sections(
        paste.FILTER_PREFIXES + ('app', 'application'))
        if parsed.name(section) == FILTER_NAME]
    if foreign and FILTER_NAME not in _filter_names(parsed):
        raise LayoutError(
            '[%s] is not the plugin\'s filter (its factory is not %s): '
            'the edit neither overwrites nor deletes it; rename it or edit '
            'the file by hand' % (foreign[0], paste.FILTER_FACTORY))


def _references(parsed: paste.Paste, names: set[str]) -> list[str]:
    """Every ``[section] key`` whose value still names one of ``names``."""
    defaults = parsed.parser.defaults()
    items = [('DEFAULT', key, value) for key, value in defaults.items()]
    for section in parsed.parser.sections():
        items.extend((section, key, value) for key, value
                     in parsed.parser.items(section, raw=True)
                     if defaults.get(key) != value)
    return ['[%s] %s still names %s' % (
        section, key, ' '.join(sorted(names & set(value.split()))))
        for section, key, value in items if names & set(value.split())]


def _verify(new: str, removed: set[str] | None = None) -> None:
    """The final check of an edit's output, before anything is written.

    An add's output must pass
    :func:`nova_snapshot_ext.nova.paste.filter_problems`; a removal's
    must name none of the ``removed`` filters anywhere.  Both must read
    as an ini file.

    :raises LayoutError: what is still wrong.
    """
    try:
        problems = (paste.filter_problems(new) if removed is None else
                    _references(paste.Paste(new), removed))
    except ValueError as err:
        problems = ['it would not be an ini file PasteDeploy can read '
                    '(%s)' % err]
    if problems:
        raise LayoutError('the edited file would still be wrong, so '
                          'nothing is written: %s' % '; '.join(problems))


def add_filter(text: str) -> Edit:
    """Put the plugin's filter into every compute API pipeline.

    The ``keystone`` pipeline is edited where it is written: in the
    composite, or (a composite with ``use = NAME`` and no pipeline of its
    own) in the composite it inherits from.  A pipeline continued over
    several lines (comment and blank lines between them included, as
    configparser reads it) gets the filter on the line of
    ``keystonecontext``.  Added lines end as the file's first line does
    (``\\r\\n`` or ``\\n``); a file without a final newline keeps
    none.

    :param text: an ``api-paste.ini`` (e.g. Nova's stock file).
    :returns: an :class:`Edit`; ``changed`` is ``False`` when the file
        already passes :func:`nova_snapshot_ext.nova.paste.filter_problems`
        (idempotent: its text is returned unchanged).
    :raises LayoutError: the file is not nova-api's paste file, or a
        compute composite has no ``keystone`` pipeline (neither its own
        nor inherited), no ``keystonecontext`` in it, or a filter named
        for the plugin in a way the edit cannot repair (the message names
        the composite or section and the problem).
    """
    parsed, composites = _parse(text)
    if not paste.filter_problems(text):
        return Edit(text, False, composites, {})
    _refuse_foreign(parsed)
    lines = text.splitlines(True)
    scanned = _scan(lines)
    sections: dict[str, dict[str, str]] = {}
    for section in composites:
        option = _option(scanned, section, paste.PIPELINE_KEY)
        if option is None:
            inherited = parsed.resolve(section, paste.COMPOSITE_PREFIXES)[1]
            if inherited.get(paste.PIPELINE_KEY, '').split():
                continue  # edited in the composite it is written in
            raise LayoutError('[%s] has no %s pipeline, neither its own '
                              'nor through use = NAME' % (
                                  section, paste.PIPELINE_KEY), section)
        spans = _words(lines, option)
        words = [lines[i][start:end] for i, start, end in spans]
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
        at = words.index(paste.CONTEXT_FILTER)
        i, _start, end = spans[at]
        lines[i] = '%s %s%s' % (lines[i][:end], FILTER_NAME, lines[i][end:])
        words.insert(at + 1, FILTER_NAME)
        sections[section] = {paste.PIPELINE_KEY: ' '.join(words)}
    new = ''.join(lines)
    if FILTER_NAME not in _filter_names(parsed):
        newline = _newline(text)
        added = FILTER_SECTION.replace('\n', newline)
        if new.endswith('\n'):
            new += newline + added
        else:
            new += newline + newline + added[:-len(newline)]
        sections['filter:%s' % FILTER_NAME] = {
            paste.FACTORY_KEY: paste.FILTER_FACTORY}
    _verify(new)
    return Edit(new, True, composites, sections)


def _cut(lines: list[str], option: _Option, names: set[str]) -> None:
    """Take every word in ``names`` out of the option's value, in place.

    A word goes with the blanks before it (after it when it starts its
    line); a continuation line left empty goes whole (set to ``''``, so
    line indexes hold).
    """
    while True:
        spans = _words(lines, option)
        hits = [n for n, (i, start, end) in enumerate(spans)
                if lines[i][start:end] in names]
        if not hits:
            return
        i, start, end = spans[hits[0]]
        same = [span for span in spans if span[0] == i]
        before = [span for span in same if span[2] <= start]
        after = [span for span in same if span[1] >= end]
        if before:
            start = before[-1][2]
        elif after:
            end = after[0][1]
        elif i != option.lines[0]:
            lines[i] = ''
            continue
        else:
            start = len(lines[i][:start].rstrip(' \t'))
        lines[i] = lines[i][:start] + lines[i][end:]


def remove_filter(text: str) -> Edit:
    """Take the plugin's filter out: the inverse of :func:`add_filter`.

    Drops the plugin's filter names from every pipeline that can name
    them (each key but ``use`` of every compute composite, ``pipeline``
    of every ``[pipeline:...]`` section, continuation lines included)
    and deletes the plugin's ``[filter:...]`` sections (header to last
    value line, with the blank line before them); nothing else changes.
    A file that ended without a newline still does.

    :param text: an ``api-paste.ini``.
    :returns: an :class:`Edit` (``changed`` ``False`` when nothing of the
        plugin was there); its ``sections`` are the pipelines it changed,
        as written (the overrides that take the filter out by a key-by-key
        merge; the deleted ``[filter:...]`` section is not among them).
    :raises LayoutError: the file is not nova-api's paste file; a section
        named ``snapshot_ext`` is not the plugin's filter; or a filter
        name would be left somewhere else (a ``filter-with``, a urlmap,
        ``[DEFAULT]``): named, nothing written.
    """
    parsed, composites = _parse(text)
    _refuse_foreign(parsed)
    # A section named FILTER_NAME is now the plugin's, if there is one.
    names = _filter_names(parsed) | {FILTER_NAME}
    lines = text.splitlines(True)
    scanned = _scan(lines)
    for section in scanned:
        kind, _colon, name = section.header.partition(':')
        for option in section.options:
            if ((section.header in composites and
                 option.key not in _NOT_PIPELINES) or
                    (kind == 'pipeline' and
                     option.key == _PIPELINE_SECTION_KEY)):
                _cut(lines, option, names)
    for section in scanned:
        kind, _colon, name = section.header.partition(':')
        if kind not in paste.FILTER_PREFIXES or name.strip() not in names:
            continue
        # Its header to its last value line: blank and comment lines
        # after it are left to what follows.
        last = max([section.start] + [option.lines[-1]
                                      for option in section.options])
        lines[section.start:last + 1] = [''] * (last + 1 - section.start)
        before = [i for i in range(section.start) if lines[i]]
        if before and not lines[before[-1]].strip():
            lines[before[-1]] = ''
    if not text.endswith('\n') and lines and not lines[-1]:
        kept = [i for i, line in enumerate(lines) if line]
        if kept:
            lines[kept[-1]] = lines[kept[-1]].rstrip('\r\n')
    new = ''.join(lines)
    if new != text:
        _verify(new, names)
    return Edit(new, new != text, composites,
                _changed_values(parsed, paste.Paste(new)))


def _changed_values(before: paste.Paste, after: paste.Paste
                    ) -> dict[str, dict[str, str]]:
    """``{section: {key: value}}`` of the keys ``after`` holds changed.

    What a key-by-key merge (OpenStack-Ansible's ``config_template``) must
    set over ``before`` to give ``after``'s values.  A section ``after``
    no longer has is not in it: such a merge cannot delete one.
    """
    changed: dict[str, dict[str, str]] = {}
    defaults = after.parser.defaults()
    for section in after.parser.sections():
        for key in after.parser.options(section):
            if key in defaults:
                continue
            # Raw: a value with '%' is PasteDeploy's to interpolate, not
            # this comparison's.
            value = after.parser.get(section, key, raw=True)
            if (not before.parser.has_option(section, key) or
                    before.parser.get(section, key, raw=True) != value):
                changed.setdefault(section, {})[key] = value
    return changed
