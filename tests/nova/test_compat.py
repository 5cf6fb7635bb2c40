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

"""Nova release x Glance profile: a volume-backed snapshot, alone and with us.

For each Glance profile, Nova's own ``compute.api.API.snapshot_volume_backed``
runs twice against the same real Glance (33; 32 on Python 3.10): once as
Nova ships (the hook not installed), once with the plugin loaded.  The
plugin's outcome is asserted (active, honest); Nova's own outcome is what
it is, recorded.  When ``NOVA_SNAPSHOT_EXT_COMPAT_DIR`` is set (the
``novaNN`` and ``novaNN-py310`` tox envs set it), each outcome is written
there as JSON; ``tox -e nova-compat`` turns the files into
``doc/source/nova-compat.rst``.
"""

import datetime
import json
import os
import platform
import uuid

from nova_snapshot_ext.embedded import glance as embedded_glance
from tests.nova import base

#: Glance profiles of the table (see nova_snapshot_ext.embedded.glance).
PROFILES = ('default', 'no-raw', 'vhd-only', 'vmdk-only', 'iso-only',
            'no-enforcement')

RESULTS_ENV = 'NOVA_SNAPSHOT_EXT_COMPAT_DIR'


def _describe_failure(err):
    text = str(err).splitlines()[0] if str(err) else ''
    # glanceclient's boilerplate before Glance's own reason.
    text = text.replace('The request media type application/octet-stream '
                        'is not supported by this server.: ', '')
    return '%s %s' % (type(err).__name__, text[:160])


class _CompatMixin(object):

    def _snapshot(self, instance, name):
        from nova.compute import api as compute_api

        return compute_api.API().snapshot_volume_backed(
            self.context, instance, name, extra_properties={})

    def _snapshot_outcome(self, name):
        instance = self.create_server()
        before = len(self.cinder.volume_snapshots)
        try:
            image = self._snapshot(instance, name)
        except Exception as err:
            left = self.images_named(name)
            for image in left:
                self.admin_glance().images.delete(image['id'])
            return {
                'ok': False, 'detail': _describe_failure(err),
                'left_images': ['%s %s' % (i['status'], i['disk_format'])
                                for i in left],
                'left_volume_snapshots':
                    len(self.cinder.volume_snapshots) - before}
        return {'ok': True, 'status': image['status'],
                'disk_format': image['disk_format'],
                'size': image.get('size')}

    def test_volume_backed_snapshot(self):
        from nova_snapshot_ext.nova import filter as filter_mod
        from nova_snapshot_ext.nova import hook

        alone = self._snapshot_outcome('alone-%s' % uuid.uuid4().hex[:8])
        self.assertIsNotNone(filter_mod.load_plugin())
        self.assertTrue(hook.installed())
        plugin = self._snapshot_outcome('plugin-%s' % uuid.uuid4().hex[:8])
        allowed = self.glance.profile.get('disk_formats') or ()
        self.assertTrue(plugin['ok'], plugin)
        self.assertEqual('active', plugin['status'])
        if allowed:
            self.assertIn(plugin['disk_format'], allowed)
        if alone['ok'] and plugin['disk_format'] == alone['disk_format']:
            # Where Nova alone succeeds the plugin changes nothing visible.
            self.assertEqual(alone['size'], plugin['size'])
        self._record(alone, plugin)

    def _record(self, alone, plugin):
        where = os.environ.get(RESULTS_ENV)
        if not where:
            return
        os.makedirs(where, exist_ok=True)
        version = hook_version()
        python = platform.python_version()
        # One file per (Nova, Python, profile): the same Nova run on two
        # Pythons (and so, through constraints.txt, two Glances) keeps both.
        path = os.path.join(where, 'nova-%s-py%s-glance-%s.json' % (
            version, python, self.GLANCE_PROFILE))
        with open(path, 'w') as f:
            json.dump({'nova': version, 'profile': self.GLANCE_PROFILE,
                       'python': python, 'glance': glance_version(),
                       'date': datetime.datetime.now(
                           datetime.timezone.utc).strftime('%Y-%m-%d'),
                       'alone': alone, 'plugin': plugin}, f, indent=1,
                      sort_keys=True)


def hook_version():
    from nova_snapshot_ext.nova import hook

    return hook.nova_version()


def glance_version():
    import importlib.metadata

    try:
        return importlib.metadata.version('glance')
    except importlib.metadata.PackageNotFoundError:
        return None


for _profile in PROFILES:
    assert _profile in embedded_glance.PROFILES, _profile
    _name = 'TestCompat_%s' % _profile.replace('-', '_')
    globals()[_name] = type(_name, (_CompatMixin, base.NovaServerTestCase),
                            {'GLANCE_PROFILE': _profile})
