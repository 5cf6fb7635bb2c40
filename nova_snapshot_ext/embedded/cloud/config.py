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

"""The cloud's configuration files, rendered from plain values (no I/O).

Each function returns the text of one file; :func:`render_ini` turns
``{section: {option: value}}`` into ini text.  The launcher writes them;
the unit tests read them.
"""

import collections


def render_ini(sections):
    """ini text from ``{section: {option: value}}`` (order kept).

    :param sections: a mapping of mappings; values are str, int or bool.
    :returns: a string.
    """
    out = []
    for section, options in sections.items():
        out.append('[%s]' % section)
        for key, value in options.items():
            if isinstance(value, bool):
                value = 'true' if value else 'false'
            out.append('%s = %s' % (key, value))
        out.append('')
    return '\n'.join(out)


def _auth(keystone_url, username, password, project='service'):
    return collections.OrderedDict([
        ('auth_type', 'password'),
        ('auth_url', keystone_url),
        ('username', username),
        ('password', password),
        ('user_domain_name', 'Default'),
        ('project_name', project),
        ('project_domain_name', 'Default'),
        ('region_name', 'RegionOne'),
    ])


def plugin_cli_conf(keystone_url, password, driver='fake'):
    """The plugin's own config file for its CLI against this cloud.

    ``probe``, ``audit`` (with Cinder checks and ``--fix``) and the others
    as the cloud's admin: ``[snapshot_ext_glance]`` and
    ``[snapshot_ext_cinder]`` with password auth through the catalog;
    ``[snapshot_ext] driver``: ``fake`` where nova-compute runs Nova's fake
    virt driver, ``libvirt`` (``virt_type = qemu``) on the real stack.
    """
    admin = _auth(keystone_url, 'admin', password, project='admin')
    sections = [('snapshot_ext', {'driver': driver})]
    if driver == 'libvirt':
        sections.append(('snapshot_ext_libvirt', {'virt_type': 'qemu'}))
    return render_ini(collections.OrderedDict(sections + [
        ('snapshot_ext_glance', admin),
        ('snapshot_ext_cinder', admin),
    ]))


def _authtoken(keystone_url, username, password):
    section = _auth(keystone_url, username, password)
    section['www_authenticate_uri'] = keystone_url
    section['service_token_roles_required'] = True
    return section


def keystone_conf(base, connection):
    """keystone.conf.

    :param base: Keystone's directory (key repositories).
    :param connection: the database URL.
    """
    return render_ini(collections.OrderedDict([
        ('DEFAULT', {'debug': False, 'use_stderr': True}),
        ('database', {'connection': connection}),
        ('token', {'provider': 'fernet', 'expiration': 14400}),
        ('fernet_tokens', {'key_repository': base + '/fernet-keys'}),
        ('fernet_receipts', {'key_repository': base + '/receipt-keys'}),
        ('credential', {'key_repository': base + '/credential-keys'}),
    ]))


def placement_conf(connection, keystone_url, password):
    """placement.conf."""
    return render_ini(collections.OrderedDict([
        ('DEFAULT', {'debug': False, 'use_stderr': True}),
        ('api', {'auth_strategy': 'keystone'}),
        ('placement_database', {'connection': connection}),
        ('keystone_authtoken', _authtoken(keystone_url, 'placement',
                                          password)),
    ]))


