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

"""``.zuul.yaml``: its structure, since Zuul cannot run it here.

Loaded with PyYAML (a dependency of oslo.config); every job a pipeline
names is defined in the file or is a known upstream job, every template
is a known upstream template, every parent exists, the integration job
enables this repository's devstack plugin (``devstack/plugin.sh`` exists)
and names its Tempest plugin (the ``tempest.test_plugins`` entry point in
setup.cfg).  Whether Zuul accepts it is not proven: only a Zuul can say.
"""

import configparser
import os

import testtools
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
ZUUL = os.path.join(ROOT, '.zuul.yaml')

#: Project templates this file may use, and where each is defined.
KNOWN_TEMPLATES = {
    # openstack/openstack-zuul-jobs zuul.d/project-templates.yaml
    # (commit b8ff5c89c4a5).
    'openstack-python3-jobs': 'openstack-zuul-jobs',
    'openstack-python3-jobs-nova': 'openstack-zuul-jobs',
    'publish-openstack-docs-pti': 'openstack-zuul-jobs',
    'release-notes-jobs-python3': 'openstack-zuul-jobs',
    'openstack-cover-jobs': 'openstack-zuul-jobs',
    # openstack/requirements; used by openstack/os-vif's .zuul.yaml.
    'check-requirements': 'requirements',
}
#: The tox environments each template's jobs run (openstack-zuul-jobs
#: zuul.d/jobs.yaml: openstack-tox-pep8, -docs, -cover and
#: build-openstack-releasenotes name them in ``tox_envlist``; the python3
#: jobs run tox's built-in pyXY environments, which need no section).
TEMPLATE_TOX_ENVS = {
    'openstack-python3-jobs': ('pep8',),
    'openstack-python3-jobs-nova': ('pep8',),
    'publish-openstack-docs-pti': ('docs',),
    'release-notes-jobs-python3': ('releasenotes',),
    'openstack-cover-jobs': ('cover',),
    'check-requirements': (),
}
#: Upstream jobs this file may name as a parent or in a pipeline.
KNOWN_JOBS = {
    # openstack/tempest zuul.d/base.yaml
    'devstack-tempest': 'tempest',
    # openstack/devstack .zuul.yaml
    'devstack': 'devstack',
}
#: The URL the devstack plugin is cloned from (the project's git home).
REPO_URL = 'https://opendev.org/openstack/nova-snapshot-ext'
PLUGIN = 'nova-snapshot-ext'


def _load():
    with open(ZUUL) as f:
        return yaml.safe_load(f)


