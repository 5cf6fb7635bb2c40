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


"""Where the paste filter belongs in nova-api's ``api-paste.ini``.

The one home of that rule (``doc/source/nova.rst`` shows it): a
``[filter:<name>]`` section whose ``paste.filter_factory`` is
:data:`FILTER_FACTORY`, and ``<name>`` in the ``keystone`` pipeline of
every composite built by Nova's ``pipeline_factory_v21`` (the v2.1 and the
legacy v2 compatible compute APIs), after ``keystonecontext`` (the filter
reads the request context it builds) and before the application.

Read with :mod:`configparser` only: nothing of Nova or paste is imported,
but the file is read as PasteDeploy's loader reads it
(``paste/deploy/loadwsgi.py``): values interpolated with ``[DEFAULT]``
(and ``%(here)s``, ``%(__file__)s``) as ``ConfigParser`` does; a key that
is also in ``[DEFAULT]`` is a global one, not the section's own; ``use =
call:module:attr`` (scheme in any case, ``#name`` ignored) names a factory
as the section's type implies it (a filter's ``paste.filter_factory``, a
composite's factory), and ``use = NAME`` takes another section of the same
kind in this file, its own keys overriding.
"""

from __future__ import annotations

import configparser
import difflib
import io
import re

#: ``paste.filter_factory`` of the plugin's filter.
FILTER_FACTORY = 'nova_snapshot_ext.nova.filter:filter_factory'
#: ``use`` of the composites that build Nova's compute API pipelines.
NOVA_PIPELINE_FACTORY = 'call:nova.api.auth:pipeline_factory_v21'
#: The pipeline of those composites nova-api runs with
#: ``[api] auth_strategy = keystone`` (the default; ``noauth2`` is for
#: tests only).
PIPELINE_KEY = 'keystone'
#: The filter that builds ``environ['nova.context']``.
CONTEXT_FILTER = 'keystonecontext'
#: The key of a filter section that names its factory.
FACTORY_KEY = 'paste.filter_factory'
#: How alike (:class:`difflib.SequenceMatcher` ratio) a value must be to
#: :data:`FILTER_FACTORY` to be read as a mistyped copy of it.
_ALIKE = 0.75


#: Section prefixes paste reads for each kind (``composit`` is its
#: historical spelling).
COMPOSITE_PREFIXES = ('composite', 'composit')
FILTER_PREFIXES = ('filter',)
#: A ``use`` value with a scheme (``call:``, ``egg:``, ``config:``).
_ABSOLUTE = re.compile(r'^[a-zA-Z]+:')
#: How many ``use = NAME`` hops are followed (a loop is a problem).
_MAX_USE_HOPS = 10


def _unreadable(err: configparser.Error) -> str:
    """Why configparser cannot read the file, without quoting its lines.

    configparser's own messages quote the offending lines; a path given by
    mistake (a credentials file) would put them in a log.  Line numbers,
    section and option names only.
    """
    if isinstance(err, configparser.MissingSectionHeaderError):
        return 'line %d comes before any [section] header' % err.lineno
    if isinstance(err, configparser.ParsingError):
        return 'line(s) %s cannot be parsed' % ', '.join(
            str(lineno) for lineno, _line in err.errors)
    return ' '.join(str(err).split())


class UnclosedHeader(ValueError):
    """A line opens a ``[section]`` header and never closes it."""


def _unclosed_headers(text: str) -> str | None:
    """Lines that open a ``[section]`` header and do not close it.

    configparser takes such a line for an option of the section before
    it, or, first in the file, says it comes before any header: the
    reader would look for the wrong fault.  Lines as configparser splits
    them (at ``\\n`` only); an indented line is a value's continuation,
    never a header.
    """
    bad = [str(number) for number, line in
           enumerate(io.StringIO(text), 1)
           if line.startswith('[') and ']' not in line]
    if not bad:
        return None
    return ('line(s) %s open a [section] header without closing it with '
            '"]" (PasteDeploy would take it for an option of the section '
            'before)' % ', '.join(bad))