def cinder_conf(base, connection, transport_url, keystone_url, password,
                driver, host='cloud', backend=None, backup=None):
    """cinder.conf (api, scheduler, volume, backup).

    :param driver: the ``volume_driver`` import path of the ``fake``
        backend (when ``backend`` is None).
    :param backend: ``(name, {option: value})``: the one backend instead
        (the real stack's RBD driver).
    :param backup: ``[DEFAULT]`` options of cinder-backup, or None (no
        cinder-backup).
    """
    if backend is None:
        backend = ('fake', collections.OrderedDict([
            ('volume_driver', driver), ('volume_backend_name', 'fake')]))
    name, options = backend
    return render_ini(collections.OrderedDict([
        ('DEFAULT', collections.OrderedDict([
            ('debug', False), ('use_stderr', True),
            ('host', host),
            ('state_path', base),
            ('transport_url', transport_url),
            ('auth_strategy', 'keystone'),
            ('enabled_backends', name),
            ('default_volume_type', '__DEFAULT__'),
            ('api_paste_config', base + '/api-paste.ini'),
            # The filters a non-admin may list by (name, status...): the
            # file the wheel ships, copied beside (without it every
            # filtered listing of a member answers 400 "Invalid filters").
            ('resource_query_filters_file',
             base + '/resource_filters.json'),
            ('volumes_dir', base + '/volumes'),
            ('rootwrap_config', base + '/rootwrap.conf'),
            ('allowed_direct_url_schemes', ''),
            # cinder-volume reports its backend's capabilities to
            # cinder-scheduler every periodic_interval (60 s by default,
            # after up to periodic_fuzzy_delay more): until the first
            # report reaches the scheduler every volume create ends in
            # NoValidBackend (seen on a loaded machine right after start).
            ('periodic_interval', 10),
            ('periodic_fuzzy_delay', 0),
            # glance is found in the catalog of each request's context
        ] + sorted((backup or {}).items()))),
        ('database', {'connection': connection}),
        ('oslo_concurrency', {'lock_path': base + '/locks'}),
        ('keystone_authtoken', _authtoken(keystone_url, 'cinder', password)),
        ('service_user', dict(_auth(keystone_url, 'cinder', password),
                              send_service_user_token=True)),
        ('nova', _auth(keystone_url, 'nova', password)),
        (name, options),
        ('coordination', {'backend_url': 'file://' + base + '/coordination'}),
    ]))


def nova_conf(base, database, api_database, transport_url, keystone_url,
              password, glance_url, compute_driver=None,
              snapshot_ext=None, host='cloud', extra=None):
    """One nova.conf.

    nova-api's and nova-scheduler's (``database`` on cell0), the cell
    conductor's (``database`` on cell1) or nova-compute's (``database`` on
    cell1, no ``api_database``).

    :param api_database: the API database URL, or None (nova-compute).

    :param snapshot_ext: ``{section: {option: value}}`` of the plugin's
        options (``[snapshot_ext...]``), or None.
    :param extra: ``{section: {option: value}}`` merged into the file's
        sections (the real stack's ``[libvirt]``, ``compute_driver``...).
    """
    default = collections.OrderedDict([
        ('debug', False), ('use_stderr', True),
        ('host', host),
        ('state_path', base),
        ('instances_path', base + '/instances'),
        ('transport_url', transport_url),
        ('my_ip', '127.0.0.1'),
        ('use_neutron_default_nets', False),
        ('heal_instance_info_cache_interval', -1),
    ])
    if compute_driver:
        default['compute_driver'] = compute_driver
    sections = collections.OrderedDict([
        ('DEFAULT', default),
        ('api', {'auth_strategy': 'keystone'}),
        ('database', {'connection': database}),
        ('api_database', {'connection': api_database}),
        ('oslo_concurrency', {'lock_path': base + '/locks'}),
        ('keystone_authtoken', _authtoken(keystone_url, 'nova', password)),
        ('service_user', dict(_auth(keystone_url, 'nova', password),
                              send_service_user_token=True)),
        ('placement', _auth(keystone_url, 'placement', password)),
        ('glance', {'api_servers': glance_url}),
        ('cinder', dict(_auth(keystone_url, 'cinder', password),
                        os_region_name='RegionOne')),
        ('neutron', dict(_auth(keystone_url, 'nova', password),
                         service_type='network')),
        ('scheduler', {'discover_hosts_in_cells_interval': -1}),
        ('filter_scheduler', {'enabled_filters':
                              'ComputeFilter,ImagePropertiesFilter'}),
        ('conductor', {'workers': 1}),
        ('notifications', {'notification_format': 'unversioned'}),
        ('oslo_messaging_notifications', {'driver': 'noop'}),
        ('vnc', {'enabled': False}),
        ('os_vif_ovs', {'ovsdb_connection': 'tcp:127.0.0.1:9'}),
    ])
    if not api_database:
        # nova-compute: no API database (it reaches the database through
        # the conductor only).
        del sections['api_database']
    for section, options in (extra or {}).items():
        merged = collections.OrderedDict(sections.get(section, ()))
        merged.update(options)
        sections[section] = merged
    for section, options in (snapshot_ext or {}).items():
        sections[section] = options
    return render_ini(sections)


