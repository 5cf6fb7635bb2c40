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

"""The embedded Glance's configuration files: their text, one place.

``glance-api.conf`` (:data:`CONF_TEMPLATE` and the options a
:class:`~.glance.EmbeddedGlance` adds: ``image_size_cap``, unified limits,
Keystone's sections, the RBD store) and the paste ini (:data:`PASTE_
TEMPLATE`: one pipeline per identity mode), written by :func:`write`.
"""

import os
import shutil

CONF_NAME = 'glance-api.conf'
#: Glance reads custom image properties from this file next to its config
#: (``CONF.find_file``); distributions install one.
SCHEMA_NAME = 'schema-image.json'
#: The stock properties (uuid patterns of ``kernel_id``/``ramdisk_id``,
#: enums...), written next to ``glance-api.conf`` unless
#: ``custom_schema=False``.
STOCK_SCHEMA_IMAGE = os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'data',
    SCHEMA_NAME)
PASTE_NAME = 'glance-api-paste.ini'

CONF_TEMPLATE = """\
# Written by nova_snapshot_ext.embedded.glance.EmbeddedGlance.
[DEFAULT]
debug = false
use_stderr = true
enabled_backends = {enabled_backends}
show_image_direct_url = true
show_multiple_locations = {show_multiple_locations}
enabled_import_methods = []
do_secure_hash = true

[database]
connection = {connection}

[glance_store]
default_backend = {default_backend}

[fs]
filesystem_store_datadir = {images}/

[web]
https_insecure = true

[os_glance_staging_store]
filesystem_store_datadir = {base}/staging/

[os_glance_tasks_store]
filesystem_store_datadir = {base}/tasks/

[image_format]
disk_formats = {disk_formats}
container_formats = {container_formats}
require_image_format_match = {require_image_format_match}

[import_filtering_opts]
# list options with bounds: the brackets are mandatory
allowed_hosts = [{allowed_hosts}]
allowed_ports = [{allowed_ports}]

[oslo_concurrency]
lock_path = {base}/locks

[paste_deploy]
flavor = {flavor}
config_file = {base}/{paste_name}

[oslo_policy]
enforce_new_defaults = true
enforce_scope = true
"""

PASTE_TEMPLATE = """\
# Written by nova_snapshot_ext.embedded.glance.EmbeddedGlance.
# [paste_deploy] flavor picks glance-api-<flavor> and the matching pipeline.
[composite:glance-api-fakeauth]
paste.composite_factory = glance.api:root_app_factory
/: api
/healthcheck: healthcheck

[composite:glance-api-tokenauth]
paste.composite_factory = glance.api:root_app_factory
/: api
/healthcheck: healthcheck

[composite:glance-api-keystone]
paste.composite_factory = glance.api:root_app_factory
/: api
/healthcheck: healthcheck

[composite:api]
paste.composite_factory = glance.api:pipeline_factory
# identity from a real Keystone token (keystonemiddleware)
keystone = versionnegotiation authtoken context rootapp
# identity from X-Identity-Status / X-Roles / X-Project-Id / X-User-Id
fakeauth = versionnegotiation context rootapp
# identity from a fake X-Auth-Token user:project:roles[:service_roles]
tokenauth = versionnegotiation tokenauth context rootapp

[composite:rootapp]
paste.composite_factory = glance.api:root_app_factory
/: apiversions
/v2: apiv2app

[app:apiversions]
paste.app_factory = glance.api.versions:create_resource

[app:apiv2app]
paste.app_factory = glance.api.v2.router:API.factory

[app:healthcheck]
paste.app_factory = oslo_middleware:Healthcheck.app_factory
backends = disable_by_file
disable_by_file_path = {base}/healthcheck-disabled

[filter:versionnegotiation]
paste.filter_factory = {version_filter}

[filter:context]
paste.filter_factory = glance.api.middleware.context:ContextMiddleware.factory

[filter:tokenauth]
paste.filter_factory = nova_snapshot_ext.embedded.tokenauth:filter_factory

[filter:authtoken]
paste.filter_factory = keystonemiddleware.auth_token:filter_factory
"""

_VERSION_FILTER = ('glance.api.middleware.version_negotiation:'
                   'VersionNegotiationFilter.factory')

_FLAVORS = {'headers': 'fakeauth', 'token': 'tokenauth',
            'keystone': 'keystone'}


def _csv(values):
    """Join option values with commas.

    :param values: an iterable of values.
    :returns: the comma separated string.
    """
    return ','.join(str(v) for v in values)


def write(glance):
    """Write a Glance's ``glance-api.conf``, paste ini and schema file.

    :param glance: an :class:`~.glance.EmbeddedGlance` whose base
        directory is prepared (its attributes are the options).
    :returns: None
    """
    conf = CONF_TEMPLATE.format(
        base=glance.base_dir,
        connection=glance._connection(),
        images=(os.path.join(glance.shared_with.base_dir, 'images')
                if glance.shared_with is not None
                else os.path.join(glance.base_dir, 'images')),
        paste_name=PASTE_NAME,
        enabled_backends=glance.enabled_backends,
        default_backend=glance.default_backend,
        show_multiple_locations=str(glance.show_multiple_locations).lower(),
        disk_formats=_csv(glance.disk_formats),
        container_formats=_csv(glance.container_formats),
        require_image_format_match=str(
            glance.require_image_format_match).lower(),
        allowed_hosts=_csv(glance.allowed_hosts),
        allowed_ports=_csv(glance.allowed_ports),
        flavor=_FLAVORS[glance.identity])
    if glance.image_size_cap is not None:
        conf = conf.replace('[DEFAULT]\n', '[DEFAULT]\nimage_size_cap = %d\n'
                            % glance.image_size_cap, 1)
    if glance.keystone_limits:
        conf = conf.replace('[DEFAULT]\n', '[DEFAULT]\n'
                            'use_keystone_limits = true\n', 1)
    if glance.keystone is not None:
        conf += _sections(glance.keystone.glance_options())
    if glance.rbd_store:
        conf += ('\n[ceph]\nrbd_store_pool = %(pool)s\n'
                 'rbd_store_ceph_conf = %(ceph_conf)s\n'
                 'rbd_store_user = %(user)s\n' % glance.rbd_store)
    with open(os.path.join(glance.base_dir, CONF_NAME), 'w') as fh:
        fh.write(conf)
    with open(os.path.join(glance.base_dir, PASTE_NAME), 'w') as fh:
        fh.write(PASTE_TEMPLATE.format(base=glance.base_dir,
                                       version_filter=_VERSION_FILTER))
    if glance.custom_schema:
        shutil.copyfile(STOCK_SCHEMA_IMAGE,
                        os.path.join(glance.base_dir, SCHEMA_NAME))


def _sections(options):
    """``{section: {option: value}}`` as ini text to append."""
    lines = []
    for section, values in options.items():
        lines.append('\n[%s]' % section)
        lines.extend('%s = %s' % item for item in values.items())
    return '\n'.join(lines) + '\n'