class Paste:
    """An ``api-paste.ini`` as PasteDeploy's loader reads it."""

    def __init__(self, text: str) -> None:
        unclosed = _unclosed_headers(text)
        if unclosed is not None:
            raise UnclosedHeader(unclosed)
        parser = configparser.ConfigParser(
            strict=False, defaults={'here': '/etc/nova',
                                    '__file__': '/etc/nova/api-paste.ini'})
        parser.optionxform = str  # type: ignore[assignment,method-assign]
        try:
            parser.read_string(text)
        except configparser.Error as err:
            raise ValueError(_unreadable(err)) from err
        self.parser = parser
        self.problems: list[str] = []

    def sections(self, prefixes: tuple[str, ...]) -> list[str]:
        return [section for section in self.parser.sections()
                if section.split(':', 1)[0] in prefixes and ':' in section]

    @staticmethod
    def name(section: str) -> str:
        return section.split(':', 1)[1].strip()

    def local(self, section: str) -> dict[str, str]:
        """The section's own keys (not ``[DEFAULT]``'s), interpolated."""
        defaults = self.parser.defaults()
        local = {}
        for option in self.parser.options(section):
            if option in defaults or option.startswith(('set ', 'get ')):
                continue
            try:
                local[option] = self.parser.get(section, option)
            except (configparser.Error, ValueError) as err:
                problem = ('[%s] %s cannot be read as paste reads it (%s)'
                           % (section, option, ' '.join(str(err).split())))
                if problem not in self.problems:
                    self.problems.append(problem)
        return local

    def resolve(self, section: str, prefixes: tuple[str, ...],
                seen: tuple[str, ...] = ()) -> tuple[str | None,
                                                     dict[str, str]]:
        """``(factory named by use, the keys paste passes)``.

        The factory is ``call:module:attr`` (scheme lower-cased, ``#``
        fragment dropped) or another scheme's URI; ``None`` without
        ``use``.
        """
        local = self.local(section)
        use = local.pop('use', '').strip()
        if not use:
            return None, local
        if _ABSOLUTE.match(use):
            scheme, path = use.split(':', 1)
            return '%s:%s' % (scheme.lower(), path.split('#', 1)[0]), local
        targets = [other for other in self.sections(prefixes)
                   if self.name(other) == use]
        if (len(targets) != 1 or targets[0] in seen or
                len(seen) >= _MAX_USE_HOPS):
            return 'unresolved:%s' % use, local
        factory, merged = self.resolve(targets[0], prefixes,
                                       seen + (section,))
        merged = dict(merged)
        merged.update(local)
        return factory, merged

    def filter_factory(self, section: str) -> tuple[str | None,
                                                    dict[str, str]]:
        """The filter factory paste loads for ``section``, and its keys.

        As ``loadwsgi.ConfigLoader.get_context``: a section with ``use``
        loads what ``use`` names (its own ``paste.filter_factory`` is then
        one more key passed to that factory); only a section without
        ``use`` names its factory with the key, spelled exactly
        (``_context_from_explicit``).
        """
        current: str = section
        seen: tuple[str, ...] = ()
        merged: dict[str, str] = {}
        while True:
            local = self.local(current)
            merged = dict(local, **merged)
            use = local.get('use', '').strip()
            if not use:
                value = local.get(FACTORY_KEY)
                merged.pop('use', None)
                return (value.strip() if value is not None else None,
                        merged)
            if _ABSOLUTE.match(use):
                scheme, path = use.split(':', 1)
                merged.pop('use', None)
                return (path.split('#', 1)[0] if scheme.lower() == 'call'
                        else None), merged
            targets = [other for other in self.sections(FILTER_PREFIXES)
                       if self.name(other) == use]
            if (len(targets) != 1 or targets[0] in seen + (current,) or
                    len(seen) >= _MAX_USE_HOPS):
                return None, merged
            seen += (current,)
            current = targets[0]


def _alike(value: str) -> bool:
    value = value.strip()
    return bool(value) and ('snapshot_ext' in value.lower() or
                            difflib.SequenceMatcher(
                                None, value, FILTER_FACTORY).ratio() >=
                            _ALIKE)


def _meant_for_plugin(paste: Paste, section: str) -> bool:
    """A filter section written for the plugin, though not right.

    Its name says ``snapshot`` or one of its own values is (a mistyped
    copy of) :data:`FILTER_FACTORY`.
    """
    name = section.split(':', 1)[1].lower()
    return 'snapshot' in name or any(
        _alike(value) for value in paste.local(section).values())


def _factory_problem(paste: Paste, section: str) -> str:
    """What is wrong with the factory line of a section meant for us.

    Names the section, the key, the value found and the right line.
    """
    right = '%s = %s' % (FACTORY_KEY, FILTER_FACTORY)
    items = paste.local(section)
    keys = {key.lower(): key for key in items}
    use = items.get('use', '').strip()
    if use:
        return ('[%s] use = %s does not load the plugin\'s filter factory '
                '(nova-api cannot load it; paste loads what use names, '
                'whatever %s says): set %s without use, or use = call:%s'
                % (section, use, FACTORY_KEY, right, FILTER_FACTORY))
    if FACTORY_KEY in keys and keys[FACTORY_KEY] != FACTORY_KEY:
        key = keys[FACTORY_KEY]
        return ('[%s] %s = %s: paste reads the key only as %s, exactly '
                '(nova-api cannot load the filter): set %s'
                % (section, key, items[key].strip(), FACTORY_KEY, right))
    if FACTORY_KEY in keys:
        key = keys[FACTORY_KEY]
        return ('[%s] %s = %s is not the plugin\'s filter factory '
                '(nova-api cannot load it): set %s'
                % (section, key, items[key].strip(), right))
    factory, _local = paste.resolve(section, FILTER_PREFIXES)
    if 'use' in {key.lower() for key in items} or factory:
        return ('[%s] use = %s does not load the plugin\'s filter factory '
                '(nova-api cannot load it): set %s, or use = call:%s'
                % (section, items.get('use', factory or '').strip(), right,
                   FILTER_FACTORY))
    others = [key for key, value in items.items() if _alike(value)]
    if others:
        key = others[0]
        return ('[%s] has %s = %s but no %s key (paste reads the factory '
                'of a filter only from that key): replace that line with %s'
                % (section, key, items[key].strip(), FACTORY_KEY, right))
    return ('[%s] has no %s: add the line %s' % (section, FACTORY_KEY, right))