#: Seconds Tempest waits for a server, image or volume to be built.
TEMPEST_BUILD_TIMEOUT = 120
#: The same where nova-api copies backups (cinder-backup's copies of a
#: 1 GB volume take 3-55 s here; the project's own tests allow 300 s).
TEMPEST_BUILD_TIMEOUT_COPIES = 300


def tempest_conf(keystone_url, password, image_ref, image_ref_alt,
                 flavor_ref, flavor_ref_alt, lock_path, log_file=None,
                 location_url=None, marker_image_ref=None,
                 cinder_backup=False, backup_copies=False):
    """A tempest.conf for this cloud.

    No Neutron (``[service_available] neutron = False``) and no SSH to a
    guest (``[validation] run_validation = False``); the image and flavor
    ids of this start; ``[nova_snapshot_ext] location_url`` in location
    mode; on the real stack ``marker_image_ref`` (the marker guest) and
    ``[compute-feature-enabled] console_output = True``;
    ``[volume-feature-enabled] backup`` where cinder-backup runs, and
    ``[nova_snapshot_ext] backup_copies`` where nova-api copies backups.
    """
    # Over 60 lines on purpose: one table, a section per line group, as
    # the file reads.
    plugin = collections.OrderedDict()
    if location_url:
        plugin['location_url'] = location_url
    if marker_image_ref:
        plugin['marker_image_ref'] = marker_image_ref
    plugin['backup_copies'] = bool(backup_copies)
    # Tempest's waits (servers, images, volumes, backups): a box that
    # copies backups waits for cinder-backup too (a copy, a rotation that
    # waits for one), on TCG with two workers.
    build_timeout = (TEMPEST_BUILD_TIMEOUT_COPIES if backup_copies
                     else TEMPEST_BUILD_TIMEOUT)
    return render_ini(collections.OrderedDict([
        ('DEFAULT', collections.OrderedDict(
            [('log_file', log_file)] if log_file else [])),
        ('oslo_concurrency', {'lock_path': lock_path}),
        ('auth', collections.OrderedDict([
            ('admin_username', 'admin'),
            ('admin_password', password),
            ('admin_project_name', 'admin'),
            ('admin_domain_name', 'Default'),
            ('use_dynamic_credentials', True),
            ('create_isolated_networks', False),
        ])),
        ('identity', collections.OrderedDict([
            ('uri_v3', keystone_url),
            ('auth_version', 'v3'),
            ('region', 'RegionOne'),
        ])),
        ('identity-feature-enabled', {'api_v2': False}),
        ('compute', collections.OrderedDict([
            ('image_ref', image_ref),
            ('image_ref_alt', image_ref_alt),
            ('flavor_ref', flavor_ref),
            ('flavor_ref_alt', flavor_ref_alt),
            ('build_timeout', build_timeout),
            ('min_compute_nodes', 1),
            ('min_microversion', '2.1'),
            ('max_microversion', 'latest'),
        ])),
        ('compute-feature-enabled', collections.OrderedDict([
            ('console_output', bool(marker_image_ref)),
            ('vnc_console', False),
            ('resize', False),
            ('live_migration', False),
            ('attach_encrypted_volume', False),
            ('interface_attach', False),
        ])),
        ('image', {'build_timeout': build_timeout}),
        ('image-feature-enabled', {'api_v2': True}),
        ('volume', collections.OrderedDict([
            ('build_timeout', build_timeout),
            ('catalog_type', 'block-storage'),
            ('min_microversion', '3.0'),
            ('max_microversion', 'latest'),
        ])),
        ('volume-feature-enabled', collections.OrderedDict([
            ('backup', bool(cinder_backup)),
            ('enable_volume_image_dep_tests', True),
        ])),
        ('network', {'public_network_id': ''}),
        ('service_available', collections.OrderedDict([
            ('neutron', False), ('cinder', True), ('glance', True),
            ('nova', True), ('swift', False), ('horizon', False),
        ])),
        ('validation', {'run_validation': False}),
        ('nova_snapshot_ext', plugin),
    ]))
