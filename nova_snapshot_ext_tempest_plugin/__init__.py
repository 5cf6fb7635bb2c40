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

"""The Tempest plugin of nova-snapshot-ext.

End-to-end tests of the plugin loaded into nova-api, written with
Tempest's service clients so that an operator can run them against a
staging cloud (``doc/source/tempest.rst``).  Registered with the
``tempest.test_plugins`` entry point; Tempest itself is the optional
``tempest`` extra, never a requirement of the plugin.
"""
