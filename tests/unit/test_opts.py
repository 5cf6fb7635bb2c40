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

from importlib import metadata as importlib_metadata

from oslo_config import cfg
import stevedore

from nova_snapshot_ext import opts
from tests import base


class TestOpts(base.TestCase):

    def _entry_point_groups(self):
        eps = importlib_metadata.entry_points(group='oslo.config.opts')
        if 'nova_snapshot_ext' not in [ep.name for ep in eps]:
            self.skipTest('package not installed (entry points absent)')
        mgr = stevedore.named.NamedExtensionManager(
            'oslo.config.opts', names=['nova_snapshot_ext'],
            invoke_on_load=True)
        (listed,) = [ext.obj for ext in mgr]
        return {group.name: [o.dest for o in options]
                for group, options in listed}

    def test_entry_point_lists_groups_and_options(self):
        groups = self._entry_point_groups()
        self.assertEqual(
            ['driver', 'non_inheritable_image_properties',
             'image_property_quota', 'image_tag_quota',
             'rotation_full_scan', 'capabilities_cache_ttl',
             'activation_timeout', 'request_timeout', 'snapshot_timeout',
             'activation_poll_interval',
             'disk_formats', 'driver_formats_only', 'activation_method',
             'location_url',
             'location_disk_format', 'location_hash_algo',
             'location_validation_data', 'location_api',
             'volume_backed_backups', 'backup_copies',
             'backup_copies_wait', 'backup_copies_chain',
             'backup_copies_keep', 'backup_copies_max_age'],
            groups['snapshot_ext'])
        self.assertEqual('block-storage', opts.CINDER_DEFAULTS['service_type'])
        self.assertIn('auth_type', groups['snapshot_ext_cinder'])
        for name in ('service_type', 'endpoint_override', 'connect_retries',
                     'status_code_retries', 'auth_type', 'cafile',
                     'timeout'):
            self.assertIn(name, groups['snapshot_ext_glance'])
        self.assertIn('snapshot_ext_libvirt', groups)
        driver_groups = [g for g in groups if g.startswith('snapshot_ext_')
                         and g != 'snapshot_ext_glance']
        self.assertEqual(sorted(driver_groups), driver_groups)

    def test_no_collision_with_nova_groups(self):
        for group, _ in opts.list_opts():
            self.assertNotIn(group.name, ('glance', 'DEFAULT', 'libvirt',
                                          'service_user', 'keystone'))

    def test_register_is_idempotent_and_explicit(self):
        conf = cfg.ConfigOpts()
        self.assertRaises(cfg.NoSuchOptError, lambda: conf.snapshot_ext)
        opts.register_opts(conf)
        opts.register_opts(conf)
        conf([])
        self.assertEqual('image', conf.snapshot_ext_glance.service_type)
        self.assertEqual(128, conf.snapshot_ext.image_property_quota)
        self.assertEqual(128, conf.snapshot_ext.image_tag_quota)
        self.assertFalse(conf.snapshot_ext.rotation_full_scan)

    def test_set_defaults(self):
        opts.set_defaults(self.conf, image_property_quota=64)
        self.assertEqual(64, self.conf.snapshot_ext.image_property_quota)
        self.assertRaises(cfg.NoSuchOptError, opts.set_defaults, self.conf,
                          no_such_option=1)


class TestSampleConfig(base.TestCase):
    """What oslo-config-generator and the options reference show."""

    def groups(self):
        return {group.name: {o.dest: o for o in group_opts}
                for group, group_opts in opts.list_opts()}

    def test_glance_group_shows_the_real_defaults(self):
        glance = self.groups()['snapshot_ext_glance']
        self.assertEqual('image', glance['service_type'].default)
        self.assertEqual(['internal', 'public'],
                         glance['valid_interfaces'].default)

    def test_password_plugin_options_shown(self):
        groups = self.groups()
        for group in ('snapshot_ext_glance', 'snapshot_ext_service_user'):
            for name in ('auth_type', 'auth_url', 'username', 'password',
                         'project_name', 'user_domain_name'):
                self.assertIn(name, groups[group], (group, name))
        self.assertTrue(groups['snapshot_ext_glance']['password'].secret)

    def test_every_choice_described(self):
        for group, options in self.groups().items():
            for opt in options.values():
                for choice in getattr(opt.type, 'choices', None) or {}:
                    self.assertTrue(opt.type.choices[choice],
                                    '%s.%s: %s' % (group, opt.dest, choice))

    def test_shown_defaults_do_not_change_registration(self):
        self.groups()
        from keystoneauth1 import loading
        stock = {o.dest: o for o in loading.get_adapter_conf_options()}
        self.assertIsNone(stock['service_type'].default)
