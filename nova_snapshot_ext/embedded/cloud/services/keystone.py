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

"""The cloud's Keystone: gunicorn over MariaDB, fernet tokens.

Bootstrapped and seeded on the cold start by
:func:`nova_snapshot_ext.embedded.keystone.bootstrap` and
:func:`~nova_snapshot_ext.embedded.keystone.seed` (the standalone
Keystone's own): the accounts are each service's user
(:attr:`~.base.CloudService.user`) and the demo project's, the catalog
each service's :attr:`~.base.CloudService.catalog_entries`.
"""

import os
import shutil

from nova_snapshot_ext.embedded.cloud import config
from nova_snapshot_ext.embedded.cloud.services import base
from nova_snapshot_ext.embedded import keystone as keystone_mod

#: Users of the ``demo`` project and their role there.
DEMO_USERS = (('demo', 'member'), ('demo_admin', 'admin'))
#: The key repositories the template keeps.
KEY_DIRS = ('fernet-keys', 'credential-keys', 'receipt-keys')


class Keystone(base.CloudService):
    """Identity: accounts, the catalog, tokens."""

    name = 'keystone'
    words = 'Keystone'
    ports = ('keystone',)
    databases = ('keystone',)

    def url(self):
        return 'http://127.0.0.1:%d/v3' % self.port()

    def catalog(self):
        return {'identity': self.url()}

    def configure(self, template):
        """keystone.conf, its WSGI file; the template's key repositories."""
        kdir = self.dir('keystone')
        self.write(os.path.join(kdir, 'keystone.conf'), config.keystone_conf(
            kdir, self.database_url('keystone')))
        self.write(os.path.join(kdir, 'embedded_keystone_wsgi.py'),
                   base.wsgi_module('keystone.wsgi.api'))
        for sub in KEY_DIRS if template is not None else ():
            shutil.copytree(os.path.join(template, sub),
                            os.path.join(kdir, sub))

    def _env(self):
        return self.env(
            OS_KEYSTONE_CONFIG_DIR=os.path.join(self.cloud.base_dir,
                                                'keystone'),
            OS_KEYSTONE_CONFIG_FILES='keystone.conf')

    def _manage(self, *args):
        kdir = self.dir('keystone')
        self.run('keystone-manage', [
            self.bin('keystone-manage'), '--config-file',
            os.path.join(kdir, 'keystone.conf')] + list(args),
            env=self._env(), cwd=kdir)

    def initialise(self):
        """Bootstrap, then seed the accounts and the catalog.

        Keystone runs meanwhile and is stopped again.
        """
        keystone_mod.bootstrap(self._manage, self.url())
        self.start()
        users = {name: ('service', ('admin', 'service'))
                 for name in self.cloud.gather('user')}
        users.update((name, ('demo', (role,))) for name, role in DEMO_USERS)
        ids = keystone_mod.seed(
            self.url(), ('service', 'demo'), users,
            services=self.cloud.gather('catalog_entries'))
        self.cloud.ids.update(
            (kind, ids[kind]) for kind in ('projects', 'users', 'roles'))
        self.cloud.procs.stop_named('keystone')

    def save(self, directory):
        for sub in KEY_DIRS:
            src = os.path.join(self.cloud.base_dir, 'keystone', sub)
            if os.path.isdir(src):
                shutil.copytree(src, os.path.join(directory, sub))
            else:
                os.makedirs(os.path.join(directory, sub))

    def rehome(self):
        """Every catalog endpoint at this start's URL of its type."""
        statements = [
            "UPDATE endpoint e JOIN service s ON e.service_id = s.id "
            "SET e.url = '%s' WHERE s.type = '%s';" % (url, kind)
            for kind, url in sorted(self.cloud.catalog().items())]
        self.sql('\n'.join(statements), 'keystone')

    def start(self):
        kdir = self.dir('keystone')
        process = self.gunicorn('keystone', self.port(),
                                'embedded_keystone_wsgi:application', kdir,
                                self._env(), pythonpath=kdir)
        self.wait_http(process, self.url())
