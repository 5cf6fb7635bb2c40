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

"""What the console script checks before it acts, and how it says so.

The facade of the command line's checks, each kept in a room of one
concern:

* :mod:`.errors`: the exit statuses (:data:`EXIT_CODES`), the refusal
  every command raises (:class:`CLIError`) and :func:`warn`;
* :mod:`.config_checks`: option values and typos in the configuration
  files, before anything reaches the network;
* :mod:`.connection`: :func:`connect` reaches Keystone and Glance one step
  at a time, so an error names the component, its URL (redacted) and the
  option to fix;
* :mod:`.failures`: a Glance error or a failed activation met mid-command,
  as a message and an exit status;
* :mod:`.ownership`: :func:`check_ownership` and :func:`check_permissions`
  (whose image a standalone snapshot makes, and whether it may).

The commands use the names below; each is defined in its room only.
"""

from __future__ import annotations

from nova_snapshot_ext.cmd import config_checks
from nova_snapshot_ext.cmd import connection
from nova_snapshot_ext.cmd import errors
from nova_snapshot_ext.cmd import failures
from nova_snapshot_ext.cmd import ownership

EXIT_OK = errors.EXIT_OK
EXIT_FAILED = errors.EXIT_FAILED
EXIT_INPUT = errors.EXIT_INPUT
EXIT_UNREACHABLE = errors.EXIT_UNREACHABLE
EXIT_SIGINT = errors.EXIT_SIGINT
EXIT_SIGTERM = errors.EXIT_SIGTERM
QUOTA_EXIT = errors.QUOTA_EXIT
EXIT_CODES = errors.EXIT_CODES
WARNED = errors.WARNED
warn = errors.warn
CLIError = errors.CLIError
clean_message = errors.clean_message

check_option_values = config_checks.check_option_values
check_configuration = config_checks.check_configuration
section_hints = config_checks.section_hints
config_files = config_checks.config_files
options_set = config_checks.options_set
known_groups = config_checks.known_groups
unknown_options = config_checks.unknown_options

check_auth_configuration = connection.check_auth_configuration
authenticate = connection.authenticate
check_catalogless_endpoint = connection.check_catalogless_endpoint
find_endpoint = connection.find_endpoint
endpoint_source = connection.endpoint_source
versions_failure = connection.versions_failure
check_glance = connection.check_glance
connect = connection.connect
CONNECTED = connection.CONNECTED
token_refused_hint = connection.token_refused_hint

glance_error = failures.glance_error
activation_failure = failures.activation_failure

identity_project = ownership.identity_project
ROUTE_ROLES = ownership.ROUTE_ROLES
LEGACY_LOCATION_ROUTE = ownership.LEGACY_LOCATION_ROUTE
location_route = ownership.location_route
identity_roles = ownership.identity_roles
check_ownership = ownership.check_ownership
check_permissions = ownership.check_permissions
permissions_text = ownership.permissions_text
