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

"""A bad plugin option value never stops or changes nova-api.

Each test does what nova-api's WSGI loader
(``nova.api.openstack.wsgi_app.init_application``) does, in Nova's own
test base: Nova's ``config.parse_args`` over ``[api-paste.ini,
nova.conf]``, ``paste.deploy.loadapp`` of Nova's own ``api-paste.ini``
edited as the guide says (:func:`tests.nova.base.nova_api_paste_ini`),
then Nova's start-up option dump ``CONF.log_opt_values``.  With a bad
value: exactly one ERROR line names the option and the reason, the filter
is not in the pipeline, Nova's image service is Nova's own, the option
dump works, and a volume-backed snapshot goes exactly as Nova alone does
it on a Glance where Nova alone succeeds (Nova 31+: the ``default``
profile, which allows ``raw``; Nova 29/30, which label the zero bytes
``qcow2``: the ``no-enforcement`` profile, which does not check uploads
against their format).
"""

import logging
import os
import re
import uuid

import fixtures
from oslo_serialization import jsonutils
from paste import deploy
import testtools
import webob

from tests.nova import base

#: (section, option, value): one member of each kind of bad value
#: (boolean, choice, integer minimum, integer syntax, float minimum,
#: float syntax) in every group the plugin reads inside nova-api.
BAD_VALUES = [
    ('snapshot_ext_nova', 'activation', 'maybe'),
    ('snapshot_ext_nova', 'early_refusal', 'maybe'),
    ('snapshot_ext_nova', 'glance_connection', 'bogus'),
    ('snapshot_ext', 'capabilities_cache_ttl', '-5'),
    ('snapshot_ext', 'image_property_quota', 'lots'),
    ('snapshot_ext', 'image_property_quota', '-2'),
    ('snapshot_ext', 'image_tag_quota', 'lots'),
    ('snapshot_ext', 'image_tag_quota', '-2'),
    ('snapshot_ext', 'rotation_full_scan', 'maybe'),
    ('snapshot_ext', 'activation_timeout', '0'),
    ('snapshot_ext', 'activation_method', 'sometimes'),
    ('snapshot_ext_libvirt', 'virt_type', 'xen'),
    ('snapshot_ext_glance', 'timeout', 'soon'),
    ('snapshot_ext_glance', 'insecure', 'perhaps'),
    ('snapshot_ext_service_user', 'send_service_user_token', 'maybe'),
    # The newer options and groups: every typed option of the plugin's
    # own groups has a case (TestEveryOptionHasACase keeps it so).
    ('snapshot_ext', 'request_timeout', 'soon'),
    ('snapshot_ext', 'request_timeout', '99999'),
    ('snapshot_ext', 'snapshot_timeout', '5'),
    ('snapshot_ext', 'volume_backed_backups', 'maybe'),
    ('snapshot_ext', 'backup_copies', 'maybe'),
    ('snapshot_ext', 'backup_copies_wait', '0'),
    ('snapshot_ext', 'backup_copies_chain', '-1'),
    ('snapshot_ext', 'backup_copies_keep', 'lots'),
    ('snapshot_ext', 'backup_copies_max_age', '-3'),
    ('snapshot_ext', 'activation_poll_interval', '0'),
    ('snapshot_ext', 'driver_formats_only', 'maybe'),
    ('snapshot_ext', 'location_api', 'newest'),
    ('snapshot_ext', 'location_hash_algo', 'crc32'),
    ('snapshot_ext_libvirt', 'vz_vm_mode', 'xen'),
    ('snapshot_ext_xenapi', 'vm_mode', 'exe'),
    # (Not [snapshot_ext_glance] tls_min_version: keystoneauth1 decides
    # its values, and the 5.14 that Nova 29 runs with has no choices.)
    ('snapshot_ext_cinder', 'insecure', 'perhaps'),
    ('snapshot_ext_cinder', 'timeout', 'soon'),
    ('snapshot_ext_cinder', 'connect_retries', 'lots'),
]

#: Groups whose options come from keystoneauth1 (session, adapter, auth):
#: one case of each value kind per group stands for all of them.
KEYSTONEAUTH_GROUPS = ('snapshot_ext_glance', 'snapshot_ext_cinder',
                       'snapshot_ext_service_user')
#: Driver groups of test-only drivers (not installed in production).
TEST_ONLY_GROUPS = ('snapshot_ext_fake',)

NOVA_CONF = """\
[DEFAULT]
log_options = {log_options}

[snapshot_ext]
driver = libvirt
capabilities_cache_ttl = 0
{extra}
"""


class _Collector(object):
    """A logger for ``log_opt_values`` that keeps the text."""

    def __init__(self):
        self.lines = []

    def log(self, level, msg, *args):
        self.lines.append(msg % args if args else msg)

    @property
    def text(self):
        return '\n'.join(self.lines)


