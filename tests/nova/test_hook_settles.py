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

"""The activation hook settles Nova's volume snapshots on every failure.

Kind: whatever fails, at whichever step (reading the server, building the
record, the Glance client, the preflight, the create and activation), and
whether the failure is the plugin's or not, the volume snapshots Nova took
for the request are settled once (deleted or named).  Nova's parts are
stand-ins here; the real paths run in tests/nova and tests/cloud.
"""

from unittest import mock

import fixtures

from oslo_serialization import jsonutils

from nova_snapshot_ext import exception
from nova_snapshot_ext.nova import adapter
from nova_snapshot_ext.nova import hook
from nova_snapshot_ext.nova import volumes
from tests import base

SENT = {'name': 'img', 'block_device_mapping': jsonutils.dumps(
    [{'source_type': 'snapshot', 'destination_type': 'volume',
      'snapshot_id': 's-1'}])}


class TestEveryFailureSettles(base.TestCase):

    def _activate(self, service=None, **patches):
        settled = []

        def settle(_ctx, taken, why, _volume_ids, cinder=None):
            settled.append((list(taken), why))
            return volumes.Settlement([], {t: why or 'deleted'
                                           for t in taken})

        self.useFixture(fixtures.MockPatchObject(
            volumes, 'settle', settle))
        self.useFixture(fixtures.MockPatchObject(
            hook, '_pending_for', lambda *a: ('server-1', {})))
        self.useFixture(fixtures.MockPatchObject(
            hook.volumes_mod, 'record_image_snapshots', mock.Mock()))
        for name in ('load_server',):
            self.useFixture(fixtures.MockPatchObject(
                hook.adapter, name, patches.pop(name, mock.Mock(
                    return_value=None))))
        for name in ('_record', 'client_for_context', 'register_prepared'):
            self.useFixture(fixtures.MockPatchObject(
                hook, name, patches.pop(name, mock.Mock())))
        try:
            hook._activate(mock.Mock(), mock.Mock(),
                           adapter.NovaImageMeta.read(dict(SENT)),
                           service or mock.Mock(), mock.Mock())
        except Exception as err:  # what the hook raises is under test
            return err, settled
        self.fail('the activation did not fail')

    def test_each_step_each_kind(self):
        plugin_err = exception.GlanceUnavailable(operation='x', reason='y')
        failing = mock.Mock()
        failing.check_record.side_effect = ValueError('bad')
        for kwargs, why in (
                ({'load_server': mock.Mock(side_effect=RuntimeError('db'))},
                 None),
                ({'_record': mock.Mock(side_effect=plugin_err)}, None),
                ({'client_for_context': mock.Mock(
                    side_effect=RuntimeError('x'))}, None),
                ({'service': failing}, None),
                ({'register_prepared': mock.Mock(
                    side_effect=RuntimeError('x'))}, volumes.LEFT_NO_RESULT)):
            _err, settled = self._activate(**kwargs)
            self.assertEqual([(['s-1'], why)], settled, kwargs)

    def test_plugin_error_answered_as_nova_with_the_notes(self):
        err, _settled = self._activate(_record=mock.Mock(
            side_effect=exception.GlanceUnavailable(operation='x',
                                                    reason='y')))
        self.assertIsInstance(err.__cause__, exception.GlanceUnavailable)

    def test_other_error_is_raised_as_it_came(self):
        boom = RuntimeError('boom')
        err, _settled = self._activate(client_for_context=mock.Mock(
            side_effect=boom))
        self.assertIs(boom, err)