class TestZuulConfig(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.items = _load()
        self.jobs = {item['job']['name']: item['job']
                     for item in self.items if 'job' in item}
        projects = [item['project'] for item in self.items
                    if 'project' in item]
        self.assertEqual(1, len(projects))
        self.project = projects[0]

    def test_only_jobs_and_one_project(self):
        for item in self.items:
            self.assertEqual(1, len(item), item)
            self.assertIn(list(item)[0], ('job', 'project'))

    def test_templates_are_known(self):
        self.assertIn('openstack-python3-jobs-nova',
                      self.project['templates'])
        self.assertIn('publish-openstack-docs-pti', self.project['templates'])
        self.assertIn('release-notes-jobs-python3', self.project['templates'])
        for name in self.project['templates']:
            self.assertIn(name, KNOWN_TEMPLATES)

    def test_every_templates_tox_env_exists(self):
        tox = configparser.ConfigParser(interpolation=None)
        tox.read(os.path.join(ROOT, 'tox.ini'))
        for name in self.project['templates']:
            for env in TEMPLATE_TOX_ENVS[name]:
                self.assertIn('testenv:%s' % env, tox.sections(),
                              '%s runs tox -e %s' % (name, env))

    def test_tempest_regex_is_the_box_runs(self):
        # One list of tests: what the Zuul job runs is what the box's
        # Tempest runner runs (tests/tempest_run.py), which
        # doc/source/devstack.rst and tempest.rst describe.
        from tests import tempest_run

        wanted = '(%s)' % '|'.join(tempest_run.PLUGIN + tempest_run.UPSTREAM)
        for name in self.jobs:
            self.assertEqual(wanted,
                             self._vars(name)['tempest_test_regex'], name)

    def test_no_service_where_the_requirements_check_reads(self):
        # openstack/requirements' check (playbooks/files/project-
        # requirements-change.py, run by check-requirements; run by hand
        # on 2026-12-06, doc/source/devstack.rst) reads requirements.txt,
        # test-requirements.txt and setup.cfg's extras, and refuses a
        # name its global list lacks: the OpenStack services are not in
        # it (they live in embedded- and nova-requirements.txt).
        services = {'glance', 'nova', 'cinder', 'keystone', 'placement',
                    'openstack-placement'}
        setup = configparser.ConfigParser()
        setup.read(os.path.join(ROOT, 'setup.cfg'))
        lines = [line for extra in setup['extras'].values()
                 for line in extra.splitlines()]
        for name in ('requirements.txt', 'test-requirements.txt'):
            with open(os.path.join(ROOT, name)) as f:
                lines += f.read().splitlines()
        named = {line.split('#')[0].strip().split('>')[0].split('=')[0]
                 .split('<')[0].split(';')[0].strip().lower()
                 for line in lines}
        self.assertEqual(set(), named & services)

    def test_pipeline_jobs_exist(self):
        for pipeline in ('check', 'gate'):
            names = self.project[pipeline]['jobs']
            self.assertTrue(names)
            for job in names:
                name = job if isinstance(job, str) else list(job)[0]
                self.assertTrue(name in self.jobs or name in KNOWN_JOBS,
                                '%s: %s is neither defined here nor a '
                                'known upstream job' % (pipeline, name))
        self.assertEqual(self.project['check']['jobs'],
                         self.project['gate']['jobs'])

    def test_parents_exist_and_reach_devstack_tempest(self):
        for name, job in self.jobs.items():
            seen = [name]
            while job is not None:
                parent = job.get('parent')
                self.assertIsNotNone(parent, '%s has no parent' % name)
                self.assertNotIn(parent, seen, 'loop: %s' % seen)
                seen.append(parent)
                if parent in KNOWN_JOBS:
                    break
                self.assertIn(parent, self.jobs)
                job = self.jobs[parent]
            self.assertIn('devstack-tempest', seen)

    def _vars(self, name):
        """A job's vars merged over its parents' (Zuul's inheritance)."""
        job = self.jobs[name]
        chain = []
        while job is not None:
            chain.append(job.get('vars', {}))
            job = self.jobs.get(job.get('parent'))
        merged = {}
        for layer in reversed(chain):
            merged.update(layer)
        return merged

    def test_integration_jobs_enable_this_plugin(self):
        self.assertTrue(os.path.isfile(os.path.join(ROOT, 'devstack',
                                                    'plugin.sh')))
        for name in self.jobs:
            variables = self._vars(name)
            self.assertEqual({PLUGIN: REPO_URL},
                             variables['devstack_plugins'], name)
            self.assertTrue(variables['devstack_services'][PLUGIN], name)
            self.assertIn('openstack/nova-snapshot-ext',
                          self.jobs['nova-snapshot-ext-tempest'][
                              'required-projects'])

    def test_tempest_plugin_named(self):
        setup = configparser.ConfigParser()
        setup.read(os.path.join(ROOT, 'setup.cfg'))
        entry = setup['entry_points']['tempest.test_plugins'].strip()
        module = entry.split('=', 1)[1].strip().split('.', 1)[0]
        for name in self.jobs:
            variables = self._vars(name)
            self.assertEqual([PLUGIN], variables['tempest_plugins'])
            self.assertIn(module, variables['tempest_test_regex'])

    def test_devstack_settings_define_the_plugin_name(self):
        with open(os.path.join(ROOT, 'devstack', 'settings')) as f:
            text = f.read()
        self.assertIn('\ndefine_plugin %s\n' % PLUGIN, text)
        self.assertIn('\nenable_service %s\n' % PLUGIN, text)

    def test_localrc_variables_are_the_plugins(self):
        with open(os.path.join(ROOT, 'devstack', 'settings')) as f:
            settings = f.read()
        for name in self.jobs:
            for key in self._vars(name).get('devstack_localrc', {}):
                if key.startswith('NOVA_SNAPSHOT_EXT_'):
                    self.assertIn('\n%s=' % key, settings)