class NovaStartupMixin(object):
    """Load nova-api's pipeline the way ``wsgi_app.init_application`` does."""

    def load_nova_api(self, extra='', log_options=True):
        """Parse ``[api-paste.ini, nova.conf]``, load the paste app.

        :param extra: text appended to the nova.conf.
        :param log_options: ``[DEFAULT] log_options``.
        :returns: the ``osapi_compute`` WSGI app.
        """
        from nova import config
        from oslo_service import _options as service_opts

        from nova_snapshot_ext.nova import conf as conf_mod

        # A nova-api process starts with none of the plugin's options on
        # CONF; earlier tests of this test process registered them.
        self.CONF.clear()
        for group, group_opts in conf_mod.plugin_opts():
            if group in self.CONF:
                self.CONF.unregister_opts(group_opts, group=group)
        tmp = self.useFixture(fixtures.TempDir()).path
        paste = os.path.join(tmp, 'api-paste.ini')
        with open(paste, 'w') as f:
            f.write(base.nova_api_paste_ini())
        nova_conf = os.path.join(tmp, 'nova.conf')
        with open(nova_conf, 'w') as f:
            f.write(NOVA_CONF.format(extra=extra,
                                     log_options=str(log_options).lower()))
        config.parse_args(['nova-api'], default_config_files=[paste,
                                                              nova_conf],
                          configure_db=False, init_rpc=False)
        # init_global_data registers oslo.service's options (log_options)
        # after parsing, as here.
        self.CONF.register_opts(service_opts.service_opts)
        self.flags(endpoint_override=self.glance.endpoint, group='glance')
        self.flags(num_retries=0, group='glance')
        app = deploy.loadapp('config:%s' % paste, name='osapi_compute')
        # What init_application does next ([DEFAULT] log_options).
        self.assertEqual(log_options, self.CONF.log_options)
        self.option_dump = _Collector()
        self.CONF.log_opt_values(self.option_dump, logging.DEBUG)
        self.assertIn('log_options', self.option_dump.text)
        return app

    def request(self, app, method, path, body=None, roles=base.MEMBER_ROLES,
                version='2.45', project_id=None):
        req = webob.Request.blank(path, method=method)
        req.headers.update({
            'X-User-Id': self.user_id,
            'X-Project-Id': project_id or self.project_id,
            'X-Roles': ','.join(roles),
            'X-Auth-Token': self.glance.token(project_id or self.project_id,
                                              self.user_id, roles),
            'OpenStack-API-Version': 'compute %s' % version,
            'Accept': 'application/json'})
        if body is not None:
            req.content_type = 'application/json'
            req.body = jsonutils.dump_as_bytes(body)
        return req.get_response(app)

    def error_lines(self):
        return [line for line in self.stdlog.logger.output.splitlines()
                if 'nova-snapshot-ext is NOT active' in line]

    @staticmethod
    def middlewares(app):
        """The plugin's middlewares anywhere in the loaded app."""
        from nova_snapshot_ext.nova import filter as filter_mod

        found, todo, seen = [], [app], set()
        while todo:
            item = todo.pop()
            if id(item) in seen or item is None:
                continue
            seen.add(id(item))
            if isinstance(item, filter_mod.SnapshotExtMiddleware):
                found.append(item)
            for name in ('application', 'app', '_app'):
                todo.append(getattr(item, name, None))
            for mapped in getattr(item, 'applications', None) or []:
                todo.append(mapped[-1])
        return found


