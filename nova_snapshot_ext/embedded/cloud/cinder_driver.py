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

"""The cloud's Cinder volume driver: the wheel's fake, images "cloned".

Imported only inside the cloud's virtualenv (by cinder-volume).  Cinder's
``cinder.tests.fake_driver.FakeLoggingVolumeDriver`` keeps real database
rows and stores nothing; creating a volume *from an image* would still
download the image and convert it with qemu-img through privsep (no
``sudo`` here).  This subclass reports every image as cloned instead: the
volume is marked bootable with the image's metadata, as after a real
clone.  A storage stand-in, said so in doc/source/cloud.rst.
"""

from cinder.tests import fake_driver


class CloneReportingVolumeDriver(fake_driver.FakeLoggingVolumeDriver):
    """FakeLoggingVolumeDriver whose clone_image always succeeds."""

    def clone_image(self, context, volume, image_location, image_meta,
                    image_service):
        return {}, True