def filter_problems(text: str) -> list[str]:
    """What is wrong with the plugin's filter in an ``api-paste.ini``.

    :param text: the file's contents.
    :returns: one sentence per problem naming the section and the fix
        (for a wrong factory line: the section, the key, the value found
        and the right line); ``[]`` when the filter is defined and placed
        right in every compute API pipeline.
    :raises ValueError: the text is not an ini file (the parser's reason).
    """
    paste = Paste(text)
    filters = paste.sections(FILTER_PREFIXES)
    right = [section for section in filters
             if paste.filter_factory(section)[0] == FILTER_FACTORY]
    # A filter section written for the plugin with a wrong factory line
    # (a typo in the path, the wrong key): named with its bad line and the
    # right one, and its pipelines judged as if it were right -- never
    # "add the filter" advice for a filter that is there.
    # A stray one beside a right one matters only where a pipeline uses it.
    resolved = {section: paste.resolve(section, COMPOSITE_PREFIXES)
                for section in paste.sections(COMPOSITE_PREFIXES)}
    composites = [section for section, (factory, _l) in resolved.items()
                  if factory == NOVA_PIPELINE_FACTORY]
    pipelines = {section: resolved[section][1].get(PIPELINE_KEY, '').split()
                 for section in composites}
    used = {name for pipeline in pipelines.values() for name in pipeline}
    wrong = [section for section in filters
             if section not in right and
             _meant_for_plugin(paste, section) and
             (not right or paste.name(section) in used)]
    names = {paste.name(section) for section in right + wrong}
    problems: list[str] = [_factory_problem(paste, section)
                           for section in wrong]
    if not composites:
        problems.append('no [composite:...] section with use = %s: this is '
                        "not nova-api's paste file" % NOVA_PIPELINE_FACTORY)
    if not names:
        problems.append('no filter section with paste.filter_factory = %s: '
                        'add [filter:snapshot_ext] with that line'
                        % FILTER_FACTORY)
    shown = ' or '.join(sorted(names)) or 'snapshot_ext'
    for section in composites:
        problems.extend(_pipeline_problems(paste, section,
                                           pipelines[section], names,
                                           shown))
    return paste.problems + problems


def _pipeline_problems(paste: Paste, section: str, pipeline: list[str],
                       names: set[str], shown: str) -> list[str]:
    """What is wrong with one compute pipeline's use of the filter.

    :param names: the names the plugin's filter sections have.
    :param shown: how a sentence names the filter.
    :returns: one sentence per problem (``[]``: placed right).
    """
    if not pipeline:
        return ['[%s] has no %s pipeline' % (section, PIPELINE_KEY)]
    problems = []
    where = [i for i, name in enumerate(pipeline) if name in names]
    context = (pipeline.index(CONTEXT_FILTER)
               if CONTEXT_FILTER in pipeline else None)
    # A name meant for the plugin with no section of its own (paste
    # cannot load the pipeline): a mistyped or renamed filter name.
    dangling = [name for name in pipeline
                if 'snapshot' in name.lower() and name not in names
                and not any(paste.name(other) == name for other in
                            paste.sections(FILTER_PREFIXES + (
                                'app', 'application')))]
    for name in dangling:
        problems.append(
            '[%s] %s pipeline names %s, which has no [filter:%s] '
            'section: %s' % (
                section, PIPELINE_KEY, name, name,
                'name the plugin\'s filter %s there' % shown
                if names else 'add [filter:%s] with %s = %s'
                % (name, FACTORY_KEY, FILTER_FACTORY)))
    if not where and dangling:
        return problems
    if not where:
        problems.append(
            '[%s] %s pipeline lacks %s: add it right after %s'
            % (section, PIPELINE_KEY, shown, CONTEXT_FILTER))
    elif context is not None and where[0] < context:
        problems.append(
            '[%s] %s pipeline has %s before %s: move it right after '
            '%s (it reads the request context %s builds)'
            % (section, PIPELINE_KEY, pipeline[where[0]], CONTEXT_FILTER,
               CONTEXT_FILTER, CONTEXT_FILTER))
    elif where[-1] == len(pipeline) - 1:
        problems.append(
            '[%s] %s pipeline ends with %s: the last name must be the '
            'application; put the filter right after %s'
            % (section, PIPELINE_KEY, pipeline[-1], CONTEXT_FILTER))
    elif len(where) > 1:
        problems.append('[%s] %s pipeline has the filter %d times: '
                        'keep one, right after %s'
                        % (section, PIPELINE_KEY, len(where),
                           CONTEXT_FILTER))
    return problems
