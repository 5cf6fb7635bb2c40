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

"""Running nova-snapshot-ext inside Nova's API service.

Nova has no hook for the volume-backed snapshot path: it runs entirely in
nova-api (``compute.api.API.snapshot_volume_backed`` ->
``image.glance.GlanceImageServiceV2.create`` with ``size == 0`` and no
data, the *force-activate* step).  The extension point an operator
controls with ini files is nova-api's paste pipeline, so the integration
is a paste filter:

:mod:`.filter`
    ``filter_factory`` for ``api-paste.ini``; on load it registers the
    plugin's options on Nova's ``CONF``, picks the driver and installs the
    hook; per request it refuses a doomed ``createImage`` early.
:mod:`.hook`
    the reversible patch of Nova's image-create step.
:mod:`.adapter`
    conversions between Nova's data (translated image metadata, Instance
    and BlockDeviceMapping objects, exceptions) and the plugin's.
:mod:`.conf`
    the ``[snapshot_ext_nova]`` options.

Importing this package imports nothing from Nova; the modules import Nova
lazily, so the rest of the plugin works without Nova installed.
"""
