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

"""The location object: the plugin's valid empty image over HTTP.

Only in the location modes (``activation`` other than ``upload``): a
thread of this process serves
:func:`nova_snapshot_ext.image.payloads.payload` at
:attr:`Cloud.location_url`, a stand-in for an operator's web server, and
Glance reads it through its ``http`` store.
"""

from nova_snapshot_ext.embedded.cloud.services import base
from nova_snapshot_ext.embedded import demo as embedded_demo
from nova_snapshot_ext.image import payloads


class LocationObjects(base.CloudService):
    """The object server of the location modes."""

    name = 'objects'
    words = 'the location object\'s server'
    ports = ('objects',)
    backing = True

    def __init__(self, cloud):
        super().__init__(cloud)
        self.server = None

    @classmethod
    def wanted(cls, cloud):
        return (super().wanted(cloud) and
                cloud.activation != 'upload')

    @staticmethod
    def path():
        """The object's path on the server."""
        return embedded_demo.LOCATION_PATH % embedded_demo.LOCATION_FORMAT

    def url(self):
        return 'http://127.0.0.1:%d%s' % (self.port(), self.path())

    def start(self):
        self.server = embedded_demo.ObjectServer(
            {self.path(): payloads.payload(embedded_demo.LOCATION_FORMAT)},
            port=self.port()).start()

    def stop(self):
        server, self.server = self.server, None
        if server is not None:
            server.stop()
