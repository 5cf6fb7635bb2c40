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

"""A whole OpenStack control plane on one machine ("cloud in a box").

Keystone, Glance, Cinder, Placement and Nova from their releases on the
package index (one cached virtualenv, :mod:`.venv`), a private MariaDB and
RabbitMQ, one module per service (:mod:`.services`), and this project's
plugin installed into nova-api as ``doc/source/nova.rst`` says.
:class:`.launcher.Cloud` starts it; see ``doc/source/cloud.rst``.
"""
