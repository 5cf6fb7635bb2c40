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

Read with :mod:`configparser` only: nothing of Nova or paste is imported.
"""

from __future__ import annotations

import configparser
import difflib

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


def _alike(value: str) -> bool:
    value = value.strip()
    return bool(value) and ('snapshot_ext' in value.lower() or
                            difflib.SequenceMatcher(
                                None, value, FILTER_FACTORY).ratio() >=
                            _ALIKE)


def _meant_for_plugin(parser: configparser.RawConfigParser,
                      section: str) -> bool:
    """A filter section written for the plugin, though not right.

    Its name says ``snapshot`` or one of its values is (a mistyped copy
    of) :data:`FILTER_FACTORY`.
    """
    name = section.split(':', 1)[1].lower()
    return 'snapshot' in name or any(
        _alike(value) for _, value in parser.items(section))


def _factory_problem(parser: configparser.RawConfigParser,
                     section: str) -> str:
    """What is wrong with the factory line of a section meant for us.

    Names the section, the key, the value found and the right line.
    """
    right = '%s = %s' % (FACTORY_KEY, FILTER_FACTORY)
    items = dict(parser.items(section))
    keys = {key.lower(): key for key in items}
    if FACTORY_KEY in keys:
        key = keys[FACTORY_KEY]
        return ('[%s] %s = %s is not the plugin\'s filter factory '
                '(nova-api cannot load it): set %s'
                % (section, key, items[key].strip(), right))
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
    parser = configparser.RawConfigParser(strict=False)
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    try:
        parser.read_string(text)
    except configparser.Error as err:
        raise ValueError(' '.join(str(err).split())) from err
    filters = [section for section in parser.sections()
               if section.startswith('filter:')]
    right = [section for section in filters
             if any(key.lower() == FACTORY_KEY and
                    value.strip() == FILTER_FACTORY
                    for key, value in parser.items(section))]
    # A filter section written for the plugin with a wrong factory line
    # (a typo in the path, the wrong key): named with its bad line and the
    # right one, and its pipelines judged as if it were right -- never
    # "add the filter" advice for a filter that is there.
    # A stray one beside a right one matters only where a pipeline uses it.
    composites = [section for section in parser.sections()
                  if section.startswith('composite:') and
                  parser.get(section, 'use', fallback='').strip() ==
                  NOVA_PIPELINE_FACTORY]
    used = {name for section in composites
            for name in parser.get(section, PIPELINE_KEY,
                                   fallback='').split()}
    wrong = [section for section in filters
             if section not in right and
             _meant_for_plugin(parser, section) and
             (not right or section.split(':', 1)[1].strip() in used)]
    names = {section.split(':', 1)[1].strip() for section in right + wrong}
    problems: list[str] = [_factory_problem(parser, section)
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
        pipeline = parser.get(section, PIPELINE_KEY, fallback='').split()
        if not pipeline:
            problems.append('[%s] has no %s pipeline' % (section,
                                                         PIPELINE_KEY))
            continue
        where = [i for i, name in enumerate(pipeline) if name in names]
        context = (pipeline.index(CONTEXT_FILTER)
                   if CONTEXT_FILTER in pipeline else None)
        # A name meant for the plugin with no section of its own (paste
        # cannot load the pipeline): a mistyped or renamed filter name.
        dangling = [name for name in pipeline
                    if 'snapshot' in name.lower() and name not in names
                    and not parser.has_section('filter:%s' % name)
                    and not parser.has_section('app:%s' % name)]
        for name in dangling:
            problems.append(
                '[%s] %s pipeline names %s, which has no [filter:%s] '
                'section: %s' % (
                    section, PIPELINE_KEY, name, name,
                    'name the plugin\'s filter %s there' % shown
                    if names else 'add [filter:%s] with %s = %s'
                    % (name, FACTORY_KEY, FILTER_FACTORY)))
        if not where and dangling:
            continue
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