class TestBadOptionValues(NovaStartupMixin, base.NovaServerTestCase):

    GLANCE_PROFILE = ('default' if base.nova_uploads_raw()
                      else 'no-enforcement')
    REGISTER_PLUGIN_OPTS = False

    def _check_bad_value(self, section, option, value):
        from nova.image import glance as nova_glance
        from nova_snapshot_ext.nova import hook

        original = nova_glance.GlanceImageServiceV2.create
        app = self.load_nova_api('[%s]\n%s = %s\n' % (section, option,
                                                      value))
        errors = self.error_lines()
        self.assertEqual(1, len(errors), self.stdlog.logger.output)
        self.assertIn('[%s] %s = %r' % (section, option, value), errors[0])
        self.assertIn('nova.conf', errors[0])
        self.assertEqual([], self.plugin_log.tracebacks())
        self.assertEqual([], self.middlewares(app))
        self.assertFalse(hook.installed())
        self.assertIs(original, nova_glance.GlanceImageServiceV2.create)
        # The bad value never reached Nova's CONF.
        self.assertNotIn('%s.%s' % (section, option), self.option_dump.text)

        # Nova serves, and snapshots a volume-backed server as it does
        # alone on this Glance: zero bytes labelled raw (Nova 31+) or
        # qcow2 (Nova 29/30).
        server = self.create_server()
        name = 'bad-%s-%s' % (option, uuid.uuid4().hex[:8])
        resp = self.request(app, 'POST', '/v2.1/servers/%s/action' %
                            server.uuid, {'createImage': {'name': name}})
        self.assertEqual(202, resp.status_int, resp.text)
        image = self.admin_glance().images.get(
            jsonutils.loads(resp.body)['image_id'])
        label = 'raw' if base.nova_uploads_raw() else 'qcow2'
        self.assertEqual(('active', label, 0),
                         (image['status'], image['disk_format'],
                          image['size']))
        resp = self.request(app, 'GET', '/v2.1/os-keypairs')
        self.assertEqual(200, resp.status_int, resp.text)

    def test_valid_values_load_the_filter_and_are_logged(self):
        from nova_snapshot_ext.nova import hook

        app = self.load_nova_api('[snapshot_ext_nova]\nactivation = true\n'
                                 '[snapshot_ext_libvirt]\nvirt_type = qemu\n')
        self.assertEqual([], self.error_lines())
        self.assertEqual(2, len(self.middlewares(app)))
        self.assertTrue(hook.installed())
        self.assertIn('snapshot_ext_nova.activation', self.option_dump.text)
        self.assertIn('driver libvirt (virt_type qemu), chosen by '
                      '[snapshot_ext] driver = libvirt',
                      self.stdlog.logger.output)

    def test_bad_connection_without_log_options_is_not_half_active(self):
        from nova_snapshot_ext.nova import hook

        app = self.load_nova_api(
            '[snapshot_ext_nova]\nglance_connection = bogus\n',
            log_options=False)
        self.assertEqual(1, len(self.error_lines()))
        self.assertEqual([], self.middlewares(app))
        self.assertFalse(hook.installed())

    def test_own_glance_connection_with_unusable_auth_steps_aside(self):
        # glance_connection = snapshot_ext_glance: the group's auth plugin
        # is loaded at start-up; one it cannot load is a bad option.
        from nova_snapshot_ext.nova import hook

        for extra, words in (
                ('auth_type = nosuchplugin\n'
                 'endpoint_override = http://127.0.0.1:9\n',
                 '[snapshot_ext_glance] auth_type'),
                ('', 'no auth plugin and no endpoint_override')):
            with self.subTest(words=words):
                from nova_snapshot_ext.nova import filter as filter_mod
                filter_mod.unload_plugin()
                app = self.load_nova_api(
                    '[snapshot_ext_nova]\nglance_connection = '
                    'snapshot_ext_glance\n[snapshot_ext_glance]\n' + extra)
                errors = [line for line in self.error_lines()
                          if words in line]
                self.assertEqual(1, len(errors), self.stdlog.logger.output)
                self.assertEqual([], self.middlewares(app))
                self.assertFalse(hook.installed())

    def test_every_bad_value_is_named_in_one_line(self):
        self.load_nova_api('[snapshot_ext_nova]\nactivation = maybe\n'
                           'glance_connection = bogus\n')
        errors = self.error_lines()
        self.assertEqual(1, len(errors), errors)
        self.assertIn("activation = 'maybe'", errors[0])
        self.assertIn("glance_connection = 'bogus'", errors[0])


class TestEveryOptionHasACase(testtools.TestCase):
    """BAD_VALUES keeps up with nova_snapshot_ext/opts.py (and drivers)."""

    def test_every_checked_option_and_group_has_a_bad_value_case(self):
        from oslo_config import types

        from nova_snapshot_ext.nova import conf as conf_mod

        cased = {(section, option) for section, option, _ in BAD_VALUES}
        groups = {section for section, _, _ in BAD_VALUES}
        missing = []
        for group, group_opts in conf_mod.plugin_opts():
            if group in TEST_ONLY_GROUPS:
                continue
            if group not in groups:
                missing.append('[%s] (no case at all)' % group)
            if group in KEYSTONEAUTH_GROUPS:
                continue
            for opt in group_opts:
                checked = isinstance(opt.type, (
                    types.Boolean, types.Integer, types.Float)) or bool(
                    getattr(opt.type, 'choices', None))
                if checked and (group, opt.dest) not in cased:
                    missing.append('[%s] %s' % (group, opt.dest))
        self.assertEqual([], missing)


def _make_test(section, option, value):
    def test(self):
        self._check_bad_value(section, option, value)
    test.__doc__ = '[%s] %s = %s leaves nova-api as it is' % (
        section, option, value)
    return test


for _section, _option, _value in BAD_VALUES:
    _name = 'test_bad_%s_%s_%s' % (_section, _option, _value.strip('-'))
    setattr(TestBadOptionValues, re.sub(r'\W', '_', _name),
            _make_test(_section, _option, _value))
